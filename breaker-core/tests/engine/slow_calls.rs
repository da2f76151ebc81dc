//! Slow calls, measured: a call through `call`, `call_sync` or a permit's `finish` that takes
//! longer than `slow-call-duration-threshold` counts as slow, and at the slow-call rate
//! threshold the breaker opens on slow calls alone; a call within the threshold does not count.
//!
//! On the production clocks ([`Clock::system`], coarse; [`Clock::precise`]) the measurement
//! itself is under test, so the slow calls really take that long (`std::thread::sleep`, or
//! Tokio's real time): a few calls of 60 ms (system) or 15 ms (precise), a few hundred
//! milliseconds in all. What the breaker decides there never depends on how fast the machine
//! is: a sleep never ends early, so a slow call is slow on any machine, and the window is sized
//! so that the slow calls alone open it; an instant call is held only to the clock's readings
//! the test takes around it (the breaker's own readings of the same clock lie between them), so
//! a machine that holds an instant call up past the threshold cannot fail the test. Exactly
//! where slow begins (a call of exactly the threshold is not slow, one nanosecond more is) is
//! tested on a [`ManualClock`], advanced inside the call, where the measured durations are
//! exact.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_core::{
    CircuitBreaker, Clock, Config, Event, EventKind, Registry, State, TransitionCause,
};

use crate::support::manual_registry;

/// A window of `window` calls, evaluated once it is full, that opens at `slow_rate` percent of
/// slow calls, and never on failures here (every call succeeds). OPEN lasts an hour, so nothing
/// moves on by itself during a test.
fn slow_only(threshold: Duration, window: u32, slow_rate: f32) -> Config {
    Config::builder()
        .sliding_window_size(window)
        .minimum_number_of_calls(window)
        .slow_call_duration_threshold(threshold)
        .slow_call_rate_threshold(slow_rate)
        .wait_duration_in_open_state(Duration::from_secs(3600))
        .build()
        .unwrap()
}

/// What a listener saw: call durations and the events about slow calls.
#[derive(Default)]
struct Seen {
    elapsed: Vec<Duration>,
    slow_rate_exceeded: Vec<f32>,
    transitions: Vec<(State, State, Option<TransitionCause>)>,
}

fn listen(b: &CircuitBreaker) -> (Arc<Mutex<Seen>>, breaker_core::Subscription) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sink = seen.clone();
    let sub = b.subscribe(move |e: &Event| {
        let mut seen = sink.lock().unwrap();
        match e.kind() {
            EventKind::Success { elapsed } | EventKind::Error { elapsed } => {
                seen.elapsed.push(elapsed)
            }
            EventKind::SlowCallRateExceeded { rate } => seen.slow_rate_exceeded.push(rate),
            EventKind::StateTransition { from, to } => seen.transitions.push((from, to, e.cause())),
            _ => {}
        }
    });
    (seen, sub)
}

// --- the production clocks ---------------------------------------------------------------

/// How one production-clock case is set up: the clock, the threshold, and how long a slow call
/// takes (three times the threshold, so a coarse clock's tick cannot hide it).
struct Real {
    clock: Clock,
    threshold: Duration,
    slow: Duration,
}

fn system() -> Real {
    Real {
        clock: Clock::system(),
        threshold: Duration::from_millis(20),
        slow: Duration::from_millis(60),
    }
}

fn precise() -> Real {
    Real {
        clock: Clock::precise(),
        threshold: Duration::from_millis(5),
        slow: Duration::from_millis(15),
    }
}

/// Two instant calls, then two slow ones: a window of 4 that opens at 50 % slow is full at the
/// fourth call, where the two slow calls alone make 50 %, whatever the instant calls measured.
const CALLS: u32 = 4;

fn real_registry(real: &Real) -> Registry {
    Registry::builder()
        .clock(real.clock.clone())
        .default_config(slow_only(real.threshold, CALLS, 50.0))
        .build()
}

/// Runs `call` between two readings of `clock`, and returns the time between them: the
/// breaker reads the same clock inside the call, so what it measures is at most this, however
/// long the machine kept the thread from running.
fn bracket(clock: &Clock, call: impl FnOnce()) -> Duration {
    let before = clock.now();
    call();
    clock.now().saturating_duration_since(before)
}

