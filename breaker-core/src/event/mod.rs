//! The event stream: every transition, every recorded or rejected call.
//!
//! Listeners are called on the thread that caused the event, after the breaker's state has
//! changed and with no lock of the breaker held. A listener that panics is logged and skipped;
//! it poisons nothing and the breaker goes on. Nothing is built when nobody listens.

use std::fmt;
use std::time::Duration;

use crate::breaker::metrics::Metrics;
use crate::log_safe::LogSafe;
use crate::name::Name;
use crate::state::State;
use crate::time::timestamp::Timestamp;

pub(crate) mod audience;
pub(crate) mod listeners;

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

/// One event of one breaker.
#[derive(Clone, Debug)]
pub struct Event {
    name: Name,
    at: Timestamp,
    kind: EventKind,
    cause: Option<TransitionCause>,
    metrics: Metrics,
}

impl Event {
    pub(crate) fn new(
        name: Name,
        at: Timestamp,
        kind: EventKind,
        cause: Option<TransitionCause>,
        metrics: Metrics,
    ) -> Event {
        Event {
            name,
            at,
            kind,
            cause,
            metrics,
        }
    }

    /// For a state transition, why it happened.
    pub fn cause(&self) -> Option<TransitionCause> {
        self.cause
    }

    /// The breaker's metrics right after the operation that published this event.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
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
        }
    }
}
