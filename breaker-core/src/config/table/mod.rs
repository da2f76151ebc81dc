//! The machinery behind every pattern's configuration: one table row per key, and the
//! vocabulary the rows are written in.
//!
//! A pattern (the circuit breaker today) declares its keys once, with `config_table!`:
//!
//! ```text
//! /// `COUNT_BASED` or `TIME_BASED` (default `COUNT_BASED`).
//! SlidingWindowType: sliding_window_type: SlidingWindowType = SlidingWindowType::CountBased, value {
//!     name: SLIDING_WINDOW_TYPE = "sliding-window-type",
//!     rule: Limit::None,
//! }
//! ```
//!
//! A row gives the key's enum variant, the field (and getter and setter) name, the Rust type,
//! the default and the shape (`value`: the getter returns a copy and the setter takes one;
//! `kinds`: a list of [`ErrorKind`]s, read as a slice and set from an iterator), then the
//! key's name as a public constant and as Spring spells it, and its [`Limit`]. The doc lines
//! are the constant's, the getter's and the setter's. From the rows, `config_expand!` writes:
//!
//! - the public `keys` module (one constant per key, `BASE_CONFIG` and `ALL`);
//! - the key enum and its [`TableKey`] impl (name, [`ValueKind`] from the Rust type's
//!   [`Field`] impl, limit), with `BaseConfig` added for the file loader;
//! - the config struct, its `Default`, its getters, `builder` and `to_builder`;
//! - the builder, its setters and `build`, which runs the pattern's checks across keys (one
//!   named function, given as `across`) and then every row's rule, in the table's order;
//! - the [`Pattern`] impl through which the file loader (`config::file`) reads any pattern's
//!   sections (`resilience4j.<root>.*`) in the three formats.
//!
//! So a new key is one row. A row without its rule does not build: the grammar has no optional
//! column. The grammar macro names no item of the crate, so this doctest can include it alone
//! (a stand-in `config_expand!` takes the rows it checked):
//!
//! ```
//! # macro_rules! config_expand { ($($rows:tt)*) => {}; }
//! include!("grammar.rs");
//! config_table! {
//!     pub mod keys;
//!     pub struct Config;
//!     pub struct ConfigBuilder;
//!     pub(crate) enum Key;
//!     spring: { root: "toy", ignored: &[], unsupported: &[] }
//!     across: check_across;
//!     extra {}
//!     rows {
//!         /// Calls at once (default 10).
//!         MaxCalls: max_calls: u32 = 10, value {
//!             name: MAX_CALLS = "max-calls",
//!             rule: Limit::Calls { max: None },
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! and the same row without its rule is a compile error:
//!
//! ```compile_fail
//! # macro_rules! config_expand { ($($rows:tt)*) => {}; }
//! include!("grammar.rs");
//! config_table! {
//!     pub mod keys;
//!     pub struct Config;
//!     pub struct ConfigBuilder;
//!     pub(crate) enum Key;
//!     spring: { root: "toy", ignored: &[], unsupported: &[] }
//!     across: check_across;
//!     extra {}
//!     rows {
//!         /// Calls at once (default 10).
//!         MaxCalls: max_calls: u32 = 10, value {
//!             name: MAX_CALLS = "max-calls",
//!         }
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! A rule that does not fit the row's type (a percentage's limit on a duration) is a compile
//! error too: the expansion asserts [`fits`] for every row in a constant.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::error::ConfigError;
use super::window_type::SlidingWindowType;
use crate::classify::ErrorKind;
use crate::state::State;

#[macro_use]
mod expand;
#[macro_use]
mod grammar;

/// Largest `sliding-window-size` accepted for a count-based window (one byte per call).
pub(crate) const MAX_COUNT_WINDOW_SIZE: u32 = 10_000_000;
/// Largest `sliding-window-size` accepted for a time-based window: one day of seconds.
pub(crate) const MAX_TIME_WINDOW_SECONDS: u32 = 86_400;
/// Largest `permitted-number-of-calls-in-half-open-state` accepted.
pub(crate) const MAX_HALF_OPEN_PERMITS: u32 = 10_000_000;
/// Largest `event-consumer-buffer-size` accepted (each kept event is about 40 bytes).
pub(crate) const MAX_EVENT_BUFFER_SIZE: u32 = 100_000;
/// Longest duration any key accepts: 100 years of 365 days (36,500 days). The breaker's
/// timestamps are nanoseconds since 1970 in a `u64`, which end in 2554; a timestamp of today
/// plus this still fits until the year 2454, so no wait, threshold or timeout can overflow
/// one.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(36_500 * 86_400);
/// [`MAX_DURATION`] as a file writes it.
pub(crate) const MAX_DURATION_TEXT: &str = "36500d";

