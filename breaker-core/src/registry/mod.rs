//! Named breakers, bulkheads and retries: get-or-create by name, shared configs, per-instance
//! overrides, keyed breakers.
//!
//! `mod.rs` holds the registry itself, its breakers and its public methods on bulkheads and
//! retries; `builder.rs` builds one (from code and files), `global.rs` is the process-wide one
//! the attribute uses, `keyed.rs` the run-time keyed groups, `members.rs` the set of one
//! pattern's members beside the breakers (`bulkheads.rs` and `retries.rs` say what a bulkhead
//! and a retry are to it), `named.rs` the slot of a plain name that they all use, and
//! `hooks.rs` the public hooks on its sets of breakers, of bulkheads and of retries.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::breaker::CircuitBreaker;
use crate::bulkhead::{Bulkhead, BulkheadEvent};
use crate::concurrent_map::ConcurrentMap;
use crate::config::bulkhead::BulkheadConfig;
use crate::config::retry::RetryConfig;
use crate::config::{Config, DEFAULT_CONFIG};
use crate::env::Env;
use crate::event::listeners::Subscription;
use crate::event::Event;
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::registry::keyed::{GroupEnv, Keyed, KeyedGroups, KeyedLimits};
use crate::registry::members::Members;
use crate::registry::named::Named;
use crate::retry::{Retry, RetryEvent};
use crate::time::clock::Clock;

pub(crate) mod builder;
pub(crate) mod bulkheads;
pub(crate) mod global;
pub(crate) mod hooks;
pub(crate) mod keyed;
pub(crate) mod members;
pub(crate) mod named;
pub(crate) mod retries;

/// A set of named breakers, bulkheads and retries with their configuration, one clock and one
/// timer scheduler.
///
/// `breaker(name)` returns the breaker of that name, creating it on first use with the
/// instance configuration of that name if there is one, else the `default` shared config.
/// Keyed breakers (one per run-time key) live in groups, one per name: [`Registry::keyed`].
/// [`bulkhead(name)`](Registry::bulkhead) does the same for bulkheads, which have configs of
/// their own (Spring's `resilience4j.bulkhead.*`), so a breaker and a bulkhead may share a
/// name; [`retry(name)`](Registry::retry) does the same for retries
/// (`resilience4j.retry.*`). Cloning gives another handle to the same registry.
///
/// # Lifecycle
///
/// [`remove`](Registry::remove) takes a breaker out, [`replace`](Registry::replace) gives its
/// name to a new breaker with another config, and keyed groups evict idle breakers
/// ([`KeyedLimits`]). A breaker that leaves the registry is *detached*: whoever holds its
/// handle keeps a working breaker, with its state, its counts and its own listeners, but the
/// registry no longer lists or finds it, and the registry's listeners (the metrics export and
/// the Redis hint among them) no longer hear it. The next lookup of the name (or key) finds
/// the breaker that has it now, or makes a fresh one. The attribute's call sites look again
/// once their breaker is detached, so protected functions follow a `replace` from their next
/// call. Each change is published to [`on_registry_event`](Registry::on_registry_event) hooks.
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) env: Arc<Env>,
    pub(crate) configs: HashMap<String, Config>,
    /// Tags for every exported metric, sorted by name (`RegistryBuilder::tag`, `tags.*`).
    pub(crate) tags: Vec<(String, String)>,
    pub(crate) instances: Arc<HashMap<String, Config>>,
    /// The plain breakers by name. Plain names come from the code, so there are few: the map
    /// keeps a slot per name ever used (it is grow-only), and the slot holds the breaker that
    /// has the name now, if any, so that one can be removed or replaced. (Keyed breakers, whose
    /// keys come from run-time data, live in maps that can remove: see `keyed.rs`.)
    pub(crate) breakers: ConcurrentMap<String, Named>,
    pub(crate) keyed: KeyedGroups,
    /// The limits of keyed groups: for every group, and by group name.
    pub(crate) keyed_limits: KeyedLimits,
    pub(crate) keyed_limits_by_name: HashMap<String, KeyedLimits>,
    /// Run for every change to the set of breakers.
    pub(crate) hooks: Arc<Hooks>,
    /// The bulkheads, beside the breakers.
    pub(crate) bulkheads: Members<Bulkhead>,
    /// The retries, beside the breakers and bulkheads.
    pub(crate) retries: Members<Retry>,
    /// Whether the builder read `BREAKER_CONFIG` (`load_env`).
    pub(crate) read_config_env: bool,
}

impl Registry {
    /// The breaker named `name`, created on first use.
    pub fn breaker(&self, name: &str) -> CircuitBreaker {
        let inner = &*self.inner;
        Named::get_or_add(&inner.breakers, name, &inner.hooks, || {
            let config = self.config_for(name).clone();
            CircuitBreaker::with_env(name, config, Arc::clone(&inner.env))
        })
    }

