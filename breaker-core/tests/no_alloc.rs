//! No heap allocation per call, in CLOSED, OPEN and HALF_OPEN (a counting global allocator;
//! alone in its test binary so that no other test allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::{Always, Classifier, Config, ManualClock, Outcome, Registry, State};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    f();
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn calls_allocate_nothing_in_closed_open_and_half_open() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .default_config(
            Config::builder()
                .sliding_window_size(10)
                .minimum_number_of_calls(10)
                .failure_rate_threshold(100.0)
                .wait_duration_in_open_state(Duration::from_secs(60))
                .permitted_number_of_calls_in_half_open_state(10)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("no-alloc");
    // Warm up: the first calls may initialise lazy statics.
    for _ in 0..100 {
        let _ = b.call_sync(|| Ok::<_, ()>(()));
    }

    let closed = allocations_during(|| {
        for i in 0..10_000 {
            let _ = b.call_sync(|| if i % 2 == 0 { Ok(i) } else { Err(i) });
            let _ = block_on(b.call(async { Ok::<_, ()>(i) }));
        }
    });
    assert_eq!(b.state(), State::Closed);
    assert_eq!(closed, 0, "allocations in CLOSED");

    b.transition_to(State::Open).unwrap();
    let open = allocations_during(|| {
        for _ in 0..10_000 {
            assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
            assert!(block_on(b.call(async { Ok::<_, ()>(()) })).is_err());
        }
    });
    assert_eq!(open, 0, "allocations in OPEN");

    b.transition_to(State::HalfOpen).unwrap();
    // Ignored calls take a trial permit and give it back, so HALF_OPEN lasts the whole loop.
    let ignore_every_error = Classifier::new().ignore(Always);
    let half_open = allocations_during(|| {
        for _ in 0..10_000 {
            let p = b.try_acquire().unwrap();
            drop(p); // cancelled: the permit comes back
            b.try_acquire()
                .unwrap()
                .record(Outcome::Ignored, Duration::ZERO);
            let sync = b.call_sync_with(&ignore_every_error, || Err::<(), ()>(()));
            assert!(sync.unwrap_err().into_inner().is_some(), "the call ran");
            let ran = block_on(b.call_with(&ignore_every_error, async { Err::<(), ()>(()) }));
            assert!(ran.unwrap_err().into_inner().is_some(), "the call ran");
        }
    });
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(half_open, 0, "allocations in HALF_OPEN");
}
