//! No heap allocation per bulkhead call once warm: taking and giving back a place, a refusal
//! (with a listener hearing it), and a wait that is granted, in both fair and unfair modes.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::bulkhead::{Bulkhead, BulkheadConfig};
use breaker_core::{ManualClock, Registry};

use crate::counting_alloc::{allocations_during, block_on};

fn bulkhead(fair: bool) -> (Registry, Bulkhead) {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(Duration::from_secs(1))
        .fair_call_handling_enabled(fair)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .bulkhead_instance("bh-no-alloc", config)
        .build();
    let bulkhead = registry.bulkhead("bh-no-alloc");
    (registry, bulkhead)
}

/// One call that finds the place taken, waits, and is granted it when the holder finishes.
fn wait_and_be_granted(bulkhead: &Bulkhead) {
    let mut cx = Context::from_waker(Waker::noop());
    let held = bulkhead.try_acquire().unwrap();
    let mut waiting = pin!(bulkhead.acquire());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    drop(held);
    assert!(matches!(waiting.as_mut().poll(&mut cx), Poll::Ready(Ok(_))));
}

#[test]
fn bulkhead_calls_and_waits_allocate_nothing() {
    for fair in [true, false] {
        let (_registry, bulkhead) = bulkhead(fair);
        let heard = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&heard);
        let _subscription = bulkhead.subscribe(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        // Warm up: the waiter queue and the scheduler's queue reach their size.
        for _ in 0..10 {
            wait_and_be_granted(&bulkhead);
        }
        let calls = allocations_during(|| {
            for i in 0..10_000 {
                let _ = bulkhead.call_sync(|| if i % 2 == 0 { Ok(i) } else { Err(i) });
                let _ = block_on(bulkhead.call(async { Ok::<_, ()>(i) }));
                let held = bulkhead.try_acquire().unwrap();
                assert!(bulkhead.try_acquire().is_err());
                drop(held);
            }
        });
        assert_eq!(calls, 0, "allocations per call (fair: {fair})");
        let waits = allocations_during(|| {
            for _ in 0..1_000 {
                wait_and_be_granted(&bulkhead);
            }
        });
        assert_eq!(waits, 0, "allocations per wait (fair: {fair})");
        assert!(heard.load(Ordering::Relaxed) > 0);
    }
}