    /// Calls `hook` for every change to this registry's set of breakers from now on: every
    /// breaker it creates (keyed ones included), right after it is added
    /// ([`RegistryEvent::Added`]); every breaker removed or evicted, right after it left
    /// ([`RegistryEvent::Removed`]); every [`replace`](Registry::replace)
    /// ([`RegistryEvent::Replaced`]). Hooks run on the thread that made the change (for an
    /// eviction by the sweep timer, the scheduler's), with no lock of the registry held.
    pub fn on_registry_event<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_>) + Send + Sync + 'static,
    {
        self.inner.hooks.add_for_ever(hook);
    }

    /// [`on_registry_event`](Registry::on_registry_event) for a hook that belongs to `owner`
    /// (an exporter, an admin surface): the registry holds `owner` weakly, calls `hook` with it
    /// while it lives, and drops the hook at the first change after `owner` is gone. Building
    /// and dropping such owners leaves nothing behind in the registry.
    pub fn on_registry_event_for<T, F>(&self, owner: &Arc<T>, hook: F)
    where
        T: Send + Sync + 'static,
        F: Fn(&T, &RegistryEvent<'_>) + Send + Sync + 'static,
    {
        self.inner.hooks.add_for_owner(owner, hook);
    }

    /// How many registry-event hooks are registered (of owners still alive, and of those gone
    /// since the last change to the set of breakers); see `testing::registry_hooks`.
    #[cfg(feature = "testing")]
    pub(crate) fn registry_hooks(&self) -> usize {
        self.inner.hooks.len()
    }

    /// Whether two handles are the same registry.
    pub fn ptr_eq(&self, other: &Registry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The plain breaker named `name`, if it exists. A keyed breaker is found through its
    /// group: `registry.keyed("tenantProducts").find(&key)`.
    pub fn find(&self, name: &str) -> Option<CircuitBreaker> {
        self.inner.breakers.get(name)?.lock().clone()
    }

    /// Removes the plain breaker named `name` and returns it; publishes
    /// [`RegistryEvent::Removed`]. Whoever holds it keeps a working, detached breaker (see the
    /// type's docs); the next `breaker(name)` makes a fresh one from the registry's config.
    pub fn remove(&self, name: &str) -> Option<CircuitBreaker> {
        let removed = self.inner.breakers.get(name)?.lock().take()?;
        removed.core.detach();
        self.inner.hooks.run(&RegistryEvent::Removed(&removed));
        Some(removed)
    }

    /// Resilience4j's `CircuitBreakerRegistry.replace`: if a plain breaker named `name`
    /// exists, a new CLOSED breaker with `config` takes the name, and the old one is returned;
    /// otherwise nothing changes and `None` is returned. Publishes [`RegistryEvent::Replaced`].
    ///
    /// A caller holding a handle to the old breaker keeps it: a working breaker with its
    /// state, counts, listeners and old config, detached from the registry (its events no
    /// longer reach the registry's listeners or the metrics export). `find` and `breaker`
    /// return the new one; so does the attribute's call site from its next call. The new
    /// breaker runs with `config` until it is removed or replaced; [`config_for`] goes on
    /// answering what the registry was built with, the config a breaker of that name is
    /// created with.
    ///
    /// [`config_for`]: Registry::config_for
    pub fn replace(&self, name: &str, config: Config) -> Option<CircuitBreaker> {
        let mut current = self.inner.breakers.get(name)?.lock();
        let old = current.take()?;
        let new = CircuitBreaker::with_env(name, config, Arc::clone(&self.inner.env));
        *current = Some(new.clone());
        drop(current);
        old.core.detach();
        self.inner.hooks.run(&RegistryEvent::Replaced {
            old: &old,
            new: &new,
        });
        Some(old)
    }

    /// Every breaker in the registry (keyed ones included), each once, sorted by configured
    /// name and then key (a plain breaker before the keyed ones of its name).
    pub fn breakers(&self) -> Vec<CircuitBreaker> {
        let mut all = Vec::with_capacity(self.inner.breakers.len());
        self.inner
            .breakers
            .for_each(|_, slot| all.extend(slot.lock().clone()));
        for group in self.inner.keyed.all() {
            all.extend(group.breakers());
        }
        all.sort_by(|a, b| (a.config_name(), a.key()).cmp(&(b.config_name(), b.key())));
        all
    }

    /// The configuration the plain breaker named `name` is created with: its instance config,
    /// else `default`.
    pub fn config_for(&self, name: &str) -> &Config {
        self.inner
            .instances
            .get(name)
            .or_else(|| self.inner.configs.get(DEFAULT_CONFIG))
            .expect("the builder always sets the default config")
    }

    /// The configuration the keyed breaker (`name`, `key`) is created with: the instance
    /// config named by its display name `name[key]` (see [`CircuitBreaker::name`]) if there is
    /// one, else that of `name` ([`config_for`](Registry::config_for)).
    pub fn config_for_key<K: fmt::Display + ?Sized>(&self, name: &str, key: &K) -> &Config {
        let display = crate::name::keyed_display(name, &key.to_string());
        self.inner
            .instances
            .get(&display)
            .unwrap_or_else(|| self.config_for(name))
    }

    /// The tags for every metric this registry exports (`RegistryBuilder::tag` and the files'
    /// `resilience4j.circuitbreaker.tags.<name>` and `resilience4j.bulkhead.tags.<name>`), as
    /// (label name, value) sorted by name.
    pub fn tags(&self) -> &[(String, String)] {
        &self.inner.tags
    }

    /// A shared config by name (`default`, or any other the registry was built with).
    pub fn shared_config(&self, name: &str) -> Option<&Config> {
        self.inner.configs.get(name)
    }

    /// The breakers keyed at run time under `name`: one per distinct key text (a tenant, a
    /// provider and model pair), configured as `name` unless an instance entry `name[key]`
    /// configures that key, and evicted when idle (see [`Keyed`] and [`KeyedLimits`]). Every
    /// call with the same name returns the same group.
    pub fn keyed(&self, name: &str) -> Keyed {
        let inner = &*self.inner;
        inner.keyed.group(name, || {
            let limits = inner
                .keyed_limits_by_name
                .get(name)
                .copied()
                .unwrap_or(inner.keyed_limits);
            let genv = GroupEnv {
                env: Arc::clone(&inner.env),
                hooks: Arc::clone(&inner.hooks),
                instances: Arc::clone(&inner.instances),
            };
            (self.config_for(name).clone(), limits, genv)
        })
    }

    /// Runs every keyed group's sweep now (see [`Keyed::evict_now`]); returns how many
    /// breakers were evicted. The sweep timers do this on their own; this is for a caller that
    /// wants it at a moment of its choosing.
    pub fn evict_idle(&self) -> usize {
        self.inner.keyed.all().iter().map(Keyed::evict_now).sum()
    }

    /// Calls `listener` for every event of every breaker in this registry (not of breakers
    /// that left it: see [`Registry`]'s lifecycle).
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.inner
            .env
            .breaker_listeners()
            .add(Arc::new(listener), false)
    }

    /// [`subscribe`](Registry::subscribe), and the events of failed and ignored calls carry
    /// the error's type and text ([`Event::error`], [`ErrorText`](crate::ErrorText)); see
    /// [`CircuitBreaker::subscribe_with_error_texts`] for what that costs.
    pub fn subscribe_with_error_texts<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.inner
            .env
            .breaker_listeners()
            .add(Arc::new(listener), true)
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
        self.inner.env.clock()
    }

    /// Timers waiting in the registry's scheduler: at most one per breaker, since a state's
    /// timer leaves the queue when the state is left, plus one sweep timer per keyed group
    /// that has breakers and evicts idle ones, plus one refresh timer of the metrics export
    /// (`MetricsExport`, feature `metrics`) while it exports breakers, plus one per call waiting
    /// for a place in one of its bulkheads (the end of its `max-wait-duration`), plus one per
    /// call of one of its retries waiting between two attempts.
    pub fn pending_timers(&self) -> usize {
        self.inner.env.scheduler().pending()
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
        self.inner.bulkheads.get_or_add(name, &self.inner.env)
    }

    /// The bulkhead named `name`, if it exists.
    pub fn find_bulkhead(&self, name: &str) -> Option<Bulkhead> {
        self.inner.bulkheads.find(name)
    }

    /// Every bulkhead in the registry, sorted by name.
    pub fn bulkheads(&self) -> Vec<Bulkhead> {
        self.inner.bulkheads.all()
    }

    /// Removes the bulkhead named `name` and returns it; publishes [`RegistryEvent::Removed`].
    /// As a removed breaker (see [`Registry`]'s lifecycle), it is detached: whoever holds it
    /// keeps a working bulkhead, with the calls it lets through and its own listeners, but
    /// [`subscribe_bulkheads`](Registry::subscribe_bulkheads) listeners no longer hear it; the
    /// next `bulkhead(name)` makes a fresh one from the registry's config.
    pub fn remove_bulkhead(&self, name: &str) -> Option<Bulkhead> {
        self.inner.bulkheads.remove(name)
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
        self.inner.bulkheads.shared_config(name)
    }

    /// Calls `hook` for every change to this registry's set of bulkheads from now on: every
    /// bulkhead it creates, right after it is added ([`RegistryEvent::Added`]), and every
    /// bulkhead removed, right after it left ([`RegistryEvent::Removed`]). Hooks run on the
    /// thread that made the change, with no lock of the registry held.
    pub fn on_bulkhead_registry_event<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_, Bulkhead>) + Send + Sync + 'static,
    {
        self.inner.bulkheads.hooks().add_for_ever(hook);
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
        self.inner.bulkheads.hooks().add_for_owner(owner, hook);
    }

    /// Calls `listener` for every event of every bulkhead in this registry (not of bulkheads
    /// removed from it), until the [`Subscription`] is dropped.
    pub fn subscribe_bulkheads<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&BulkheadEvent) + Send + Sync + 'static,
    {
        self.inner
            .env
            .bulkhead_listeners()
            .add(Arc::new(listener), false)
    }
}

