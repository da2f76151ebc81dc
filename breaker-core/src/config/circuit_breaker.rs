//! The circuit breaker's configuration: its key table (one row per key, with Spring's names
//! and Resilience4j's defaults) and what a config gives beyond its keys (the wait of each
//! OPEN, the classifier of the configured error kinds).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::error::ConfigError;
use super::table::{
    fits, ErrorKinds, Field, Limit, Pattern, TableKey, Value, ValueKind, MAX_COUNT_WINDOW_SIZE,
    MAX_EVENT_BUFFER_SIZE, MAX_HALF_OPEN_PERMITS, MAX_TIME_WINDOW_SECONDS,
};
use super::wait::WaitInterval;
use super::window_type::SlidingWindowType;
use crate::classify::{classify_call, Classify, ConfiguredClassifier, ErrorKind, Outcome};
use crate::state::State;

/// Spring keys without a meaning here (stack traces of Java exceptions): accepted so a pasted
/// Spring file loads, and ignored.
const IGNORED: &[&str] = &["writable-stack-trace-enabled"];

/// Spring keys with behaviour breaker does not have: an error that says what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "record-failure-predicate",
        "breaker cannot load a Java predicate class: register an error kind in code \
         (RegistryBuilder::error_kind) and list it in record-exceptions",
    ),
    (
        "ignore-exception-predicate",
        "breaker cannot load a Java predicate class: register an error kind in code \
         (RegistryBuilder::error_kind) and list it in ignore-exceptions",
    ),
    (
        "record-result-predicate",
        "breaker cannot load a Java predicate class: classify Ok values in code \
         (the attribute's `result = ...` or Classifier::result)",
    ),
    (
        "initial-state",
        "breakers start CLOSED; move one by hand with transition_to_* after creating it",
    ),
    (
        "ignore-class-binding-exceptions",
        "an unknown error kind is always an error in breaker",
    ),
    (
        "ring-buffer-size-in-closed-state",
        "this Resilience4j 1.x key was replaced by sliding-window-size",
    ),
    (
        "ring-buffer-size-in-half-open-state",
        "this Resilience4j 1.x key was replaced by permitted-number-of-calls-in-half-open-state",
    ),
];

