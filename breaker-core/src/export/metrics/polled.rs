//! The series the export writes from an instance's current metrics, when the instance is
//! registered and at each of the export's refreshes (every
//! [`REFRESH_INTERVAL`](super::exporter::REFRESH_INTERVAL) of the registry's clock), never from
//! a call: the bulkheads' gauges (`bulkheads.rs`) and the retries' counts (`retries.rs`).
//!
//! A bulkhead's free places change with every call, and a retry's counts with every call that
//! ends; writing them there would put a map lookup and a few handle writes on the call path for
//! values a scrape reads every few seconds. A scrape reads them at most about a second old, as
//! the breakers' gauges.

use metrics::{Label, Recorder};
use papaya::{Compute, Operation};

use crate::export::metrics::recorder::is_noop;

/// An instance whose series the export polls: how to hold it without keeping it alive, and how
/// to register and write its series.
pub(super) trait Polled: Sized {
    /// A handle that does not keep the instance alive: the registry's hooks hold the export,
    /// so a strong one would keep the instance (and the registry's scheduler) alive for ever.
    type Weak: Send + Sync;
    /// The instance's series, registered with one recorder.
    type Handles: Send + Sync;

    /// The name its series carry, and its key in the export.
    fn name(&self) -> &str;
    /// A weak handle to it.
    fn downgrade(&self) -> Self::Weak;
    /// The instance of `weak`, while it exists.
    fn upgrade(weak: &Self::Weak) -> Option<Self>;
    /// Whether `weak` is a handle to `instance` (not to another one with its name).
    fn is(weak: &Self::Weak, instance: &Self) -> bool;
    /// Whether two weak handles are to the same instance.
    fn same(a: &Self::Weak, b: &Self::Weak) -> bool;
    /// Registers the series of the instance named `name`, with the registry's `tags`.
    fn register(recorder: &dyn Recorder, name: &str, tags: &[Label]) -> Self::Handles;
    /// Writes `handles` from the instance's current metrics.
    fn write(&self, handles: &Self::Handles);
}

/// One instance in the export: its series, replaced whole when they are registered again.
struct Entry<P: Polled> {
    instance: P::Weak,
    handles: P::Handles,
    /// The handles came from the no-op recorder: register them at the next refresh that finds
    /// a recorder.
    unregistered: bool,
}

impl<P: Polled> Entry<P> {
    fn new(instance: P::Weak, name: &str, recorder: &dyn Recorder, tags: &[Label]) -> Entry<P> {
        Entry {
            instance,
            handles: P::register(recorder, name, tags),
            unregistered: is_noop(recorder),
        }
    }
}

/// The export's instances of one kind, by name.
pub(super) struct PolledSeries<P: Polled> {
    entries: papaya::HashMap<Box<str>, Entry<P>>,
}

impl<P: Polled> Default for PolledSeries<P> {
    fn default() -> Self {
        PolledSeries {
            entries: papaya::HashMap::new(),
        }
    }
}

impl<P: Polled> PolledSeries<P> {
    /// How many instances are exported.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is exported.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Registers `instance`'s series with `recorder` and writes them. An instance that takes a
    /// name another one had takes its entry over.
    pub(super) fn register(&self, instance: &P, recorder: &dyn Recorder, tags: &[Label]) {
        let entry = Entry::<P>::new(instance.downgrade(), instance.name(), recorder, tags);
        instance.write(&entry.handles);
        self.entries.pin().insert(instance.name().into(), entry);
    }

    /// Drops the series of an instance that left the registry, unless its name already has an
    /// instance of its own again.
    pub(super) fn unregister(&self, instance: &P) {
        let _ = self
            .entries
            .pin()
            .remove_if(instance.name(), |_, entry| P::is(&entry.instance, instance));
    }

    /// Writes every instance's series from its current metrics. With a real `recorder`,
    /// registers the series again first: all of them if `all`, else those that came from the
    /// no-op recorder. Entries of instances that no longer exist are dropped.
    pub(super) fn refresh(&self, recorder: &dyn Recorder, all: bool, tags: &[Label]) {
        let registering = !is_noop(recorder);
        let entries = self.entries.pin();
        for (name, entry) in entries.iter() {
            let Some(instance) = P::upgrade(&entry.instance) else {
                let _ =
                    entries.remove_if(&**name, |_, held| P::same(&held.instance, &entry.instance));
                continue;
            };
            if !(registering && (all || entry.unregistered)) {
                instance.write(&entry.handles);
                continue;
            }
            let swapped = entries.compute(name.clone(), |now| match now {
                Some((_, held)) if P::same(&held.instance, &entry.instance) => {
                    Operation::Insert(Entry::new(instance.downgrade(), name, recorder, tags))
                }
                _ => Operation::Abort(()),
            });
            if let Compute::Updated { new: (_, new), .. } = swapped {
                instance.write(&new.handles);
            }
        }
    }
}
