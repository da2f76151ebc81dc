//! Waits that end on a manual clock's `advance` (async and blocking), the timers a wait leaves
//! on the scheduler, cancellation mid-wait, and the budget over a moving window. (Behaviour
//! without waits is tested through the public API in tests/engine/retry.rs.)
//!
//! The expected waits are computed here from Resilience4j's `IntervalFunction` formulas, not
//! from `WaitInterval`.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::*;
use crate::time::manual::ManualClock;

const MS: Duration = Duration::from_millis(1);

fn retry(config: RetryConfig) -> (ManualClock, Retry) {
    let clock = ManualClock::new();
    let env = Env::new(Clock::from(clock.clone()), Some(1));
    (clock, Retry::with_env("retry-tests", config, env))
}

fn pending_timers(retry: &Retry) -> usize {
    retry.core.env().scheduler().pending()
}

/// Events heard, as `(kind, number of attempts)`.
type Seen = Arc<Mutex<Vec<(RetryEventKind, u32)>>>;

/// The events `retry` publishes from now on.
fn events(retry: &Retry) -> (Seen, Subscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = retry.subscribe(move |event| {
        sink.lock()
            .unwrap()
            .push((event.kind(), event.number_of_attempts()))
    });
    (seen, subscription)
}

/// The waits of the `RETRY` events in `seen`.
fn waits(seen: &Mutex<Vec<(RetryEventKind, u32)>>) -> Vec<Duration> {
    seen.lock()
        .unwrap()
        .iter()
        .filter_map(|(kind, _)| match kind {
            RetryEventKind::Retry { wait } => Some(*wait),
            _ => None,
        })
        .collect()
}

/// Runs an always-failing async call of `max-attempts` 4 and checks that each attempt starts
/// exactly when its wait (as the `RETRY` event announced it) is over, not 1 ms before; returns
/// the waits.
fn observed_waits(config: RetryConfigBuilder) -> Vec<Duration> {
    let config = config
        .max_attempts(4)
        .budget_enabled(false)
        .build()
        .unwrap();
    let (clock, retry) = retry(config);
    let (seen, _subscription) = events(&retry);
    let attempts = AtomicU32::new(0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut call = pin!(retry.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        async { Err::<(), _>("down") }
    }));
    for attempt in 1..4 {
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert_eq!(attempts.load(Ordering::SeqCst), attempt);
        assert_eq!(pending_timers(&retry), 1, "one timer per wait");
        let wait = waits(&seen)[attempt as usize - 1];
        clock.advance(wait - MS);
        assert!(call.as_mut().poll(&mut cx).is_pending());
        assert_eq!(attempts.load(Ordering::SeqCst), attempt, "1 ms early");
        clock.advance(MS);
    }
    let Poll::Ready(Err(CallError::Inner("down"))) = call.as_mut().poll(&mut cx) else {
        panic!("the fourth attempt's error ends the call");
    };
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
    assert_eq!(pending_timers(&retry), 0);
    waits(&seen)
}

#[test]
fn a_fixed_wait_precedes_every_retry() {
    let waits = observed_waits(RetryConfig::builder().wait_duration(Duration::from_millis(500)));
    assert_eq!(waits, [Duration::from_millis(500); 3]);
}

#[test]
fn exponential_waits_multiply_and_stop_at_the_maximum() {
    let builder = RetryConfig::builder()
        .wait_duration(Duration::from_millis(100))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(3.0);
    // Resilience4j: initial * multiplier^(attempt - 1).
    let expected: Vec<Duration> = (0..3).map(|n| 100 * MS * 3u32.pow(n)).collect();
    assert_eq!(observed_waits(builder.clone()), expected);
    let capped = builder.exponential_max_wait_duration(Some(Duration::from_millis(500)));
    assert_eq!(
        observed_waits(capped),
        [100 * MS, 300 * MS, 500 * MS],
        "the third wait, 900 ms, is capped"
    );
}

#[test]
fn randomized_waits_stay_within_the_factor_of_each_wait() {
    let randomized = RetryConfig::builder()
        .wait_duration(Duration::from_millis(1000))
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.5);
    let waits = observed_waits(randomized);
    for wait in &waits {
        assert!((500 * MS..1500 * MS).contains(wait), "{wait:?}");
    }
    assert!(waits.windows(2).any(|w| w[0] != w[1]), "drawn, not fixed");
    let both = RetryConfig::builder()
        .wait_duration(Duration::from_millis(1000))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(2.0)
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.25);
    for (n, wait) in observed_waits(both).into_iter().enumerate() {
        // Resilience4j's exponential random backoff: the exponential wait, then +/- 25 %.
        let exponential = 1000 * 2u32.pow(n as u32);
        let (low, high) = (exponential * 3 / 4, exponential * 5 / 4);
        assert!(
            (low * MS..high * MS).contains(&wait),
            "attempt {}: {wait:?}",
            n + 1
        );
    }
}

