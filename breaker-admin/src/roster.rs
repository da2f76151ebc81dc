//! The instances of one pattern the admin follows by name (the bulkheads, the retries), and how
//! they stay attached to the registry's set.
//!
//! Each instance followed is a [`Followed`] value: the instance, its event ring and the
//! listener of its own that writes the ring on the thread that publishes the event, with no
//! lock and no allocation (`ring.rs`). The map below is for the HTTP side only; the call path
//! never touches it.
//!
//! Instances are attached when the admin is built and then through the registry's hooks for
//! the pattern (`on_bulkhead_registry_event_for`, `on_retry_registry_event_for`, which drop the
//! hook with the admin), as `hub.rs` attaches breakers: `Added` attaches, `Removed` drops the
//! instance's ring and unsubscribes, `Replaced` does both. The ring is sized when the instance
//! is attached; a later `change_config` does not resize it.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use breaker_core::{Registry, RegistryEvent};

use crate::ring::Ring;

/// What the admin keeps for one followed instance of a pattern.
pub(crate) trait Followed: Send + Sync + Sized + 'static {
    /// The pattern's handle (`Bulkhead`, `Retry`).
    type Instance;

    /// Starts following `instance`: its ring, and the listener that writes it.
    fn follow(instance: &Self::Instance) -> Self;
    /// The instance followed.
    fn instance(&self) -> &Self::Instance;
    /// An instance's name.
    fn name_of(instance: &Self::Instance) -> &str;
    /// Whether two handles are to the same instance.
    fn same(a: &Self::Instance, b: &Self::Instance) -> bool;
    /// The registry's instance named `name`, if any.
    fn in_registry(registry: &Registry, name: &str) -> Option<Self::Instance>;

    /// The followed instance's name.
    fn name(&self) -> &str {
        Self::name_of(self.instance())
    }
}

/// An event kept in a followed instance's ring, as `W` words.
pub(crate) trait Record<const W: usize>: Sized {
    /// The record's words; `None` for a record the ring does not keep.
    fn words(self) -> Option<[u64; W]>;
    /// The record of words made by [`Record::words`]; `None` for words no record makes.
    fn from_words(words: [u64; W]) -> Option<Self>;
}

/// A followed instance's newest `event-consumer-buffer-size` events (none kept for a size of
/// 0), written by its listener and read by the endpoints.
#[derive(Debug)]
pub(crate) struct EventRing<R, const W: usize> {
    ring: Option<Ring<W>>,
    records: PhantomData<fn() -> R>,
}

impl<R: Record<W>, const W: usize> EventRing<R, W> {
    /// A ring of `size` records.
    pub(crate) fn new(size: u32) -> EventRing<R, W> {
        EventRing {
            ring: (size > 0).then(|| Ring::new(size as usize)),
            records: PhantomData,
        }
    }

    /// Keeps `record`, if it has words; never waits, never allocates.
    pub(crate) fn push(&self, record: R) {
        if let (Some(ring), Some(words)) = (&self.ring, record.words()) {
            ring.push(words);
        }
    }

    /// The records kept from the newest back, read lazily (`Ring::newest_first`).
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = R> + '_ {
        self.ring
            .iter()
            .flat_map(Ring::newest_first)
            .filter_map(R::from_words)
    }

    /// The records kept, oldest first.
    pub(crate) fn recent(&self) -> Vec<R> {
        self.ring.as_ref().map_or_else(Vec::new, |ring| {
            ring.recent()
                .into_iter()
                .filter_map(|(_, words)| R::from_words(words))
                .collect()
        })
    }
}

/// The followed instances of one pattern, by name.
pub(crate) struct Roster<T: Followed> {
    registry: Registry,
    by_name: RwLock<BTreeMap<String, Arc<T>>>,
}

impl<T: Followed> Roster<T> {
    /// An empty roster over `registry`'s instances. Attach its hook first, then
    /// [`add`](Roster::add) the instances already there: one added in between is seen twice,
    /// and `add` keeps one.
    pub(crate) fn new(registry: &Registry) -> Arc<Roster<T>> {
        Arc::new(Roster {
            registry: registry.clone(),
            by_name: RwLock::default(),
        })
    }

    /// The registry's hook for the pattern.
    pub(crate) fn on_event(&self, event: &RegistryEvent<'_, T::Instance>) {
        match event {
            RegistryEvent::Added(instance) => self.add(instance),
            RegistryEvent::Removed(instance) => self.remove(instance),
            RegistryEvent::Replaced { old, new } => {
                self.remove(old);
                self.add(new);
            }
            _ => {}
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Arc<T>>> {
        self.by_name.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Arc<T>>> {
        self.by_name.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows `instance`, unless it is followed already.
    pub(crate) fn add(&self, instance: &T::Instance) {
        if follows_in(&self.read(), instance) {
            return;
        }
        // Subscribing happens outside the lock; a ring that is not kept unsubscribes on drop.
        let tracked = Arc::new(T::follow(instance));
        let name = T::name_of(instance);
        let displaced = {
            let mut map = self.write();
            // Kept only while the registry still gives the name to this instance: a removal
            // takes it out of the registry before its `Removed` hook runs, and that hook waits
            // for this lock, so an instance removed while this hook ran is not kept.
            let current = T::in_registry(&self.registry, name);
            if current.is_some_and(|c| T::same(&c, instance)) && !follows_in(&map, instance) {
                map.insert(name.to_owned(), Arc::clone(&tracked))
            } else {
                None
            }
        };
        // Dropped with no lock held: the last handle of an instance may go with it.
        drop((displaced, tracked));
    }

    fn remove(&self, instance: &T::Instance) {
        let removed = {
            let mut map = self.write();
            if follows_in(&map, instance) {
                map.remove(T::name_of(instance))
            } else {
                None
            }
        };
        drop(removed);
    }

    /// The instance named `name`.
    pub(crate) fn find(&self, name: &str) -> Option<Arc<T>> {
        self.read().get(name).cloned()
    }

    /// Every instance followed, sorted by name.
    pub(crate) fn all(&self) -> Vec<Arc<T>> {
        self.read().values().cloned().collect()
    }

    /// How many instances are followed.
    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }
}

fn follows_in<T: Followed>(map: &BTreeMap<String, Arc<T>>, instance: &T::Instance) -> bool {
    map.get(T::name_of(instance))
        .is_some_and(|t| T::same(t.instance(), instance))
}

impl<T: Followed> std::fmt::Debug for Roster<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roster")
            .field("followed", &self.len())
            .finish_non_exhaustive()
    }
}