/// [`bracket`] around an async call.
async fn bracket_async(clock: &Clock, call: impl Future<Output = ()>) -> Duration {
    let before = clock.now();
    call.await;
    clock.now().saturating_duration_since(before)
}

/// `breaker` after two instant calls (bracketed by `instant`) and two slow ones: OPEN, the four
/// calls in its window, and as slow calls the two slow ones plus at most the instant calls the
/// machine held up past the threshold (none, on a machine that is not starved).
fn assert_opened_on_slow_calls(real: &Real, breaker: &CircuitBreaker, instant: &[Duration]) {
    let m = breaker.metrics();
    assert_eq!(
        m.state,
        State::Open,
        "two slow calls of four open it: {m:?}"
    );
    assert_eq!((m.buffered_calls, m.failed_calls), (CALLS, 0), "{m:?}");
    let held_up = instant.iter().filter(|d| **d > real.threshold).count() as u32;
    assert!(
        (2..=2 + held_up).contains(&m.slow_calls),
        "{} slow calls: the 2 slow ones and {held_up} instant calls that took longer than \
         {:?} at most (they took {instant:?}): {m:?}",
        m.slow_calls,
        real.threshold
    );
    assert_eq!(m.slow_successful_calls, m.slow_calls, "{m:?}");
    assert_eq!(m.slow_call_rate, Some(m.slow_calls as f32 * 25.0), "{m:?}");
    assert_eq!(m.failure_rate, Some(0.0));
}

/// What `watched`'s listener saw, against the readings the test took around its calls
/// (`around`, in call order): each duration the breaker measured is within the time around its
/// call, the slow calls measured above the threshold, the breaker counted as slow exactly the
/// calls it measured above the threshold, and it opened once, on the slow-call rate.
fn assert_measured(real: &Real, watched: &CircuitBreaker, seen: &Seen, around: &[Duration]) {
    assert_eq!(seen.elapsed.len(), CALLS as usize);
    for (measured, around) in seen.elapsed.iter().zip(around) {
        assert!(
            measured <= around,
            "the breaker measured {measured:?} for a call that took {around:?} on its clock"
        );
    }
    for slow in &seen.elapsed[2..] {
        assert!(
            *slow > real.threshold,
            "a {:?} call measured {slow:?}, not above the threshold {:?}",
            real.slow,
            real.threshold
        );
    }
    let slow = seen.elapsed.iter().filter(|d| **d > real.threshold).count();
    assert_eq!(
        watched.metrics().slow_calls as usize,
        slow,
        "slow calls counted, against the durations measured {:?}",
        seen.elapsed
    );
    assert_eq!(seen.slow_rate_exceeded, [slow as f32 * 25.0]);
    assert_eq!(
        seen.transitions,
        [(
            State::Closed,
            State::Open,
            Some(TransitionCause::Evaluation)
        )]
    );
}

/// Two instant calls and two slow ones on `b` and on `watched`, each bracketed
/// ([`assert_opened_on_slow_calls`], [`assert_measured`]); then both refuse a call without
/// running it. `b` has no listener, so its CLOSED calls take the lock-free path; `watched` has
/// one, so its calls take the locked path and publish what was measured.
fn assert_slow_calls_open(
    real: &Real,
    b: &CircuitBreaker,
    watched: &CircuitBreaker,
    mut call: impl FnMut(&CircuitBreaker, Option<Duration>),
) {
    let (seen, _sub) = listen(watched);
    let mut around = Vec::new();
    for breaker in [b, watched] {
        around = [None, None, Some(real.slow), Some(real.slow)]
            .map(|slow| bracket(&real.clock, || call(breaker, slow)))
            .to_vec();
        assert_opened_on_slow_calls(real, breaker, &around[..2]);
        // Rejected now, without running.
        let mut ran = false;
        assert!(breaker
            .call_sync(|| {
                ran = true;
                Ok::<_, ()>(())
            })
            .unwrap_err()
            .is_rejected());
        assert!(!ran);
    }
    assert_measured(real, watched, &seen.lock().unwrap(), &around);
}

