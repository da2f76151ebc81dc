//! Named breakers: get-or-create by name, shared configs, per-instance overrides, keyed breakers.
//!
//! `mod.rs` holds the registry itself; `builder.rs` builds one (from code and files),
//! `global.rs` is the process-wide one the attribute uses, `keyed.rs` the run-time keyed
//! groups, and `hooks.rs` the public hooks on its set of breakers.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use crate::breaker::shared::Env;
use crate::breaker::CircuitBreaker;
use crate::concurrent_map::ConcurrentMap;
use crate::config::{Config, DEFAULT_CONFIG};
use crate::event::listeners::Subscription;
use crate::event::Event;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::registry::keyed::{Keyed, KeyedGroups};
use crate::time::clock::Clock;

pub(crate) mod builder;
pub(crate) mod global;
pub(crate) mod hooks;
pub(crate) mod keyed;

/// A set of named breakers with their configuration, one clock and one timer scheduler.
///
/// `breaker(name)` returns the breaker of that name, creating it on first use with the
/// instance configuration of that name if there is one, else the `default` shared config.
/// Cloning gives another handle to the same registry.
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) env: Arc<Env>,
    pub(crate) configs: HashMap<String, Config>,
    pub(crate) instances: HashMap<String, Config>,
    pub(crate) breakers: ConcurrentMap<String, CircuitBreaker>,
    pub(crate) keyed: KeyedGroups,
    /// Run for every breaker the registry creates, after it is in the registry.
    pub(crate) hooks: Arc<Hooks>,
}

impl Registry {
    /// The breaker named `name`, created on first use.
    pub fn breaker(&self, name: &str) -> CircuitBreaker {
        if let Some(b) = self.inner.breakers.get(name) {
            return b.clone();
        }
        let config = self.config_for(name).clone();
        let mut created = false;
        let breaker = self
            .inner
            .breakers
            .get_or_insert_with(name.to_owned(), || {
                created = true;
                CircuitBreaker::with_env(name, config, Arc::clone(&self.inner.env))
            })
            .clone();
        if created {
            self.inner.hooks.run(&RegistryEvent::Added(&breaker));
        }
        breaker
    }

    /// Calls `hook` for every change to this registry's set of breakers from now on: every
    /// breaker it creates (keyed ones included), right after it is added. Hooks run on the
    /// thread that created the breaker, with no lock of the registry held.
    pub fn on_registry_event<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_>) + Send + Sync + 'static,
    {
        self.inner.hooks.add(Arc::new(hook));
    }

    /// Whether two handles are the same registry.
    pub fn ptr_eq(&self, other: &Registry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The breaker named `name`, if it exists.
    pub fn find(&self, name: &str) -> Option<CircuitBreaker> {
        self.inner.breakers.get(name).cloned()
    }

    /// Every breaker created so far (keyed ones included), sorted by name.
    pub fn breakers(&self) -> Vec<CircuitBreaker> {
        let mut all = Vec::with_capacity(self.inner.breakers.len());
        self.inner.breakers.for_each(|_, b| all.push(b.clone()));
        self.inner.keyed.for_each_breaker(&mut |b| all.push(b.clone()));
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    /// The configuration a breaker named `name` gets: its instance config, else `default`.
    pub fn config_for(&self, name: &str) -> &Config {
        self.inner
            .instances
            .get(name)
            .or_else(|| self.inner.configs.get(DEFAULT_CONFIG))
            .expect("the builder always sets the default config")
    }

    /// A shared config by name (`default`, or any other the registry was built with).
    pub fn shared_config(&self, name: &str) -> Option<&Config> {
        self.inner.configs.get(name)
    }

    /// Breakers keyed at run time under `name`: one per distinct key (a provider and model
    /// pair, a tenant), each configured as `name` and named `name:key`. Calling this again
    /// with the same name and key type returns the same set.
    pub fn keyed<K>(&self, name: &str) -> Keyed<K>
    where
        K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
    {
        let inner = &*self.inner;
        inner
            .keyed
            .group(name, || self.config_for(name).clone(), &inner.env, &inner.hooks)
    }

    /// Calls `listener` for every event of every breaker of this registry.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.inner.env.listeners.add(Arc::new(listener))
    }

    /// A handle that does not keep the registry alive (for background tasks that must end
    /// with it).
    pub fn downgrade(&self) -> WeakRegistry {
        WeakRegistry {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The registry's clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.env.clock
    }

    /// Timers waiting in the registry's scheduler: at most one per breaker, since a state's
    /// timer leaves the queue when the state is left.
    pub fn pending_timers(&self) -> usize {
        self.inner.env.scheduler.pending()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("breakers", &self.inner.breakers.len())
            .field("clock", &self.inner.env.clock)
            .finish_non_exhaustive()
    }
}

/// A [`Registry`] handle that does not keep it alive; see [`Registry::downgrade`].
#[derive(Clone, Debug)]
pub struct WeakRegistry {
    inner: std::sync::Weak<Inner>,
}

impl WeakRegistry {
    /// The registry, if it still exists.
    pub fn upgrade(&self) -> Option<Registry> {
        self.inner.upgrade().map(|inner| Registry { inner })
    }
}

