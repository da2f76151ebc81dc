//! Knobs for breaker's own tests and benches (feature `testing`, off by default). They change
//! how the engine works inside, to compare two paths or to count what it holds; applications
//! have no use for them, and they may change in any release.

use crate::config::ConfigBuilder;
use crate::registry::Registry;

/// `builder` with CLOSED's lock-free recording allowed (`true`, the default) or not (`false`:
/// every call is recorded under the breaker's lock, in the plain window), to compare the two
/// paths. Configs that differ only in this are equal.
pub fn lock_free_window(builder: ConfigBuilder, enabled: bool) -> ConfigBuilder {
    builder.lock_free_window(enabled)
}

/// How many registry-event hooks `registry` holds: those of owners still alive, and of those
/// gone since the last change to its set of breakers.
pub fn registry_hooks(registry: &Registry) -> usize {
    registry.registry_hooks()
}
