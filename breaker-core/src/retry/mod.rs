//! The retry: a failed call made again, up to `max-attempts`, with Resilience4j's semantics and
//! Spring's keys (`resilience4j.retry.*`), and a budget that keeps retries to a fraction of the
//! calls.

pub use crate::config::retry::{keys, RetryConfig, RetryConfigBuilder};
