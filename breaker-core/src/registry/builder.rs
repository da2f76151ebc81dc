//! Building a registry from code, from configuration files, or both.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use crate::classify::ErrorKind;
use crate::concurrent_map::ConcurrentMap;
use crate::config::bulkhead::BulkheadConfig;
use crate::config::file::{self, CodeConfigs, Format, LoadError, CONFIG_ENV};
use crate::config::retry::RetryConfig;
use crate::config::{tags, Config, ConfigError, DEFAULT_CONFIG};
use crate::env::Env;
use crate::registry::keyed::{KeyedGroups, KeyedLimits};
use crate::registry::members::Members;
use crate::registry::{Inner, Registry};
use crate::time::clock::Clock;

impl Registry {
    /// An empty registry on the system clock, with Resilience4j's defaults.
    pub fn new() -> Registry {
        Registry::builder().build()
    }

    /// A builder for a registry with its own configs and clock.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// A registry configured from a file (`.toml`, `.properties`, `.yml` or `.yaml`); see
    /// [`RegistryBuilder::load_file`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Registry, LoadError> {
        Registry::builder()
            .load_file(path)
            .map(RegistryBuilder::build)
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

/// Builds a [`Registry`]: from code, from configuration files, or both.
///
/// Files and code meet by name: a file's `configs.<name>` and `instances.<name>` replace what
/// the builder had under those names, and a later call replaces a file's. A file's
/// `base-config` may name a shared config given in code, and its `record-exceptions` and
/// `ignore-exceptions` name [error kinds](RegistryBuilder::error_kind) registered before it is
/// loaded. Breakers, bulkheads and retries are configured apart, each pattern with its own
/// shared configs and instances (`resilience4j.circuitbreaker.*`, `resilience4j.bulkhead.*` and
/// `resilience4j.retry.*` in a file; [`instance`](RegistryBuilder::instance),
/// [`bulkhead_instance`](RegistryBuilder::bulkhead_instance) and
/// [`retry_instance`](RegistryBuilder::retry_instance) in code), so a breaker, a bulkhead and a
/// retry may share a name.
#[derive(Debug, Default)]
pub struct RegistryBuilder {
    clock: Option<Clock>,
    configs: HashMap<String, Config>,
    instances: HashMap<String, Config>,
    bulkhead_configs: HashMap<String, BulkheadConfig>,
    bulkhead_instances: HashMap<String, BulkheadConfig>,
    retry_configs: HashMap<String, RetryConfig>,
    retry_instances: HashMap<String, RetryConfig>,
    kinds: HashMap<String, ErrorKind>,
    /// Tags for every exported metric (`tags.<name>`), by label name.
    tags: BTreeMap<String, String>,
    keyed_limits: KeyedLimits,
    keyed_limits_by_name: HashMap<String, KeyedLimits>,
    random_seed: Option<u64>,
    /// Whether `load_env` was called (so `install_global` knows `BREAKER_CONFIG` was read).
    read_config_env: bool,
}

impl RegistryBuilder {
    /// The clock for every breaker and timer of the registry (default: the system clock).
    pub fn clock(mut self, clock: impl Into<Clock>) -> Self {
        self.clock = Some(clock.into());
        self
    }

