//! The `metrics` export: Resilience4j's names, rendered by the Prometheus exporter, and series
//! that leave with their breakers, the bulkheads' gauges and the retries' counts; `grafana`
//! reads a scrape as Prometheus does (`exposition`) and checks it against every panel of
//! Resilience4j's Grafana dashboard and `promtool check metrics`. `export` installs the
//! process's global `metrics` recorder (the only module that does); the others use recorders
//! of their own.

#[path = "../support/mod.rs"]
mod support;

mod bulkheads;
mod export;
mod exposition;
mod grafana;
mod removal;
mod retries;
