//! The atomics and locks the concurrent code's correctness rests on.
//!
//! Normally they are `std`'s. The `breaker-model` test package compiles this crate's sources a
//! second time with `--cfg loom`, where they are `loom`'s, so that the model checker can run
//! every interleaving of permit acquisition, completion, transitions, timer firing, listener
//! changes and the registry's map (lookups, inserts, growth).
//!
//! [`Published`] is the same idea for plain memory that lock-free readers reach through an
//! atomic pointer: under loom each read checks that the value was made before it, so a missing
//! Release/Acquire pair on the way to it fails the model.
//!
//! The scheduler's queue is loom's too: a transition cancels its state's timer in it, racing
//! the clock that fires it.
//!
//! Everything else keeps `std`'s types: the clock, the registry's table
//! of keyed groups and the groups' maps (papaya's, whose atomics loom does not see), and the
//! name interner (a process-wide `static`, which cannot hold loom
//! objects: each model run starts afresh). None of those holds a lock across an operation of
//! these.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Parking a thread that waits (a bulkhead's blocking acquire) and waking it.
pub(crate) mod thread {
    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, Thread};
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, Thread};
}

/// A value written once, when it is made, and from then on only read, by threads that find it
/// through an atomic pointer (the map's nodes, entries and tables, the listener lists).
///
/// Without loom it is the value itself and [`get`](Published::get) is a plain borrow.
#[cfg(not(loom))]
pub(crate) struct Published<T>(T);

#[cfg(not(loom))]
impl<T> Published<T> {
    #[inline(always)]
    pub(crate) fn new(value: T) -> Self {
        Published(value)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> &T {
        &self.0
    }
}

/// Under loom, the value sits in a loom `UnsafeCell` that records where it was made, and every
/// [`get`](Published::get) is checked to happen after that: reading it through a pointer that
/// was published or loaded with too weak an ordering panics with a causality violation.
#[cfg(loom)]
pub(crate) struct Published<T>(loom::cell::UnsafeCell<T>);

#[cfg(loom)]
impl<T> Published<T> {
    pub(crate) fn new(value: T) -> Self {
        Published(loom::cell::UnsafeCell::new(value))
    }

    pub(crate) fn get(&self) -> &T {
        // SAFETY: `Published` has no way to write the value after `new`, so no `&mut T` to it
        // can exist while `&self` does; a shared borrow for the borrow of `self` is sound. `with`
        // only records the read for loom's causality check.
        self.0.with(|value| unsafe { &*value })
    }
}
