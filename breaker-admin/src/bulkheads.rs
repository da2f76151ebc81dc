//! What the admin keeps per bulkhead: a ring of its newest `event-consumer-buffer-size` events
//! (two words each: the type and the time), written by one listener of its own
//! ([`Bulkhead::subscribe`]) on the thread that publishes the event: no lock, no allocation
//! (`ring.rs`). The bulkheads are followed by name through `roster.rs`.

use std::sync::Arc;

use breaker_core::{Bulkhead, BulkheadEvent, BulkheadEventKind, Registry, Subscription, Timestamp};

use crate::lenient;
use crate::roster::{EventRing, Followed, Record, Roster};

/// The event types the admin keeps and serves: Resilience4j's `BulkheadEvent.Type`, in its
/// order. A kind outside it (the core's `BulkheadEventKind` is non-exhaustive) is not kept.
pub(crate) const EVENT_TYPES: [BulkheadEventKind; 3] = [
    BulkheadEventKind::CallPermitted,
    BulkheadEventKind::CallRejected,
    BulkheadEventKind::CallFinished,
];

/// The type a path's `{eventType}` names: upper-cased as Resilience4j reads it, or as
/// leniently as Spring reads an enum (`call-rejected`, `callRejected`).
pub(crate) fn parse_event_type(name: &str) -> Option<BulkheadEventKind> {
    lenient::event_type(name, EVENT_TYPES, BulkheadEventKind::as_str)
}

/// `CALL_PERMITTED, CALL_REJECTED, CALL_FINISHED`, for an error message.
pub(crate) fn event_type_list() -> String {
    EVENT_TYPES.map(BulkheadEventKind::as_str).join(", ")
}

/// One bulkhead event without its bulkhead's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BulkheadRecord {
    pub(crate) kind: BulkheadEventKind,
    pub(crate) at: Timestamp,
}

impl Record<2> for BulkheadRecord {
    /// `[type, unix nanos]`, the type as its place in [`EVENT_TYPES`]; `None` for a type not
    /// there.
    fn words(self) -> Option<[u64; 2]> {
        let code = EVENT_TYPES.iter().position(|t| *t == self.kind)?;
        Some([code as u64, self.at.unix_nanos()])
    }

    fn from_words([code, at]: [u64; 2]) -> Option<BulkheadRecord> {
        Some(BulkheadRecord {
            kind: *EVENT_TYPES.get(usize::try_from(code).ok()?)?,
            at: Timestamp::from_unix_nanos(at),
        })
    }
}

/// A bulkhead the admin follows: the bulkhead, and its event ring (`None` for an
/// `event-consumer-buffer-size` of 0).
#[derive(Debug)]
pub(crate) struct TrackedBulkhead {
    pub(crate) bulkhead: Bulkhead,
    ring: Arc<EventRing<BulkheadRecord, 2>>,
    _subscription: Subscription,
}

impl Followed for TrackedBulkhead {
    type Instance = Bulkhead;

    fn follow(bulkhead: &Bulkhead) -> TrackedBulkhead {
        let ring = Arc::new(EventRing::new(
            bulkhead.config().event_consumer_buffer_size(),
        ));
        let writer = Arc::clone(&ring);
        let subscription = bulkhead.subscribe(move |event: &BulkheadEvent| {
            writer.push(BulkheadRecord {
                kind: event.kind(),
                at: event.at(),
            });
        });
        TrackedBulkhead {
            bulkhead: bulkhead.clone(),
            ring,
            _subscription: subscription,
        }
    }

    fn instance(&self) -> &Bulkhead {
        &self.bulkhead
    }

    fn name_of(bulkhead: &Bulkhead) -> &str {
        bulkhead.name()
    }

    fn same(a: &Bulkhead, b: &Bulkhead) -> bool {
        a.ptr_eq(b)
    }

    fn in_registry(registry: &Registry, name: &str) -> Option<Bulkhead> {
        registry.find_bulkhead(name)
    }
}

impl TrackedBulkhead {
    /// The ring's records, oldest first.
    pub(crate) fn recent(&self) -> Vec<BulkheadRecord> {
        self.ring.recent()
    }

    /// The ring's records from the newest back, read lazily.
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = BulkheadRecord> + '_ {
        self.ring.newest_first()
    }
}

/// Follows every bulkhead of `registry`, now and from now on.
pub(crate) fn attach(registry: &Registry) -> Arc<Roster<TrackedBulkhead>> {
    let roster = Roster::new(registry);
    // The hook first, then the bulkheads already there (see `Roster::new`).
    registry.on_bulkhead_registry_event_for(&roster, |roster, event| roster.on_event(event));
    for bulkhead in registry.bulkheads() {
        roster.add(&bulkhead);
    }
    roster
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_words() {
        for kind in EVENT_TYPES {
            let record = BulkheadRecord {
                kind,
                at: Timestamp::from_unix_nanos(1_700_000_000_123_456_789),
            };
            let words = record.words().expect("a type the admin keeps");
            assert_eq!(BulkheadRecord::from_words(words), Some(record));
        }
        assert_eq!(BulkheadRecord::from_words([3, 0]), None);
    }

    #[test]
    fn types_parse_in_any_case() {
        assert_eq!(
            parse_event_type("call_rejected"),
            Some(BulkheadEventKind::CallRejected)
        );
        assert_eq!(parse_event_type("CALL"), None);
        assert_eq!(
            event_type_list(),
            "CALL_PERMITTED, CALL_REJECTED, CALL_FINISHED"
        );
    }
}
