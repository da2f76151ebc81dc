//! No heap allocation per call, in CLOSED, OPEN and HALF_OPEN (a counting global allocator).
//!
//! The allocator counts each thread's allocations apart, and a test reads its own thread's:
//! the test harness's thread allocates while a test runs (it records a test as running after
//! spawning its thread, which on a busy machine lands in the middle of a measured loop), and
//! tests of one binary run at the same time. Everything measured here runs on the test's
//! thread (the futures are polled in place, the manual clock runs no thread).
//! `setups.rs` covers timeouts under Tokio, listeners, DEBUG logging and time-based
//! windows; the facade's `tests/no_alloc_attribute.rs` the attribute.

use std::time::Duration;

use breaker_core::{Always, Classifier, ManualClock, Outcome, Registry, State};

use crate::counting_alloc;

use counting_alloc::{allocations_during, block_on};

#[test]
fn calls_allocate_nothing_in_closed_open_and_half_open() {
    let clock = ManualClock::new();
    let registry = counting_alloc::ten_call_registry(clock.clone());
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

/// Keyed lookups of keys that have a breaker allocate nothing: the key's text is formatted on
/// the stack. Another test of this binary may allocate meanwhile, so the fewest allocations of a
/// few tries is this test's.
#[test]
fn keyed_lookups_of_existing_keys_allocate_nothing() {
    use breaker_core::KeyedCallSite;
    static SITE: KeyedCallSite = KeyedCallSite::new("no-alloc-keyed-site");
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let keyed = registry.keyed("no-alloc-keyed");
    let tenants: Vec<String> = (0..64).map(|i| format!("tenant-{i}")).collect();
    for tenant in &tenants {
        keyed.get(tenant.as_str());
        SITE.breaker(tenant.as_str());
    }
    keyed.get(&42u64);
    let fewest = (0..5)
        .map(|_| {
            allocations_during(|| {
                for i in 0..10_000 {
                    let tenant = tenants[i % tenants.len()].as_str();
                    let b = keyed.get(tenant);
                    let _ = b.call_sync(|| Ok::<_, ()>(i));
                    let _ = keyed.get(&42u64).call_sync(|| Err::<(), _>(i));
                    let _ = SITE.breaker(tenant).call_sync(|| Ok::<_, ()>(i));
                }
            })
        })
        .min()
        .unwrap();
    assert_eq!(fewest, 0, "allocations in keyed lookups");
}