/// The error kinds registered in code, by name: what a file's lists of error kinds may name.
pub(crate) type ErrorKinds = HashMap<String, ErrorKind>;

/// A pattern's configuration key: the enum `config_table!` writes from the rows.
pub(crate) trait TableKey: Copy + Eq + Ord + Hash + Debug + 'static {
    /// Every key, in the table's order.
    const ALL: &'static [Self];
    /// `base-config`, which every pattern's sections have in files.
    const BASE_CONFIG: Self;
    /// The canonical (kebab-case) name, as Spring spells it.
    fn name(self) -> &'static str;
    /// What a file writes for it.
    fn value_kind(self) -> ValueKind;
    /// What the builder accepts.
    fn limit(self) -> Limit;
}

/// A resilience pattern's configuration, as the file loader builds it: the config type that
/// `config_table!` writes implements it.
pub(crate) trait Pattern: Clone + Sized + 'static {
    /// The section under `resilience4j.` in Spring's files (`circuitbreaker`).
    const ROOT: &'static str;
    /// Spring keys of this pattern without a meaning here: read and ignored.
    const IGNORED: &'static [&'static str];
    /// Spring keys of this pattern whose behaviour breaker does not have, each with what to do
    /// instead.
    const UNSUPPORTED: &'static [(&'static str, &'static str)];
    /// The pattern's keys.
    type Key: TableKey;
    /// Its builder.
    type Builder;
    /// A builder from the defaults.
    fn defaults() -> Self::Builder;
    /// A builder from this config.
    fn starting_from(&self) -> Self::Builder;
    /// Sets `key` to a file's `value` (of the key's kind); `Err` names an error kind that no
    /// code registered.
    fn apply(
        builder: &mut Self::Builder,
        key: Self::Key,
        value: &Value,
        kinds: &ErrorKinds,
    ) -> Result<(), String>;
    /// Checks every value, as the builder's `build`.
    fn build(builder: Self::Builder) -> Result<Self, ConfigError>;
}

/// A Rust type a row's value can have: how files write it, what its rule checks, and how a
/// file's value becomes it.
pub(crate) trait Field: Sized {
    /// How a file writes a value of this type.
    const KIND: ValueKind;
    /// The value the row's rule checks (`None`: nothing to check, as an unset `Option`).
    fn value(&self) -> Option<Value>;
    /// The value a file gives, already read as [`Self::KIND`]; `Err` names an error kind that
    /// is not in `kinds`.
    fn from_file(value: &Value, kinds: &ErrorKinds) -> Result<Self, String>;
}

/// A `Field` of one kind, read whole: its kind, its [`Value`] variant and its accessor.
macro_rules! field {
    ($ty:ty, $kind:ident, $variant:ident, $read:ident) => {
        impl Field for $ty {
            const KIND: ValueKind = ValueKind::$kind;
            fn value(&self) -> Option<Value> {
                Some(Value::$variant(*self))
            }
            fn from_file(value: &Value, _: &ErrorKinds) -> Result<Self, String> {
                Ok(value.$read())
            }
        }
    };
}

field!(u32, Count, Count, count);
field!(f32, Percent, Percent, percent);
field!(f64, Decimal, Decimal, decimal);
field!(Duration, Duration, Duration, duration);
field!(bool, Bool, Bool, bool);
field!(SlidingWindowType, WindowType, WindowType, window_type);
field!(State, OpenOrClosed, State, state);

/// A duration that may be unset: a file that names the key sets it.
impl Field for Option<Duration> {
    const KIND: ValueKind = ValueKind::Duration;
    fn value(&self) -> Option<Value> {
        self.map(Value::Duration)
    }
    fn from_file(value: &Value, _: &ErrorKinds) -> Result<Self, String> {
        Ok(Some(value.duration()))
    }
}

