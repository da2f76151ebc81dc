//! The configuration keys, spelled as in Spring's `resilience4j.circuitbreaker.*` properties.
//!
//! Each constant is one key's canonical (kebab-case) name. A configuration file may spell a key
//! in any of Spring's relaxed forms (`slidingWindowSize`, `SLIDING_WINDOW_SIZE`, ...).

// Every key is one row of the `key_table!` below. The row gives the key's name (the public
// constant), the kind of its value (how the file loader parses it) and its limit (what
// `ConfigBuilder::build` accepts, and the words of its error). `Key` and its accessors are
// generated from the rows, so a key cannot have a name without a kind or a limit, and a new
// row fails to compile until every `match` over `Key` (the file loader's `apply` among them)
// handles it.

use std::borrow::Cow;
use std::time::Duration;

use super::error::ConfigError;
use super::window_type::SlidingWindowType;
use crate::state::State;

/// Largest `sliding-window-size` accepted for a count-based window (one byte per call).
const MAX_COUNT_WINDOW_SIZE: u32 = 10_000_000;
/// Largest `sliding-window-size` accepted for a time-based window: one day of seconds.
const MAX_TIME_WINDOW_SECONDS: u32 = 86_400;
/// Largest `permitted-number-of-calls-in-half-open-state` accepted.
const MAX_HALF_OPEN_PERMITS: u32 = 10_000_000;
/// Largest `event-consumer-buffer-size` accepted (each kept event is about 40 bytes).
const MAX_EVENT_BUFFER_SIZE: u32 = 100_000;
/// Longest duration any key accepts: 100 years of 365 days (36,500 days). The breaker's
/// timestamps are nanoseconds since 1970 in a `u64`, which end in 2554; a timestamp of today
/// plus this still fits until the year 2454, so no wait, threshold or timeout can overflow
/// one.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(36_500 * 86_400);
/// [`MAX_DURATION`] as a file writes it.
pub(crate) const MAX_DURATION_TEXT: &str = "36500d";

/// Defines, from one row per key: the public name constant (with the row's doc line), the
/// `Key` enum, `Key::ALL` and `Key::row`.
macro_rules! key_table {
    ($(
        #[doc = $doc:literal]
        $key:ident {
            name: $constant:ident = $name:literal,
            kind: $kind:ident,
            limit: $limit:expr,
        }
    )+) => {
        $(
            #[doc = $doc]
            pub const $constant: &str = $name;
        )+

        /// Every key's name, in the table's order.
        pub const ALL: [&str; [$(stringify!($key)),+].len()] = [$($constant),+];

        /// A configuration key.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) enum Key {
            $(
                #[doc = $doc]
                $key,
            )+
        }

        impl Key {
            /// Every key, in the table's order.
            pub(crate) const ALL: [Key; [$(stringify!($key)),+].len()] = [$(Key::$key),+];

            const fn row(self) -> Row {
                match self {
                    $(
                        Key::$key => Row {
                            name: $constant,
                            kind: ValueKind::$kind,
                            limit: $limit,
                        },
                    )+
                }
            }
        }
    };
}