config_table! {
    /// The configuration keys, spelled as in Spring's `resilience4j.circuitbreaker.*`
    /// properties.
    ///
    /// Each constant is one key's canonical (kebab-case) name. A configuration file may spell a
    /// key in any of Spring's relaxed forms (`slidingWindowSize`, `SLIDING_WINDOW_SIZE`, ...).
    pub mod keys;

    /// A validated breaker configuration.
    ///
    /// Built with [`Config::builder`]; the defaults are Resilience4j's. A `Config` is
    /// immutable: a value of this type has passed validation.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Config;

    /// Builds a [`Config`]; [`ConfigBuilder::build`] checks every value.
    #[derive(Clone, Debug)]
    pub struct ConfigBuilder;

    /// A circuit breaker's configuration key.
    pub(crate) enum Key;

    spring: { root: "circuitbreaker", ignored: IGNORED, unsupported: UNSUPPORTED }

    across: check_across;

    extra {
        // Whether CLOSED may record without the lock (count windows up to 2,047 calls). Only
        // tests turn it off (`testing::lock_free_window`), to compare the two paths.
        lock_free_window: TestKnob<bool> = TestKnob(true),
    }

    rows {
        /// `COUNT_BASED` or `TIME_BASED` (default `COUNT_BASED`).
        SlidingWindowType: sliding_window_type: SlidingWindowType = SlidingWindowType::CountBased, value {
            name: SLIDING_WINDOW_TYPE = "sliding-window-type",
            rule: Limit::None,
        }
        /// Calls (count-based) or seconds (time-based) in the window (default 100); at
        /// least 1.
        SlidingWindowSize: sliding_window_size: u32 = 100, value {
            name: SLIDING_WINDOW_SIZE = "sliding-window-size",
            rule: Limit::WindowSize {
                calls: MAX_COUNT_WINDOW_SIZE,
                seconds: MAX_TIME_WINDOW_SECONDS,
            },
        }
        /// Calls in the window before any rate is computed (default 100); at least 1. For a
        /// count-based window, `build` clamps it to the window size, as Resilience4j's builder
        /// does.
        MinimumNumberOfCalls: minimum_number_of_calls: u32 = 100, value {
            name: MINIMUM_NUMBER_OF_CALLS = "minimum-number-of-calls",
            rule: Limit::Calls { max: None },
        }
        /// Failure percentage that opens the breaker (default 50), in (0, 100].
        FailureRateThreshold: failure_rate_threshold: f32 = 50.0, value {
            name: FAILURE_RATE_THRESHOLD = "failure-rate-threshold",
            rule: Limit::Percent,
        }
        /// Slow-call percentage that opens the breaker (default 100), in (0, 100].
        SlowCallRateThreshold: slow_call_rate_threshold: f32 = 100.0, value {
            name: SLOW_CALL_RATE_THRESHOLD = "slow-call-rate-threshold",
            rule: Limit::Percent,
        }
        /// Calls longer than this are slow (default 60 s); at least 1 ns.
        SlowCallDurationThreshold: slow_call_duration_threshold: Duration = Duration::from_secs(60), value {
            name: SLOW_CALL_DURATION_THRESHOLD = "slow-call-duration-threshold",
            rule: Limit::NonZero { unset: None },
        }
        /// How long OPEN lasts, or the first OPEN with backoff (default 60 s); at least 1 ms.
        /// [`Config::wait_interval`](crate::Config::wait_interval) says how the waits that follow are computed.
        WaitDurationInOpenState: wait_duration_in_open_state: Duration = Duration::from_secs(60), value {
            name: WAIT_DURATION_IN_OPEN_STATE = "wait-duration-in-open-state",
            rule: Limit::AtLeast(Duration::from_millis(1)),
        }
        /// Trial calls in HALF_OPEN (default 10); at least 1.
        PermittedNumberOfCallsInHalfOpenState: permitted_number_of_calls_in_half_open_state: u32 = 10, value {
            name: PERMITTED_NUMBER_OF_CALLS_IN_HALF_OPEN_STATE =
                "permitted-number-of-calls-in-half-open-state",
            rule: Limit::Calls { max: Some(MAX_HALF_OPEN_PERMITS) },
        }
        /// OPEN -> HALF_OPEN by a timer rather than by the first call after the wait (default
        /// false).
        AutomaticTransitionFromOpenToHalfOpenEnabled: automatic_transition_from_open_to_half_open_enabled: bool = false, value {
            name: AUTOMATIC_TRANSITION_FROM_OPEN_TO_HALF_OPEN_ENABLED =
                "automatic-transition-from-open-to-half-open-enabled",
            rule: Limit::None,
        }
        /// How long HALF_OPEN waits for its trials (default 0: wait for them forever).
        MaxWaitDurationInHalfOpenState: max_wait_duration_in_half_open_state: Duration = Duration::ZERO, value {
            name: MAX_WAIT_DURATION_IN_HALF_OPEN_STATE = "max-wait-duration-in-half-open-state",
            rule: Limit::None,
        }
        /// Where the half-open max wait goes: [`State::Open`](crate::State::Open) (the default) or
        /// [`State::Closed`](crate::State::Closed).
        TransitionToStateAfterWaitDuration: transition_to_state_after_wait_duration: State = State::Open, value {
            name: TRANSITION_TO_STATE_AFTER_WAIT_DURATION = "transition-to-state-after-wait-duration",
            rule: Limit::OpenOrClosed,
        }
        /// An async call (`CircuitBreaker::call`) running longer than this is cancelled,
        /// recorded as a failure and ends with `CallError::TimedOut` (default none: never). It
        /// needs a Tokio runtime with time enabled; synchronous calls cannot be cancelled and
        /// ignore it.
        TimeoutDuration: timeout_duration: Option<Duration> = None, value {
            name: TIMEOUT_DURATION = "timeout-duration",
            rule: Limit::NonZero { unset: Some("leave it out for no timeout") },
        }
        /// Error kinds that count as failures (default none): when set, only errors of these
        /// kinds are failures and every other error (not ignored) is a success, as in
        /// Resilience4j; an empty list records every error.
        RecordExceptions: record_exceptions: Arc<[ErrorKind]> = Arc::from([]), kinds {
            name: RECORD_EXCEPTIONS = "record-exceptions",
            rule: Limit::None,
        }
        /// Error kinds that count as neither success nor failure (default none). An error that
        /// is both recorded and ignored is ignored.
        IgnoreExceptions: ignore_exceptions: Arc<[ErrorKind]> = Arc::from([]), kinds {
            name: IGNORE_EXCEPTIONS = "ignore-exceptions",
            rule: Limit::None,
        }
        /// Each OPEN waits `exponential-backoff-multiplier` times as long as the one before, up
        /// to `exponential-max-wait-duration-in-open-state` (default false).
        EnableExponentialBackoff: enable_exponential_backoff: bool = false, value {
            name: ENABLE_EXPONENTIAL_BACKOFF = "enable-exponential-backoff",
            rule: Limit::None,
        }
        /// With exponential backoff: each wait over the one before (default 1.5, Resilience4j's
        /// `IntervalFunction.DEFAULT_MULTIPLIER`); greater than 0 (below 1, waits shrink).
        ExponentialBackoffMultiplier: exponential_backoff_multiplier: f64 = 1.5, value {
            name: EXPONENTIAL_BACKOFF_MULTIPLIER = "exponential-backoff-multiplier",
            rule: Limit::Positive,
        }
        /// With exponential backoff: the longest wait in OPEN, at least 1 ms (default none: no
        /// bound).
        ExponentialMaxWaitDurationInOpenState: exponential_max_wait_duration_in_open_state: Option<Duration> = None, value {
            name: EXPONENTIAL_MAX_WAIT_DURATION_IN_OPEN_STATE =
                "exponential-max-wait-duration-in-open-state",
            rule: Limit::AtLeast(Duration::from_millis(1)),
        }
        /// Each wait in OPEN is drawn at random within `randomized-wait-factor` of its length
        /// (default false).
        EnableRandomizedWait: enable_randomized_wait: bool = false, value {
            name: ENABLE_RANDOMIZED_WAIT = "enable-randomized-wait",
            rule: Limit::None,
        }
        /// With randomized waits: how far a wait may stray from its length, as a fraction of
        /// it, from 0 (no randomizing) to 1 (from no wait to twice the wait) (default 0.5,
        /// Resilience4j's `IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR`).
        RandomizedWaitFactor: randomized_wait_factor: f64 = 0.5, value {
            name: RANDOMIZED_WAIT_FACTOR = "randomized-wait-factor",
            rule: Limit::Fraction,
        }
        /// The operations surface's health endpoint reports this breaker (feature `admin`;
        /// default false).
        RegisterHealthIndicator: register_health_indicator: bool = false, value {
            name: REGISTER_HEALTH_INDICATOR = "register-health-indicator",
            rule: Limit::None,
        }
        /// In the health endpoint, this breaker OPEN makes the service DOWN; otherwise it is
        /// shown as `CIRCUIT_OPEN` and the service stays UP (default false).
        AllowHealthIndicatorToFail: allow_health_indicator_to_fail: bool = false, value {
            name: ALLOW_HEALTH_INDICATOR_TO_FAIL = "allow-health-indicator-to-fail",
            rule: Limit::None,
        }
        /// Recent events the operations surface keeps for this breaker (feature `admin`;
        /// default 100; 0 keeps none), up to 100,000.
        EventConsumerBufferSize: event_consumer_buffer_size: u32 = 100, value {
            name: EVENT_CONSUMER_BUFFER_SIZE = "event-consumer-buffer-size",
            rule: Limit::Events { max: MAX_EVENT_BUFFER_SIZE },
        }
    }
}

