//! The `metrics` export: Resilience4j's names, rendered by the Prometheus exporter, and series
//! that leave with their breakers. `export` installs the process's global `metrics` recorder
//! (the only module that does); `removal` uses a recorder of its own.

#[path = "../support/mod.rs"]
mod support;

mod export;
mod removal;
