//! A breaker's configuration, with Spring's key names and Resilience4j's defaults.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::classify::{ConfiguredClassifier, ErrorKind};
use crate::state::State;

mod error;
pub(crate) mod file;

pub use error::ConfigError;

/// The name of the shared config that every breaker without one of its own uses.
pub const DEFAULT_CONFIG: &str = "default";

/// How the sliding window that computes the rates in CLOSED is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SlidingWindowType {
    /// The last `sliding-window-size` calls.
    #[default]
    CountBased,
    /// The calls of the last `sliding-window-size` seconds, bucketed by whole epoch second.
    TimeBased,
}

impl SlidingWindowType {
    /// The spelling used in configuration files: `COUNT_BASED` or `TIME_BASED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SlidingWindowType::CountBased => "COUNT_BASED",
            SlidingWindowType::TimeBased => "TIME_BASED",
        }
    }
}

impl fmt::Display for SlidingWindowType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The configuration keys, spelled as in Spring's `resilience4j.circuitbreaker.*` properties.
pub mod keys {
    /// `COUNT_BASED` or `TIME_BASED`.
    pub const SLIDING_WINDOW_TYPE: &str = "sliding-window-type";
    /// Calls (count-based) or seconds (time-based) in the window.
    pub const SLIDING_WINDOW_SIZE: &str = "sliding-window-size";
    /// Calls in the window before any rate is computed.
    pub const MINIMUM_NUMBER_OF_CALLS: &str = "minimum-number-of-calls";
    /// Failure percentage that opens the breaker.
    pub const FAILURE_RATE_THRESHOLD: &str = "failure-rate-threshold";
    /// Slow-call percentage that opens the breaker.
    pub const SLOW_CALL_RATE_THRESHOLD: &str = "slow-call-rate-threshold";
    /// Calls longer than this are slow.
    pub const SLOW_CALL_DURATION_THRESHOLD: &str = "slow-call-duration-threshold";
    /// How long OPEN lasts.
    pub const WAIT_DURATION_IN_OPEN_STATE: &str = "wait-duration-in-open-state";
    /// Trial calls in HALF_OPEN.
    pub const PERMITTED_NUMBER_OF_CALLS_IN_HALF_OPEN_STATE: &str =
        "permitted-number-of-calls-in-half-open-state";
    /// OPEN -> HALF_OPEN by a timer rather than by the first call after the wait.
    pub const AUTOMATIC_TRANSITION_FROM_OPEN_TO_HALF_OPEN_ENABLED: &str =
        "automatic-transition-from-open-to-half-open-enabled";
    /// How long HALF_OPEN waits for its trials (0: forever).
    pub const MAX_WAIT_DURATION_IN_HALF_OPEN_STATE: &str = "max-wait-duration-in-half-open-state";
    /// Where the half-open max wait goes: `OPEN` or `CLOSED`.
    pub const TRANSITION_TO_STATE_AFTER_WAIT_DURATION: &str =
        "transition-to-state-after-wait-duration";
    /// An async call running longer than this is cancelled and recorded as a failure.
    pub const TIMEOUT_DURATION: &str = "timeout-duration";
    /// Error kinds that count as failures; when set, other errors count as successes.
    pub const RECORD_EXCEPTIONS: &str = "record-exceptions";
    /// Error kinds that count as neither success nor failure.
    pub const IGNORE_EXCEPTIONS: &str = "ignore-exceptions";
    /// In a configuration file: the shared config an entry starts from.
    pub const BASE_CONFIG: &str = "base-config";
}

/// Largest `sliding-window-size` accepted for a count-based window (one byte per call).
pub(crate) const MAX_COUNT_WINDOW_SIZE: u32 = 10_000_000;
/// Largest `sliding-window-size` accepted for a time-based window: one day of seconds.
pub(crate) const MAX_TIME_WINDOW_SECONDS: u32 = 86_400;
/// Largest `permitted-number-of-calls-in-half-open-state` accepted.
pub(crate) const MAX_HALF_OPEN_PERMITS: u32 = 10_000_000;

