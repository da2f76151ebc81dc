//! The wait in OPEN with Resilience4j 2.x's backoff keys: exponential waits grow per attempt
//! and start again after CLOSED; randomized waits stay within their factor and repeat for a
//! given seed.

use std::time::Duration;

use breaker_core::{Config, Format, ManualClock, Registry, State};

fn registry(clock: &ManualClock, config: Config, seed: u64) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .random_seed(seed)
        .default_config(config)
        .build()
}

/// How long the breaker stays OPEN before a call is let through, to the millisecond.
fn open_wait(clock: &ManualClock, b: &breaker_core::CircuitBreaker) -> Duration {
    assert_eq!(b.state(), State::Open);
    let mut waited = Duration::ZERO;
    while b.try_acquire().is_err() {
        clock.advance(Duration::from_millis(1));
        waited += Duration::from_millis(1);
        assert!(
            waited < Duration::from_secs(600),
            "OPEN never let a call through"
        );
    }
    waited
}

fn trip(b: &breaker_core::CircuitBreaker) {
    for _ in 0..2 {
        let _ = b.call_sync(|| Err::<(), _>("down"));
    }
}

#[test]
fn exponential_waits_from_a_file_grow_per_attempt() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .load_str(
            Format::Properties,
            "application.properties",
            "resilience4j.circuitbreaker.configs.default.sliding-window-size=2
resilience4j.circuitbreaker.configs.default.minimum-number-of-calls=2
resilience4j.circuitbreaker.configs.default.permitted-number-of-calls-in-half-open-state=1
resilience4j.circuitbreaker.configs.default.wait-duration-in-open-state=1s
resilience4j.circuitbreaker.configs.default.enable-exponential-backoff=true
resilience4j.circuitbreaker.configs.default.exponential-backoff-multiplier=2
resilience4j.circuitbreaker.configs.default.exponential-max-wait-duration-in-open-state=5s
",
        )
        .unwrap()
        .build();
    let b = registry.breaker("backoff");
    trip(&b);
    let mut waits = Vec::new();
    for _ in 0..4 {
        // The wait ends strictly after its length: the first permitted millisecond.
        waits.push(open_wait(&clock, &b).as_millis());
        // That permit was the HALF_OPEN trial: it fails, and OPEN begins again.
        b.try_acquire().map(|p| p.failure()).ok();
        if b.state() != State::Open {
            let _ = b.call_sync(|| Err::<(), _>("still down"));
        }
    }
    assert_eq!(waits, [1001, 2001, 4001, 5001]);
    // A successful trial closes the breaker, and the next OPEN waits the base again.
    open_wait(&clock, &b);
    assert_eq!(b.state(), State::HalfOpen);
    let _ = b.call_sync(|| Ok::<_, ()>(()));
    assert_eq!(b.state(), State::Closed);
    trip(&b);
    assert_eq!(open_wait(&clock, &b).as_millis(), 1001);
}

fn randomized() -> Config {
    Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .wait_duration_in_open_state(Duration::from_secs(10))
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.5)
        .build()
        .unwrap()
}

#[test]
fn randomized_waits_stay_within_the_factor_and_repeat_for_a_seed() {
    let waits = |seed: u64| -> Vec<Duration> {
        let clock = ManualClock::new();
        let registry = registry(&clock, randomized(), seed);
        let b = registry.breaker("random");
        (0..8)
            .map(|_| {
                trip(&b);
                let wait = open_wait(&clock, &b);
                b.reset();
                wait
            })
            .collect()
    };
    let first = waits(7);
    for wait in &first {
        assert!(
            (Duration::from_secs(5)..=Duration::from_secs(15)).contains(wait),
            "{wait:?} is not within 10 s +- 50 %"
        );
    }
    assert_eq!(first, waits(7), "the same seed draws the same waits");
    assert_ne!(first, waits(8), "another seed draws others");
    let distinct: std::collections::BTreeSet<_> = first.iter().collect();
    assert!(
        distinct.len() > 4,
        "the waits are drawn, not fixed: {first:?}"
    );
}