/// A setting that only tests change and that takes no part in `Config`'s equality: the two
/// paths it chooses between behave alike, so two configs that differ only in it are equal.
#[derive(Clone, Copy)]
struct TestKnob<T>(T);

impl<T> PartialEq for TestKnob<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T: fmt::Debug> fmt::Debug for TestKnob<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Config {
    /// The checks across keys, which [`ConfigBuilder::build`] runs before each key's own
    /// rule: the window size's bound depends on the window type, and a count-based window's
    /// minimum number of calls is clamped to its size.
    fn check_across(&mut self) -> Result<(), ConfigError> {
        let window = self.sliding_window_type;
        Key::SlidingWindowSize.limit().check_window_size(
            keys::SLIDING_WINDOW_SIZE,
            self.sliding_window_size,
            window,
        )?;
        if window == SlidingWindowType::CountBased {
            self.minimum_number_of_calls =
                self.minimum_number_of_calls.min(self.sliding_window_size);
        }
        Ok(())
    }

    /// Whether CLOSED may record without the lock where the window allows it (tests turn it
    /// off to compare the two paths).
    pub(crate) fn lock_free_window(&self) -> bool {
        self.lock_free_window.0
    }

    /// How long each OPEN lasts, from `wait-duration-in-open-state` and the backoff keys:
    /// fixed unless `enable-exponential-backoff` or `enable-randomized-wait` is set.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_core::{Config, WaitInterval};
    ///
    /// let config = Config::builder()
    ///     .wait_duration_in_open_state(Duration::from_secs(10))
    ///     .enable_exponential_backoff(true)
    ///     .exponential_backoff_multiplier(2.0)
    ///     .exponential_max_wait_duration_in_open_state(Some(Duration::from_secs(300)))
    ///     .build()?;
    /// assert_eq!(
    ///     config.wait_interval(),
    ///     WaitInterval::Exponential {
    ///         initial: Duration::from_secs(10),
    ///         multiplier: 2.0,
    ///         max: Some(Duration::from_secs(300)),
    ///     }
    /// );
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn wait_interval(&self) -> WaitInterval {
        WaitInterval::from_keys(
            self.wait_duration_in_open_state,
            self.enable_exponential_backoff.then_some((
                self.exponential_backoff_multiplier,
                self.exponential_max_wait_duration_in_open_state,
            )),
            self.enable_randomized_wait
                .then_some(self.randomized_wait_factor),
        )
    }

