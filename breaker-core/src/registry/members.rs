//! A registry's members of one pattern beside the breakers (its bulkheads, its retries):
//! their configs, get-or-create by name, and the hooks on their set. `bulkheads.rs` and
//! `retries.rs` say what a bulkhead and a retry are to it ([`Member`]); the public methods of
//! [`Registry`](crate::Registry) on them (`mod.rs`) call into [`Members`].
//!
//! Each pattern is configured apart from the others (Spring's `resilience4j.<pattern>.*`), so
//! a bulkhead, a retry and a breaker may share a name. Each member is built on the registry's
//! [`Env`]: it reads the registry's clock, waits on its scheduler, and publishes its events to
//! the registry's listeners of its pattern.

use std::collections::HashMap;
use std::sync::Arc;

use crate::concurrent_map::ConcurrentMap;
use crate::config::DEFAULT_CONFIG;
use crate::env::Env;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::registry::named::Named;

/// What the registry needs of a pattern's handle to keep it by name.
pub(crate) trait Member: Clone + Send + Sync + 'static {
    /// The pattern's validated config.
    type Config: Clone + Default;
    /// A member named `name` with `config`, on the registry's `env`.
    fn make(name: &str, config: Self::Config, env: Arc<Env>) -> Self;
    /// Its name.
    fn name(&self) -> &str;
    /// Stops its events from reaching the registry's listeners: it left the registry.
    fn detach(&self);
}

/// A registry's members of one pattern and their configs.
pub(crate) struct Members<M: Member> {
    /// Shared configs by name; `default` is always among them.
    shared: HashMap<String, M::Config>,
    /// Instance configs by member name.
    instances: HashMap<String, M::Config>,
    /// The members by name, as the breakers are kept: names come from code, so the map keeps
    /// a slot per name ever used (it is grow-only), and the slot holds the member that has the
    /// name now, if any.
    slots: ConcurrentMap<String, Named<M>>,
    /// Run for every change to the set of members.
    hooks: Hooks<M>,
}

impl<M: Member> Members<M> {
    /// The members of a registry built with these shared and instance configs (a `default`
    /// shared config is added if there is none: the pattern's defaults).
    pub(crate) fn new(
        mut shared: HashMap<String, M::Config>,
        instances: HashMap<String, M::Config>,
    ) -> Self {
        shared.entry(DEFAULT_CONFIG.to_owned()).or_default();
        Members {
            shared,
            instances,
            slots: ConcurrentMap::new(),
            hooks: Hooks::default(),
        }
    }

    /// The config the member `name` is created with: its instance config, else `default`.
    pub(crate) fn config_for(&self, name: &str) -> &M::Config {
        self.instances
            .get(name)
            .or_else(|| self.shared.get(DEFAULT_CONFIG))
            .expect("`new` always sets the default config")
    }

    /// A shared config by name.
    pub(crate) fn shared_config(&self, name: &str) -> Option<&M::Config> {
        self.shared.get(name)
    }

    /// How many members there are now.
    pub(crate) fn len(&self) -> usize {
        let mut count = 0;
        self.slots
            .for_each(|_, slot| count += usize::from(slot.lock().is_some()));
        count
    }

    /// The member named `name`, made on `env` with its config if the name has none.
    pub(crate) fn get_or_add(&self, name: &str, env: &Arc<Env>) -> M {
        Named::get_or_add(&self.slots, name, &self.hooks, || {
            M::make(name, self.config_for(name).clone(), Arc::clone(env))
        })
    }

    /// The member named `name`, if it exists.
    pub(crate) fn find(&self, name: &str) -> Option<M> {
        self.slots.get(name)?.lock().clone()
    }

    /// Every member, sorted by name.
    pub(crate) fn all(&self) -> Vec<M> {
        let mut all = Vec::new();
        self.slots
            .for_each(|_, slot| all.extend(slot.lock().clone()));
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    /// Takes the member named `name` out, detaches it and tells the hooks.
    pub(crate) fn remove(&self, name: &str) -> Option<M> {
        let removed = self.slots.get(name)?.lock().take()?;
        removed.detach();
        self.hooks.run(&RegistryEvent::Removed(&removed));
        Some(removed)
    }

    /// The hooks on the set of members.
    pub(crate) fn hooks(&self) -> &Hooks<M> {
        &self.hooks
    }
}