#[test]
fn dropping_the_call_mid_wait_removes_its_timer_and_starts_no_attempt() {
    let config = RetryConfig::builder().max_attempts(3).build().unwrap();
    let (clock, retry) = retry(config);
    let attempts = AtomicU32::new(0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut call = Box::pin(retry.call(|| {
        attempts.fetch_add(1, Ordering::SeqCst);
        async { Err::<(), _>("down") }
    }));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert_eq!(pending_timers(&retry), 1);
    drop(call);
    assert_eq!(pending_timers(&retry), 0, "the wait's timer is gone");
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "no attempt after the drop"
    );
    // The dropped call counts as neither success nor failure, and is no longer in retry.
    let metrics = retry.metrics();
    assert_eq!(metrics.failed_calls_with_retry_attempt(), 0);
    assert_eq!(metrics.failed_calls_without_retry_attempt(), 0);
    assert_eq!(retry.core.counts(), [0; 5]);
    assert_eq!(
        retry.core.calls(),
        0,
        "the budget no longer counts it as in retry"
    );
}

#[test]
fn a_blocking_wait_ends_when_another_thread_advances_the_clock() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_secs(2))
        .build()
        .unwrap();
    let (clock, retry) = retry(config);
    let attempts = Arc::new(AtomicU32::new(0));
    let caller = {
        let (retry, attempts) = (retry.clone(), Arc::clone(&attempts));
        std::thread::spawn(move || {
            retry.call_sync(|| {
                let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
                if n < 3 {
                    Err("down")
                } else {
                    Ok(n)
                }
            })
        })
    };
    for attempt in 1..3 {
        // The caller parks once its wait's timer is set; a caller that ended instead never
        // will (an error it did not retry).
        while pending_timers(&retry) == 0 {
            assert!(
                !caller.is_finished(),
                "the call ended without waiting to retry (attempts: {})",
                attempts.load(Ordering::SeqCst)
            );
            std::thread::yield_now();
        }
        assert_eq!(attempts.load(Ordering::SeqCst), attempt);
        clock.advance(Duration::from_secs(2));
    }
    assert_eq!(caller.join().unwrap(), Ok(3));
    assert_eq!(retry.metrics().successful_calls_with_retry_attempt(), 1);
}

#[test]
fn the_budget_refuses_once_the_ratio_and_floor_are_spent_and_recovers_as_the_window_moves() {
    // A retry per ten calls over 2 s, and 1 retry per second whatever the traffic.
    let config = RetryConfig::builder()
        .max_attempts(2)
        .wait_duration(Duration::ZERO)
        .budget_ratio(0.1)
        .budget_window(Duration::from_secs(2))
        .budget_min_retries_per_second(1)
        .build()
        .unwrap();
    let (clock, retry) = retry(config);
    let (seen, _subscription) = events(&retry);
    for _ in 0..20 {
        assert_eq!(retry.call_sync(|| Ok::<_, ()>(())), Ok(()));
    }
    let failing = |retry: &Retry| {
        let mut attempts = 0;
        let _ = retry.call_sync(|| {
            attempts += 1;
            Err::<(), _>("down")
        });
        attempts
    };
    // The k-th failing call asks for its retry with 20 + k calls counted (itself included):
    // allowed while k <= 0.1 * (20 + k) + 2 (the floor: 1/s over 2 s), that is up to k = 4.
    for k in 1..=4 {
        assert_eq!(failing(&retry), 2, "failing call {k} is retried");
    }
    assert_eq!(failing(&retry), 1, "the fifth is refused: 5 > 4.5");
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&(RetryEventKind::BudgetExhausted, 1))
    );
    assert_eq!(failing(&retry), 1, "and the sixth: 5 > 4.6");
    // 1 s on, the retries spent are still in the window: 5 > 4.7.
    clock.advance(Duration::from_secs(1));
    assert_eq!(failing(&retry), 1);
    // 2 s on, they left it with their calls: the floor allows 2 retries again, and the calls
    // since add 0.1 each.
    clock.advance(Duration::from_secs(1));
    assert_eq!(failing(&retry), 2);
    assert_eq!(failing(&retry), 2);
    assert_eq!(failing(&retry), 1, "3 > 2 + 0.1 * 2");
    let metrics = retry.metrics();
    assert_eq!(metrics.retries_refused_by_budget(), 4);
    assert_eq!(metrics.failed_calls_without_retry_attempt(), 4);
    assert_eq!(metrics.failed_calls_with_retry_attempt(), 6);
    assert_eq!(metrics.successful_calls_without_retry_attempt(), 20);
}

#[test]
fn without_the_budget_every_failure_is_retried() {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .budget_enabled(false)
        .build()
        .unwrap();
    let (_clock, retry) = retry(config);
    for _ in 0..50 {
        let _ = retry.call_sync(|| Err::<(), _>("down"));
    }
    assert_eq!(retry.metrics().failed_calls_with_retry_attempt(), 50);
    assert_eq!(retry.metrics().retries_refused_by_budget(), 0);
}
