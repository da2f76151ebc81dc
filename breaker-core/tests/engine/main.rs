//! The engine: calls and permits, cancellation, timeouts and timers, slow calls, window sizes,
//! events, the registry and keyed breakers, the bulkhead, the retry, the backoff, the logs, a
//! soak, property tests and the documented traces. One test binary, one module per topic,
//! helpers in `support`.
//!
//! What the modules share in the process: `support::logs` installs one capturing subscriber
//! for the whole binary (each test reads only the lines naming its own breakers), and
//! `registry` is the only module that touches the global registry.

#[path = "../support/mod.rs"]
mod support;

mod accessors;
mod backoff;
mod bulkhead;
mod bulkhead_registry;
mod calls;
mod cancellation;
mod documented;
mod events;
mod keyed;
mod log_forging;
mod permits;
mod properties;
mod registry;
mod reject_log;
mod retry;
mod retry_registry;
mod slow_calls;
mod soak;
mod timeouts;
mod timers;
mod window_sizes;