impl Registry {
    /// The retry named `name`, created on first use with its instance config, else the retry
    /// shared config `default` ([`retry_config_for`]). Every call with the same name returns
    /// the same retry until it is [removed](Registry::remove_retry).
    ///
    /// The retry runs on the registry's clock and scheduler, so on a
    /// [`ManualClock`](crate::ManualClock) its waits between attempts end when the clock is
    /// advanced past them; its randomized waits draw from a sequence made from the registry's
    /// [seed](crate::RegistryBuilder::random_seed) and its name.
    ///
    /// [`retry_config_for`]: Registry::retry_config_for
    pub fn retry(&self, name: &str) -> Retry {
        self.inner.retries.get_or_add(name, &self.inner.env)
    }

    /// The retry named `name`, if it exists.
    pub fn find_retry(&self, name: &str) -> Option<Retry> {
        self.inner.retries.find(name)
    }

    /// Every retry in the registry, sorted by name.
    pub fn retries(&self) -> Vec<Retry> {
        self.inner.retries.all()
    }

    /// Removes the retry named `name` and returns it; publishes [`RegistryEvent::Removed`]. As
    /// a removed breaker (see [`Registry`]'s lifecycle), it is detached: whoever holds it keeps
    /// a working retry, with its metrics and its own listeners, but
    /// [`subscribe_retries`](Registry::subscribe_retries) listeners no longer hear it; the next
    /// `retry(name)` makes a fresh one from the registry's config.
    pub fn remove_retry(&self, name: &str) -> Option<Retry> {
        self.inner.retries.remove(name)
    }

