//! Hooks on a registry's sets of breakers, of bulkheads and of retries, for code outside the
//! registry that must hear of every member (the metrics export, the Redis hint, the operations
//! surface, an application's own bookkeeping).
//!
//! Nothing here depends on what the members are: [`RegistryEvent`] and [`Hooks`] take the
//! member's handle as a type parameter, [`CircuitBreaker`] unless another is named, so the
//! registry's bulkheads ([`Bulkhead`](crate::Bulkhead)) and retries
//! ([`Retry`](crate::Retry)) publish the same events through hooks of their own
//! ([`Registry::on_bulkhead_registry_event`](crate::Registry::on_bulkhead_registry_event),
//! [`Registry::on_retry_registry_event`](crate::Registry::on_retry_registry_event)).

use std::sync::{Arc, Mutex};

use crate::breaker::CircuitBreaker;

/// Something that happened to a registry's set of breakers, of bulkheads or of retries.
///
/// `P` is the handle of the registry's members: [`CircuitBreaker`] for the breakers of a
/// [`Registry`](crate::Registry) ([`on_registry_event`](crate::Registry::on_registry_event)),
/// [`Bulkhead`](crate::Bulkhead) for its bulkheads
/// ([`on_bulkhead_registry_event`](crate::Registry::on_bulkhead_registry_event)),
/// [`Retry`](crate::Retry) for its retries
/// ([`on_retry_registry_event`](crate::Registry::on_retry_registry_event)).
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryEvent<'a, P = CircuitBreaker> {
    /// A member was created (on first use of its name, or of its key in a keyed group) and is
    /// now in the registry.
    Added(&'a P),
    /// A member left the registry: [`Registry::remove`](crate::Registry::remove),
    /// [`Keyed::remove`](crate::Keyed::remove), eviction of an idle keyed breaker,
    /// [`Registry::remove_bulkhead`](crate::Registry::remove_bulkhead) or
    /// [`Registry::remove_retry`](crate::Registry::remove_retry). It is detached: it works
    /// on for whoever holds it, unheard by the registry's listeners.
    Removed(&'a P),
    /// [`Registry::replace`](crate::Registry::replace) gave the name to a new breaker; the old
    /// one is detached. (Bulkheads and retries are not replaced: their hooks hear `Added` and
    /// `Removed`.)
    Replaced {
        /// The breaker that had the name.
        old: &'a P,
        /// The breaker that has it now.
        new: &'a P,
    },
}

/// A hook, which returns whether it wants to hear more (`false` once its owner is gone).
pub(crate) type Hook<P = CircuitBreaker> = Arc<dyn Fn(&RegistryEvent<'_, P>) -> bool + Send + Sync>;

/// A registry's hooks on its members of type `P`. A change to the set of members is rare next
/// to calls (once per name or key), so a mutex is fine here; no hook runs while it is held.
pub(crate) struct Hooks<P = CircuitBreaker>(Mutex<Vec<Hook<P>>>);

impl<P> Default for Hooks<P> {
    fn default() -> Self {
        Hooks(Mutex::default())
    }
}

impl<P> Hooks<P> {
    pub(crate) fn add(&self, hook: Hook<P>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(hook);
    }

    /// Runs every hook; those that are done are removed.
    pub(crate) fn run(&self, event: &RegistryEvent<'_, P>) {
        let hooks = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut done = Vec::new();
        for hook in hooks {
            if !hook(event) {
                done.push(hook);
            }
        }
        if !done.is_empty() {
            let mut hooks = self.0.lock().unwrap_or_else(|e| e.into_inner());
            hooks.retain(|hook| !done.iter().any(|d| Arc::ptr_eq(d, hook)));
        }
    }

    /// How many hooks there are.
    pub(crate) fn len(&self) -> usize {
        self.0.lock().map_or(0, |hooks| hooks.len())
    }
}

impl<P: 'static> Hooks<P> {
    /// Adds a hook that hears every change for as long as the registry lives.
    pub(crate) fn add_for_ever<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_, P>) + Send + Sync + 'static,
    {
        self.add(Arc::new(move |event| {
            hook(event);
            true
        }));
    }

    /// Adds a hook that belongs to `owner`: it is called with `owner` while `owner` lives
    /// (held weakly), and dropped at the first change after `owner` is gone.
    pub(crate) fn add_for_owner<T, F>(&self, owner: &Arc<T>, hook: F)
    where
        T: Send + Sync + 'static,
        F: Fn(&T, &RegistryEvent<'_, P>) + Send + Sync + 'static,
    {
        let owner = Arc::downgrade(owner);
        self.add(Arc::new(move |event| match owner.upgrade() {
            Some(owner) => {
                hook(&owner, event);
                true
            }
            None => false,
        }));
    }
}

impl<P> std::fmt::Debug for Hooks<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks").field("count", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A member that is not a breaker, as another pattern's registry would have.
    #[derive(Debug, PartialEq)]
    struct Bulkhead(&'static str);

    #[test]
    fn hooks_hear_any_member_type_and_those_that_are_done_are_dropped() {
        let hooks: Hooks<Bulkhead> = Hooks::default();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        hooks.add(Arc::new(move |event| {
            let name = match event {
                RegistryEvent::Added(b) | RegistryEvent::Removed(b) => b.0,
                RegistryEvent::Replaced { new, .. } => new.0,
            };
            log.lock().unwrap().push(name);
            true
        }));
        let once = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&once);
        hooks.add(Arc::new(move |_| {
            count.fetch_add(1, Ordering::Relaxed);
            false
        }));
        assert_eq!(hooks.len(), 2);

        hooks.run(&RegistryEvent::Added(&Bulkhead("db")));
        let (old, new) = (Bulkhead("db"), Bulkhead("db2"));
        hooks.run(&RegistryEvent::Replaced {
            old: &old,
            new: &new,
        });
        assert_eq!(*heard.lock().unwrap(), ["db", "db2"]);
        assert_eq!(
            once.load(Ordering::Relaxed),
            1,
            "a hook that is done hears no more"
        );
        assert_eq!(hooks.len(), 1);
    }
}
