//! Permits as values: the HALF_OPEN cap under concurrency, cancelled calls, panics.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::{CallError, CircuitBreaker, Config, ManualClock, Outcome, Registry, State};

fn half_open_breaker(permits: u32) -> (ManualClock, Registry, CircuitBreaker) {
    let clock = ManualClock::new();
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(permits)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("b", config)
        .build();
    let breaker = registry.breaker("b");
    breaker.transition_to(State::Open).unwrap();
    breaker.transition_to(State::HalfOpen).unwrap();
    (clock, registry, breaker)
}

#[test]
fn sixty_four_threads_in_half_open_get_exactly_ten_trials() {
    let (_clock, _registry, breaker) = half_open_breaker(10);
    let start = Barrier::new(64);
    let attempted = Barrier::new(64);
    let granted = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..64 {
            s.spawn(|| {
                start.wait();
                let permit = breaker.try_acquire();
                if permit.is_ok() {
                    granted.fetch_add(1, Ordering::Relaxed);
                }
                // Hold every permit until all 64 have asked, so none is given back early.
                attempted.wait();
                drop(permit);
            });
        }
    });
    assert_eq!(granted.load(Ordering::Relaxed), 10);
    let m = breaker.metrics();
    assert_eq!(m.state, State::HalfOpen);
    assert_eq!(m.not_permitted_calls, 54);
    // The ten were dropped without an outcome: all ten permits are back.
    let again: Vec<_> = (0..11).filter_map(|_| breaker.try_acquire().ok()).collect();
    assert_eq!(again.len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_tasks_in_half_open_run_exactly_ten_trials() {
    let (_clock, _registry, breaker) = half_open_breaker(10);
    let running = Arc::new(AtomicUsize::new(0));
    let max_running = Arc::new(AtomicUsize::new(0));
    // The trials wait at the gate, the test being the eleventh, until every rejection is in.
    let gate = Arc::new(tokio::sync::Barrier::new(11));
    let (rejected_tx, mut rejected_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (b, running, max_running, gate, rejected_tx) = (
            breaker.clone(),
            running.clone(),
            max_running.clone(),
            gate.clone(),
            rejected_tx.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let out = b
                .call(async {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    max_running.fetch_max(now, Ordering::SeqCst);
                    gate.wait().await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, ()>(())
                })
                .await;
            if out.is_err() {
                rejected_tx.send(()).unwrap();
            }
            out
        }));
    }
    for _ in 0..54 {
        rejected_rx.recv().await.unwrap();
    }
    assert_eq!(running.load(Ordering::SeqCst), 10, "ten trials in flight");
    gate.wait().await;
    let mut ok = 0;
    let mut rejected = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => ok += 1,
            Err(CallError::Rejected(_)) => rejected += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((ok, rejected), (10, 54));
    assert_eq!(max_running.load(Ordering::SeqCst), 10);
    assert_eq!(breaker.state(), State::Closed, "successful trials close it");
}

fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_cancelled_call_gives_its_half_open_permit_back_and_records_nothing() {
    let (_clock, _registry, breaker) = half_open_breaker(1);
    {
        let call = breaker.call(std::future::pending::<Result<(), ()>>());
        let mut call = pin!(call);
        assert!(poll_once(call.as_mut()).is_pending());
        // The one trial permit is taken while the call is in flight.
        assert!(breaker.try_acquire().is_err());
    } // dropped mid-flight: cancelled
    let m = breaker.metrics();
    assert_eq!((m.buffered_calls, m.state), (0, State::HalfOpen));
    let permit = breaker.try_acquire().expect("the permit came back");
    permit.record(Outcome::Success, Duration::ZERO);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_call_future_never_polled_takes_no_permit() {
    let (_clock, _registry, breaker) = half_open_breaker(1);
    let unpolled = breaker.call(async { Ok::<_, ()>(()) });
    assert!(breaker.try_acquire().is_ok());
    drop(unpolled);
}

#[test]
fn a_panicking_sync_call_records_a_failure_and_the_panic_goes_on() {
    let (_clock, _registry, breaker) = half_open_breaker(1);
    let caught = catch_unwind(AssertUnwindSafe(|| {
        breaker.call_sync(|| -> Result<(), ()> { panic!("downstream client bug") })
    }));
    assert!(caught.is_err(), "the panic reached the caller");
    // One trial, failed: 100% -> OPEN, and the failure is in the (inherited) window.
    let m = breaker.metrics();
    assert_eq!(m.state, State::Open);
    assert_eq!((m.buffered_calls, m.failed_calls), (1, 1));
}

#[tokio::test]
async fn a_panicking_async_call_records_a_failure_and_the_panic_goes_on() {
    let (_clock, _registry, breaker) = half_open_breaker(1);
    let b = breaker.clone();
    let joined = tokio::spawn(async move {
        b.call(async {
            tokio::task::yield_now().await;
            if true {
                panic!("downstream client bug");
            }
            Ok::<(), ()>(())
        })
        .await
    })
    .await;
    assert!(joined.unwrap_err().is_panic());
    let m = breaker.metrics();
    assert_eq!(m.state, State::Open);
    assert_eq!(m.failed_calls, 1);
}

#[test]
fn a_dropped_closed_permit_records_nothing() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let b = registry.breaker("b");
    drop(b.try_acquire().unwrap());
    b.try_acquire().unwrap().release();
    assert_eq!(b.metrics().buffered_calls, 0);
}