/// A validated breaker configuration.
///
/// Built with [`Config::builder`]; the defaults are Resilience4j's. A `Config` is immutable:
/// a value of this type has passed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    sliding_window_type: SlidingWindowType,
    sliding_window_size: u32,
    minimum_number_of_calls: u32,
    failure_rate_threshold: f32,
    slow_call_rate_threshold: f32,
    slow_call_duration_threshold: Duration,
    wait_duration_in_open_state: Duration,
    permitted_number_of_calls_in_half_open_state: u32,
    automatic_transition_from_open_to_half_open_enabled: bool,
    max_wait_duration_in_half_open_state: Duration,
    transition_to_state_after_wait_duration: State,
    timeout_duration: Option<Duration>,
    record_exceptions: Arc<[ErrorKind]>,
    ignore_exceptions: Arc<[ErrorKind]>,
    /// Whether CLOSED may record without the lock (count windows up to 2,047 calls). Only
    /// tests turn it off, to compare the two paths.
    lock_free_window: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            minimum_number_of_calls: 100,
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: Duration::from_secs(60),
            wait_duration_in_open_state: Duration::from_secs(60),
            permitted_number_of_calls_in_half_open_state: 10,
            automatic_transition_from_open_to_half_open_enabled: false,
            max_wait_duration_in_half_open_state: Duration::ZERO,
            transition_to_state_after_wait_duration: State::Open,
            timeout_duration: None,
            record_exceptions: Arc::from([]),
            ignore_exceptions: Arc::from([]),
            lock_free_window: true,
        }
    }
}

impl Config {
    /// A builder starting from Resilience4j's defaults.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder {
            config: Config::default(),
            minimum_number_of_calls: 100,
        }
    }

    /// A builder starting from this configuration (a base config with per-instance overrides).
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder {
            config: self.clone(),
            minimum_number_of_calls: self.minimum_number_of_calls,
        }
    }

    /// `sliding-window-type` (default `COUNT_BASED`).
    pub fn sliding_window_type(&self) -> SlidingWindowType {
        self.sliding_window_type
    }
    pub(crate) fn lock_free_window(&self) -> bool {
        self.lock_free_window
    }

    /// `sliding-window-size`: calls or seconds (default 100).
    pub fn sliding_window_size(&self) -> u32 {
        self.sliding_window_size
    }
    /// `minimum-number-of-calls` (default 100). For a count-based window this is already
    /// clamped to the window size, as Resilience4j's builder does.
    pub fn minimum_number_of_calls(&self) -> u32 {
        self.minimum_number_of_calls
    }
    /// `failure-rate-threshold` in percent (default 50).
    pub fn failure_rate_threshold(&self) -> f32 {
        self.failure_rate_threshold
    }
    /// `slow-call-rate-threshold` in percent (default 100).
    pub fn slow_call_rate_threshold(&self) -> f32 {
        self.slow_call_rate_threshold
    }
    /// `slow-call-duration-threshold` (default 60 s); a call longer than this is slow.
    pub fn slow_call_duration_threshold(&self) -> Duration {
        self.slow_call_duration_threshold
    }
    /// `wait-duration-in-open-state` (default 60 s).
    pub fn wait_duration_in_open_state(&self) -> Duration {
        self.wait_duration_in_open_state
    }
    /// `permitted-number-of-calls-in-half-open-state` (default 10).
    pub fn permitted_number_of_calls_in_half_open_state(&self) -> u32 {
        self.permitted_number_of_calls_in_half_open_state
    }
    /// `automatic-transition-from-open-to-half-open-enabled` (default false).
    pub fn automatic_transition_from_open_to_half_open_enabled(&self) -> bool {
        self.automatic_transition_from_open_to_half_open_enabled
    }
    /// `max-wait-duration-in-half-open-state` (default 0: wait for the trials forever).
    pub fn max_wait_duration_in_half_open_state(&self) -> Duration {
        self.max_wait_duration_in_half_open_state
    }
    /// `transition-to-state-after-wait-duration`: where the half-open max wait goes (default OPEN).
    pub fn transition_to_state_after_wait_duration(&self) -> State {
        self.transition_to_state_after_wait_duration
    }
    /// `timeout-duration` (default none): an async call (`CircuitBreaker::call`) running longer
    /// than this is cancelled, recorded as a failure and ends with `CallError::TimedOut`. It needs
    /// a Tokio runtime with time enabled; synchronous calls cannot be cancelled and ignore it.
    pub fn timeout_duration(&self) -> Option<Duration> {
        self.timeout_duration
    }
    /// `record-exceptions` (default none): when set, only errors of these kinds are failures and
    /// every other error (not ignored) is a success, as in Resilience4j.
    pub fn record_exceptions(&self) -> &[ErrorKind] {
        &self.record_exceptions
    }
    /// `ignore-exceptions` (default none): errors of these kinds count as neither success nor
    /// failure. An error that is both recorded and ignored is ignored.
    pub fn ignore_exceptions(&self) -> &[ErrorKind] {
        &self.ignore_exceptions
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
}