/// Error kinds, which a file names and code registers.
impl Field for Arc<[ErrorKind]> {
    const KIND: ValueKind = ValueKind::Kinds;
    fn value(&self) -> Option<Value> {
        // Any list is valid: a file's names are looked up in `from_file`.
        None
    }
    fn from_file(value: &Value, kinds: &ErrorKinds) -> Result<Self, String> {
        value
            .kinds()
            .iter()
            .map(|name| {
                kinds
                    .get(name)
                    .cloned()
                    .or_else(|| ErrorKind::built_in(name))
                    .ok_or_else(|| name.clone())
            })
            .collect()
    }
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

/// A value of a key: checked against its [`Limit`] by the builder, read from a file by the
/// loader (which gives each [`ValueKind`] its own variant).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    WindowType(SlidingWindowType),
    Count(u32),
    Percent(f32),
    Decimal(f64),
    Duration(Duration),
    Bool(bool),
    State(State),
    Kinds(Vec<String>),
    Name(String),
}

// The accessors below read a value as the kind of its key. The file loader makes a value only
// for its key's kind, and `Field` reads each type's own kind, so a mismatch is a bug here, not
// in a file.
impl Value {
    pub(crate) fn window_type(&self) -> SlidingWindowType {
        match self {
            Value::WindowType(t) => *t,
            other => other.not_a("window type"),
        }
    }

    pub(crate) fn count(&self) -> u32 {
        match self {
            Value::Count(n) => *n,
            other => other.not_a("count"),
        }
    }

    pub(crate) fn percent(&self) -> f32 {
        match self {
            Value::Percent(p) => *p,
            other => other.not_a("percentage"),
        }
    }

    pub(crate) fn decimal(&self) -> f64 {
        match self {
            Value::Decimal(x) => *x,
            other => other.not_a("decimal"),
        }
    }

    pub(crate) fn duration(&self) -> Duration {
        match self {
            Value::Duration(d) => *d,
            other => other.not_a("duration"),
        }
    }

    pub(crate) fn bool(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            other => other.not_a("boolean"),
        }
    }

    pub(crate) fn state(&self) -> State {
        match self {
            Value::State(s) => *s,
            other => other.not_a("state"),
        }
    }

    pub(crate) fn kinds(&self) -> &[String] {
        match self {
            Value::Kinds(names) => names,
            other => other.not_a("list of error kinds"),
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            Value::Name(name) => name,
            other => other.not_a("name"),
        }
    }

    fn not_a(&self, kind: &str) -> ! {
        unreachable!("{self:?} read as a {kind}: it was made for another kind")
    }
}

/// Whether a key whose values are of `kind` can have the rule `limit`. `config_expand!`
/// asserts it for every row at compile time.
pub(crate) const fn fits(kind: ValueKind, limit: Limit) -> bool {
    match limit {
        Limit::None => true,
        Limit::Calls { .. } | Limit::Events { .. } | Limit::WindowSize { .. } => {
            matches!(kind, ValueKind::Count)
        }
        Limit::Percent => matches!(kind, ValueKind::Percent),
        Limit::Positive | Limit::Fraction => matches!(kind, ValueKind::Decimal),
        Limit::NonZero { .. } | Limit::AtLeast(_) => matches!(kind, ValueKind::Duration),
        Limit::OpenOrClosed => matches!(kind, ValueKind::OpenOrClosed),
    }
}

/// What a builder's `build` accepts for a key, beyond the type of its value: each row's rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Limit {
    /// Every value.
    None,
    /// A whole number of calls from 1 to `max` (no upper bound when `None`).
    Calls { max: Option<u32> },
    /// A whole number of events from 0 to `max`.
    Events { max: u32 },
    /// A whole number from 1: up to `calls` calls for a count-based window, up to `seconds`
    /// seconds for a time-based one. The bound depends on another key (the window type), so
    /// the pattern's checks across keys apply it ([`Limit::check_window_size`]).
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

