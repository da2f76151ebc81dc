//! The registry's bulkheads: their configs, and the public methods of [`Registry`] on them.
//!
//! Bulkheads are configured apart from breakers (Spring's `resilience4j.bulkhead.*`), each name
//! by its instance config, else by the bulkhead shared config `default`.

use std::collections::HashMap;

use crate::config::bulkhead::BulkheadConfig;
use crate::config::DEFAULT_CONFIG;
use crate::registry::Registry;

/// A registry's bulkheads: their configs.
#[derive(Debug)]
pub(crate) struct Bulkheads {
    /// Shared configs by name; `default` is always among them.
    configs: HashMap<String, BulkheadConfig>,
    /// Instance configs by bulkhead name.
    instances: HashMap<String, BulkheadConfig>,
}

impl Bulkheads {
    /// The bulkheads of a registry built with these shared and instance configs (a `default`
    /// shared config is added if there is none: [`BulkheadConfig::default`]).
    pub(crate) fn new(
        mut configs: HashMap<String, BulkheadConfig>,
        instances: HashMap<String, BulkheadConfig>,
    ) -> Bulkheads {
        configs.entry(DEFAULT_CONFIG.to_owned()).or_default();
        Bulkheads { configs, instances }
    }

    /// The config the bulkhead `name` is created with.
    fn config_for(&self, name: &str) -> &BulkheadConfig {
        self.instances
            .get(name)
            .or_else(|| self.configs.get(DEFAULT_CONFIG))
            .expect("`new` always sets the default config")
    }
}

impl Registry {
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
}
