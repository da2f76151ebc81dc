//! Named breakers: get-or-create by name, shared configs, per-instance overrides, keyed breakers.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex};

use once_cell::sync::OnceCell;

use crate::breaker::{CircuitBreaker, Env};
use crate::clock::Clock;
use crate::concurrent_map::ConcurrentMap;
use crate::config::{Config, ErrorKind};
use crate::event::{Event, Subscription};
use crate::file_config::{self, Format, LoadError, CONFIG_ENV};

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
    /// Run once for every breaker the registry creates, after it is in the registry.
    created: Arc<CreatedHooks>,
    /// The metrics export, once installed (`MetricsExport::install`).
    #[cfg(feature = "metrics")]
    metrics: OnceCell<crate::metrics_export::MetricsExport>,
}

type CreatedHook = Arc<dyn Fn(&CircuitBreaker) + Send + Sync>;

/// Callbacks for new breakers (keyed ones included). Creating a breaker is rare (once per
/// name or key), so a mutex is fine here; nothing runs while it is held.
#[derive(Default)]
struct CreatedHooks(Mutex<Vec<CreatedHook>>);

impl CreatedHooks {
    fn run(&self, breaker: &CircuitBreaker) {
        let hooks = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for hook in hooks {
            hook(breaker);
        }
    }
}

/// A keyed group with its key type erased, so the registry can list its breakers.
trait AnyGroup: Any + Send + Sync {
    fn for_each_breaker(&self, f: &mut dyn FnMut(&CircuitBreaker));
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

static GLOBAL: OnceCell<Registry> = OnceCell::new();

/// Why the file named by `BREAKER_CONFIG` was not loaded into the global registry, if it was not.
static GLOBAL_LOAD_ERROR: OnceCell<LoadError> = OnceCell::new();

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

    /// A registry configured from a file (`.toml` or `.properties`); see
    /// [`RegistryBuilder::load_file`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Registry, LoadError> {
        Registry::builder()
            .load_file(path)
            .map(RegistryBuilder::build)
    }

    /// The process-wide registry that `#[circuit_breaker]` uses.
    ///
    /// Its configuration is fixed at first use, and never changes after:
    /// 1. a registry installed with [`Registry::install_global`] before first use; else
    /// 2. the file named by the `BREAKER_CONFIG` environment variable ([`CONFIG_ENV`]), if set
    ///    and not empty, read once; else
    /// 3. Resilience4j's defaults.
    ///
    /// A `BREAKER_CONFIG` file that cannot be loaded is rejected whole: the global registry
    /// then runs with the defaults, the full error is logged at ERROR (and written to stderr,
    /// since first use may come before logging is set up), and [`Registry::try_global`]
    /// returns that error, every time. This never panics and never fails a protected call over
    /// a configuration mistake; a service that must not start misconfigured calls
    /// `Registry::try_global()?` at startup, before serving.
    pub fn global() -> &'static Registry {
        GLOBAL.get_or_init(|| match Registry::builder().load_env() {
            Ok(builder) => builder.build(),
            Err(err) => {
                tracing::error!(
                    error = %err,
                    "breaker: {CONFIG_ENV} names a configuration that was rejected; the global \
                     registry runs with Resilience4j's defaults"
                );
                eprintln!(
                    "breaker: {CONFIG_ENV} names a configuration that was rejected; the global \
                     registry runs with Resilience4j's defaults: {err}"
                );
                let _first = GLOBAL_LOAD_ERROR.set(err);
                Registry::new()
            }
        })
    }

    /// The global registry, or why the `BREAKER_CONFIG` file could not be loaded into it.
    ///
    /// Call it once at startup to fail fast on a bad file:
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = breaker_core::Registry::try_global()?;
    /// # let _ = registry; Ok(()) }
    /// ```
    ///
    /// Like [`Registry::global`], the first call fixes the global registry's configuration.
    /// If the global registry was installed with [`Registry::install_global`], the variable
    /// is not read and this always succeeds.
    pub fn try_global() -> Result<&'static Registry, &'static LoadError> {
        let registry = Registry::global();
        match GLOBAL_LOAD_ERROR.get() {
            Some(err) => Err(err),
            None => Ok(registry),
        }
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
            self.inner.created.run(&breaker);
        }
        breaker
    }

    /// Calls `hook` for every breaker this registry creates from now on (keyed ones included),
    /// right after it is added.
    #[cfg(feature = "metrics")]
    pub(crate) fn on_created(&self, hook: impl Fn(&CircuitBreaker) + Send + Sync + 'static) {
        self.inner
            .created
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::new(hook));
    }

    /// Where the registry keeps its metrics export.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics_slot(&self) -> &OnceCell<crate::metrics_export::MetricsExport> {
        &self.inner.metrics
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
                    created: Arc::clone(&self.inner.created),
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

