//! Resilience4j-grade circuit breaking for async and plain Rust functions.
//!
//! This crate re-exports [`breaker_core`], the state machine, windows, registry and scheduler.
//! See the README for the configuration keys and how they map to Spring's.

#[doc(inline)]
pub use breaker_core::*;
