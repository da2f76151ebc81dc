//! The registry's bulkheads: get-or-create by name, their configs, and the hooks on their set.
//! The public methods of [`Registry`](crate::Registry) on them (`mod.rs`) call into
//! [`Bulkheads`].
//!
//! Bulkheads are configured apart from breakers (Spring's `resilience4j.bulkhead.*`), so a
//! bulkhead and a breaker may share a name. Each bulkhead is built on the registry's [`Env`]:
//! it reads the registry's clock, waits on its scheduler, and publishes its events to the
//! registry's bulkhead listeners
//! ([`Registry::subscribe_bulkheads`](crate::Registry::subscribe_bulkheads)).

use std::collections::HashMap;
use std::sync::Arc;

use crate::bulkhead::Bulkhead;
use crate::concurrent_map::ConcurrentMap;
use crate::config::bulkhead::BulkheadConfig;
use crate::config::DEFAULT_CONFIG;
use crate::env::Env;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::registry::named::Named;

/// A registry's bulkheads and their configs.
pub(crate) struct Bulkheads {
    /// Shared configs by name; `default` is always among them.
    configs: HashMap<String, BulkheadConfig>,
    /// Instance configs by bulkhead name.
    instances: HashMap<String, BulkheadConfig>,
    /// The bulkheads by name, as the breakers are kept: names come from code, so the map keeps
    /// a slot per name ever used (it is grow-only), and the slot holds the bulkhead that has
    /// the name now, if any.
    slots: ConcurrentMap<String, Named<Bulkhead>>,
    /// Run for every change to the set of bulkheads.
    hooks: Hooks<Bulkhead>,
}

impl Bulkheads {
    /// The bulkheads of a registry built with these shared and instance configs (a `default`
    /// shared config is added if there is none: [`BulkheadConfig::default`]).
    pub(crate) fn new(
        mut configs: HashMap<String, BulkheadConfig>,
        instances: HashMap<String, BulkheadConfig>,
    ) -> Bulkheads {
        configs.entry(DEFAULT_CONFIG.to_owned()).or_default();
        Bulkheads {
            configs,
            instances,
            slots: ConcurrentMap::new(),
            hooks: Hooks::default(),
        }
    }

    /// The config the bulkhead `name` is created with.
    pub(crate) fn config_for(&self, name: &str) -> &BulkheadConfig {
        self.instances
            .get(name)
            .or_else(|| self.configs.get(DEFAULT_CONFIG))
            .expect("`new` always sets the default config")
    }

    /// How many bulkheads there are now.
    pub(crate) fn len(&self) -> usize {
        let mut count = 0;
        self.slots
            .for_each(|_, slot| count += usize::from(slot.lock().is_some()));
        count
    }

    /// A shared config by name.
    pub(crate) fn shared_config(&self, name: &str) -> Option<&BulkheadConfig> {
        self.configs.get(name)
    }

    /// The bulkhead named `name`, made on `env` with its config if the name has none.
    pub(crate) fn get_or_add(&self, name: &str, env: &Arc<Env>) -> Bulkhead {
        Named::get_or_add(&self.slots, name, &self.hooks, || {
            Bulkhead::with_env(name, self.config_for(name).clone(), Arc::clone(env))
        })
    }

    /// The bulkhead named `name`, if it exists.
    pub(crate) fn find(&self, name: &str) -> Option<Bulkhead> {
        self.slots.get(name)?.lock().clone()
    }

    /// Every bulkhead, sorted by name.
    pub(crate) fn all(&self) -> Vec<Bulkhead> {
        let mut all = Vec::new();
        self.slots
            .for_each(|_, slot| all.extend(slot.lock().clone()));
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    /// Takes the bulkhead named `name` out, detaches it and tells the hooks.
    pub(crate) fn remove(&self, name: &str) -> Option<Bulkhead> {
        let removed = self.slots.get(name)?.lock().take()?;
        removed.detach();
        self.hooks.run(&RegistryEvent::Removed(&removed));
        Some(removed)
    }

    /// The hooks on the set of bulkheads.
    pub(crate) fn hooks(&self) -> &Hooks<Bulkhead> {
        &self.hooks
    }
}