key_table! {
    /// `COUNT_BASED` or `TIME_BASED`.
    SlidingWindowType {
        name: SLIDING_WINDOW_TYPE = "sliding-window-type",
        kind: WindowType,
        limit: Limit::None,
    }
    /// Calls (count-based) or seconds (time-based) in the window.
    SlidingWindowSize {
        name: SLIDING_WINDOW_SIZE = "sliding-window-size",
        kind: Count,
        limit: Limit::WindowSize {
            calls: MAX_COUNT_WINDOW_SIZE,
            seconds: MAX_TIME_WINDOW_SECONDS,
        },
    }
    /// Calls in the window before any rate is computed.
    MinimumNumberOfCalls {
        name: MINIMUM_NUMBER_OF_CALLS = "minimum-number-of-calls",
        kind: Count,
        limit: Limit::Calls { max: None },
    }
    /// Failure percentage that opens the breaker.
    FailureRateThreshold {
        name: FAILURE_RATE_THRESHOLD = "failure-rate-threshold",
        kind: Percent,
        limit: Limit::Percent,
    }
    /// Slow-call percentage that opens the breaker.
    SlowCallRateThreshold {
        name: SLOW_CALL_RATE_THRESHOLD = "slow-call-rate-threshold",
        kind: Percent,
        limit: Limit::Percent,
    }
    /// Calls longer than this are slow.
    SlowCallDurationThreshold {
        name: SLOW_CALL_DURATION_THRESHOLD = "slow-call-duration-threshold",
        kind: Duration,
        limit: Limit::NonZero { unset: None },
    }
    /// How long OPEN lasts.
    WaitDurationInOpenState {
        name: WAIT_DURATION_IN_OPEN_STATE = "wait-duration-in-open-state",
        kind: Duration,
        limit: Limit::AtLeast(Duration::from_millis(1)),
    }
    /// Trial calls in HALF_OPEN.
    PermittedNumberOfCallsInHalfOpenState {
        name: PERMITTED_NUMBER_OF_CALLS_IN_HALF_OPEN_STATE =
            "permitted-number-of-calls-in-half-open-state",
        kind: Count,
        limit: Limit::Calls { max: Some(MAX_HALF_OPEN_PERMITS) },
    }
    /// OPEN -> HALF_OPEN by a timer rather than by the first call after the wait.
    AutomaticTransitionFromOpenToHalfOpenEnabled {
        name: AUTOMATIC_TRANSITION_FROM_OPEN_TO_HALF_OPEN_ENABLED =
            "automatic-transition-from-open-to-half-open-enabled",
        kind: Bool,
        limit: Limit::None,
    }
    /// How long HALF_OPEN waits for its trials (0: forever).
    MaxWaitDurationInHalfOpenState {
        name: MAX_WAIT_DURATION_IN_HALF_OPEN_STATE = "max-wait-duration-in-half-open-state",
        kind: Duration,
        limit: Limit::None,
    }
    /// Where the half-open max wait goes: `OPEN` or `CLOSED`.
    TransitionToStateAfterWaitDuration {
        name: TRANSITION_TO_STATE_AFTER_WAIT_DURATION = "transition-to-state-after-wait-duration",
        kind: OpenOrClosed,
        limit: Limit::OpenOrClosed,
    }
    /// An async call running longer than this is cancelled and recorded as a failure.
    TimeoutDuration {
        name: TIMEOUT_DURATION = "timeout-duration",
        kind: Duration,
        limit: Limit::NonZero { unset: Some("leave it out for no timeout") },
    }
    /// Error kinds that count as failures; when set, other errors count as successes.
    RecordExceptions {
        name: RECORD_EXCEPTIONS = "record-exceptions",
        kind: Kinds,
        limit: Limit::None,
    }
    /// Error kinds that count as neither success nor failure.
    IgnoreExceptions {
        name: IGNORE_EXCEPTIONS = "ignore-exceptions",
        kind: Kinds,
        limit: Limit::None,
    }
    /// Each OPEN waits `exponential-backoff-multiplier` times longer than the one before.
    EnableExponentialBackoff {
        name: ENABLE_EXPONENTIAL_BACKOFF = "enable-exponential-backoff",
        kind: Bool,
        limit: Limit::None,
    }
    /// With exponential backoff: each wait over the one before.
    ExponentialBackoffMultiplier {
        name: EXPONENTIAL_BACKOFF_MULTIPLIER = "exponential-backoff-multiplier",
        kind: Decimal,
        limit: Limit::Positive,
    }
    /// With exponential backoff: the longest wait in OPEN (unset: no bound).
    ExponentialMaxWaitDurationInOpenState {
        name: EXPONENTIAL_MAX_WAIT_DURATION_IN_OPEN_STATE =
            "exponential-max-wait-duration-in-open-state",
        kind: Duration,
        limit: Limit::AtLeast(Duration::from_millis(1)),
    }
    /// Each wait in OPEN is drawn at random within `randomized-wait-factor` of its length.
    EnableRandomizedWait {
        name: ENABLE_RANDOMIZED_WAIT = "enable-randomized-wait",
        kind: Bool,
        limit: Limit::None,
    }
    /// With randomized waits: how far a wait may stray from its length, as a fraction of it.
    RandomizedWaitFactor {
        name: RANDOMIZED_WAIT_FACTOR = "randomized-wait-factor",
        kind: Decimal,
        limit: Limit::Fraction,
    }
    /// The operations surface's health endpoint reports this breaker.
    RegisterHealthIndicator {
        name: REGISTER_HEALTH_INDICATOR = "register-health-indicator",
        kind: Bool,
        limit: Limit::None,
    }
    /// In the health endpoint, this breaker OPEN makes the service DOWN.
    AllowHealthIndicatorToFail {
        name: ALLOW_HEALTH_INDICATOR_TO_FAIL = "allow-health-indicator-to-fail",
        kind: Bool,
        limit: Limit::None,
    }
    /// Recent events the operations surface keeps for this breaker.
    EventConsumerBufferSize {
        name: EVENT_CONSUMER_BUFFER_SIZE = "event-consumer-buffer-size",
        kind: Count,
        limit: Limit::Events { max: MAX_EVENT_BUFFER_SIZE },
    }
    /// In a configuration file: the shared config an entry starts from.
    BaseConfig {
        name: BASE_CONFIG = "base-config",
        kind: Name,
        limit: Limit::None,
    }
}

