//! The registry's bulkheads: a bulkhead as a [`Member`] of the registry, kept by name in
//! [`Members`](crate::registry::members::Members) beside the breakers. Its events reach the
//! registry's bulkhead listeners
//! ([`Registry::subscribe_bulkheads`](crate::Registry::subscribe_bulkheads)).

use std::sync::Arc;

use crate::bulkhead::Bulkhead;
use crate::config::bulkhead::BulkheadConfig;
use crate::env::Env;
use crate::registry::members::Member;

impl Member for Bulkhead {
    type Config = BulkheadConfig;

    fn make(name: &str, config: BulkheadConfig, env: Arc<Env>) -> Bulkhead {
        Bulkhead::with_env(name, config, env)
    }

    fn name(&self) -> &str {
        Bulkhead::name(self)
    }

    fn detach(&self) {
        Bulkhead::detach(self);
    }
}
