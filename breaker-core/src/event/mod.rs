//! The event stream: every transition, every recorded or rejected call.
//!
//! Listeners are called on the thread that caused the event, after the breaker's state has
//! changed and with no lock of the breaker held. A listener that panics is logged and skipped;
//! it poisons nothing and the breaker goes on. Nothing is built when nobody listens.
//!
//! A listener subscribed with error texts also gets, on the events of failed and ignored calls,
//! the error's type and text ([`ErrorText`], `error_text.rs`); those are built only while such a
//! listener hears the breaker, and never for a success.

use std::fmt;
use std::time::Duration;

use crate::breaker::metrics::{EventMetrics, Metrics};
use crate::log_safe::LogSafe;
use crate::name::Name;
use crate::state::State;
use crate::time::timestamp::Timestamp;

pub(crate) mod audience;
pub(crate) mod error_text;
pub(crate) mod listeners;

pub use error_text::ErrorText;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// The state changed (never published for a state to itself).
    StateTransition {
        /// The state left.
        from: State,
        /// The state entered.
        to: State,
    },
    /// A call was recorded as a success.
    Success {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call was recorded as a failure.
    Error {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call ended with an error that the breaker ignores: neither success nor failure.
    IgnoredError {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call was rejected.
    NotPermitted,
    /// The failure rate reached its threshold.
    FailureRateExceeded {
        /// The rate, in percent.
        rate: f32,
    },
    /// The slow-call rate reached its threshold.
    SlowCallRateExceeded {
        /// The rate, in percent.
        rate: f32,
    },
    /// The breaker was reset to a fresh CLOSED state.
    Reset,
}

/// Why a state transition happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransitionCause {
    /// The recorded calls reached a threshold (CLOSED or HALF_OPEN -> OPEN), or the half-open
    /// trials stayed below both (HALF_OPEN -> CLOSED).
    Evaluation,
    /// The wait in OPEN was over: the first call after it, or the automatic-transition timer.
    WaitElapsed,
    /// `max-wait-duration-in-half-open-state` was over.
    HalfOpenMaxWait,
    /// A manual `transition_to_*`.
    Manual,
    /// `reset()`.
    Reset,
    /// Another process's advisory hint opened a breaker that had no local call history.
    Hint,
}

/// An event's breaker name: a copied `&'static str` for a name interned for the process (every
/// plain breaker's), the counted [`Name`] for a keyed breaker's. So the event of a plain
/// breaker's call touches no shared count, and does not read the name to learn that it needs
/// none.
#[derive(Clone, Debug)]
pub(crate) enum EventName {
    Static(&'static str),
    Counted(Name),
}

impl EventName {
    /// `name`, as events carry it.
    pub(crate) fn of(name: &Name) -> EventName {
        match name.as_static() {
            Some(text) => EventName::Static(text),
            None => EventName::Counted(name.clone()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            EventName::Static(text) => text,
            EventName::Counted(name) => name.as_str(),
        }
    }
}

/// One event of one breaker.
#[derive(Clone, Debug)]
pub struct Event {
    name: EventName,
    at: Timestamp,
    kind: EventKind,
    cause: Option<TransitionCause>,
    metrics: EventMetrics,
    error: Option<ErrorText>,
}

impl Event {
    pub(crate) fn new(
        name: EventName,
        at: Timestamp,
        kind: EventKind,
        cause: Option<TransitionCause>,
        metrics: EventMetrics,
    ) -> Event {
        Event {
            name,
            at,
            kind,
            cause,
            metrics,
            error: None,
        }
    }

    /// The same event with the call's error text, for the listeners that asked for it.
    pub(crate) fn with_error(&self, error: &ErrorText) -> Event {
        Event {
            error: Some(error.clone()),
            ..self.clone()
        }
    }

    /// For a state transition, why it happened.
    pub fn cause(&self) -> Option<TransitionCause> {
        self.cause
    }

    /// The breaker's metrics right after the operation that published this event.
    ///
    /// Computed when asked: an event of a call recorded without the breaker's lock carries the
    /// window's totals as they were right after the call, and the rates are worked out from
    /// them here, so that a listener that never reads them does not pay for them.
    #[inline]
    pub fn metrics(&self) -> Metrics {
        self.metrics.get()
    }

    /// The error a failed call ([`EventKind::Error`]) or an ignored one
    /// ([`EventKind::IgnoredError`]) ended with: its type and, where the breaker could find
    /// one, its `Display` text ([`ErrorText`]).
    ///
    /// Only for listeners subscribed with error texts
    /// ([`CircuitBreaker::subscribe_with_error_texts`](crate::CircuitBreaker::subscribe_with_error_texts),
    /// [`Registry::subscribe_with_error_texts`](crate::Registry::subscribe_with_error_texts)):
    /// `None` for every other listener, for every other kind of event, and for a call completed
    /// by hand without its result ([`Permit::failure`](crate::Permit::failure)).
    pub fn error(&self) -> Option<&ErrorText> {
        self.error.as_ref()
    }

    /// The breaker's name.
    pub fn breaker_name(&self) -> &str {
        self.name.as_str()
    }

    /// When it happened, on the breaker's clock.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// What happened.
    pub fn kind(&self) -> EventKind {
        self.kind
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CircuitBreaker '{}': ", LogSafe(self.name.as_str()))?;
        match self.kind {
            EventKind::StateTransition { from, to } => {
                write!(f, "state changed from {from} to {to}")
            }
            EventKind::Success { elapsed } => {
                write!(f, "recorded a successful call in {elapsed:?}")
            }
            EventKind::Error { elapsed } => write!(f, "recorded a failed call in {elapsed:?}"),
            EventKind::IgnoredError { elapsed } => {
                write!(f, "ignored an error after {elapsed:?}")
            }
            EventKind::NotPermitted => f.write_str("did not permit a call"),
            EventKind::FailureRateExceeded { rate } => {
                write!(f, "failure rate {rate:.2}% reached its threshold")
            }
            EventKind::SlowCallRateExceeded { rate } => {
                write!(f, "slow-call rate {rate:.2}% reached its threshold")
            }
            EventKind::Reset => f.write_str("was reset"),
        }?;
        match &self.error {
            // The error's text is outside text: escaped, as every log line writes it.
            Some(error) => write!(f, " ({})", LogSafe(&error.to_string())),
            None => Ok(()),
        }
    }
}