/// One key's row.
#[derive(Clone, Copy, Debug)]
struct Row {
    name: &'static str,
    kind: ValueKind,
    limit: Limit,
}

/// What a key's value is, as a file writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// `COUNT_BASED` or `TIME_BASED`.
    WindowType,
    /// A whole number.
    Count,
    /// A percentage.
    Percent,
    /// A decimal number.
    Decimal,
    /// A duration.
    Duration,
    /// `true` or `false`.
    Bool,
    /// `OPEN` or `CLOSED`.
    OpenOrClosed,
    /// A list of error kind names.
    Kinds,
    /// A shared config's name.
    Name,
}

/// What [`ConfigBuilder::build`](super::ConfigBuilder::build) accepts for a key, beyond the
/// type of its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Limit {
    /// Every value.
    None,
    /// A whole number of calls from 1 to `max` (no upper bound when `None`).
    Calls { max: Option<u32> },
    /// A whole number of events from 0 to `max`.
    Events { max: u32 },
    /// A whole number from 1: up to `calls` calls for a count-based window, up to `seconds`
    /// seconds for a time-based one.
    WindowSize { calls: u32, seconds: u32 },
    /// A percentage greater than 0 and at most 100.
    Percent,
    /// A finite number greater than 0.
    Positive,
    /// A number from 0 to 1, both included.
    Fraction,
    /// A duration longer than zero; `unset` says how to have none, for a key that may be unset.
    NonZero { unset: Option<&'static str> },
    /// A duration of at least this.
    AtLeast(Duration),
    /// [`State::Open`] or [`State::Closed`].
    OpenOrClosed,
}

/// A value the builder checks against its key's [`Limit`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value {
    Count(u32),
    Percent(f32),
    Decimal(f64),
    Duration(Duration),
    State(State),
}

