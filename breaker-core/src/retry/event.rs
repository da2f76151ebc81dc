//! The retry's events: Resilience4j's `RetryEvent` types, as one struct and a kind, and
//! breaker's own `BUDGET_EXHAUSTED`.

use std::fmt;
use std::time::Duration;

use crate::event::listeners::ListenedEvent;
use crate::log_safe::LogSafe;
use crate::time::timestamp::Timestamp;

/// What happened at a retry, after one attempt.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum RetryEventKind {
    /// The attempt failed and the call is retried after `wait` (`RETRY`).
    Retry {
        /// The wait before the next attempt.
        wait: Duration,
    },
    /// An attempt after one or more retries succeeded (`SUCCESS`); a call that succeeds at
    /// once publishes nothing, as in Resilience4j.
    Success,
    /// The attempts ran out: the call ends with the last error, the last result, or
    /// [`MaxRetriesExceeded`](crate::retry::MaxRetriesExceeded) (`ERROR`).
    Error,
    /// The attempt's error is one the retry ignores: the call ends with it at once
    /// (`IGNORED_ERROR`).
    IgnoredError,
    /// breaker's own: the attempt failed, but the budget allowed no more retries; the call
    /// ends with its last error or result at once (`BUDGET_EXHAUSTED`).
    BudgetExhausted,
}

impl RetryEventKind {
    /// Resilience4j's name of the event type: `RETRY`, `SUCCESS`, `ERROR`, `IGNORED_ERROR`,
    /// and breaker's own `BUDGET_EXHAUSTED`.
    pub fn as_str(self) -> &'static str {
        match self {
            RetryEventKind::Retry { .. } => "RETRY",
            RetryEventKind::Success => "SUCCESS",
            RetryEventKind::Error => "ERROR",
            RetryEventKind::IgnoredError => "IGNORED_ERROR",
            RetryEventKind::BudgetExhausted => "BUDGET_EXHAUSTED",
        }
    }
}

impl fmt::Display for RetryEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of one retry.
#[derive(Clone, Debug)]
pub struct RetryEvent {
    name: &'static str,
    at: Timestamp,
    kind: RetryEventKind,
    attempts: u32,
}

impl RetryEvent {
    pub(crate) fn new(
        name: &'static str,
        at: Timestamp,
        kind: RetryEventKind,
        attempts: u32,
    ) -> RetryEvent {
        RetryEvent {
            name,
            at,
            kind,
            attempts,
        }
    }

    /// The retry's name.
    pub fn retry_name(&self) -> &str {
        self.name
    }

    /// When it happened, on the retry's clock.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// What happened.
    pub fn kind(&self) -> RetryEventKind {
        self.kind
    }

    /// Resilience4j's `numberOfAttempts`: the failed attempts so far. A `RETRY` after the
    /// first attempt failed says 1; `SUCCESS` counts the failed attempts before the one that
    /// succeeded; `ERROR` on exhaustion says `max-attempts`; `IGNORED_ERROR` says 0, as
    /// Resilience4j's.
    pub fn number_of_attempts(&self) -> u32 {
        self.attempts
    }
}

impl fmt::Display for RetryEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = LogSafe(self.name);
        let n = self.attempts;
        match self.kind {
            RetryEventKind::Retry { wait } => write!(
                f,
                "Retry '{name}', waiting {wait:?} until attempt '{}'.",
                n.saturating_add(1)
            ),
            RetryEventKind::Success => write!(
                f,
                "Retry '{name}' recorded a successful retry attempt. Number of retry attempts: '{n}'."
            ),
            RetryEventKind::Error => write!(
                f,
                "Retry '{name}' recorded a failed retry attempt. Number of retry attempts: '{n}'. Giving up."
            ),
            RetryEventKind::IgnoredError => {
                write!(f, "Retry '{name}' recorded an error which has been ignored.")
            }
            RetryEventKind::BudgetExhausted => write!(
                f,
                "Retry '{name}' was refused a retry by its budget after '{n}' failed attempts."
            ),
        }
    }
}

impl ListenedEvent for RetryEvent {
    fn log_listener_panic(&self) {
        tracing::error!(
            retry = %LogSafe(self.retry_name()),
            "breaker: a retry event listener panicked; the event was skipped for it"
        );
    }
}
