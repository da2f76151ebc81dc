//! Named breakers: get-or-create by name, shared configs, per-instance overrides, keyed breakers.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use once_cell::sync::OnceCell;

use crate::breaker::{CircuitBreaker, Env};
use crate::clock::Clock;
use crate::concurrent_map::ConcurrentMap;
use crate::config::Config;
use crate::event::{Event, Subscription};

/// The name of the shared config that every breaker without one of its own uses.
pub const DEFAULT_CONFIG: &str = "default";

/// A set of named breakers with their configuration, one clock and one timer scheduler.
///
/// `breaker(name)` returns the breaker of that name, creating it on first use with the
/// instance configuration of that name if there is one, else the `default` shared config.
/// Cloning gives another handle to the same registry.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    env: Arc<Env>,
    configs: HashMap<String, Config>,
    instances: HashMap<String, Config>,
    breakers: ConcurrentMap<String, CircuitBreaker>,
    keyed: Mutex<HashMap<(String, TypeId), Arc<dyn AnyGroup>>>,
}

/// A keyed group with its key type erased, so the registry can list its breakers.
trait AnyGroup: Any + Send + Sync {
    fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker));
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

static GLOBAL: OnceCell<Registry> = OnceCell::new();

/// [`Registry::install_global`] was called after the global registry was already in use.
#[derive(Debug)]
pub struct GlobalAlreadySet {
    rejected: Registry,
}

impl GlobalAlreadySet {
    /// The registry that was not installed.
    pub fn into_registry(self) -> Registry {
        self.rejected
    }
}

impl fmt::Display for GlobalAlreadySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the global breaker registry is already in use; install it before the first \
             protected call or Registry::global()",
        )
    }
}

impl std::error::Error for GlobalAlreadySet {}

impl Registry {
    /// An empty registry on the system clock, with Resilience4j's defaults.
    pub fn new() -> Registry {
        Registry::builder().build()
    }