/// Deliberate difference D3: a permit granted in CLOSED and released (or ignored) during
/// HALF_OPEN does not add a trial permit, so the cap holds.
#[test]
fn a_permit_from_another_state_never_raises_the_half_open_cap() {
    let clock = ManualClock::new();
    let config = Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("b", config)
        .build();
    let b = registry.breaker("b");
    let early_a = b.try_acquire().unwrap();
    let early_b = b.try_acquire().unwrap();
    b.transition_to(State::Open).unwrap();
    clock.advance(Duration::from_millis(1_001));
    let trials: Vec<_> = (0..3).filter_map(|_| b.try_acquire().ok()).collect();
    assert_eq!(trials.len(), 2);
    early_a.release();
    early_b.record(Outcome::Ignored, Duration::ZERO);
    assert!(b.try_acquire().is_err(), "still two trials out of two");
    drop(trials);
    let again: Vec<_> = (0..3).filter_map(|_| b.try_acquire().ok()).collect();
    assert_eq!(again.len(), 2);
}

/// An owned permit is `'static` and `Send` (it holds the breaker's handle): it can move into a
/// spawned task and outlive every other handle on the breaker.
#[test]
fn an_owned_permit_is_static_and_send_and_outlives_the_handle() {
    fn static_send<T: Send + 'static>(_: &T) {}
    let (_clock, _registry, breaker) = half_open_breaker(1);
    let permit = breaker.try_acquire_owned().unwrap();
    static_send(&permit);
    assert_eq!(permit.breaker_name(), "b");
    assert_eq!(
        permit
            .config()
            .permitted_number_of_calls_in_half_open_state(),
        1
    );
    assert!(
        breaker.try_acquire_owned().is_err(),
        "the one trial is taken"
    );
    let observer = breaker.clone();
    drop(breaker);
    std::thread::spawn(move || permit.success()).join().unwrap();
    assert_eq!(
        observer.state(),
        State::Closed,
        "the one successful trial closes it"
    );
}

/// Dropped or released without an outcome, an owned permit gives its HALF_OPEN trial back and
/// records nothing, as a borrowed one does.
#[test]
fn an_owned_permit_dropped_without_an_outcome_gives_its_trial_back() {
    let (_clock, _registry, breaker) = half_open_breaker(1);
    drop(breaker.try_acquire_owned().unwrap());
    breaker.try_acquire_owned().unwrap().release();
    let permit = breaker.try_acquire_owned().unwrap();
    assert!(breaker.try_acquire().is_err());
    permit.ignore();
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert!(
        breaker.try_acquire_owned().is_ok(),
        "an ignored call gives its trial back too"
    );
}

/// `finish_with` classifies a result as the breaker's own calls do: the code's classification
/// with the configured `ignore-exceptions` on top.
#[test]
fn finish_with_applies_the_configured_error_kinds() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance(
            "b",
            Config::builder()
                .ignore_exceptions([breaker_core::ErrorKind::of_type::<std::fmt::Error>("fmt")])
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("b");
    let every_error = breaker_core::Classifier::new();
    b.try_acquire_owned()
        .unwrap()
        .finish_with(&every_error, &Err::<(), _>(std::fmt::Error));
    b.try_acquire()
        .unwrap()
        .finish_with(&every_error, &Err::<(), _>(std::fmt::Error));
    assert_eq!(
        b.metrics().buffered_calls,
        0,
        "ignored by the configured kind"
    );
    b.try_acquire_owned()
        .unwrap()
        .finish_with(&every_error, &Err::<(), _>("refused"));
    b.try_acquire()
        .unwrap()
        .finish_with(&every_error, &Ok::<_, &str>(()));
    let m = b.metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (2, 1));
}

