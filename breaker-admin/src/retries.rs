//! What the admin keeps per retry: a ring of its newest `event-consumer-buffer-size` events
//! (four words each: the type, the time, the number of attempts and a RETRY's wait), written by
//! one listener of its own ([`Retry::subscribe`]) on the thread that publishes the event: no
//! lock, no allocation (`ring.rs`). The retries are followed by name through `roster.rs`.

use std::sync::Arc;
use std::time::Duration;

use breaker_core::retry::{Retry, RetryEvent, RetryEventKind};
use breaker_core::{Registry, Subscription, Timestamp};

use crate::lenient;
use crate::roster::{EventRing, Followed, Record, Roster};

/// The event types the admin keeps and serves: Resilience4j's `RetryEvent.Type` (`RETRY`,
/// `ERROR`, `SUCCESS`, `IGNORED_ERROR`, in its order), then the budget's own. A kind outside
/// it (the core's `RetryEventKind` is non-exhaustive) is not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryEventType {
    Retry,
    Error,
    Success,
    IgnoredError,
    BudgetExhausted,
}

impl RetryEventType {
    pub(crate) const ALL: [RetryEventType; 5] = [
        RetryEventType::Retry,
        RetryEventType::Error,
        RetryEventType::Success,
        RetryEventType::IgnoredError,
        RetryEventType::BudgetExhausted,
    ];

    /// The type of `kind`, and its wait if it is a RETRY; `None` for a kind the admin does not
    /// know.
    fn of(kind: RetryEventKind) -> Option<(RetryEventType, Duration)> {
        Some(match kind {
            RetryEventKind::Retry { wait } => (RetryEventType::Retry, wait),
            RetryEventKind::Error => (RetryEventType::Error, Duration::ZERO),
            RetryEventKind::Success => (RetryEventType::Success, Duration::ZERO),
            RetryEventKind::IgnoredError => (RetryEventType::IgnoredError, Duration::ZERO),
            RetryEventKind::BudgetExhausted => (RetryEventType::BudgetExhausted, Duration::ZERO),
            _ => return None,
        })
    }

    /// The name Resilience4j's JSON gives it, the core's ([`RetryEventKind::as_str`];
    /// `BUDGET_EXHAUSTED` is breaker's own).
    pub(crate) fn as_str(self) -> &'static str {
        let kind = match self {
            RetryEventType::Retry => RetryEventKind::Retry {
                wait: Duration::ZERO,
            },
            RetryEventType::Error => RetryEventKind::Error,
            RetryEventType::Success => RetryEventKind::Success,
            RetryEventType::IgnoredError => RetryEventKind::IgnoredError,
            RetryEventType::BudgetExhausted => RetryEventKind::BudgetExhausted,
        };
        kind.as_str()
    }

    /// The type a path's `{eventType}` names: upper-cased as Resilience4j reads it, or as
    /// leniently as Spring reads an enum (`ignored-error`, `ignoredError`).
    pub(crate) fn parse(name: &str) -> Option<RetryEventType> {
        lenient::event_type(name, RetryEventType::ALL, RetryEventType::as_str)
    }

    /// `RETRY, ERROR, SUCCESS, IGNORED_ERROR, BUDGET_EXHAUSTED`, for an error message.
    pub(crate) fn list() -> String {
        RetryEventType::ALL.map(RetryEventType::as_str).join(", ")
    }
}

/// One retry event without its retry's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryRecord {
    pub(crate) kind: RetryEventType,
    pub(crate) at: Timestamp,
    pub(crate) attempts: u32,
    /// A RETRY's wait before the next attempt; zero for the other types.
    pub(crate) wait: Duration,
}

impl RetryRecord {
    /// The record of `event`; `None` for a kind the admin does not know.
    fn of(event: &RetryEvent) -> Option<RetryRecord> {
        let (kind, wait) = RetryEventType::of(event.kind())?;
        Some(RetryRecord {
            kind,
            at: event.at(),
            attempts: event.number_of_attempts(),
            wait,
        })
    }
}

