//! The atomics and locks the state machine's correctness rests on.
//!
//! Normally they are `std`'s. The `breaker-model` test package compiles this crate's sources a
//! second time with `--cfg loom`, where they are `loom`'s, so that the model checker can run
//! every interleaving of permit acquisition, completion, transitions and timer firing.
//! Everything else (the registry's map, the clock, the scheduler's queue) keeps `std`'s types:
//! none of those holds a lock across an operation of these.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};
