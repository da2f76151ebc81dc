//! The retry's configuration: its key table, with Spring's names (`resilience4j.retry.*`) and
//! Resilience4j's defaults, and the retry budget's keys, which are breaker's own.

use std::sync::Arc;
use std::time::Duration;

use super::error::ConfigError;
use super::table::{
    fits, ErrorKinds, Field, Limit, Pattern, TableKey, Value, ValueKind, MAX_EVENT_BUFFER_SIZE,
};
use super::wait::WaitInterval;
use crate::classify::{ConfiguredClassifier, ErrorKind};

/// The most attempts one call may make: far above any sensible retry count, low enough that a
/// typo is caught when the file loads.
pub(crate) const MAX_ATTEMPTS: u32 = 1_000;

/// The most retries per second a budget may allow whatever the traffic.
pub(crate) const MAX_BUDGET_FLOOR: u32 = 1_000_000;

/// Spring keys without a meaning here: accepted so a pasted Spring file loads, and ignored.
const IGNORED: &[&str] = &["writable-stack-trace-enabled"];

/// Spring keys with behaviour breaker does not have: an error that says what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "retry-exception-predicate",
        "breaker cannot load a Java predicate class: register an error kind in code \
         (RegistryBuilder::error_kind) and list it in retry-exceptions",
    ),
    (
        "result-predicate",
        "breaker cannot load a Java predicate class: give the result predicate in code",
    ),
    (
        "interval-function",
        "breaker cannot load a Java function class: use wait-duration with \
         enable-exponential-backoff and enable-randomized-wait",
    ),
    (
        "interval-bi-function",
        "breaker cannot load a Java function class: use wait-duration with \
         enable-exponential-backoff and enable-randomized-wait",
    ),
    (
        "consume-result-before-retry-attempt",
        "breaker cannot load a Java consumer class: handle a retried result in the code of the \
         attempt, or hear every retry with Retry::subscribe",
    ),
    (
        "max-retry-attempts",
        "this older Resilience4j key was replaced by max-attempts (the first call included)",
    ),
];

