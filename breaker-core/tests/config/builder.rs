//! Configuration: Resilience4j's defaults, and an error naming the key for every bad value.

use std::time::Duration;

use breaker_core::{Config, SlidingWindowType, State};

#[test]
fn defaults_are_resilience4j_defaults() {
    let c = Config::default();
    assert_eq!(c, Config::builder().build().unwrap());
    assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
    assert_eq!(c.sliding_window_size(), 100);
    assert_eq!(c.minimum_number_of_calls(), 100);
    assert_eq!(c.failure_rate_threshold(), 50.0);
    assert_eq!(c.slow_call_rate_threshold(), 100.0);
    assert_eq!(c.slow_call_duration_threshold(), Duration::from_secs(60));
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(60));
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 10);
    assert!(!c.automatic_transition_from_open_to_half_open_enabled());
    assert_eq!(c.max_wait_duration_in_half_open_state(), Duration::ZERO);
    assert_eq!(c.transition_to_state_after_wait_duration(), State::Open);
    assert_eq!(c.timeout_duration(), None);
}

#[test]
fn count_based_minimum_is_clamped_to_the_window_and_time_based_is_not() {
    let count = Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 5, 10)
        .build()
        .unwrap();
    assert_eq!(count.minimum_number_of_calls(), 5);
    // The order of the setters does not matter: the clamp happens at build.
    let count = Config::builder()
        .minimum_number_of_calls(10)
        .sliding_window_size(5)
        .build()
        .unwrap();
    assert_eq!(count.minimum_number_of_calls(), 5);
    let time = Config::builder()
        .sliding_window(SlidingWindowType::TimeBased, 5, 10)
        .build()
        .unwrap();
    assert_eq!(time.minimum_number_of_calls(), 10);
}

#[test]
fn every_bad_value_names_its_key_and_value() {
    let check = |result: Result<Config, breaker_core::ConfigError>, key: &str, value: &str| {
        let err = result.expect_err(key);
        assert_eq!(err.key(), key);
        assert_eq!(err.value(), value);
        let text = err.to_string();
        assert!(text.contains(key) && text.contains(value), "{text}");
    };
    let b = Config::builder;
    check(
        b().sliding_window_size(0).build(),
        "sliding-window-size",
        "0",
    );
    check(
        b().sliding_window(SlidingWindowType::TimeBased, 100_000, 1)
            .build(),
        "sliding-window-size",
        "100000",
    );
    check(
        b().minimum_number_of_calls(0).build(),
        "minimum-number-of-calls",
        "0",
    );
    check(
        b().failure_rate_threshold(0.0).build(),
        "failure-rate-threshold",
        "0",
    );
    check(
        b().failure_rate_threshold(100.5).build(),
        "failure-rate-threshold",
        "100.5",
    );
    check(
        b().failure_rate_threshold(f32::NAN).build(),
        "failure-rate-threshold",
        "NaN",
    );
    check(
        b().slow_call_rate_threshold(-1.0).build(),
        "slow-call-rate-threshold",
        "-1",
    );
    check(
        b().slow_call_duration_threshold(Duration::ZERO).build(),
        "slow-call-duration-threshold",
        "0s",
    );
    check(
        b().wait_duration_in_open_state(Duration::from_micros(10))
            .build(),
        "wait-duration-in-open-state",
        "10µs",
    );
    check(
        b().permitted_number_of_calls_in_half_open_state(0).build(),
        "permitted-number-of-calls-in-half-open-state",
        "0",
    );
    check(
        b().transition_to_state_after_wait_duration(State::HalfOpen)
            .build(),
        "transition-to-state-after-wait-duration",
        "HALF_OPEN",
    );
    check(
        b().timeout_duration(Some(Duration::ZERO)).build(),
        "timeout-duration",
        "0s",
    );
}

#[test]
fn a_base_config_can_be_overridden_per_instance() {
    let base = Config::builder().sliding_window_size(20).build().unwrap();
    let instance = base
        .to_builder()
        .failure_rate_threshold(25.0)
        .build()
        .unwrap();
    assert_eq!(instance.sliding_window_size(), 20);
    assert_eq!(instance.failure_rate_threshold(), 25.0);
    assert_eq!(
        instance.minimum_number_of_calls(),
        20,
        "clamped to the base's window"
    );
}

/// An error kind equals only itself and its clones (the same name and the same predicate), so
/// two configurations whose kinds share a name but test errors differently are different
/// configurations; its `Debug` text is its name.
#[test]
fn error_kinds_of_one_name_with_different_tests_differ() {
    use breaker_core::ErrorKind;
    let server = ErrorKind::new("ServerError", |status: &u16| *status >= 500);
    let any = ErrorKind::new("ServerError", |_: &u16| true);
    assert_eq!(server, server.clone());
    assert_ne!(server, any, "one name, another predicate");
    assert_eq!(format!("{server:?}"), r#"ErrorKind("ServerError")"#);
    let with = |kind: &ErrorKind| {
        Config::builder()
            .record_exceptions([kind.clone()])
            .build()
            .unwrap()
    };
    assert_eq!(with(&server), with(&server));
    assert_ne!(with(&server), with(&any));
}