    /// A builder for a registry with its own configs and clock.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The process-wide registry that `#[circuit_breaker]` uses.
    ///
    /// Its configuration is fixed at first use: install a configured registry with
    /// [`Registry::install_global`] before that, or it starts with the defaults.
    pub fn global() -> &'static Registry {
        GLOBAL.get_or_init(Registry::new)
    }

    /// Makes `registry` the global one. Fails, handing the registry back, if the global
    /// registry was already installed or used, so a configuration can never be silently
    /// ignored by breakers that already exist.
    pub fn install_global(registry: Registry) -> Result<(), GlobalAlreadySet> {
        GLOBAL
            .set(registry)
            .map_err(|rejected| GlobalAlreadySet { rejected })
    }

    /// The breaker named `name`, created on first use.
    pub fn breaker(&self, name: &str) -> CircuitBreaker {
        if let Some(b) = self.inner.breakers.get(name) {
            return b.clone();
        }
        let config = self.config_for(name).clone();
        self.inner
            .breakers
            .get_or_insert_with(name.to_owned(), || {
                CircuitBreaker::with_env(name, config, Arc::clone(&self.inner.env))
            })
            .clone()
    }

    /// The breaker named `name`, if it exists.
    pub fn find(&self, name: &str) -> Option<CircuitBreaker> {
        self.inner.breakers.get(name).cloned()
    }

    /// Every breaker created so far (keyed ones included), sorted by name.
    pub fn breakers(&self) -> Vec<CircuitBreaker> {
        let mut all = Vec::with_capacity(self.inner.breakers.len());
        self.inner.breakers.for_each(|_, b| all.push(b.clone()));
        let groups: Vec<Arc<dyn AnyGroup>> = self
            .inner
            .keyed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for group in groups {
            group.for_each_breaker(&mut |b| all.push(b.clone()));
        }
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
        let mut groups = self.inner.keyed.lock().unwrap_or_else(|e| e.into_inner());
        let group = groups
            .entry((name.to_owned(), TypeId::of::<K>()))
            .or_insert_with(|| {
                Arc::new(KeyedGroup::<K> {
                    name: name.to_owned(),
                    config: self.config_for(name).clone(),
                    env: Arc::clone(&self.inner.env),
                    breakers: ConcurrentMap::new(),
                })
            });
        let group = Arc::clone(group)
            .as_any()
            .downcast::<KeyedGroup<K>>()
            .unwrap_or_else(|_| unreachable!("keyed groups are stored under their key's TypeId"));
        Keyed {
            group,
            _key: PhantomData,
        }
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

    /// Timers waiting in the registry's scheduler (cancelled ones leave when they fall due).
    pub fn pending_timers(&self) -> usize {
        self.inner.env.scheduler.pending()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
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

/// Builds a [`Registry`].
#[derive(Debug, Default)]
pub struct RegistryBuilder {
    clock: Option<Clock>,
    configs: HashMap<String, Config>,
    instances: HashMap<String, Config>,
}

impl RegistryBuilder {
    /// The clock for every breaker and timer of the registry (default: the system clock).
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = Some(clock.into());
        self
    }

    /// The `default` shared config (Spring's `configs.default`).
    pub fn default_config(self, config: Config) -> Self {
        self.shared_config(DEFAULT_CONFIG, config)
    }

    /// A named shared config (Spring's `configs.<name>`), for [`Registry::shared_config`] and
    /// as a base for instance configs.
    pub fn shared_config(mut self, name: &str, config: Config) -> Self {
        self.configs.insert(name.to_owned(), config);
        self
    }

    /// The config of the breaker named `name` (Spring's `instances.<name>`).
    pub fn instance(mut self, name: &str, config: Config) -> Self {
        self.instances.insert(name.to_owned(), config);
        self
    }

    /// The registry.
    pub fn build(mut self) -> Registry {
        self.configs.entry(DEFAULT_CONFIG.to_owned()).or_default();
        Registry {
            inner: Arc::new(Inner {
                env: Env::new(self.clock.unwrap_or_default()),
                configs: self.configs,
                instances: self.instances,
                breakers: ConcurrentMap::new(),
                keyed: Mutex::new(HashMap::new()),
            }),
        }
    }
}

struct KeyedGroup<K> {
    name: String,
    config: Config,
    env: Arc<Env>,
    breakers: ConcurrentMap<K, CircuitBreaker>,
}

impl<K: Hash + Eq + Send + Sync + 'static> AnyGroup for KeyedGroup<K> {
    fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker)) {
        self.breakers.for_each(|_, b| f(b));
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// Breakers created per run-time key, all configured as one name. See [`Registry::keyed`].
///
/// Looking up a key that exists takes no lock.
pub struct Keyed<K> {
    group: Arc<KeyedGroup<K>>,
    _key: PhantomData<fn(K)>,
}

impl<K> Clone for Keyed<K> {
    fn clone(&self) -> Self {
        Keyed {
            group: Arc::clone(&self.group),
            _key: PhantomData,
        }
    }
}

impl<K> Keyed<K>
where
    K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
{
    /// The breaker for `key`, created on first use.
    pub fn get(&self, key: &K) -> &CircuitBreaker {
        if let Some(b) = self.group.breakers.get(key) {
            return b;
        }
        let group = &*self.group;
        group.breakers.get_or_insert_with(key.clone(), || {
            let name = format!("{}:{}", group.name, key);
            CircuitBreaker::with_env(&name, group.config.clone(), Arc::clone(&group.env))
        })
    }

    /// The name the keys are configured by.
    pub fn name(&self) -> &str {
        &self.group.name
    }

    /// How many keys have a breaker.
    pub fn len(&self) -> usize {
        self.group.breakers.len()
    }

    /// Whether no key has a breaker yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K> fmt::Debug for Keyed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("name", &self.group.name)
            .finish_non_exhaustive()
    }
}
