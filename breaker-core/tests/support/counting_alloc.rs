//! A counting global allocator for the no-allocation tests (`#[path]`-included by each test
//! binary that needs it; a binary has one global allocator).
//!
//! It counts each thread's allocations apart, and a test reads its own thread's: the test
//! harness's thread allocates while a test runs (it records a test as running after spawning
//! its thread, which on a busy machine lands in the middle of a measured loop), and tests of
//! one binary run at the same time.

#![allow(dead_code)] // each test binary uses a different subset

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

struct Counting;

thread_local! {
    // `const`, and no destructor: reading it never allocates or registers anything.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: a thread being torn down has no counter left, and does not need one.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made so far by this thread.
pub(crate) fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// Allocations this thread made while running `f`.
pub(crate) fn allocations_during(f: impl FnOnce()) -> usize {
    let before = allocations();
    f();
    allocations() - before
}

/// Polls `f` to completion on this thread with a no-op waker (nothing here ever waits).
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// The registry the no-allocation tests measure in, on `clock`: a window of 10 calls that opens
/// only when all 10 fail, 60 s in OPEN and 10 trial calls in HALF_OPEN, so a test reaches each
/// state with a known number of calls and stays there while it measures.
pub(crate) fn ten_call_registry(clock: breaker_core::ManualClock) -> breaker_core::Registry {
    let config = breaker_core::Config::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .failure_rate_threshold(100.0)
        .wait_duration_in_open_state(std::time::Duration::from_secs(60))
        .permitted_number_of_calls_in_half_open_state(10)
        .build()
        .expect("a valid config");
    breaker_core::Registry::builder()
        .clock(clock)
        .default_config(config)
        .build()
}
