//! The process-wide registry that `#[circuit_breaker]` uses.

use std::fmt;

use once_cell::sync::OnceCell;

use crate::config::file::{LoadError, CONFIG_ENV};
use crate::log_safe::LogSafe;
use crate::registry::Registry;

static GLOBAL: OnceCell<Registry> = OnceCell::new();

/// Why the file named by `BREAKER_CONFIG` was not loaded into the global registry, if it was not.
static GLOBAL_LOAD_ERROR: OnceCell<LoadError> = OnceCell::new();

/// [`Registry::install_global`] did not install the registry: the global registry was
/// already in use, or `BREAKER_CONFIG` names a file that the registry did not read.
#[derive(Debug)]
pub struct InstallGlobalError {
    rejected: Registry,
    /// `BREAKER_CONFIG`'s value, when that is the reason.
    config_env: Option<std::ffi::OsString>,
}

impl InstallGlobalError {
    /// The registry that was not installed.
    pub fn into_registry(self) -> Registry {
        self.rejected
    }

    /// Whether the global registry was already in use (else: `BREAKER_CONFIG` was not read).
    pub fn is_already_in_use(&self) -> bool {
        self.config_env.is_none()
    }
}

impl fmt::Display for InstallGlobalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.config_env {
            None => f.write_str(
                "the global breaker registry is already in use; install it before the first \
                 protected call or Registry::global()",
            ),
            Some(path) => write!(
                f,
                "{CONFIG_ENV} names `{}`, but the registry being installed did not read it: \
                 build it with RegistryBuilder::load_env() to use the file, or unset \
                 {CONFIG_ENV}",
                LogSafe(&path.to_string_lossy())
            ),
        }
    }
}

impl std::error::Error for InstallGlobalError {}

impl Registry {
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
    /// ignored by breakers that already exist; and if `BREAKER_CONFIG` ([`CONFIG_ENV`]) is set
    /// but the registry did not read it ([`RegistryBuilder::load_env`]), so that the file a
    /// deployment points at is never silently ignored either: build the registry with
    /// `load_env()` (code and file together), or unset the variable.
    ///
    /// [`RegistryBuilder::load_env`]: crate::RegistryBuilder::load_env
    pub fn install_global(registry: Registry) -> Result<(), InstallGlobalError> {
        if GLOBAL.get().is_some() {
            return Err(InstallGlobalError {
                rejected: registry,
                config_env: None,
            });
        }
        match std::env::var_os(CONFIG_ENV) {
            Some(path) if !path.is_empty() && !registry.inner.read_config_env => {
                return Err(InstallGlobalError {
                    rejected: registry,
                    config_env: Some(path),
                });
            }
            _ => {}
        }
        GLOBAL.set(registry).map_err(|rejected| InstallGlobalError {
            rejected,
            config_env: None,
        })
    }
}
