//! The export's bulkheads: two gauges each, Resilience4j's
//! `resilience4j_bulkhead_available_concurrent_calls` and
//! `resilience4j_bulkhead_max_allowed_concurrent_calls`, by display name.
//!
//! The gauges are written when a bulkhead is registered and at each of the export's refreshes
//! (every [`REFRESH_INTERVAL`](super::exporter::REFRESH_INTERVAL) of the registry's clock),
//! never from a call: the free places change with every call, and writing them there would put
//! a map lookup and two gauge writes on the call path for a value a scrape reads every few
//! seconds. A scrape reads them at most about a second old, as the breakers' gauges.

use metrics::{Gauge, Label, Level, Metadata, Recorder};
use papaya::{Compute, Operation};

use crate::bulkhead::{Bulkhead, WeakBulkhead};
use crate::export::metrics::names::BulkheadKeys;
use crate::export::metrics::recorder::is_noop;

/// What the `metrics` macros would pass for a registration from this module.
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// One bulkhead in the export: its gauges, replaced whole when they are registered again.
struct Entry {
    /// Weak, as the breakers' entries are: the registry's hook holds the export, so a strong
    /// handle here would keep the bulkhead (and the registry's scheduler) alive for ever.
    bulkhead: WeakBulkhead,
    available: Gauge,
    max_allowed: Gauge,
    /// The gauges came from the no-op recorder: register them at the next refresh that finds
    /// a recorder.
    unregistered: bool,
}

impl Entry {
    fn new(bulkhead: WeakBulkhead, recorder: &dyn Recorder, keys: &BulkheadKeys) -> Entry {
        Entry {
            bulkhead,
            available: recorder.register_gauge(&keys.available, &METADATA),
            max_allowed: recorder.register_gauge(&keys.max_allowed, &METADATA),
            unregistered: is_noop(recorder),
        }
    }

    /// Writes both gauges from `bulkhead`'s current metrics.
    fn write(&self, bulkhead: &Bulkhead) {
        let m = bulkhead.metrics();
        self.available
            .set(f64::from(m.available_concurrent_calls()));
        self.max_allowed
            .set(f64::from(m.max_allowed_concurrent_calls()));
    }
}

/// The export's bulkheads, by display name.
#[derive(Default)]
pub(super) struct BulkheadGauges {
    entries: papaya::HashMap<Box<str>, Entry>,
}

impl BulkheadGauges {
    /// How many bulkheads are exported.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no bulkhead is exported.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Registers `bulkhead`'s gauges with `recorder` and writes them. A bulkhead that takes a
    /// name another one had takes its entry over.
    pub(super) fn register(&self, bulkhead: &Bulkhead, recorder: &dyn Recorder, tags: &[Label]) {
        let entry = Entry::new(
            bulkhead.downgrade(),
            recorder,
            &BulkheadKeys::new(bulkhead.name(), tags),
        );
        entry.write(bulkhead);
        self.entries.pin().insert(bulkhead.name().into(), entry);
    }

    /// Drops the gauges of a bulkhead that left the registry, unless its name already has a
    /// bulkhead of its own again.
    pub(super) fn unregister(&self, bulkhead: &Bulkhead) {
        let _ = self
            .entries
            .pin()
            .remove_if(bulkhead.name(), |_, entry| entry.bulkhead.is(bulkhead));
    }

    /// Writes every bulkhead's gauges from its current metrics. With a real `recorder`,
    /// registers the gauges again first: all of them if `all`, else those that came from the
    /// no-op recorder. Entries of bulkheads that no longer exist are dropped.
    pub(super) fn refresh(&self, recorder: &dyn Recorder, all: bool, tags: &[Label]) {
        let registering = !is_noop(recorder);
        let entries = self.entries.pin();
        for (name, entry) in entries.iter() {
            let Some(bulkhead) = entry.bulkhead.upgrade() else {
                let _ = entries.remove_if(&**name, |_, held| held.bulkhead.ptr_eq(&entry.bulkhead));
                continue;
            };
            if !(registering && (all || entry.unregistered)) {
                entry.write(&bulkhead);
                continue;
            }
            let keys = BulkheadKeys::new(name, tags);
            let swapped = entries.compute(name.clone(), |now| match now {
                Some((_, held)) if held.bulkhead.ptr_eq(&entry.bulkhead) => {
                    Operation::Insert(Entry::new(held.bulkhead.clone(), recorder, &keys))
                }
                _ => Operation::Abort(()),
            });
            if let Compute::Updated { new: (_, new), .. } = swapped {
                new.write(&bulkhead);
            }
        }
    }
}