fn sync_call(b: &CircuitBreaker, slow: Option<Duration>) {
    b.call_sync(|| {
        if let Some(d) = slow {
            std::thread::sleep(d);
        }
        Ok::<_, ()>(())
    })
    .unwrap();
}

#[test]
fn call_sync_slower_than_the_threshold_opens_on_the_system_clock() {
    let real = system();
    let registry = real_registry(&real);
    assert_slow_calls_open(
        &real,
        &registry.breaker("sync-system"),
        &registry.breaker("sync-system-watched"),
        sync_call,
    );
}

#[test]
fn call_sync_slower_than_the_threshold_opens_on_the_precise_clock() {
    let real = precise();
    let registry = real_registry(&real);
    assert_slow_calls_open(
        &real,
        &registry.breaker("sync-precise"),
        &registry.breaker("sync-precise-watched"),
        sync_call,
    );
}

/// A permit held across the call and finished with `finish`: the same measurement.
#[test]
fn a_permit_finished_after_a_slow_call_counts_as_slow_on_the_system_clock() {
    let real = system();
    let registry = real_registry(&real);
    assert_slow_calls_open(
        &real,
        &registry.breaker("permit-system"),
        &registry.breaker("permit-system-watched"),
        |b, slow| {
            let permit = b.try_acquire().unwrap();
            if let Some(d) = slow {
                std::thread::sleep(d);
            }
            permit.success();
        },
    );
}

/// `call` on Tokio's real time (no paused clock): the sleep really takes `slow`.
async fn assert_async_slow_calls_open(real: Real, name: &str) {
    let registry = real_registry(&real);
    let (b, watched) = (
        registry.breaker(name),
        registry.breaker(&format!("{name}-watched")),
    );
    let (seen, _sub) = listen(&watched);
    let mut around = Vec::new();
    for breaker in [&b, &watched] {
        around.clear();
        for slow in [None, None, Some(real.slow), Some(real.slow)] {
            let call = async {
                breaker
                    .call(async {
                        if let Some(d) = slow {
                            tokio::time::sleep(d).await;
                        }
                        Ok::<_, ()>(())
                    })
                    .await
                    .unwrap();
            };
            around.push(bracket_async(&real.clock, call).await);
        }
        assert_opened_on_slow_calls(&real, breaker, &around[..2]);
        assert!(breaker
            .call(async { Ok::<_, ()>(()) })
            .await
            .unwrap_err()
            .is_rejected());
    }
    assert_measured(&real, &watched, &seen.lock().unwrap(), &around);
}

#[tokio::test]
async fn async_call_slower_than_the_threshold_opens_on_the_system_clock() {
    assert_async_slow_calls_open(system(), "async-system").await;
}

#[tokio::test]
async fn async_call_slower_than_the_threshold_opens_on_the_precise_clock() {
    assert_async_slow_calls_open(precise(), "async-precise").await;
}

/// A call cut by `timeout-duration` counts as slow too when the timeout is above the slow-call
/// threshold: it took at least the timeout.
#[tokio::test]
async fn a_timed_out_call_is_a_slow_failure_on_the_system_clock() {
    let real = system();
    let config = slow_only(real.threshold, 2, 100.0)
        .to_builder()
        .failure_rate_threshold(100.0)
        .timeout_duration(Some(real.slow))
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(real.clock.clone())
        .default_config(config)
        .build();
    let b = registry.breaker("timeout-system");
    let out = b
        .call(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, ()>(())
        })
        .await;
    assert!(
        matches!(out, Err(breaker_core::CallError::TimedOut(_))),
        "{out:?}"
    );
    let m = b.metrics();
    assert_eq!((m.buffered_calls, m.slow_failed_calls), (1, 1), "{m:?}");
}

// --- the manual clock: advanced inside the call ------------------------------------------

