//! Configuration: the builder's defaults and checks, the three file formats (breakers,
//! bulkheads and retries), and the parsers under fuzzing. The global registry and
//! `BREAKER_CONFIG` are tested in child processes of this binary
//! (`files::child_global_registry`), so nothing here touches the process's own.

#[path = "../support/mod.rs"]
mod support;

mod builder;
mod bulkhead;
mod files;
mod fuzz;
mod retry;
