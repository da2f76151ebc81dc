//! The bulkhead's events: Resilience4j's `BulkheadEvent` types, as one struct and a kind.

use std::fmt;

use crate::event::listeners::ListenedEvent;
use crate::log_safe::LogSafe;
use crate::time::timestamp::Timestamp;

/// What happened at a bulkhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BulkheadEventKind {
    /// A call got a place (at once, or after waiting).
    CallPermitted,
    /// A call was refused: no place came free within `max-wait-duration`.
    CallRejected,
    /// A call gave its place back (it finished, failed, panicked or was cancelled).
    CallFinished,
}

impl BulkheadEventKind {
    /// Resilience4j's name of the event type: `CALL_PERMITTED`, `CALL_REJECTED`,
    /// `CALL_FINISHED`.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkheadEventKind::CallPermitted => "CALL_PERMITTED",
            BulkheadEventKind::CallRejected => "CALL_REJECTED",
            BulkheadEventKind::CallFinished => "CALL_FINISHED",
        }
    }
}

impl fmt::Display for BulkheadEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of one bulkhead.
#[derive(Clone, Debug)]
pub struct BulkheadEvent {
    name: &'static str,
    at: Timestamp,
    kind: BulkheadEventKind,
}

impl BulkheadEvent {
    pub(crate) fn new(name: &'static str, at: Timestamp, kind: BulkheadEventKind) -> BulkheadEvent {
        BulkheadEvent { name, at, kind }
    }

    /// The bulkhead's name.
    pub fn bulkhead_name(&self) -> &str {
        self.name
    }

    /// When it happened, on the bulkhead's clock.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// What happened.
    pub fn kind(&self) -> BulkheadEventKind {
        self.kind
    }
}

impl fmt::Display for BulkheadEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bulkhead '{}': ", LogSafe(self.name))?;
        f.write_str(match self.kind {
            BulkheadEventKind::CallPermitted => "permitted a call",
            BulkheadEventKind::CallRejected => "rejected a call",
            BulkheadEventKind::CallFinished => "a call finished",
        })
    }
}

impl ListenedEvent for BulkheadEvent {
    fn log_listener_panic(&self) {
        tracing::error!(
            bulkhead = %LogSafe(self.bulkhead_name()),
            "breaker: a bulkhead event listener panicked; the event was skipped for it"
        );
    }
}