    /// The seed of the random draws behind `enable-randomized-wait` (each breaker draws from
    /// its own sequence, made from this seed and its name). Default: a different seed in every
    /// process. Set it to make randomized waits repeat, in tests and replays.
    pub fn random_seed(mut self, seed: u64) -> Self {
        self.random_seed = Some(seed);
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

    /// The config of the breaker named `name` (Spring's `instances.<name>`). A keyed
    /// breaker's entry is named by its display name, `name[key]` (see
    /// [`CircuitBreaker::name`](crate::CircuitBreaker::name); [`keyed_instance`] writes it).
    ///
    /// [`keyed_instance`]: RegistryBuilder::keyed_instance
    pub fn instance(mut self, name: &str, config: Config) -> Self {
        self.instances.insert(name.to_owned(), config);
        self
    }

    /// The config of the keyed breaker of `key` in the group `name`: the instance entry named
    /// `name[key]`, which files write as `instances."name[key]"` (TOML) or
    /// `instances.name[key].<setting>` (`.properties`).
    pub fn keyed_instance(self, name: &str, key: &str, config: Config) -> Self {
        let display = crate::name::keyed_display(name, key);
        self.instance(&display, config)
    }

    /// The `default` shared config of bulkheads (Spring's `resilience4j.bulkhead.configs.default`):
    /// the config of every bulkhead without an instance config.
    pub fn bulkhead_default_config(self, config: BulkheadConfig) -> Self {
        self.bulkhead_shared_config(DEFAULT_CONFIG, config)
    }

    /// A named shared config of bulkheads (Spring's `resilience4j.bulkhead.configs.<name>`),
    /// for [`Registry::bulkhead_shared_config`] and as a base for a file's bulkhead instances.
    pub fn bulkhead_shared_config(mut self, name: &str, config: BulkheadConfig) -> Self {
        self.bulkhead_configs.insert(name.to_owned(), config);
        self
    }

    /// The config of the bulkhead named `name` (Spring's `resilience4j.bulkhead.instances.<name>`).
    pub fn bulkhead_instance(mut self, name: &str, config: BulkheadConfig) -> Self {
        self.bulkhead_instances.insert(name.to_owned(), config);
        self
    }

    /// The `default` shared config of retries (Spring's `resilience4j.retry.configs.default`):
    /// the config of every retry without an instance config.
    pub fn retry_default_config(self, config: RetryConfig) -> Self {
        self.retry_shared_config(DEFAULT_CONFIG, config)
    }

    /// A named shared config of retries (Spring's `resilience4j.retry.configs.<name>`), for
    /// [`Registry::retry_shared_config`] and as a base for a file's retry instances.
    pub fn retry_shared_config(mut self, name: &str, config: RetryConfig) -> Self {
        self.retry_configs.insert(name.to_owned(), config);
        self
    }

    /// The config of the retry named `name` (Spring's `resilience4j.retry.instances.<name>`).
    pub fn retry_instance(mut self, name: &str, config: RetryConfig) -> Self {
        self.retry_instances.insert(name.to_owned(), config);
        self
    }

    /// The limits of every keyed group (default: [`KeyedLimits::default`], 1,000 breakers
    /// per group, evicted after 10 minutes unused).
    pub fn keyed_limits(mut self, limits: KeyedLimits) -> Self {
        self.keyed_limits = limits;
        self
    }

    /// The limits of the keyed group `name`, instead of those of every group.
    pub fn keyed_limits_for(mut self, name: &str, limits: KeyedLimits) -> Self {
        self.keyed_limits_by_name.insert(name.to_owned(), limits);
        self
    }

    /// A tag for every metric the registry exports (Spring's
    /// `resilience4j.circuitbreaker.tags.<name>=<value>`); a tag of the same name is replaced.
    ///
    /// The name is written as a Prometheus label: every `-` and `.` becomes `_`, and the result
    /// must be an ASCII letter or `_` followed by letters, digits and `_`, at most 64 bytes, not
    /// starting with `__` and not one of the labels the metrics already carry (`name`,
    /// `state`, `kind`, `le`, `quantile`). The value is 1 to 256 bytes of text without control
    /// characters. A registry takes at most 32 tags.
    ///
    /// ```
    /// use breaker_core::Registry;
    ///
    /// let registry = Registry::builder().tag("app.version", "1.4.2")?.build();
    /// assert_eq!(registry.tags(), [("app_version".to_owned(), "1.4.2".to_owned())]);
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn tag(mut self, name: &str, value: &str) -> Result<Self, ConfigError> {
        let (label, value) = tags::check(name, value).map_err(|p| {
            let shown = if p.part == "name" { name } else { value };
            ConfigError::new("tags", shown, p.expected)
        })?;
        if !self.tags.contains_key(&label) && self.tags.len() == tags::MAX_TAGS {
            return Err(ConfigError::new(
                "tags",
                label,
                format!("at most {} tags", tags::MAX_TAGS),
            ));
        }
        self.tags.insert(label, value);
        Ok(self)
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

    /// Loads a configuration file: TOML, `.properties` or YAML (`.yml`, `.yaml`) by its
    /// extension.
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

    /// Loads configuration bytes in `format` (UTF-8; `.properties` bytes that are not valid
    /// UTF-8 are ISO-8859-1); `name` stands for the file in error messages.
    pub fn load_bytes(
        mut self,
        format: Format,
        name: &str,
        bytes: &[u8],
    ) -> Result<Self, LoadError> {
        let code = CodeConfigs {
            breakers: &self.configs,
            bulkheads: &self.bulkhead_configs,
            retries: &self.retry_configs,
        };
        let loaded = file::load(format, name, bytes, code, &self.kinds)?;
        file::check_tag_count(name, &self.tags, &loaded.tags)?;
        self.configs.extend(loaded.breakers.configs);
        self.instances.extend(loaded.breakers.instances);
        self.bulkhead_configs.extend(loaded.bulkheads.configs);
        self.bulkhead_instances.extend(loaded.bulkheads.instances);
        self.retry_configs.extend(loaded.retries.configs);
        self.retry_instances.extend(loaded.retries.instances);
        self.tags.extend(
            loaded
                .tags
                .into_iter()
                .map(|(name, value, _)| (name, value)),
        );
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
    pub fn load_env(mut self) -> Result<Self, LoadError> {
        self.read_config_env = true;
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
                env: Env::new(self.clock.unwrap_or_default(), self.random_seed),
                configs: self.configs,
                tags: self.tags.into_iter().collect(),
                instances: Arc::new(self.instances),
                breakers: ConcurrentMap::new(),
                keyed: KeyedGroups::default(),
                keyed_limits: self.keyed_limits,
                keyed_limits_by_name: self.keyed_limits_by_name,
                hooks: Arc::default(),
                bulkheads: Members::new(self.bulkhead_configs, self.bulkhead_instances),
                retries: Members::new(self.retry_configs, self.retry_instances),
                read_config_env: self.read_config_env,
            }),
        }
    }
}