impl Limit {
    /// Checks `value` of the key `key` against this rule; the error names the key, the value
    /// and what the rule accepts. [`Limit::WindowSize`] passes here: its bound depends on the
    /// window type, which [`Limit::check_window_size`] takes.
    pub(crate) fn check(self, key: &'static str, value: &Value) -> Result<(), ConfigError> {
        let reject = |shown: String| {
            Err(ConfigError::new(
                key,
                shown,
                self.expected(SlidingWindowType::CountBased),
            ))
        };
        // Every duration, whatever its key, is at most MAX_DURATION.
        if let Value::Duration(d) = value {
            if *d > MAX_DURATION {
                return Err(ConfigError::new(key, format!("{d:?}"), duration_bound()));
            }
        }
        match (self, value) {
            (Limit::None | Limit::WindowSize { .. }, _) => Ok(()),
            (Limit::Calls { max }, Value::Count(n)) => {
                if *n >= 1 && max.is_none_or(|max| *n <= max) {
                    Ok(())
                } else {
                    reject(n.to_string())
                }
            }
            (Limit::Events { max }, Value::Count(n)) => {
                if *n <= max {
                    Ok(())
                } else {
                    reject(n.to_string())
                }
            }
            (Limit::Percent, Value::Percent(p)) => {
                if *p > 0.0 && *p <= 100.0 {
                    Ok(())
                } else {
                    reject(p.to_string())
                }
            }
            (Limit::Positive, Value::Decimal(x)) => {
                if *x > 0.0 && x.is_finite() {
                    Ok(())
                } else {
                    reject(x.to_string())
                }
            }
            (Limit::Fraction, Value::Decimal(x)) => {
                if (0.0..=1.0).contains(x) {
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
                if *d >= min {
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
            // `fits`, asserted for every row when the table is compiled, pairs each rule with
            // the kind of value it checks, and `Field::value` gives each type its own kind.
            (limit, value) => {
                unreachable!("`{key}`: a {value:?} checked against {limit:?}")
            }
        }
    }

    /// Checks the window size `size` of the key `key` against this rule for a `window` window
    /// (every other rule passes here).
    pub(crate) fn check_window_size(
        self,
        key: &'static str,
        size: u32,
        window: SlidingWindowType,
    ) -> Result<(), ConfigError> {
        match self {
            Limit::WindowSize { calls, seconds }
                if size < 1 || size > window_bound(calls, seconds, window).1 =>
            {
                Err(ConfigError::new(key, size, self.expected(window)))
            }
            _ => Ok(()),
        }
    }

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

    /// What a file's value of `kind` for a key with this rule may be at most, in words, for a
    /// value too large for its type (a whole number past `u32`, a duration past
    /// [`MAX_DURATION`]). A window size's bound depends on the window type, which the file may
    /// set after the size: both are said.
    pub(crate) fn largest(self, kind: ValueKind) -> Cow<'static, str> {
        match (kind, self) {
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
    fn rules_fit_only_their_kinds() {
        let percent = Limit::Percent;
        assert!(fits(ValueKind::Percent, percent));
        assert!(!fits(ValueKind::Duration, percent));
        assert!(!fits(ValueKind::Count, percent));
        let at_least = Limit::AtLeast(Duration::from_millis(1));
        assert!(fits(ValueKind::Duration, at_least));
        assert!(!fits(ValueKind::Decimal, at_least));
        let window = Limit::WindowSize {
            calls: 1,
            seconds: 1,
        };
        assert!(fits(ValueKind::Count, window));
        assert!(!fits(ValueKind::Bool, window));
        for kind in [ValueKind::Bool, ValueKind::Kinds, ValueKind::Name] {
            assert!(fits(kind, Limit::None), "{kind:?}");
        }
    }

    #[test]
    fn each_type_reads_its_own_kind_from_a_file() {
        let kinds = ErrorKinds::new();
        assert_eq!(u32::from_file(&Value::Count(7), &kinds), Ok(7));
        assert_eq!(
            <Option<Duration>>::from_file(&Value::Duration(Duration::from_secs(1)), &kinds),
            Ok(Some(Duration::from_secs(1)))
        );
        assert_eq!(
            <Option<Duration>>::value(&None),
            None,
            "unset: nothing to check"
        );
        let named = Value::Kinds(vec!["Missing".to_owned()]);
        assert_eq!(
            <Arc<[ErrorKind]>>::from_file(&named, &kinds).map(|k| k.len()),
            Err("Missing".to_owned()),
            "an unregistered kind is named"
        );
    }
}