impl Key {
    /// The canonical (kebab-case) name: the constant of this module.
    pub(crate) const fn name(self) -> &'static str {
        self.row().name
    }

    /// What the key's value is.
    pub(crate) const fn value_kind(self) -> ValueKind {
        self.row().kind
    }

    /// What the builder accepts.
    pub(crate) const fn limit(self) -> Limit {
        self.row().limit
    }

    /// Checks `value` against the key's limit (`window` decides a window size's unit and
    /// bound); the error names the key, the value and what the limit accepts.
    pub(crate) fn check(self, value: Value, window: SlidingWindowType) -> Result<(), ConfigError> {
        let limit = self.limit();
        let reject =
            |shown: String| Err(ConfigError::new(self.name(), shown, limit.expected(window)));
        // Every duration, whatever its key, is at most MAX_DURATION.
        if let Value::Duration(d) = value {
            if d > MAX_DURATION {
                return Err(ConfigError::new(
                    self.name(),
                    format!("{d:?}"),
                    duration_bound(),
                ));
            }
        }
        match (limit, value) {
            (Limit::None, _) => Ok(()),
            (Limit::Calls { max }, Value::Count(n)) => {
                if n >= 1 && max.is_none_or(|max| n <= max) {
                    Ok(())
                } else {
                    reject(n.to_string())
                }
            }
            (Limit::Events { max }, Value::Count(n)) => {
                if n <= max {
                    Ok(())
                } else {
                    reject(n.to_string())
                }
            }
            (Limit::WindowSize { calls, seconds }, Value::Count(n)) => {
                if n >= 1 && n <= window_bound(calls, seconds, window).1 {
                    Ok(())
                } else {
                    reject(n.to_string())
                }
            }
            (Limit::Percent, Value::Percent(p)) => {
                if p > 0.0 && p <= 100.0 {
                    Ok(())
                } else {
                    reject(p.to_string())
                }
            }
            (Limit::Positive, Value::Decimal(x)) => {
                if x > 0.0 && x.is_finite() {
                    Ok(())
                } else {
                    reject(x.to_string())
                }
            }
            (Limit::Fraction, Value::Decimal(x)) => {
                if (0.0..=1.0).contains(&x) {
                    Ok(())
                } else {
                    reject(x.to_string())
                }
            }
            // Zero is the only duration rejected; it is shown as a file would write it.
            (Limit::NonZero { .. }, Value::Duration(d)) => {
                if d.is_zero() {
                    reject("0s".to_owned())
                } else {
                    Ok(())
                }
            }
            (Limit::AtLeast(min), Value::Duration(d)) => {
                if d >= min {
                    Ok(())
                } else {
                    reject(format!("{d:?}"))
                }
            }
            (Limit::OpenOrClosed, Value::State(s)) => {
                if matches!(s, State::Open | State::Closed) {
                    Ok(())
                } else {
                    reject(s.to_string())
                }
            }
            // The builder passes each key a value of its row's type. A row whose limit does
            // not fit that type is a mistake in the table: every build panics, the defaults'
            // too, so no test run can miss it.
            (limit, value) => {
                unreachable!("`{}`: a {value:?} checked against {limit:?}", self.name())
            }
        }
    }
}

impl Limit {
    /// What the limit accepts, in words (the `expected` of a [`ConfigError`]).
    pub(crate) fn expected(self, window: SlidingWindowType) -> Cow<'static, str> {
        match self {
            Limit::None => Cow::Borrowed("any value"),
            Limit::Calls { max: None } => Cow::Borrowed("a whole number of calls, at least 1"),
            Limit::Events { max } => {
                Cow::Owned(format!("a whole number of events from 0 to {max}"))
            }
            Limit::Calls { max: Some(max) } => {
                Cow::Owned(format!("a whole number of calls from 1 to {max}"))
            }
            Limit::WindowSize { calls, seconds } => {
                let (unit, max) = window_bound(calls, seconds, window);
                Cow::Owned(format!(
                    "a whole number of {unit} from 1 to {max} ({window})"
                ))
            }
            Limit::Percent => Cow::Borrowed(PERCENT),
            Limit::Positive => Cow::Borrowed("a number greater than 0"),
            Limit::Fraction => Cow::Borrowed("a number from 0 to 1"),
            Limit::NonZero { unset: None } => Cow::Borrowed("a duration longer than zero"),
            Limit::NonZero { unset: Some(how) } => {
                Cow::Owned(format!("a duration longer than zero ({how})"))
            }
            Limit::AtLeast(min) => Cow::Owned(format!("a duration of at least {min:?}")),
            Limit::OpenOrClosed => Cow::Owned(format!("{} or {}", State::Open, State::Closed)),
        }
    }
}

