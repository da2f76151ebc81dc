//! The export's bulkheads: two gauges each, Resilience4j's
//! `resilience4j_bulkhead_available_concurrent_calls` and
//! `resilience4j_bulkhead_max_allowed_concurrent_calls`, polled at each refresh (`polled.rs`).

use metrics::{Gauge, Label, Level, Metadata, Recorder};

use crate::bulkhead::{Bulkhead, WeakBulkhead};
use crate::export::metrics::names::BulkheadKeys;
use crate::export::metrics::polled::Polled;

/// What the `metrics` macros would pass for a registration from this module.
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A bulkhead's two gauges.
pub(super) struct BulkheadHandles {
    available: Gauge,
    max_allowed: Gauge,
}

impl Polled for Bulkhead {
    type Weak = WeakBulkhead;
    type Handles = BulkheadHandles;

    fn name(&self) -> &str {
        Bulkhead::name(self)
    }

    fn downgrade(&self) -> WeakBulkhead {
        Bulkhead::downgrade(self)
    }

    fn upgrade(weak: &WeakBulkhead) -> Option<Bulkhead> {
        weak.upgrade()
    }

    fn is(weak: &WeakBulkhead, instance: &Bulkhead) -> bool {
        weak.is(instance)
    }

    fn same(a: &WeakBulkhead, b: &WeakBulkhead) -> bool {
        a.ptr_eq(b)
    }

    fn register(recorder: &dyn Recorder, name: &str, tags: &[Label]) -> BulkheadHandles {
        let keys = BulkheadKeys::new(name, tags);
        BulkheadHandles {
            available: recorder.register_gauge(&keys.available, &METADATA),
            max_allowed: recorder.register_gauge(&keys.max_allowed, &METADATA),
        }
    }

    /// Writes both gauges from the bulkhead's current metrics.
    fn write(&self, handles: &BulkheadHandles) {
        let m = self.metrics();
        handles
            .available
            .set(f64::from(m.available_concurrent_calls()));
        handles
            .max_allowed
            .set(f64::from(m.max_allowed_concurrent_calls()));
    }
}