/// Slow means longer than the threshold: a call of exactly the threshold is not slow, one
/// nanosecond more is; the event carries the duration the clock measured, to the nanosecond.
#[test]
fn call_sync_on_the_manual_clock_measures_the_time_that_passed_inside_the_call() {
    let threshold = Duration::from_secs(2);
    let (clock, registry) = manual_registry(slow_only(threshold, 4, 50.0));
    for name in ["manual-sync", "manual-sync-watched"] {
        let b = registry.breaker(name);
        let seen = (name == "manual-sync-watched").then(|| listen(&b));
        let takes = |d: Duration| {
            let clock = clock.clone();
            move || {
                clock.advance(d);
                Ok::<_, ()>(())
            }
        };
        b.call_sync(takes(threshold)).unwrap();
        b.call_sync(takes(Duration::ZERO)).unwrap();
        b.call_sync(takes(threshold + Duration::from_nanos(1)))
            .unwrap();
        let m = b.metrics();
        assert_eq!(
            (m.state, m.buffered_calls, m.slow_calls),
            (State::Closed, 3, 1)
        );
        // A slow failure: 2 of 4 slow is 50 %, the threshold.
        let _ = b.call_sync(|| {
            clock.advance(Duration::from_secs(30));
            Err::<(), _>("slow and failed")
        });
        let m = b.metrics();
        assert_eq!(m.state, State::Open, "{m:?}");
        assert_eq!((m.slow_calls, m.slow_failed_calls), (2, 1));
        assert_eq!((m.slow_call_rate, m.failure_rate), (Some(50.0), Some(25.0)));
        if let Some((seen, _sub)) = seen {
            let seen = seen.lock().unwrap();
            assert_eq!(
                seen.elapsed,
                [
                    threshold,
                    Duration::ZERO,
                    threshold + Duration::from_nanos(1),
                    Duration::from_secs(30)
                ]
            );
            assert_eq!(seen.slow_rate_exceeded, [50.0]);
        }
    }
}

/// `call` on the manual clock: the time that passes between the first poll and completion,
/// including while the call waits, is the call's duration.
#[tokio::test]
async fn async_call_on_the_manual_clock_measures_the_time_that_passed_inside_the_call() {
    let threshold = Duration::from_millis(500);
    let (clock, registry) = manual_registry(slow_only(threshold, 2, 100.0));
    let b = registry.breaker("manual-async");
    let (seen, _sub) = listen(&b);
    b.call(async {
        clock.advance(threshold);
        Ok::<_, ()>(())
    })
    .await
    .unwrap();
    // Slow, advanced across an await point: the call is pending in between.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let waiting = b.call(async {
        rx.await.unwrap();
        Ok::<_, ()>(())
    });
    let advance = async {
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(1));
        tx.send(()).unwrap();
    };
    let (out, ()) = tokio::join!(waiting, advance);
    out.unwrap();
    assert_eq!(b.metrics().slow_calls, 1);
    assert_eq!(b.state(), State::Closed, "1 of 2 slow");
    b.call(async {
        clock.advance(Duration::from_secs(1));
        Ok::<_, ()>(())
    })
    .await
    .unwrap();
    assert_eq!(b.state(), State::Open);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.elapsed,
        [threshold, Duration::from_secs(1), Duration::from_secs(1)]
    );
    assert_eq!(seen.slow_rate_exceeded, [100.0]);
}

/// A permit finished after the clock moved counts the time since it was granted.
#[test]
fn a_permit_on_the_manual_clock_counts_the_time_since_it_was_granted() {
    let threshold = Duration::from_secs(1);
    let (clock, registry) = manual_registry(slow_only(threshold, 2, 100.0));
    let b = registry.breaker("manual-permit");
    let first = b.try_acquire().unwrap();
    clock.advance(Duration::from_millis(600));
    let second = b.try_acquire().unwrap();
    clock.advance(Duration::from_millis(600));
    assert_eq!(first.elapsed(), Duration::from_millis(1_200));
    first.success(); // 1.2 s: slow
    second.success(); // 0.6 s: not
    let m = b.metrics();
    assert_eq!(
        (m.state, m.slow_calls, m.slow_call_rate),
        (State::Closed, 1, Some(50.0))
    );
}
