//! The export's retries: Resilience4j's `resilience4j_retry_calls_total` with its four kinds
//! (and the same counts under the gauge name of Resilience4j 1.0 to 1.2,
//! `resilience4j_retry_calls`), and the budget's refusals
//! (`resilience4j_retry_refused_by_budget_total`, breaker's own), polled at each refresh
//! (`polled.rs`).

use metrics::{Counter, Gauge, Label, Level, Metadata, Recorder};

use crate::export::metrics::names::RetryKeys;
use crate::export::metrics::polled::Polled;
use crate::retry::{Retry, WeakRetry};

/// What the `metrics` macros would pass for a registration from this module.
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A retry's series: the four call counters and the four call gauges, each in the order of
/// `names::RETRY_KINDS`, and the refusals' counter.
pub(super) struct RetryHandles {
    calls_total: [Counter; 4],
    calls: [Gauge; 4],
    refused_by_budget: Counter,
}

impl Polled for Retry {
    type Weak = WeakRetry;
    type Handles = RetryHandles;

    fn name(&self) -> &str {
        Retry::name(self)
    }

    fn downgrade(&self) -> WeakRetry {
        Retry::downgrade(self)
    }

    fn upgrade(weak: &WeakRetry) -> Option<Retry> {
        weak.upgrade()
    }

    fn is(weak: &WeakRetry, instance: &Retry) -> bool {
        weak.is(instance)
    }

    fn same(a: &WeakRetry, b: &WeakRetry) -> bool {
        a.ptr_eq(b)
    }

    fn register(recorder: &dyn Recorder, name: &str, tags: &[Label]) -> RetryHandles {
        let keys = RetryKeys::new(name, tags);
        RetryHandles {
            calls_total: keys
                .calls_total
                .each_ref()
                .map(|key| recorder.register_counter(key, &METADATA)),
            calls: keys
                .calls
                .each_ref()
                .map(|key| recorder.register_gauge(key, &METADATA)),
            refused_by_budget: recorder.register_counter(&keys.refused_by_budget, &METADATA),
        }
    }

    /// Writes the four counts (cumulative, since the retry's creation) to the counters, as
    /// Resilience4j's function counters read them, and to the gauges of its older name; and the
    /// refusals' counter. The counters are written with `absolute`: they only go up, and a
    /// write of the same count marks them recently updated for a recorder's idle timeout.
    fn write(&self, handles: &RetryHandles) {
        let m = self.metrics();
        let counts = [
            m.successful_calls_without_retry_attempt(),
            m.successful_calls_with_retry_attempt(),
            m.failed_calls_without_retry_attempt(),
            m.failed_calls_with_retry_attempt(),
        ];
        for ((counter, gauge), count) in handles.calls_total.iter().zip(&handles.calls).zip(counts)
        {
            counter.absolute(count);
            // Exact below 2^53 calls, as Micrometer's gauge (a Java double) is.
            gauge.set(count as f64);
        }
        handles
            .refused_by_budget
            .absolute(m.retries_refused_by_budget());
    }
}
