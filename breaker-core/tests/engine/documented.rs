//! The documented numbers, on the manual clock: the call-by-call trace (docs/TRACE.md) and the
//! credit-bureau contract (docs/CREDIT_BUREAU.md).

use std::time::Duration;

use breaker_core::{CallError, Config, ManualClock, Outcome, Registry, SlidingWindowType, State};

#[derive(Debug, PartialEq)]
struct IllegalStateException;

/// The call-by-call trace (docs/TRACE.md), with its seven properties and a 3 s wait.
#[test]
fn the_call_by_call_trace() {
    let clock = ManualClock::new();
    let config = Config::builder()
        .sliding_window_type(SlidingWindowType::CountBased)
        .sliding_window_size(10)
        .minimum_number_of_calls(5)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(3))
        .permitted_number_of_calls_in_half_open_state(3)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("productService", config)
        .build();
    let breaker = registry.breaker("productService");
    let mut downstream_calls = 0;
    let mut call = |ok: bool| {
        breaker.call_sync(|| {
            downstream_calls += 1;
            if ok {
                Ok("product")
            } else {
                Err(IllegalStateException)
            }
        })
    };

    // Calls 1 to 4: downstream called, fallback, CLOSED, buffered 1..4, no rate yet.
    for n in 1..=4 {
        let out = call(false);
        assert!(matches!(out, Err(CallError::Inner(IllegalStateException))));
        let m = breaker.metrics();
        assert_eq!(m.state, State::Closed, "call {n}");
        assert_eq!(m.buffered_calls, n);
        assert_eq!(m.failure_rate, None);
    }
    // Call 5: 5 of 5 failed, 100% >= 50%: OPEN.
    assert!(matches!(call(false), Err(CallError::Inner(_))));
    let m = breaker.metrics();
    assert_eq!(m.state, State::Open);
    assert_eq!(m.failure_rate, Some(100.0));
    // Calls 6 and 7: not called, CallNotPermitted.
    for _ in 6..=7 {
        match call(true) {
            Err(CallError::Rejected(e)) => {
                assert_eq!(e.state(), State::Open);
                assert_eq!(
                    e.to_string(),
                    "CircuitBreaker 'productService' is OPEN and does not permit further calls"
                );
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
    }
    assert_eq!(downstream_calls, 5);
    // ... 3 s later: HALF_OPEN, by the timer, with no call.
    clock.advance(Duration::from_millis(2_999));
    assert_eq!(breaker.state(), State::Open);
    clock.advance(Duration::from_millis(1));
    assert_eq!(breaker.state(), State::HalfOpen);
    // Trials: ok, fail, ok -> 1 of 3 failed = 33% < 50%: CLOSED.
    assert!(breaker
        .call_sync(|| Ok::<_, IllegalStateException>(1))
        .is_ok());
    assert_eq!(breaker.state(), State::HalfOpen);
    assert!(breaker
        .call_sync(|| Err::<i32, _>(IllegalStateException))
        .is_err());
    assert_eq!(breaker.state(), State::HalfOpen);
    assert!(breaker
        .call_sync(|| Ok::<_, IllegalStateException>(1))
        .is_ok());
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(
        breaker.metrics().buffered_calls,
        0,
        "CLOSED starts a fresh window"
    );
}

fn credit_bureau_config() -> Config {
    Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 100, 20)
        .failure_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_millis(2_000))
        .slow_call_rate_threshold(60.0)
        .wait_duration_in_open_state(Duration::from_secs(30))
        .permitted_number_of_calls_in_half_open_state(10)
        .build()
        .unwrap()
}

/// The credit-bureau contract (docs/CREDIT_BUREAU.md): its numbers land where they should.
#[test]
fn credit_bureau_contract_values() {
    let c = credit_bureau_config();
    assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
    assert_eq!(c.sliding_window_size(), 100);
    assert_eq!(c.minimum_number_of_calls(), 20);
    assert_eq!(c.failure_rate_threshold(), 50.0);
    assert_eq!(c.slow_call_rate_threshold(), 60.0);
    assert_eq!(
        c.slow_call_duration_threshold(),
        Duration::from_millis(2_000)
    );
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(30));
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 10);
    assert!(!c.automatic_transition_from_open_to_half_open_enabled());
}

/// The credit-bureau contract in motion: 19 failures do not open (minimum 20), the 20th does;
/// OPEN rejects for 30 s (and exactly at 30 s); then 10 trials, 5 of them failed (50%), re-open.
#[test]
fn credit_bureau_contract_behaviour() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("credit_bureau_cb", credit_bureau_config())
        .build();
    let b = registry.breaker("credit_bureau_cb");
    let fail = |b: &breaker_core::CircuitBreaker| {
        b.try_acquire()
            .unwrap()
            .record(Outcome::Failure, Duration::from_millis(100))
    };
    for _ in 0..19 {
        fail(&b);
    }
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);

    clock.advance(Duration::from_secs(30));
    assert!(b.try_acquire().is_err(), "still OPEN at exactly 30 s");
    clock.advance(Duration::from_millis(1));
    let trials: Vec<_> = (0..12).filter_map(|_| b.try_acquire().ok()).collect();
    assert_eq!(trials.len(), 10, "10 trial permits");
    assert_eq!(b.state(), State::HalfOpen);
    for (i, permit) in trials.into_iter().enumerate() {
        let outcome = if i % 2 == 0 {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        permit.record(outcome, Duration::from_millis(100));
    }
    assert_eq!(b.state(), State::Open, "5 of 10 failed = 50%: OPEN again");
}

/// The credit-bureau contract: slow calls (>= 2,000 ms in the contract's words, > 2,000 ms in
/// Resilience4j's comparison; docs/CREDIT_BUREAU.md §2) open the breaker at 60% even when
/// every call succeeds.
#[test]
fn credit_bureau_slow_successes_open() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock)
        .instance("credit_bureau_cb", credit_bureau_config())
        .build();
    let b = registry.breaker("credit_bureau_cb");
    for i in 0..20 {
        let d = if i < 12 { 2_500 } else { 350 };
        b.try_acquire()
            .unwrap()
            .record(Outcome::Success, Duration::from_millis(d));
    }
    let m = b.metrics();
    assert_eq!(m.slow_call_rate, Some(60.0));
    assert_eq!(m.failure_rate, Some(0.0));
    assert_eq!(m.state, State::Open);
}