    /// The configuration the retry named `name` is created with: its instance config
    /// (`resilience4j.retry.instances.<name>`, or
    /// [`retry_instance`](crate::RegistryBuilder::retry_instance)), else the retry shared config
    /// `default`, else [`RetryConfig::default`].
    pub fn retry_config_for(&self, name: &str) -> &RetryConfig {
        self.inner.retries.config_for(name)
    }

    /// A retry shared config by name (`default`, or any other the registry was built with:
    /// `resilience4j.retry.configs.<name>`, or
    /// [`retry_shared_config`](crate::RegistryBuilder::retry_shared_config)).
    pub fn retry_shared_config(&self, name: &str) -> Option<&RetryConfig> {
        self.inner.retries.shared_config(name)
    }

    /// Calls `hook` for every change to this registry's set of retries from now on: every
    /// retry it creates, right after it is added ([`RegistryEvent::Added`]), and every retry
    /// removed, right after it left ([`RegistryEvent::Removed`]). Hooks run on the thread that
    /// made the change, with no lock of the registry held.
    pub fn on_retry_registry_event<F>(&self, hook: F)
    where
        F: Fn(&RegistryEvent<'_, Retry>) + Send + Sync + 'static,
    {
        self.inner.retries.hooks().add_for_ever(hook);
    }

    /// [`on_retry_registry_event`](Registry::on_retry_registry_event) for a hook that belongs
    /// to `owner`, as [`on_registry_event_for`](Registry::on_registry_event_for): the registry
    /// holds `owner` weakly and drops the hook at the first change after `owner` is gone.
    pub fn on_retry_registry_event_for<T, F>(&self, owner: &Arc<T>, hook: F)
    where
        T: Send + Sync + 'static,
        F: Fn(&T, &RegistryEvent<'_, Retry>) + Send + Sync + 'static,
    {
        self.inner.retries.hooks().add_for_owner(owner, hook);
    }

    /// Calls `listener` for every event of every retry in this registry (not of retries
    /// removed from it), until the [`Subscription`] is dropped.
    pub fn subscribe_retries<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&RetryEvent) + Send + Sync + 'static,
    {
        self.inner
            .env
            .retry_listeners()
            .add(Arc::new(listener), false)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("breakers", &self.inner.breakers.len())
            .field("bulkheads", &self.inner.bulkheads.len())
            .field("retries", &self.inner.retries.len())
            .field("clock", &self.inner.env.clock())
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
