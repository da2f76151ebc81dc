//! The slot of one plain name in a registry, and get-or-create on a map of them: what the
//! registry's breakers (`mod.rs`) and its bulkheads (`bulkheads.rs`) share.

use crate::breaker::CircuitBreaker;
use crate::concurrent_map::ConcurrentMap;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::sync::{Mutex, MutexGuard};

/// The slot of one plain name: the breaker (or bulkhead) that has it now, if any. The lock is
/// the name's own, held only to read or swap the handle, never while a hook or a member runs.
pub(crate) struct Named<M = CircuitBreaker>(Mutex<Option<M>>);

impl<M> Default for Named<M> {
    fn default() -> Self {
        Named(Mutex::new(None))
    }
}

impl<M: Clone> Named<M> {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<M>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The member named `name` in `slots`, made by `make` and announced to `hooks`
    /// ([`RegistryEvent::Added`]) if the name has none.
    pub(crate) fn get_or_add(
        slots: &ConcurrentMap<String, Named<M>>,
        name: &str,
        hooks: &Hooks<M>,
        make: impl FnOnce() -> M,
    ) -> M {
        let slot = match slots.get(name) {
            Some(slot) => slot,
            None => slots.get_or_insert_with(name.to_owned(), Named::default),
        };
        let mut current = slot.lock();
        if let Some(member) = &*current {
            return member.clone();
        }
        let made = make();
        *current = Some(made.clone());
        drop(current);
        hooks.run(&RegistryEvent::Added(&made));
        made
    }
}
