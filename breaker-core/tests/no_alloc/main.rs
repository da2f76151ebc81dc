//! No heap allocation per call: the engine's calls in `calls`, the bulkhead's in `bulkhead`,
//! the retry's in `retry`, the setups with Tokio, listeners, DEBUG logging and time-based
//! windows in `setups`.
//!
//! A binary of its own: the counting allocator is this process's global allocator, and a
//! global `tracing` subscriber (such as the engine binary's log capture) would allocate on the
//! measured thread when a call logs. The counts are per thread, so these tests share a binary
//! with each other.

#[path = "../support/counting_alloc.rs"]
mod counting_alloc;

mod bulkhead;
mod calls;
mod retry;
mod setups;