impl Record<4> for RetryRecord {
    /// `[type, unix nanos, attempts, wait nanos]`, the type as its place in
    /// [`RetryEventType::ALL`]; a wait beyond `u64::MAX` nanoseconds (584 years) is saturated.
    fn words(self) -> Option<[u64; 4]> {
        let code = RetryEventType::ALL.iter().position(|t| *t == self.kind)?;
        Some([
            code as u64,
            self.at.unix_nanos(),
            u64::from(self.attempts),
            u64::try_from(self.wait.as_nanos()).unwrap_or(u64::MAX),
        ])
    }

    fn from_words([code, at, attempts, wait]: [u64; 4]) -> Option<RetryRecord> {
        Some(RetryRecord {
            kind: *RetryEventType::ALL.get(usize::try_from(code).ok()?)?,
            at: Timestamp::from_unix_nanos(at),
            attempts: u32::try_from(attempts).ok()?,
            wait: Duration::from_nanos(wait),
        })
    }
}

/// A retry the admin follows: the retry, and its event ring (`None` for an
/// `event-consumer-buffer-size` of 0).
#[derive(Debug)]
pub(crate) struct TrackedRetry {
    pub(crate) retry: Retry,
    ring: Arc<EventRing<RetryRecord, 4>>,
    _subscription: Subscription,
}

impl Followed for TrackedRetry {
    type Instance = Retry;

    fn follow(retry: &Retry) -> TrackedRetry {
        let ring = Arc::new(EventRing::new(retry.config().event_consumer_buffer_size()));
        let writer = Arc::clone(&ring);
        let subscription = retry.subscribe(move |event: &RetryEvent| {
            if let Some(record) = RetryRecord::of(event) {
                writer.push(record);
            }
        });
        TrackedRetry {
            retry: retry.clone(),
            ring,
            _subscription: subscription,
        }
    }

    fn instance(&self) -> &Retry {
        &self.retry
    }

    fn name_of(retry: &Retry) -> &str {
        retry.name()
    }

    fn same(a: &Retry, b: &Retry) -> bool {
        a.ptr_eq(b)
    }

    fn in_registry(registry: &Registry, name: &str) -> Option<Retry> {
        registry.find_retry(name)
    }
}

impl TrackedRetry {
    /// The ring's records, oldest first.
    pub(crate) fn recent(&self) -> Vec<RetryRecord> {
        self.ring.recent()
    }

    /// The ring's records from the newest back, read lazily.
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = RetryRecord> + '_ {
        self.ring.newest_first()
    }
}

/// Follows every retry of `registry`, now and from now on.
pub(crate) fn attach(registry: &Registry) -> Arc<Roster<TrackedRetry>> {
    let roster = Roster::new(registry);
    // The hook first, then the retries already there (see `Roster::new`).
    registry.on_retry_registry_event_for(&roster, |roster, event| roster.on_event(event));
    for retry in registry.retries() {
        roster.add(&retry);
    }
    roster
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_words() {
        for kind in RetryEventType::ALL {
            let record = RetryRecord {
                kind,
                at: Timestamp::from_unix_nanos(1_700_000_000_123_456_789),
                attempts: 3,
                wait: Duration::from_millis(500),
            };
            let words = record.words().expect("a type the admin keeps");
            assert_eq!(RetryRecord::from_words(words), Some(record));
        }
        assert_eq!(RetryRecord::from_words([5, 0, 0, 0]), None);
        assert_eq!(RetryRecord::from_words([0, 0, u64::MAX, 0]), None);
    }

    #[test]
    fn types_parse_in_any_case() {
        assert_eq!(
            RetryEventType::parse("ignored_error"),
            Some(RetryEventType::IgnoredError)
        );
        assert_eq!(
            RetryEventType::parse("budget_exhausted"),
            Some(RetryEventType::BudgetExhausted)
        );
        assert_eq!(RetryEventType::parse("CALL_PERMITTED"), None);
        assert_eq!(
            RetryEventType::list(),
            "RETRY, ERROR, SUCCESS, IGNORED_ERROR, BUDGET_EXHAUSTED"
        );
    }
}