/// Builds a [`Config`]; [`ConfigBuilder::build`] checks every value.
#[derive(Clone, Debug)]
pub struct ConfigBuilder {
    config: Config,
    // Kept unclamped until build, so that setting the size after the minimum still clamps.
    minimum_number_of_calls: u32,
}

impl ConfigBuilder {
    /// For tests: record CLOSED's calls under the breaker's lock even where the lock-free window
    /// applies, to compare the two.
    #[doc(hidden)]
    pub fn __lock_free_window(mut self, enabled: bool) -> Self {
        self.config.lock_free_window = enabled;
        self
    }

    /// `sliding-window-type`.
    pub fn sliding_window_type(mut self, kind: SlidingWindowType) -> Self {
        self.config.sliding_window_type = kind;
        self
    }
    /// `sliding-window-size`: calls (count-based) or seconds (time-based); at least 1.
    pub fn sliding_window_size(mut self, size: u32) -> Self {
        self.config.sliding_window_size = size;
        self
    }
    /// `minimum-number-of-calls`; at least 1.
    pub fn minimum_number_of_calls(mut self, calls: u32) -> Self {
        self.minimum_number_of_calls = calls;
        self
    }
    /// Window type, size and minimum at once, as Resilience4j's `slidingWindow(...)`.
    pub fn sliding_window(self, kind: SlidingWindowType, size: u32, minimum: u32) -> Self {
        self.sliding_window_type(kind)
            .sliding_window_size(size)
            .minimum_number_of_calls(minimum)
    }
    /// `failure-rate-threshold` in percent, in (0, 100].
    pub fn failure_rate_threshold(mut self, percent: f32) -> Self {
        self.config.failure_rate_threshold = percent;
        self
    }
    /// `slow-call-rate-threshold` in percent, in (0, 100].
    pub fn slow_call_rate_threshold(mut self, percent: f32) -> Self {
        self.config.slow_call_rate_threshold = percent;
        self
    }
    /// `slow-call-duration-threshold`; at least 1 ns.
    pub fn slow_call_duration_threshold(mut self, d: Duration) -> Self {
        self.config.slow_call_duration_threshold = d;
        self
    }
    /// `wait-duration-in-open-state`; at least 1 ms.
    pub fn wait_duration_in_open_state(mut self, d: Duration) -> Self {
        self.config.wait_duration_in_open_state = d;
        self
    }
    /// `permitted-number-of-calls-in-half-open-state`; at least 1.
    pub fn permitted_number_of_calls_in_half_open_state(mut self, calls: u32) -> Self {
        self.config.permitted_number_of_calls_in_half_open_state = calls;
        self
    }
    /// `automatic-transition-from-open-to-half-open-enabled`.
    pub fn automatic_transition_from_open_to_half_open_enabled(mut self, enabled: bool) -> Self {
        self.config
            .automatic_transition_from_open_to_half_open_enabled = enabled;
        self
    }
    /// `max-wait-duration-in-half-open-state`; zero waits forever.
    pub fn max_wait_duration_in_half_open_state(mut self, d: Duration) -> Self {
        self.config.max_wait_duration_in_half_open_state = d;
        self
    }
    /// `transition-to-state-after-wait-duration`: [`State::Open`] or [`State::Closed`].
    pub fn transition_to_state_after_wait_duration(mut self, state: State) -> Self {
        self.config.transition_to_state_after_wait_duration = state;
        self
    }