    /// Whether `record-exceptions` or `ignore-exceptions` name any error kind.
    pub fn has_error_kinds(&self) -> bool {
        !self.record_exceptions.is_empty() || !self.ignore_exceptions.is_empty()
    }

    /// A [`Classify`](crate::Classify) that applies `record-exceptions` and `ignore-exceptions` to a call's error,
    /// and otherwise records every error as a failure. Use
    /// [`ConfiguredClassifier::with_code`] to combine it with a classification written in code.
    ///
    /// ```
    /// use breaker_core::{Classify, Config, ErrorKind, Outcome};
    ///
    /// #[derive(Debug)]
    /// struct Http(u16);
    /// let client_error = ErrorKind::new("ClientError", |e: &Http| (400..500).contains(&e.0));
    /// let config = Config::builder().ignore_exceptions([client_error]).build()?;
    /// let classify = config.classifier();
    /// assert_eq!(classify.classify(&Err::<(), _>(Http(404))), Outcome::Ignored);
    /// assert_eq!(classify.classify(&Err::<(), _>(Http(503))), Outcome::Failure);
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn classifier(&self) -> ConfiguredClassifier<'_> {
        ConfiguredClassifier::new(&self.record_exceptions, &self.ignore_exceptions)
    }

    /// How a call's `result` counts on every call path: `code`'s classification with this
    /// config's `record-exceptions` and `ignore-exceptions` on top (an `Ok` is `code`'s alone).
    #[inline]
    pub(crate) fn classify<T, E, C>(&self, code: &C, result: &Result<T, E>) -> Outcome
    where
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        classify_call(
            &self.record_exceptions,
            &self.ignore_exceptions,
            code,
            result,
        )
    }
}

impl ConfigBuilder {
    /// Window type, size and minimum at once, as Resilience4j's `slidingWindow(...)`.
    pub fn sliding_window(self, kind: SlidingWindowType, size: u32, minimum: u32) -> Self {
        self.sliding_window_type(kind)
            .sliding_window_size(size)
            .minimum_number_of_calls(minimum)
    }

    /// For tests: whether CLOSED may record without the lock (see `testing::lock_free_window`).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn lock_free_window(mut self, enabled: bool) -> Self {
        self.config.lock_free_window = TestKnob(enabled);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::table::MAX_DURATION;

