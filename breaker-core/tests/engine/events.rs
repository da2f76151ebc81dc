//! The event stream: one event per transition, even when threads race; listeners that panic
//! poison nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use breaker_core::{Config, EventKind, Outcome, State, TransitionCause};

use crate::support::manual_registry;

#[test]
fn racing_failures_publish_exactly_one_open_event() {
    for _round in 0..50 {
        let (_clock, registry) = manual_registry(
            Config::builder()
                .sliding_window_size(8)
                .minimum_number_of_calls(8)
                .build()
                .unwrap(),
        );
        let b = registry.breaker("race");
        let transitions = Arc::new(Mutex::new(Vec::new()));
        let sink = transitions.clone();
        let _sub = b.subscribe(move |e| {
            if let EventKind::StateTransition { from, to } = e.kind() {
                sink.lock().unwrap().push((from, to));
            }
        });
        let barrier = Barrier::new(16);
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    barrier.wait();
                    if let Ok(p) = b.try_acquire() {
                        p.record(Outcome::Failure, Duration::ZERO);
                    }
                });
            }
        });
        assert_eq!(b.state(), State::Open);
        assert_eq!(
            *transitions.lock().unwrap(),
            vec![(State::Closed, State::Open)]
        );
    }
}

#[test]
fn every_kind_of_event_is_published() {
    let (clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .slow_call_duration_threshold(Duration::from_millis(10))
            .slow_call_rate_threshold(50.0)
            .wait_duration_in_open_state(Duration::from_secs(1))
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = registry.subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    let b = registry.breaker("all");
    let ms = Duration::from_millis;
    b.try_acquire().unwrap().record(Outcome::Success, ms(20));
    b.try_acquire().unwrap().record(Outcome::Ignored, ms(1));
    b.try_acquire().unwrap().record(Outcome::Failure, ms(1));
    assert!(b.try_acquire().is_err());
    clock.advance(ms(1_001));
    b.try_acquire().unwrap().record(Outcome::Success, ms(1));
    b.reset();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            EventKind::Success { elapsed: ms(20) },
            EventKind::IgnoredError { elapsed: ms(1) },
            EventKind::Error { elapsed: ms(1) },
            EventKind::FailureRateExceeded { rate: 50.0 },
            EventKind::SlowCallRateExceeded { rate: 50.0 },
            EventKind::StateTransition {
                from: State::Closed,
                to: State::Open
            },
            EventKind::NotPermitted,
            EventKind::StateTransition {
                from: State::Open,
                to: State::HalfOpen
            },
            EventKind::Success { elapsed: ms(1) },
            EventKind::StateTransition {
                from: State::HalfOpen,
                to: State::Closed
            },
            EventKind::Reset,
        ]
    );
}

#[test]
fn a_panicking_listener_is_skipped_and_the_breaker_goes_on() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("p");
    let _bad = b.subscribe(|_| panic!("listener bug"));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let _good = b.subscribe(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    for _ in 0..3 {
        b.call_sync(|| Ok::<_, ()>(())).unwrap();
    }
    b.transition_to(State::ForcedOpen).unwrap();
    assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
    assert_eq!(b.metrics().not_permitted_calls, 1);
    assert_eq!(
        count.load(Ordering::Relaxed),
        4,
        "3 successes and one transition"
    );
}

#[test]
fn dropping_the_subscription_unsubscribes() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("u");
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let sub = b.subscribe(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    b.call_sync(|| Ok::<_, ()>(())).unwrap();
    drop(sub);
    b.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 1);
}

#[test]
fn a_hint_opens_only_a_closed_breaker_without_local_history() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    );
    let causes = Arc::new(Mutex::new(Vec::new()));
    let sink = causes.clone();
    let _sub = registry.subscribe(move |e| {
        if let EventKind::StateTransition { to, .. } = e.kind() {
            sink.lock()
                .unwrap()
                .push((e.breaker_name().to_owned(), to, e.cause()));
        }
    });
    let fresh = registry.breaker("fresh");
    assert!(fresh.open_from_hint());
    assert_eq!(fresh.state(), State::Open);
    assert!(!fresh.open_from_hint(), "already OPEN");

    let used = registry.breaker("used");
    used.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert!(
        !used.open_from_hint(),
        "one local success is local evidence"
    );
    assert_eq!(used.state(), State::Closed);

    let half_open = registry.breaker("half_open");
    half_open.transition_to(State::Open).unwrap();
    half_open.transition_to(State::HalfOpen).unwrap();
    assert!(!half_open.open_from_hint(), "a hint never moves HALF_OPEN");
    assert_eq!(half_open.state(), State::HalfOpen);

    // The stale-hint rule (docs/REDIS_HINT.md): recovered through its own trials, so CLOSED
    // with a fresh, empty window; its own stale hint must not re-open it.
    let recovered = registry.breaker("recovered");
    recovered.transition_to(State::Open).unwrap();
    recovered.transition_to(State::HalfOpen).unwrap();
    for _ in 0..4 {
        recovered.call_sync(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(recovered.state(), State::Closed);
    assert_eq!(recovered.metrics().buffered_calls, 0);
    assert!(
        !recovered.open_from_hint(),
        "local evidence wins over a stale hint"
    );

    // Calls that were only ignored are no history.
    let ignored_only = registry.breaker("ignored_only");
    ignored_only
        .try_acquire()
        .unwrap()
        .record(Outcome::Ignored, Duration::ZERO);
    assert!(ignored_only.open_from_hint());

    let causes = causes.lock().unwrap().clone();
    assert_eq!(
        causes[0],
        ("fresh".to_owned(), State::Open, Some(TransitionCause::Hint))
    );
    assert_eq!(causes[1].2, Some(TransitionCause::Manual));
}

/// With nobody listening, CLOSED records without the lock and sets no history flag; the call
/// must count as local evidence all the same, and an ignored call still must not.
#[test]
fn a_call_recorded_without_the_lock_is_local_history() {
    let (_clock, registry) = manual_registry(Config::default());
    let used = registry.breaker("used-quietly");
    used.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert!(
        !used.open_from_hint(),
        "a lock-free success is local evidence"
    );
    assert_eq!(used.state(), State::Closed);

    let failed = registry.breaker("failed-quietly");
    failed.call_sync(|| Err::<(), _>(())).unwrap_err();
    assert!(
        !failed.open_from_hint(),
        "a lock-free failure is local evidence"
    );

    let ignored = registry.breaker("ignored-quietly");
    ignored
        .try_acquire()
        .unwrap()
        .record(Outcome::Ignored, Duration::ZERO);
    assert!(ignored.open_from_hint(), "an ignored call is no history");
}

#[test]
fn a_rejection_made_without_the_lock_still_carries_the_metrics() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("view");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = b.subscribe(move |e| {
        if e.kind() == EventKind::NotPermitted {
            sink.lock().unwrap().push(e.metrics());
        }
    });
    for ok in [true, false, false, false] {
        let _ = b.call_sync(|| if ok { Ok(()) } else { Err(()) });
    }
    assert_eq!(b.state(), State::Open);
    assert!(b.try_acquire().is_err());
    assert!(b.try_acquire().is_err());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1],
        b.metrics(),
        "the event's metrics are the breaker's"
    );
    assert_eq!(seen[1].failure_rate, Some(75.0));
    assert_eq!(seen[0].not_permitted_calls, 1);
}
