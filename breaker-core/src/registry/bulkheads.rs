//! The registry's bulkheads: get-or-create by name, their configs, the hooks on their set, and
//! the public methods of [`Registry`] on them.
//!
//! Bulkheads are configured apart from breakers (Spring's `resilience4j.bulkhead.*`), so a
//! bulkhead and a breaker may share a name. Each bulkhead is built on the registry's [`Env`]:
//! it reads the registry's clock, waits on its scheduler, and publishes its events to the
//! registry's bulkhead listeners ([`Registry::subscribe_bulkheads`]).
//!
//! [`Env`]: crate::env::Env

use std::collections::HashMap;
use std::sync::Arc;

use crate::bulkhead::{Bulkhead, BulkheadEvent};
use crate::concurrent_map::ConcurrentMap;
use crate::config::bulkhead::BulkheadConfig;
use crate::config::DEFAULT_CONFIG;
use crate::event::listeners::Subscription;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::registry::{Named, Registry};

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
    fn config_for(&self, name: &str) -> &BulkheadConfig {
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
}

impl Registry {
    /// The bulkhead named `name`, created on first use with its instance config, else the
    /// bulkhead shared config `default` ([`bulkhead_config_for`]). Every call with the same
    /// name returns the same bulkhead until it is [removed](Registry::remove_bulkhead).
    ///
    /// The bulkhead runs on the registry's clock and scheduler, so on a
    /// [`ManualClock`](crate::ManualClock) a waiting call's `max-wait-duration` ends when the
    /// clock is advanced past it.
    ///
    /// [`bulkhead_config_for`]: Registry::bulkhead_config_for
    pub fn bulkhead(&self, name: &str) -> Bulkhead {
        let bulkheads = &self.inner.bulkheads;
        Named::get_or_add(&bulkheads.slots, name, &bulkheads.hooks, || {
            let config = bulkheads.config_for(name).clone();
            Bulkhead::with_env(name, config, Arc::clone(&self.inner.env))
        })
    }

    /// The bulkhead named `name`, if it exists.
    pub fn find_bulkhead(&self, name: &str) -> Option<Bulkhead> {
        self.inner.bulkheads.slots.get(name)?.lock().clone()
    }

    /// Every bulkhead in the registry, sorted by name.
    pub fn bulkheads(&self) -> Vec<Bulkhead> {
        let mut all = Vec::new();
        self.inner
            .bulkheads
            .slots
            .for_each(|_, slot| all.extend(slot.lock().clone()));
        all.sort_by(|a, b| a.name().cmp(b.name()));
        all
    }

    /// Removes the bulkhead named `name` and returns it; publishes [`RegistryEvent::Removed`].
    /// As a removed breaker (see [`Registry`]'s lifecycle), it is detached: whoever holds it
    /// keeps a working bulkhead, with the calls it lets through and its own listeners, but
    /// [`subscribe_bulkheads`](Registry::subscribe_bulkheads) listeners no longer hear it; the
    /// next `bulkhead(name)` makes a fresh one from the registry's config.
    pub fn remove_bulkhead(&self, name: &str) -> Option<Bulkhead> {
        let bulkheads = &self.inner.bulkheads;
        let removed = bulkheads.slots.get(name)?.lock().take()?;
        removed.detach();
        bulkheads.hooks.run(&RegistryEvent::Removed(&removed));
        Some(removed)
    }

    /// The configuration the bulkhead named `name` is created with: its instance config
    /// (`resilience4j.bulkhead.instances.<name>`, or
    /// [`bulkhead_instance`](crate::RegistryBuilder::bulkhead_instance)), else the bulkhead
    /// shared config `default`, else [`BulkheadConfig::default`].
    pub fn bulkhead_config_for(&self, name: &str) -> &BulkheadConfig {
        self.inner.bulkheads.config_for(name)
    }

    /// A bulkhead shared config by name (`default`, or any other the registry was built with:
    /// `resilience4j.bulkhead.configs.<name>`, or
    /// [`bulkhead_shared_config`](crate::RegistryBuilder::bulkhead_shared_config)).
    pub fn bulkhead_shared_config(&self, name: &str) -> Option<&BulkheadConfig> {
        self.inner.bulkheads.configs.get(name)
    }

    /// Calls `hook` for every change to this registry's set of bulkheads from now on: every
    /// bulkhead it creates, right after it is added ([`RegistryEvent::Added`]), and every
    /// bulkhead removed, right after it left ([`RegistryEvent::Removed`]). Hooks run on the
    /// thread that made the change, with no lock of the registry held.
    pub fn on_bulkhead_registry_event<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_, Bulkhead>) + Send + Sync + 'static,
    {
        self.inner.bulkheads.hooks.add_for_ever(hook);
    }

    /// [`on_bulkhead_registry_event`](Registry::on_bulkhead_registry_event) for a hook that
    /// belongs to `owner`, as [`on_registry_event_for`](Registry::on_registry_event_for): the
    /// registry holds `owner` weakly and drops the hook at the first change after `owner` is
    /// gone.
    pub fn on_bulkhead_registry_event_for<T, F>(&self, owner: &Arc<T>, hook: F)
    where
        T: Send + Sync + 'static,
        F: Fn(&T, &RegistryEvent<'_, Bulkhead>) + Send + Sync + 'static,
    {
        self.inner.bulkheads.hooks.add_for_owner(owner, hook);
    }

    /// Calls `listener` for every event of every bulkhead in this registry (not of bulkheads
    /// removed from it), until the [`Subscription`] is dropped.
    pub fn subscribe_bulkheads<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&BulkheadEvent) + Send + Sync + 'static,
    {
        self.inner.env.bulkhead_listeners().add(Arc::new(listener))
    }
}