    #[test]
    fn names_are_kebab_case_and_distinct() {
        for (i, key) in Key::ALL.iter().enumerate() {
            let name = key.name();
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name}"
            );
            assert!(
                Key::ALL[..i].iter().all(|k| k.name() != name),
                "{name} twice"
            );
        }
    }

    #[test]
    fn all_lists_every_key_once_in_order() {
        for (i, key) in Key::ALL.iter().enumerate() {
            assert_eq!(*key as usize, i, "{key:?}");
            assert_eq!(keys::ALL[i], key.name());
        }
    }

    #[test]
    fn too_large_values_are_told_the_largest() {
        assert_eq!(
            Key::SlidingWindowSize
                .limit()
                .largest(Key::SlidingWindowSize.value_kind()),
            "a whole number from 1 to 10000000 (COUNT_BASED) or to 86400 (TIME_BASED)"
        );
        assert_eq!(
            Key::MinimumNumberOfCalls
                .limit()
                .largest(Key::MinimumNumberOfCalls.value_kind()),
            "a whole number of calls from 1 to 4294967295"
        );
        assert_eq!(
            Key::TimeoutDuration
                .limit()
                .largest(Key::TimeoutDuration.value_kind()),
            "a duration of at most 36500d (100 years)"
        );
        // Today plus the longest duration fits the breaker's u64 nanosecond timestamps for
        // centuries to come.
        let now_2100 = u64::try_from(Duration::from_secs(130 * 365 * 86_400).as_nanos()).unwrap();
        assert!(now_2100
            .checked_add(u64::try_from(MAX_DURATION.as_nanos()).unwrap())
            .is_some());
    }

    #[test]
    fn limits_write_their_bounds() {
        let count = SlidingWindowType::CountBased;
        let time = SlidingWindowType::TimeBased;
        assert_eq!(
            Key::SlidingWindowSize.limit().expected(count),
            "a whole number of calls from 1 to 10000000 (COUNT_BASED)"
        );
        assert_eq!(
            Key::SlidingWindowSize.limit().expected(time),
            "a whole number of seconds from 1 to 86400 (TIME_BASED)"
        );
        assert_eq!(
            Key::PermittedNumberOfCallsInHalfOpenState
                .limit()
                .expected(count),
            "a whole number of calls from 1 to 10000000"
        );
        assert_eq!(
            Key::WaitDurationInOpenState.limit().expected(count),
            "a duration of at least 1ms"
        );
        assert_eq!(
            Key::TimeoutDuration.limit().expected(count),
            "a duration longer than zero (leave it out for no timeout)"
        );
        assert_eq!(
            Key::TransitionToStateAfterWaitDuration
                .limit()
                .expected(count),
            "OPEN or CLOSED"
        );
        assert_eq!(
            Key::ExponentialBackoffMultiplier.limit().expected(count),
            "a number greater than 0"
        );
        assert_eq!(
            Key::RandomizedWaitFactor.limit().expected(count),
            "a number from 0 to 1"
        );
        assert_eq!(
            Key::ExponentialMaxWaitDurationInOpenState
                .limit()
                .expected(count),
            "a duration of at least 1ms"
        );
    }

    #[test]
    fn checks_take_the_bounds_from_the_row() {
        let count = SlidingWindowType::CountBased;
        let time = SlidingWindowType::TimeBased;
        let size = |n: u32, window| {
            Key::SlidingWindowSize
                .limit()
                .check_window_size(keys::SLIDING_WINDOW_SIZE, n, window)
        };
        assert!(size(MAX_COUNT_WINDOW_SIZE, count).is_ok());
        assert!(size(MAX_COUNT_WINDOW_SIZE + 1, count).is_err());
        assert!(size(MAX_TIME_WINDOW_SECONDS, time).is_ok());
        assert!(size(MAX_TIME_WINDOW_SECONDS + 1, time).is_err());
        assert!(size(0, count).is_err());
        // The row's own check leaves the window size to the check across keys.
        assert!(Key::SlidingWindowSize
            .limit()
            .check(keys::SLIDING_WINDOW_SIZE, &Value::Count(0))
            .is_ok());
        let permits = Key::PermittedNumberOfCallsInHalfOpenState;
        assert!(permits
            .limit()
            .check(permits.name(), &Value::Count(MAX_HALF_OPEN_PERMITS))
            .is_ok());
        assert!(permits
            .limit()
            .check(permits.name(), &Value::Count(MAX_HALF_OPEN_PERMITS + 1))
            .is_err());
        let minimum = Key::MinimumNumberOfCalls;
        assert!(minimum
            .limit()
            .check(minimum.name(), &Value::Count(u32::MAX))
            .is_ok());
        let multiplier = Key::ExponentialBackoffMultiplier;
        for ok in [0.5, 1.0, 1.5, 1e9] {
            assert!(
                multiplier
                    .limit()
                    .check(multiplier.name(), &Value::Decimal(ok))
                    .is_ok(),
                "{ok}"
            );
        }
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                multiplier
                    .limit()
                    .check(multiplier.name(), &Value::Decimal(bad))
                    .is_err(),
                "{bad}"
            );
        }
        let factor = Key::RandomizedWaitFactor;
        for ok in [0.0, 0.5, 1.0] {
            assert!(
                factor
                    .limit()
                    .check(factor.name(), &Value::Decimal(ok))
                    .is_ok(),
                "{ok}"
            );
        }
        for bad in [-0.001, 1.001, f64::NAN] {
            assert!(
                factor
                    .limit()
                    .check(factor.name(), &Value::Decimal(bad))
                    .is_err(),
                "{bad}"
            );
        }
        // Every duration key, whatever its own limit, stops at MAX_DURATION.
        for key in Key::ALL
            .into_iter()
            .filter(|k| k.value_kind() == ValueKind::Duration)
        {
            assert!(key
                .limit()
                .check(key.name(), &Value::Duration(MAX_DURATION))
                .is_ok());
            let err = key
                .limit()
                .check(
                    key.name(),
                    &Value::Duration(MAX_DURATION + Duration::from_nanos(1)),
                )
                .unwrap_err();
            assert_eq!(err.key(), key.name());
            assert_eq!(err.expected(), "a duration of at most 36500d (100 years)");
        }
        let err = Key::WaitDurationInOpenState
            .limit()
            .check(
                keys::WAIT_DURATION_IN_OPEN_STATE,
                &Value::Duration(Duration::from_micros(999)),
            )
            .unwrap_err();
        assert_eq!(
            (err.key(), err.value(), err.expected()),
            (
                "wait-duration-in-open-state",
                "999µs",
                "a duration of at least 1ms"
            )
        );
    }

    #[test]
    fn the_wait_interval_follows_the_backoff_keys() {
        let ten = Duration::from_secs(10);
        let base = Config::builder().wait_duration_in_open_state(ten);
        assert_eq!(
            Config::default().wait_interval(),
            WaitInterval::Fixed {
                wait: Duration::from_secs(60)
            }
        );
        let exponential = base
            .clone()
            .enable_exponential_backoff(true)
            .build()
            .unwrap();
        assert_eq!(
            exponential.wait_interval(),
            WaitInterval::Exponential {
                initial: ten,
                multiplier: 1.5,
                max: None
            }
        );
        let randomized = base
            .clone()
            .enable_randomized_wait(true)
            .randomized_wait_factor(1.0)
            .build()
            .unwrap();
        assert_eq!(
            randomized.wait_interval(),
            WaitInterval::Randomized {
                wait: ten,
                factor: 1.0
            }
        );
        assert_eq!(randomized.wait_interval().base(), ten);
        let both = base
            .clone()
            .enable_exponential_backoff(true)
            .enable_randomized_wait(true)
            .exponential_max_wait_duration_in_open_state(Some(Duration::from_secs(100)))
            .build()
            .unwrap();
        assert_eq!(
            both.wait_interval(),
            WaitInterval::ExponentialRandomized {
                initial: ten,
                multiplier: 1.5,
                factor: 0.5,
                max: Some(Duration::from_secs(100)),
            }
        );
        // The keys stay what they were set to, and take part in equality.
        assert_ne!(exponential, Config::default());
        assert_eq!(exponential.to_builder().build().unwrap(), exponential);
    }

    #[test]
    fn backoff_values_are_checked_as_resilience4j_checks_them() {
        let err = |b: ConfigBuilder| b.build().unwrap_err();
        let e = err(Config::builder().exponential_backoff_multiplier(0.0));
        assert_eq!(
            (e.key(), e.expected()),
            ("exponential-backoff-multiplier", "a number greater than 0")
        );
        let e = err(Config::builder().randomized_wait_factor(1.5));
        assert_eq!(
            (e.key(), e.expected()),
            ("randomized-wait-factor", "a number from 0 to 1")
        );
        let e = err(Config::builder()
            .exponential_max_wait_duration_in_open_state(Some(Duration::from_micros(10))));
        assert_eq!(e.key(), "exponential-max-wait-duration-in-open-state");
        assert!(Config::builder()
            .exponential_backoff_multiplier(0.5)
            .randomized_wait_factor(0.0)
            .exponential_max_wait_duration_in_open_state(Some(Duration::from_millis(1)))
            .build()
            .is_ok());
    }

    #[test]
    fn the_lock_free_window_knob_takes_no_part_in_equality() {
        let locked = Config::builder().lock_free_window(false).build().unwrap();
        assert!(!locked.lock_free_window());
        assert_eq!(locked, Config::default());
        assert_eq!(
            format!("{locked:?}"),
            format!("{:?}", Config::default())
                .replace("lock_free_window: true", "lock_free_window: false")
        );
    }
}