/// A timeout from a permit: none without `timeout-duration` or outside a runtime; on a
/// runtime with time, it fires after the limit, and `timed_out` records a failure that took at
/// least the limit and names the breaker.
#[tokio::test(start_paused = true)]
async fn a_permit_starts_the_configured_timeout_and_records_it() {
    let untimed = Registry::builder()
        .clock(ManualClock::new())
        .build()
        .breaker("untimed");
    assert!(untimed
        .try_acquire_owned()
        .unwrap()
        .start_timeout()
        .is_none());

    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance(
            "b",
            Config::builder()
                .timeout_duration(Some(Duration::from_millis(300)))
                .slow_call_duration_threshold(Duration::from_millis(250))
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("b");
    let permit = b.try_acquire_owned().unwrap();
    let timer = permit.start_timeout().expect("a Tokio runtime with time");
    assert_eq!(timer.limit(), Duration::from_millis(300));
    let mut timer = pin!(timer);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(timer.as_mut().poll_expired(&mut cx).is_pending());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let limit = std::future::poll_fn(|cx| timer.as_mut().poll_expired(cx)).await;
    assert_eq!(limit, Duration::from_millis(300));
    // The breaker's clock did not move: the failure still took the limit, and so was slow.
    let timed_out = permit.timed_out(limit);
    assert_eq!(timed_out.breaker_name(), "b");
    assert_eq!(timed_out.timeout(), limit);
    let m = b.metrics();
    assert_eq!((m.failed_calls, m.slow_failed_calls), (1, 1));
}

/// A rejection by OPEN says how much of OPEN's wait is left, to the nanosecond of the manual
/// clock; at the wait's last instant the call is still rejected, with nothing left to wait.
#[test]
fn a_rejection_by_open_says_how_long_the_wait_has_left() {
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .wait_duration_in_open_state(Duration::from_secs(10))
            .build()
            .unwrap(),
    );
    let b = registry.breaker("permits:retry-after");
    b.transition_to(State::Open).unwrap();
    clock.advance(Duration::from_millis(2_500));
    let rejected = b.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after(), Some(Duration::from_millis(7_500)));
    clock.advance(Duration::from_millis(7_499));
    let rejected = b.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after(), Some(Duration::from_millis(1)));
    clock.advance(Duration::from_millis(1));
    let rejected = b.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after(), Some(Duration::ZERO));
    assert_eq!(b.state(), State::Open);
}

/// DISABLED lets every call through and records none of them: its metrics stay empty however
/// many calls fail, and it never opens.
#[test]
fn disabled_lets_calls_through_and_records_none() {
    let (_clock, registry) = crate::support::manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(2)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("permits:disabled");
    b.transition_to(State::Disabled).unwrap();
    for _ in 0..10 {
        b.try_acquire().unwrap().failure();
    }
    let metrics = b.metrics();
    assert_eq!(metrics.state, State::Disabled);
    assert_eq!(
        (metrics.buffered_calls, metrics.failed_calls),
        (0, 0),
        "{metrics:?}"
    );
}

/// The calls a state did not permit are counted per state: HALF_OPEN starts from none, and
/// OPEN entered from HALF_OPEN carries on HALF_OPEN's count (Resilience4j hands OPEN the
/// metrics of the state it leaves).
#[test]
fn not_permitted_calls_are_counted_per_state() {
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .wait_duration_in_open_state(Duration::from_secs(1))
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("permits:not-permitted");
    b.transition_to(State::Open).unwrap();
    for _ in 0..3 {
        assert!(b.try_acquire().is_err());
    }
    assert_eq!(b.metrics().not_permitted_calls, 3);
    clock.advance(Duration::from_millis(1_001));
    let trial = b.try_acquire().unwrap();
    assert_eq!(b.state(), State::HalfOpen);
    assert!(b.try_acquire().is_err());
    assert!(b.try_acquire().is_err());
    assert_eq!(b.metrics().not_permitted_calls, 2, "HALF_OPEN's own");
    trial.failure();
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.metrics().not_permitted_calls, 2, "carried into OPEN");
}