impl Key {
    /// What a file's value for this key may be at most, in words, for a value too large for
    /// its type (a whole number past `u32`, a duration past [`MAX_DURATION`]). A window size's
    /// bound depends on the window type, which the file may set after the size: both are said.
    pub(crate) fn largest(self) -> Cow<'static, str> {
        match (self.value_kind(), self.limit()) {
            (ValueKind::Duration, _) => Cow::Owned(duration_bound()),
            (_, Limit::WindowSize { calls, seconds }) => Cow::Owned(format!(
                "a whole number from 1 to {calls} ({}) or to {seconds} ({})",
                SlidingWindowType::CountBased,
                SlidingWindowType::TimeBased
            )),
            (_, Limit::Calls { max }) => Cow::Owned(format!(
                "a whole number of calls from 1 to {}",
                max.unwrap_or(u32::MAX)
            )),
            // Only whole numbers and durations can be too large for their type.
            _ => Cow::Borrowed("a smaller value"),
        }
    }
}

/// The words of the bound every duration has.
fn duration_bound() -> String {
    format!("a duration of at most {MAX_DURATION_TEXT} (100 years)")
}

/// A window size's unit and largest value, for `window`'s type.
fn window_bound(calls: u32, seconds: u32, window: SlidingWindowType) -> (&'static str, u32) {
    match window {
        SlidingWindowType::CountBased => ("calls", calls),
        SlidingWindowType::TimeBased => ("seconds", seconds),
    }
}

/// The words of [`Limit::Percent`].
pub(crate) const PERCENT: &str = "a percentage greater than 0 and at most 100";

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(ALL[i], key.name());
        }
    }

    #[test]
    fn too_large_values_are_told_the_largest() {
        assert_eq!(
            Key::SlidingWindowSize.largest(),
            "a whole number from 1 to 10000000 (COUNT_BASED) or to 86400 (TIME_BASED)"
        );
        assert_eq!(
            Key::MinimumNumberOfCalls.largest(),
            "a whole number of calls from 1 to 4294967295"
        );
        assert_eq!(
            Key::TimeoutDuration.largest(),
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
        let size = Key::SlidingWindowSize;
        assert!(size
            .check(Value::Count(MAX_COUNT_WINDOW_SIZE), count)
            .is_ok());
        assert!(size
            .check(Value::Count(MAX_COUNT_WINDOW_SIZE + 1), count)
            .is_err());
        assert!(size
            .check(Value::Count(MAX_TIME_WINDOW_SECONDS), time)
            .is_ok());
        assert!(size
            .check(Value::Count(MAX_TIME_WINDOW_SECONDS + 1), time)
            .is_err());
        assert!(size.check(Value::Count(0), count).is_err());
        let permits = Key::PermittedNumberOfCallsInHalfOpenState;
        assert!(permits
            .check(Value::Count(MAX_HALF_OPEN_PERMITS), count)
            .is_ok());
        assert!(permits
            .check(Value::Count(MAX_HALF_OPEN_PERMITS + 1), count)
            .is_err());
        let minimum = Key::MinimumNumberOfCalls;
        assert!(minimum.check(Value::Count(u32::MAX), count).is_ok());
        let multiplier = Key::ExponentialBackoffMultiplier;
        for ok in [0.5, 1.0, 1.5, 1e9] {
            assert!(multiplier.check(Value::Decimal(ok), count).is_ok(), "{ok}");
        }
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                multiplier.check(Value::Decimal(bad), count).is_err(),
                "{bad}"
            );
        }
        let factor = Key::RandomizedWaitFactor;
        for ok in [0.0, 0.5, 1.0] {
            assert!(factor.check(Value::Decimal(ok), count).is_ok(), "{ok}");
        }
        for bad in [-0.001, 1.001, f64::NAN] {
            assert!(factor.check(Value::Decimal(bad), count).is_err(), "{bad}");
        }
        // Every duration key, whatever its own limit, stops at MAX_DURATION.
        for key in Key::ALL
            .into_iter()
            .filter(|k| k.value_kind() == ValueKind::Duration)
        {
            assert!(key.check(Value::Duration(MAX_DURATION), count).is_ok());
            let err = key
                .check(
                    Value::Duration(MAX_DURATION + Duration::from_nanos(1)),
                    count,
                )
                .unwrap_err();
            assert_eq!(err.key(), key.name());
            assert_eq!(err.expected(), "a duration of at most 36500d (100 years)");
        }
        let err = Key::WaitDurationInOpenState
            .check(Value::Duration(Duration::from_micros(999)), count)
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
}
