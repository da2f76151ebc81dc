//! A breaker's configuration, with Spring's key names and Resilience4j's defaults.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::classify::{classify_call, Classify, ConfiguredClassifier, ErrorKind, Outcome};
use crate::state::State;

mod error;
pub(crate) mod file;
pub mod keys;
pub(crate) mod tags;
mod wait;
mod window_type;

pub use error::ConfigError;
pub use wait::WaitInterval;
pub use window_type::SlidingWindowType;

use keys::{Key, Value};

/// The name of the shared config that every breaker without one of its own uses.
pub const DEFAULT_CONFIG: &str = "default";

/// `exponential-backoff-multiplier`'s default: Resilience4j's `IntervalFunction.DEFAULT_MULTIPLIER`.
const DEFAULT_BACKOFF_MULTIPLIER: f64 = 1.5;
/// `randomized-wait-factor`'s default: Resilience4j's
/// `IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR`.
const DEFAULT_RANDOMIZED_WAIT_FACTOR: f64 = 0.5;

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
    enable_exponential_backoff: bool,
    exponential_backoff_multiplier: f64,
    exponential_max_wait_duration_in_open_state: Option<Duration>,
    enable_randomized_wait: bool,
    randomized_wait_factor: f64,
    permitted_number_of_calls_in_half_open_state: u32,
    automatic_transition_from_open_to_half_open_enabled: bool,
    max_wait_duration_in_half_open_state: Duration,
    transition_to_state_after_wait_duration: State,
    timeout_duration: Option<Duration>,
    register_health_indicator: bool,
    allow_health_indicator_to_fail: bool,
    event_consumer_buffer_size: u32,
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
            enable_exponential_backoff: false,
            exponential_backoff_multiplier: DEFAULT_BACKOFF_MULTIPLIER,
            exponential_max_wait_duration_in_open_state: None,
            enable_randomized_wait: false,
            randomized_wait_factor: DEFAULT_RANDOMIZED_WAIT_FACTOR,
            permitted_number_of_calls_in_half_open_state: 10,
            automatic_transition_from_open_to_half_open_enabled: false,
            max_wait_duration_in_half_open_state: Duration::ZERO,
            transition_to_state_after_wait_duration: State::Open,
            timeout_duration: None,
            register_health_indicator: false,
            allow_health_indicator_to_fail: false,
            event_consumer_buffer_size: 100,
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
    /// `wait-duration-in-open-state` (default 60 s): how long OPEN lasts, or the first OPEN
    /// with backoff; [`Config::wait_interval`] says how the waits that follow are computed.
    pub fn wait_duration_in_open_state(&self) -> Duration {
        self.wait_duration_in_open_state
    }
    /// `enable-exponential-backoff` (default false).
    pub fn enable_exponential_backoff(&self) -> bool {
        self.enable_exponential_backoff
    }
    /// `exponential-backoff-multiplier` (default 1.5); read only with exponential backoff.
    pub fn exponential_backoff_multiplier(&self) -> f64 {
        self.exponential_backoff_multiplier
    }
    /// `exponential-max-wait-duration-in-open-state` (default none: no bound); read only with
    /// exponential backoff.
    pub fn exponential_max_wait_duration_in_open_state(&self) -> Option<Duration> {
        self.exponential_max_wait_duration_in_open_state
    }
    /// `enable-randomized-wait` (default false).
    pub fn enable_randomized_wait(&self) -> bool {
        self.enable_randomized_wait
    }
    /// `randomized-wait-factor` (default 0.5); read only with randomized waits.
    pub fn randomized_wait_factor(&self) -> f64 {
        self.randomized_wait_factor
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
        let base = self.wait_duration_in_open_state;
        let multiplier = self.exponential_backoff_multiplier;
        let max = self.exponential_max_wait_duration_in_open_state;
        let factor = self.randomized_wait_factor;
        match (self.enable_exponential_backoff, self.enable_randomized_wait) {
            (false, false) => WaitInterval::Fixed { wait: base },
            (true, false) => WaitInterval::Exponential {
                initial: base,
                multiplier,
                max,
            },
            (false, true) => WaitInterval::Randomized { wait: base, factor },
            (true, true) => WaitInterval::ExponentialRandomized {
                initial: base,
                multiplier,
                factor,
                max,
            },
        }
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

    /// `register-health-indicator` (default `false`): the operations surface's health endpoint
    /// reports this breaker (feature `admin`).
    pub fn register_health_indicator(&self) -> bool {
        self.register_health_indicator
    }

    /// `allow-health-indicator-to-fail` (default `false`): in the health endpoint, this breaker
    /// OPEN makes the service DOWN; otherwise it is shown as `CIRCUIT_OPEN` and the service
    /// stays UP.
    pub fn allow_health_indicator_to_fail(&self) -> bool {
        self.allow_health_indicator_to_fail
    }

    /// `event-consumer-buffer-size` (default 100): how many recent events the operations
    /// surface keeps for this breaker (feature `admin`; 0 keeps none).
    pub fn event_consumer_buffer_size(&self) -> u32 {
        self.event_consumer_buffer_size
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
    /// `wait-duration-in-open-state`; at least 1 ms. With backoff, the first wait.
    pub fn wait_duration_in_open_state(mut self, d: Duration) -> Self {
        self.config.wait_duration_in_open_state = d;
        self
    }
    /// `enable-exponential-backoff`: each OPEN waits `exponential-backoff-multiplier` times as
    /// long as the one before, up to `exponential-max-wait-duration-in-open-state`.
    pub fn enable_exponential_backoff(mut self, enabled: bool) -> Self {
        self.config.enable_exponential_backoff = enabled;
        self
    }
    /// `exponential-backoff-multiplier`; greater than 0 (below 1, waits shrink).
    pub fn exponential_backoff_multiplier(mut self, multiplier: f64) -> Self {
        self.config.exponential_backoff_multiplier = multiplier;
        self
    }
    /// `exponential-max-wait-duration-in-open-state`: the longest wait with backoff; at least
    /// 1 ms, or `None` (the default) for no bound.
    pub fn exponential_max_wait_duration_in_open_state(mut self, max: Option<Duration>) -> Self {
        self.config.exponential_max_wait_duration_in_open_state = max;
        self
    }
    /// `enable-randomized-wait`: each wait in OPEN is drawn within `randomized-wait-factor` of
    /// its length.
    pub fn enable_randomized_wait(mut self, enabled: bool) -> Self {
        self.config.enable_randomized_wait = enabled;
        self
    }
    /// `randomized-wait-factor`: from 0 (no randomizing) to 1 (from no wait to twice the wait).
    pub fn randomized_wait_factor(mut self, factor: f64) -> Self {
        self.config.randomized_wait_factor = factor;
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

    /// `register-health-indicator`: report this breaker in the health endpoint.
    pub fn register_health_indicator(mut self, register: bool) -> Self {
        self.config.register_health_indicator = register;
        self
    }

    /// `allow-health-indicator-to-fail`: let this breaker OPEN make the health endpoint DOWN.
    pub fn allow_health_indicator_to_fail(mut self, allow: bool) -> Self {
        self.config.allow_health_indicator_to_fail = allow;
        self
    }

    /// `event-consumer-buffer-size`: recent events kept for the events endpoint (0 to 100,000).
    pub fn event_consumer_buffer_size(mut self, events: u32) -> Self {
        self.config.event_consumer_buffer_size = events;
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
                Key::ExponentialBackoffMultiplier,
                Value::Decimal(c.exponential_backoff_multiplier),
            ),
            (
                Key::RandomizedWaitFactor,
                Value::Decimal(c.randomized_wait_factor),
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
            (
                Key::EventConsumerBufferSize,
                Value::Count(c.event_consumer_buffer_size),
            ),
        ];
        for (key, value) in checks {
            key.check(value, window)?;
        }
        if let Some(max) = c.exponential_max_wait_duration_in_open_state {
            Key::ExponentialMaxWaitDurationInOpenState.check(Value::Duration(max), window)?;
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
