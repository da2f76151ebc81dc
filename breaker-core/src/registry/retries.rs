//! The registry's retries: a retry as a [`Member`] of the registry, kept by name in
//! [`Members`](crate::registry::members::Members) beside the breakers and bulkheads. Its waits
//! are timers on the registry's scheduler, its random draws start from the registry's seed,
//! and its events reach the registry's retry listeners
//! ([`Registry::subscribe_retries`](crate::Registry::subscribe_retries)).

use std::sync::Arc;

use crate::config::retry::RetryConfig;
use crate::env::Env;
use crate::registry::members::Member;
use crate::retry::Retry;

impl Member for Retry {
    type Config = RetryConfig;

    fn make(name: &str, config: RetryConfig, env: Arc<Env>) -> Retry {
        Retry::with_env(name, config, env)
    }

    fn name(&self) -> &str {
        Retry::name(self)
    }

    fn detach(&self) {
        Retry::detach(self);
    }
}