config_table! {
    /// The retry's configuration keys, spelled as in Spring's `resilience4j.retry.*`
    /// properties, and the retry budget's keys (`budget-*`, breaker's own).
    ///
    /// Each constant is one key's canonical (kebab-case) name. A configuration file may spell a
    /// key in any of Spring's relaxed forms (`maxAttempts`, `MAX_ATTEMPTS`, ...).
    pub mod keys;

    /// A validated retry configuration.
    ///
    /// Built with [`RetryConfig::builder`]; the defaults are Resilience4j's, and the budget is
    /// on. A value of this type has passed validation.
    #[derive(Clone, Debug, PartialEq)]
    pub struct RetryConfig;

    /// Builds a [`RetryConfig`]; [`RetryConfigBuilder::build`] checks every value.
    #[derive(Clone, Debug)]
    pub struct RetryConfigBuilder;

    /// A retry's configuration key.
    pub(crate) enum Key;

    spring: { root: "retry", ignored: IGNORED, unsupported: UNSUPPORTED }

    across: check_across;

    extra {}

    rows {
        /// Attempts in all, the first call included (default 3), from 1 to 1,000.
        MaxAttempts: max_attempts: u32 = 3, value {
            name: MAX_ATTEMPTS = "max-attempts",
            rule: Limit::Calls { max: Some(MAX_ATTEMPTS) },
        }
        /// The wait before the first retry, and before every retry without backoff (default
        /// 500 ms; 0 retries at once).
        WaitDuration: wait_duration: Duration = Duration::from_millis(500), value {
            name: WAIT_DURATION = "wait-duration",
            rule: Limit::None,
        }
        /// Each wait is `exponential-backoff-multiplier` times the one before, up to
        /// `exponential-max-wait-duration` (default false).
        EnableExponentialBackoff: enable_exponential_backoff: bool = false, value {
            name: ENABLE_EXPONENTIAL_BACKOFF = "enable-exponential-backoff",
            rule: Limit::None,
        }
        /// With exponential backoff: each wait over the one before (default 1.5, Resilience4j's
        /// `IntervalFunction.DEFAULT_MULTIPLIER`); greater than 0.
        ExponentialBackoffMultiplier: exponential_backoff_multiplier: f64 = 1.5, value {
            name: EXPONENTIAL_BACKOFF_MULTIPLIER = "exponential-backoff-multiplier",
            rule: Limit::Positive,
        }
        /// With exponential backoff: the longest wait, at least 1 ms (default none: no bound).
        ExponentialMaxWaitDuration: exponential_max_wait_duration: Option<Duration> = None, value {
            name: EXPONENTIAL_MAX_WAIT_DURATION = "exponential-max-wait-duration",
            rule: Limit::AtLeast(Duration::from_millis(1)),
        }
        /// Each wait is drawn at random within `randomized-wait-factor` of its length (default
        /// false).
        EnableRandomizedWait: enable_randomized_wait: bool = false, value {
            name: ENABLE_RANDOMIZED_WAIT = "enable-randomized-wait",
            rule: Limit::None,
        }
        /// With randomized waits: how far a wait may stray from its length, as a fraction of
        /// it, from 0 to 1 (default 0.5, Resilience4j's
        /// `IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR`).
        RandomizedWaitFactor: randomized_wait_factor: f64 = 0.5, value {
            name: RANDOMIZED_WAIT_FACTOR = "randomized-wait-factor",
            rule: Limit::Fraction,
        }
        /// Error kinds that are retried (default none): when set, only errors of these kinds
        /// are retried, as in Resilience4j; an empty list retries every error not ignored.
        RetryExceptions: retry_exceptions: Arc<[ErrorKind]> = Arc::from([]), kinds {
            name: RETRY_EXCEPTIONS = "retry-exceptions",
            rule: Limit::None,
        }
        /// Error kinds that are never retried (default none); an error in both lists is not
        /// retried.
        IgnoreExceptions: ignore_exceptions: Arc<[ErrorKind]> = Arc::from([]), kinds {
            name: IGNORE_EXCEPTIONS = "ignore-exceptions",
            rule: Limit::None,
        }
        /// When the attempts run out on a result the result predicate retries, end with an
        /// error rather than that result (default false: the last result is returned).
        FailAfterMaxAttempts: fail_after_max_attempts: bool = false, value {
            name: FAIL_AFTER_MAX_ATTEMPTS = "fail-after-max-attempts",
            rule: Limit::None,
        }
        /// Recent events the operations surface keeps for this retry (feature `admin`;
        /// default 100; 0 keeps none), up to 100,000.
        EventConsumerBufferSize: event_consumer_buffer_size: u32 = 100, value {
            name: EVENT_CONSUMER_BUFFER_SIZE = "event-consumer-buffer-size",
            rule: Limit::Events { max: MAX_EVENT_BUFFER_SIZE },
        }
        /// breaker's own: retries are allowed only within the budget below (default true).
        /// With it off, every failed attempt is retried up to `max-attempts`, as in
        /// Resilience4j.
        BudgetEnabled: budget_enabled: bool = true, value {
            name: BUDGET_ENABLED = "budget-enabled",
            rule: Limit::None,
        }
        /// breaker's own: the retries allowed per call over `budget-window` (default 0.2: one
        /// retry for every five calls), greater than 0.
        BudgetRatio: budget_ratio: f64 = 0.2, value {
            name: BUDGET_RATIO = "budget-ratio",
            rule: Limit::Positive,
        }
        /// breaker's own: how far back the budget counts calls and retries (default 10 s), at
        /// least 1 s.
        BudgetWindow: budget_window: Duration = Duration::from_secs(10), value {
            name: BUDGET_WINDOW = "budget-window",
            rule: Limit::AtLeast(Duration::from_secs(1)),
        }
        /// breaker's own: retries per second allowed whatever the traffic (default 10), so a
        /// function called rarely can still retry; 0 to 1,000,000.
        BudgetMinRetriesPerSecond: budget_min_retries_per_second: u32 = 10, value {
            name: BUDGET_MIN_RETRIES_PER_SECOND = "budget-min-retries-per-second",
            rule: Limit::Events { max: MAX_BUDGET_FLOOR },
        }
    }
}

impl RetryConfig {
    /// The wait before each retry, from `wait-duration` and the backoff keys: fixed unless
    /// `enable-exponential-backoff` or `enable-randomized-wait` is set. The same
    /// [`WaitInterval`] as the breaker's OPEN wait; attempt `n` (from 1: the wait after the
    /// first attempt failed) waits `wait(n, ..)`, as Resilience4j's `IntervalFunction`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_core::{RetryConfig, WaitInterval};
    ///
    /// let config = RetryConfig::builder()
    ///     .wait_duration(Duration::from_millis(100))
    ///     .enable_exponential_backoff(true)
    ///     .exponential_backoff_multiplier(2.0)
    ///     .build()?;
    /// let interval = config.wait_interval();
    /// assert_eq!(interval.wait(1, 0.0), Duration::from_millis(100));
    /// assert_eq!(interval.wait(3, 0.0), Duration::from_millis(400));
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn wait_interval(&self) -> WaitInterval {
        WaitInterval::from_keys(
            self.wait_duration,
            self.enable_exponential_backoff.then_some((
                self.exponential_backoff_multiplier,
                self.exponential_max_wait_duration,
            )),
            self.enable_randomized_wait
                .then_some(self.randomized_wait_factor),
        )
    }

    /// A [`Classify`](crate::Classify) that applies `retry-exceptions` and
    /// `ignore-exceptions` to an attempt's error: an ignored kind ends the call, and with a
    /// `retry-exceptions` list only its kinds are retried (a failure); otherwise every error
    /// is retried. Use [`ConfiguredClassifier::with_code`] to add a result predicate written
    /// in code.
    pub fn classifier(&self) -> ConfiguredClassifier<'_> {
        ConfiguredClassifier::new(&self.retry_exceptions, &self.ignore_exceptions)
    }

    /// The retry's keys have no checks across each other.
    fn check_across(&mut self) -> Result<(), ConfigError> {
        Ok(())
    }
}
