//! The bulkhead: at most `max-concurrent-calls` calls to one dependency at once, with
//! Resilience4j's semantics and Spring's keys (`resilience4j.bulkhead.*`).

pub use crate::config::bulkhead::{keys, BulkheadConfig, BulkheadConfigBuilder};
