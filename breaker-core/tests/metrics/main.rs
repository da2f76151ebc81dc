//! The `metrics` export: Resilience4j's names, rendered by the Prometheus exporter, and series
//! that leave with their breakers, the bulkheads' gauges and the retries' counts. `export`
//! installs the process's global `metrics` recorder (the only module that does); `removal`,
//! `bulkheads` and `retries` use recorders of their own.

#[path = "../support/mod.rs"]
mod support;

mod bulkheads;
mod export;
mod removal;
mod retries;