/// Builds a [`Registry`]: from code, from configuration files, or both.
///
/// Files and code meet by name: a file's `configs.<name>` and `instances.<name>` replace what
/// the builder had under those names, and a later call replaces a file's. A file's
/// `base-config` may name a shared config given in code, and its `record-exceptions` and
/// `ignore-exceptions` name [error kinds](RegistryBuilder::error_kind) registered before it is
/// loaded.
#[derive(Debug, Default)]
pub struct RegistryBuilder {
    clock: Option<Clock>,
    configs: HashMap<String, Config>,
    instances: HashMap<String, Config>,
    kinds: HashMap<String, ErrorKind>,
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

    /// Registers an error kind, so that files loaded after this can name it in
    /// `record-exceptions` and `ignore-exceptions` (a kind of the same name is replaced).
    ///
    /// ```
    /// use breaker_core::{ErrorKind, Format, Registry};
    ///
    /// #[derive(Debug)]
    /// struct HttpError(u16);
    ///
    /// let registry = Registry::builder()
    ///     .error_kind(ErrorKind::new("ClientError", |e: &HttpError| (400..500).contains(&e.0)))
    ///     .load_str(
    ///         Format::Properties,
    ///         "application.properties",
    ///         "resilience4j.circuitbreaker.instances.credit.ignore-exceptions=ClientError",
    ///     )?
    ///     .build();
    /// let config = registry.config_for("credit");
    /// assert_eq!(config.ignore_exceptions()[0].name(), "ClientError");
    /// # Ok::<(), breaker_core::LoadError>(())
    /// ```
    pub fn error_kind(mut self, kind: ErrorKind) -> Self {
        self.kinds.insert(kind.name().to_owned(), kind);
        self
    }

    /// Loads a configuration file, `.toml` or `.properties` by its extension.
    ///
    /// The file is rejected whole on the first problem (nothing of it reaches the builder),
    /// with an error naming the file, the line, the key, the value and what was expected.
    pub fn load_file(self, path: impl AsRef<Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let format = Format::from_path(path).ok_or_else(|| LoadError::unknown_format(&name))?;
        let bytes = std::fs::read(path).map_err(|e| LoadError::io(&name, &e))?;
        self.load_bytes(format, &name, &bytes)
    }

    /// Loads configuration text in `format`; `name` stands for the file in error messages.
    pub fn load_str(self, format: Format, name: &str, text: &str) -> Result<Self, LoadError> {
        self.load_bytes(format, name, text.as_bytes())
    }

    /// Loads configuration bytes (UTF-8 text) in `format`; `name` stands for the file in error
    /// messages.
    pub fn load_bytes(
        mut self,
        format: Format,
        name: &str,
        bytes: &[u8],
    ) -> Result<Self, LoadError> {
        let loaded = file_config::load(format, name, bytes, &self.configs, &self.kinds)?;
        self.configs.extend(loaded.configs);
        self.instances.extend(loaded.instances);
        Ok(self)
    }

    /// Loads the file named by the `BREAKER_CONFIG` environment variable ([`CONFIG_ENV`]), if
    /// it is set and not empty; otherwise changes nothing.
    ///
    /// For a global registry with error kinds (which a file can only name once they are
    /// registered), install it before the first protected call:
    ///
    /// ```no_run
    /// use breaker_core::{ErrorKind, Registry};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let registry = Registry::builder()
    ///     .error_kind(ErrorKind::of_type::<std::io::Error>("IoError"))
    ///     .load_env()?
    ///     .build();
    /// Registry::install_global(registry)?;
    /// # Ok(()) }
    /// ```
    pub fn load_env(self) -> Result<Self, LoadError> {
        match std::env::var_os(CONFIG_ENV) {
            Some(path) if !path.is_empty() => self.load_file(path),
            _ => Ok(self),
        }
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
                created: Arc::default(),
                #[cfg(feature = "metrics")]
                metrics: OnceCell::new(),
            }),
        }
    }
}

struct KeyedGroup<K> {
    name: String,
    config: Config,
    env: Arc<Env>,
    breakers: ConcurrentMap<K, CircuitBreaker>,
    created: Arc<CreatedHooks>,
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
    /// The breaker for a key given in borrowed form (a `&str` for `String` keys), created on
    /// first use. Looking up a key that exists allocates nothing.
    pub fn get_by<Q>(&self, key: &Q) -> &CircuitBreaker
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(b) = self.group.breakers.get(key) {
            return b;
        }
        self.get(&key.to_owned())
    }

    /// The breaker for `key`, created on first use.
    pub fn get(&self, key: &K) -> &CircuitBreaker {
        if let Some(b) = self.group.breakers.get(key) {
            return b;
        }
        let group = &*self.group;
        let mut created = false;
        let breaker = group.breakers.get_or_insert_with(key.clone(), || {
            created = true;
            let name = format!("{}:{}", group.name, key);
            CircuitBreaker::with_env(&name, group.config.clone(), Arc::clone(&group.env))
        });
        if created {
            group.created.run(breaker);
        }
        breaker
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