    /// `timeout-duration`: cancel async calls that run longer; `None` (the default) never does.
    pub fn timeout_duration(mut self, d: Option<Duration>) -> Self {
        self.config.timeout_duration = d;
        self
    }

    /// `record-exceptions`: only errors of these kinds are failures (replaces any earlier list;
    /// an empty list records every error).
    pub fn record_exceptions(mut self, kinds: impl IntoIterator<Item = ErrorKind>) -> Self {
        self.config.record_exceptions = kinds.into_iter().collect();
        self
    }

    /// `ignore-exceptions`: errors of these kinds count as neither success nor failure
    /// (replaces any earlier list).
    pub fn ignore_exceptions(mut self, kinds: impl IntoIterator<Item = ErrorKind>) -> Self {
        self.config.ignore_exceptions = kinds.into_iter().collect();
        self
    }

    /// Checks every value and returns the configuration, or an error naming the first bad key
    /// and its value.
    pub fn build(self) -> Result<Config, ConfigError> {
        let mut c = self.config;
        let max_size = match c.sliding_window_type {
            SlidingWindowType::CountBased => MAX_COUNT_WINDOW_SIZE,
            SlidingWindowType::TimeBased => MAX_TIME_WINDOW_SECONDS,
        };
        if c.sliding_window_size == 0 || c.sliding_window_size > max_size {
            return Err(ConfigError::new(
                keys::SLIDING_WINDOW_SIZE,
                c.sliding_window_size,
                match c.sliding_window_type {
                    SlidingWindowType::CountBased => {
                        "a whole number of calls from 1 to 10000000 (COUNT_BASED)"
                    }
                    SlidingWindowType::TimeBased => {
                        "a whole number of seconds from 1 to 86400 (TIME_BASED)"
                    }
                },
            ));
        }
        if self.minimum_number_of_calls == 0 {
            return Err(ConfigError::new(
                keys::MINIMUM_NUMBER_OF_CALLS,
                0,
                "a whole number of calls, at least 1",
            ));
        }
        check_percent(keys::FAILURE_RATE_THRESHOLD, c.failure_rate_threshold)?;
        check_percent(keys::SLOW_CALL_RATE_THRESHOLD, c.slow_call_rate_threshold)?;
        if c.slow_call_duration_threshold.is_zero() {
            return Err(ConfigError::new(
                keys::SLOW_CALL_DURATION_THRESHOLD,
                "0s",
                "a duration longer than zero",
            ));
        }
        if c.wait_duration_in_open_state < Duration::from_millis(1) {
            return Err(ConfigError::new(
                keys::WAIT_DURATION_IN_OPEN_STATE,
                format!("{:?}", c.wait_duration_in_open_state),
                "a duration of at least 1ms",
            ));
        }
        let permits = c.permitted_number_of_calls_in_half_open_state;
        if permits == 0 || permits > MAX_HALF_OPEN_PERMITS {
            return Err(ConfigError::new(
                keys::PERMITTED_NUMBER_OF_CALLS_IN_HALF_OPEN_STATE,
                permits,
                "a whole number of calls from 1 to 10000000",
            ));
        }
        if !matches!(
            c.transition_to_state_after_wait_duration,
            State::Open | State::Closed
        ) {
            return Err(ConfigError::new(
                keys::TRANSITION_TO_STATE_AFTER_WAIT_DURATION,
                c.transition_to_state_after_wait_duration,
                "OPEN or CLOSED",
            ));
        }
        if c.timeout_duration.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::new(
                keys::TIMEOUT_DURATION,
                "0s",
                "a duration longer than zero (leave it out for no timeout)",
            ));
        }
        c.minimum_number_of_calls = match c.sliding_window_type {
            SlidingWindowType::CountBased => {
                self.minimum_number_of_calls.min(c.sliding_window_size)
            }
            SlidingWindowType::TimeBased => self.minimum_number_of_calls,
        };
        Ok(c)
    }
}

fn check_percent(key: &'static str, value: f32) -> Result<(), ConfigError> {
    if value > 0.0 && value <= 100.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            value,
            "a percentage greater than 0 and at most 100",
        ))
    }
}

