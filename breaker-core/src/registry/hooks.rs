//! Hooks on a registry's set of breakers, for code outside the registry that must hear of
//! every breaker (the metrics export, the Redis hint, an application's own bookkeeping).

use std::sync::{Arc, Mutex};

use crate::breaker::CircuitBreaker;

/// Something that happened to a registry's set of breakers.
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryEvent<'a> {
    /// A breaker was created (on first use of its name, or of its key in a keyed group) and is
    /// now in the registry.
    Added(&'a CircuitBreaker),
    /// A breaker left the registry: [`Registry::remove`](crate::Registry::remove),
    /// [`Keyed::remove`](crate::Keyed::remove), or eviction of an idle keyed breaker. It is
    /// detached: it works on for whoever holds it, unheard by the registry's listeners.
    Removed(&'a CircuitBreaker),
    /// [`Registry::replace`](crate::Registry::replace) gave the name to a new breaker; the old
    /// one is detached.
    Replaced {
        /// The breaker that had the name.
        old: &'a CircuitBreaker,
        /// The breaker that has it now.
        new: &'a CircuitBreaker,
    },
}

/// A hook, which returns whether it wants to hear more (`false` once its owner is gone).
pub(crate) type Hook = Arc<dyn Fn(&RegistryEvent<'_>) -> bool + Send + Sync>;

/// The registry's hooks. A change to the set of breakers is rare next to calls (once per name
/// or key), so a mutex is fine here; no hook runs while it is held.
#[derive(Default)]
pub(crate) struct Hooks(Mutex<Vec<Hook>>);

impl Hooks {
    pub(crate) fn add(&self, hook: Hook) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(hook);
    }

    /// Runs every hook; those that are done are removed.
    pub(crate) fn run(&self, event: &RegistryEvent<'_>) {
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

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks").field("count", &self.len()).finish()
    }
}
