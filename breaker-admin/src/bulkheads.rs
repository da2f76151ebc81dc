//! What the admin keeps per bulkhead, and how it stays attached to the registry's bulkheads.
//!
//! Each bulkhead gets a ring of its newest `event-consumer-buffer-size` events (two words
//! each: the type and the time) and one listener of its own ([`Bulkhead::subscribe`]) that
//! writes it, on the thread that publishes the event: no lock, no allocation (`ring.rs`). The
//! map below is for the HTTP side only; the call path never touches it.
//!
//! Bulkheads are attached when the admin is built and then through the registry's bulkhead
//! hooks ([`Registry::on_bulkhead_registry_event_for`], which drops the hook with the admin),
//! as `hub.rs` attaches breakers: `Added` attaches, `Removed` drops the bulkhead's ring and
//! unsubscribes, `Replaced` does both. The ring is sized when the bulkhead is attached; a
//! later `change_config` does not resize it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use breaker_core::{
    Bulkhead, BulkheadEvent, BulkheadEventKind, Registry, RegistryEvent, Subscription, Timestamp,
};

use crate::ring::Ring;

/// The event types the admin keeps and serves: Resilience4j's `BulkheadEvent.Type`, in its
/// order. A kind outside it (the core's `BulkheadEventKind` is non-exhaustive) is not kept.
pub(crate) const EVENT_TYPES: [BulkheadEventKind; 3] = [
    BulkheadEventKind::CallPermitted,
    BulkheadEventKind::CallRejected,
    BulkheadEventKind::CallFinished,
];

/// The type named `name`, in any case (Resilience4j upper-cases the path's `eventType`).
pub(crate) fn parse_event_type(name: &str) -> Option<BulkheadEventKind> {
    EVENT_TYPES
        .into_iter()
        .find(|t| t.as_str().eq_ignore_ascii_case(name))
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

impl BulkheadRecord {
    /// `[type, unix nanos]`, the type as its place in [`EVENT_TYPES`]; `None` for a type not
    /// there.
    fn words(self) -> Option<[u64; 2]> {
        let code = EVENT_TYPES.iter().position(|t| *t == self.kind)?;
        Some([code as u64, self.at.unix_nanos()])
    }

    /// The record of words made by [`BulkheadRecord::words`]; `None` for words no record makes.
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
    ring: Arc<Option<Ring<2>>>,
    _subscription: Subscription,
}

impl TrackedBulkhead {
    fn new(bulkhead: &Bulkhead) -> TrackedBulkhead {
        let size = bulkhead.config().event_consumer_buffer_size() as usize;
        let ring = Arc::new((size > 0).then(|| Ring::new(size)));
        let writer = Arc::clone(&ring);
        let subscription = bulkhead.subscribe(move |event: &BulkheadEvent| {
            let record = BulkheadRecord {
                kind: event.kind(),
                at: event.at(),
            };
            if let (Some(ring), Some(words)) = (&*writer, record.words()) {
                ring.push(words);
            }
        });
        TrackedBulkhead {
            bulkhead: bulkhead.clone(),
            ring,
            _subscription: subscription,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.bulkhead.name()
    }

    /// The ring's records, oldest first.
    pub(crate) fn recent(&self) -> Vec<BulkheadRecord> {
        (*self.ring).as_ref().map_or_else(Vec::new, |ring| {
            ring.recent()
                .into_iter()
                .filter_map(|(_, words)| BulkheadRecord::from_words(words))
                .collect()
        })
    }
}

/// The bulkheads the admin follows, by name.
pub(crate) struct BulkheadHub {
    registry: Registry,
    by_name: RwLock<BTreeMap<String, Arc<TrackedBulkhead>>>,
}

impl BulkheadHub {
    /// Follows every bulkhead of `registry`, now and from now on.
    pub(crate) fn attach(registry: &Registry) -> Arc<BulkheadHub> {
        let hub = Arc::new(BulkheadHub {
            registry: registry.clone(),
            by_name: RwLock::default(),
        });
        // The hook first, then the bulkheads already there: one added in between is seen
        // twice, and `add` keeps one.
        registry.on_bulkhead_registry_event_for(&hub, |hub, event| match event {
            RegistryEvent::Added(bulkhead) => hub.add(bulkhead),
            RegistryEvent::Removed(bulkhead) => hub.remove(bulkhead),
            RegistryEvent::Replaced { old, new } => {
                hub.remove(old);
                hub.add(new);
            }
            _ => {}
        });
        for bulkhead in registry.bulkheads() {
            hub.add(&bulkhead);
        }
        hub
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Arc<TrackedBulkhead>>> {
        self.by_name.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Arc<TrackedBulkhead>>> {
        self.by_name.write().unwrap_or_else(|e| e.into_inner())
    }

    fn follows(&self, bulkhead: &Bulkhead) -> bool {
        self.read()
            .get(bulkhead.name())
            .is_some_and(|t| t.bulkhead.ptr_eq(bulkhead))
    }

    fn add(&self, bulkhead: &Bulkhead) {
        if self.follows(bulkhead) {
            return;
        }
        // Subscribing happens outside the lock; a ring that is not kept unsubscribes on drop.
        let tracked = Arc::new(TrackedBulkhead::new(bulkhead));
        let displaced = {
            let mut map = self.write();
            // Kept only while the registry still gives the name to this bulkhead: a removal
            // takes it out of the registry before its `Removed` hook runs, and that hook waits
            // for this lock, so a bulkhead removed while this hook ran is not kept.
            let current = self.registry.find_bulkhead(bulkhead.name());
            if current.is_some_and(|c| c.ptr_eq(bulkhead)) && !follows_in(&map, bulkhead) {
                map.insert(bulkhead.name().to_owned(), Arc::clone(&tracked))
            } else {
                None
            }
        };
        // Dropped with no lock held: the last handle of a bulkhead may go with it.
        drop((displaced, tracked));
    }

    fn remove(&self, bulkhead: &Bulkhead) {
        let removed = {
            let mut map = self.write();
            if follows_in(&map, bulkhead) {
                map.remove(bulkhead.name())
            } else {
                None
            }
        };
        drop(removed);
    }

    /// The bulkhead named `name`.
    pub(crate) fn find(&self, name: &str) -> Option<Arc<TrackedBulkhead>> {
        self.read().get(name).cloned()
    }

    /// Every bulkhead followed, sorted by name.
    pub(crate) fn all(&self) -> Vec<Arc<TrackedBulkhead>> {
        self.read().values().cloned().collect()
    }

    /// How many bulkheads are followed.
    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }
}

fn follows_in(map: &BTreeMap<String, Arc<TrackedBulkhead>>, bulkhead: &Bulkhead) -> bool {
    map.get(bulkhead.name())
        .is_some_and(|t| t.bulkhead.ptr_eq(bulkhead))
}

impl std::fmt::Debug for BulkheadHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BulkheadHub")
            .field("bulkheads", &self.len())
            .finish_non_exhaustive()
    }
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
