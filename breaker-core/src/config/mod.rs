//! A breaker's configuration, with Spring's key names and Resilience4j's defaults.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::classify::{ConfiguredClassifier, ErrorKind};
use crate::state::State;

mod error;
pub(crate) mod file;
pub mod keys;
mod window_type;

pub use error::ConfigError;
pub use window_type::SlidingWindowType;

use keys::{Key, Value};

/// The name of the shared config that every breaker without one of its own uses.
pub const DEFAULT_CONFIG: &str = "default";

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
    lock_free_window: TestKnob<bool>,
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
            lock_free_window: TestKnob(true),
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
        self.lock_free_window.0
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
        self.config.lock_free_window = TestKnob(enabled);
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
        let window = c.sliding_window_type;
        // The first key in this order with a bad value is the one reported.
        let checks = [
            (Key::SlidingWindowSize, Value::Count(c.sliding_window_size)),
            (
                Key::MinimumNumberOfCalls,
                Value::Count(self.minimum_number_of_calls),
            ),
            (
                Key::FailureRateThreshold,
                Value::Percent(c.failure_rate_threshold),
            ),
            (
                Key::SlowCallRateThreshold,
                Value::Percent(c.slow_call_rate_threshold),
            ),
            (
                Key::SlowCallDurationThreshold,
                Value::Duration(c.slow_call_duration_threshold),
            ),
            (
                Key::WaitDurationInOpenState,
                Value::Duration(c.wait_duration_in_open_state),
            ),
            (
                Key::PermittedNumberOfCallsInHalfOpenState,
                Value::Count(c.permitted_number_of_calls_in_half_open_state),
            ),
            (
                Key::MaxWaitDurationInHalfOpenState,
                Value::Duration(c.max_wait_duration_in_half_open_state),
            ),
            (
                Key::TransitionToStateAfterWaitDuration,
                Value::State(c.transition_to_state_after_wait_duration),
            ),
        ];
        for (key, value) in checks {
            key.check(value, window)?;
        }
        if let Some(timeout) = c.timeout_duration {
            Key::TimeoutDuration.check(Value::Duration(timeout), window)?;
        }
        c.minimum_number_of_calls = match window {
            SlidingWindowType::CountBased => {
                self.minimum_number_of_calls.min(c.sliding_window_size)
            }
            SlidingWindowType::TimeBased => self.minimum_number_of_calls,
        };
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_free_window_knob_takes_no_part_in_equality() {
        let locked = Config::builder().__lock_free_window(false).build().unwrap();
        assert!(!locked.lock_free_window());
        assert_eq!(locked, Config::default());
        assert_eq!(
            format!("{locked:?}"),
            format!("{:?}", Config::default())
                .replace("lock_free_window: true", "lock_free_window: false")
        );
    }
}
