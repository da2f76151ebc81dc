//! Resilience4j's metrics through the [`metrics`] facade, under the names and tags that
//! Resilience4j's Micrometer binding (`TaggedCircuitBreakerMetrics`) gives them, so existing
//! dashboards and alerts read them unchanged.
//!
//! | metric (Prometheus name) | type | tags | value |
//! |---|---|---|---|
//! | `resilience4j_circuitbreaker_state` | gauge | `name`, `state` | 1 for the current state, 0 for the five others (`closed`, `open`, `half_open`, `disabled`, `forced_open`, `metrics_only`) |
//! | `resilience4j_circuitbreaker_calls_seconds` | histogram | `name`, `kind` = `successful`, `failed`, `ignored` | call durations (Micrometer's timer: `_count`, `_sum`) |
//! | `resilience4j_circuitbreaker_not_permitted_calls_total` | counter | `name`, `kind` = `not_permitted` | rejected calls |
//! | `resilience4j_circuitbreaker_calls_total` | counter | `name`, `kind` = `not_permitted` | the same count, under Resilience4j 1.x's name (its Grafana dashboard reads it) |
//! | `resilience4j_circuitbreaker_failure_rate` | gauge | `name` | percent; -1 below the minimum number of calls, as Resilience4j reports it |
//! | `resilience4j_circuitbreaker_slow_call_rate` | gauge | `name` | percent; -1 below the minimum number of calls |
//! | `resilience4j_circuitbreaker_buffered_calls` | gauge | `name`, `kind` = `successful`, `failed` | calls in the window |
//! | `resilience4j_circuitbreaker_slow_calls` | gauge | `name`, `kind` = `successful`, `failed` | slow calls in the window |
//!
//! Names come from `CircuitBreakerMetricNames` and `AbstractCircuitBreakerMetrics` in
//! resilience4j-micrometer 2.x (`resilience4j.circuitbreaker.state`, `.calls`,
//! `.not.permitted.calls`, `.failure.rate`, ...), spelled as Micrometer's Prometheus registry
//! spells them.
//!
//! # How it stays off the call path
//!
//! Every breaker's handles (one per series above) are registered with the recorder once, when
//! the breaker is created, and kept in a map by display name (papaya: lock-free reads, and
//! an entry can be removed). A registry-level event listener finds them there and updates
//! them: a histogram sample per recorded call, a counter increment per rejection, and the
//! gauges from the metrics snapshot the event carries. No lock is waited for (the handles
//! sit behind a read-write lock that only [`MetricsExport::refresh`] writes). The state gauges
//! are written from the breaker's current state (one atomic read) by one thread at a time,
//! without waiting: a thread that finds another one writing leaves it a note to write again.
//!
//! Gauges follow the events. A time-based window empties as time passes without any event,
//! and under concurrency an older snapshot may land after a newer one until the next event;
//! [`MetricsExport::refresh`] re-reads every breaker (taking each breaker's lock briefly, off
//! the call path): call it before each scrape.
//!
//! # Breakers that leave the registry
//!
//! When a breaker is removed, replaced or evicted (an idle keyed breaker), the export drops
//! its handles at once and hears it no more. The `metrics` facade has no call that deletes
//! a series, though: the recorder keeps what it was given. With metrics-exporter-prometheus,
//! configure an idle timeout, and a removed breaker's series leave the scrape once they have
//! gone unchanged for it:
//!
//! ```ignore
//! PrometheusBuilder::new()
//!     .idle_timeout(MetricKindMask::ALL, Some(Duration::from_secs(300)))
//!     .install_recorder()?;
//! ```
//!
//! and call [`MetricsExport::refresh`] before each scrape, more often than the timeout: it
//! writes every gauge and counter of the breakers still in the registry (a counter by adding
//! 0), so their series never count as idle, and registers every handle again, so a series
//! the timeout did remove comes back. A histogram cannot be touched without a sample, so the
//! `calls_seconds` series of a breaker that made no call for the whole timeout leave the
//! scrape too, and start again from zero with its next call after a refresh. Without an idle
//! timeout, a removed breaker's series stay in the scrape (frozen) for the life of the
//! recorder.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use metrics::{Counter, Gauge, Histogram, Recorder, Unit};
use once_cell::sync::Lazy;

use crate::breaker::metrics::Metrics;
use crate::breaker::shared::Shared;
use crate::breaker::CircuitBreaker;
use crate::event::{Event, EventKind};
use crate::registry::hooks::RegistryEvent;
use crate::registry::{Registry, WeakRegistry};
use crate::state::State;

/// Every registry exported so far, so that a registry is exported once: the export hears the
/// registry through its public hooks, which cannot be taken back, so a second export would
/// count every call twice.
static EXPORTS: Lazy<Mutex<Vec<(WeakRegistry, MetricsExport)>>> = Lazy::new(Mutex::default);

/// A registry's metrics, exported through the `metrics` facade with Resilience4j's names
/// (see the table in the module docs). Needs the cargo feature `metrics`.
///
/// ```
/// use breaker_core::{MetricsExport, Registry};
///
/// // Install a `metrics` recorder first (for example metrics-exporter-prometheus):
/// // handles are registered with the recorder in place when each breaker is created.
/// let registry = Registry::new();
/// let export = MetricsExport::install(&registry);
/// registry.breaker("productService"); // its series exist from now on
/// export.refresh(); // before a scrape: gauges re-read from every breaker
/// ```
///
/// Cloning gives another handle to the same export.
#[derive(Clone)]
pub struct MetricsExport {
    inner: Arc<Exporter>,
}

struct Exporter {
    recorder: Option<Arc<dyn Recorder + Send + Sync>>,
    /// By display name: the breakers in the registry.
    entries: papaya::HashMap<Box<str>, Entry>,
}

/// One breaker's handles.
struct Entry {
    /// Weak: the registry's listener holds the export, so a strong handle here would keep the
    /// breakers, and through them the registry's scheduler, alive for ever.
    breaker: Weak<Shared>,
    /// Written only by `refresh`, which registers them again.
    handles: RwLock<Handles>,
    /// A thread is writing the state gauges.
    writing: AtomicBool,
    /// The state gauges must be written (again).
    stale: AtomicBool,
}

/// A breaker's handles, one per series.
struct Handles {
    states: [Gauge; 6],
    successful: Histogram,
    failed: Histogram,
    ignored: Histogram,
    not_permitted: Counter,
    not_permitted_1x: Counter,
    failure_rate: Gauge,
    slow_call_rate: Gauge,
    buffered_successful: Gauge,
    buffered_failed: Gauge,
    slow_successful: Gauge,
    slow_failed: Gauge,
}

impl MetricsExport {
    /// `resilience4j_circuitbreaker_state{name, state}`.
    pub const STATE: &'static str = "resilience4j_circuitbreaker_state";
    /// `resilience4j_circuitbreaker_calls_seconds{name, kind}` (histogram).
    pub const CALLS: &'static str = "resilience4j_circuitbreaker_calls_seconds";
    /// `resilience4j_circuitbreaker_not_permitted_calls_total{name, kind="not_permitted"}`.
    pub const NOT_PERMITTED_CALLS: &'static str =
        "resilience4j_circuitbreaker_not_permitted_calls_total";
    /// `resilience4j_circuitbreaker_calls_total{name, kind="not_permitted"}` (Resilience4j 1.x).
    pub const NOT_PERMITTED_CALLS_1X: &'static str = "resilience4j_circuitbreaker_calls_total";
    /// `resilience4j_circuitbreaker_failure_rate{name}`.
    pub const FAILURE_RATE: &'static str = "resilience4j_circuitbreaker_failure_rate";
    /// `resilience4j_circuitbreaker_slow_call_rate{name}`.
    pub const SLOW_CALL_RATE: &'static str = "resilience4j_circuitbreaker_slow_call_rate";
    /// `resilience4j_circuitbreaker_buffered_calls{name, kind}`.
    pub const BUFFERED_CALLS: &'static str = "resilience4j_circuitbreaker_buffered_calls";
    /// `resilience4j_circuitbreaker_slow_calls{name, kind}`.
    pub const SLOW_CALLS: &'static str = "resilience4j_circuitbreaker_slow_calls";

    /// Exports `registry`'s metrics to the recorder installed in the `metrics` facade (global,
    /// or local to this thread) at the time each breaker is created; install the recorder
    /// first. A registry is exported once: a second call returns the first export.
    pub fn install(registry: &Registry) -> MetricsExport {
        MetricsExport::install_inner(registry, None)
    }

    /// Exports `registry`'s metrics to `recorder`, whatever the facade's global recorder is
    /// (tests, or an application with several recorders). A registry is exported once: a
    /// second call returns the first export, with its recorder.
    pub fn install_with_recorder(
        registry: &Registry,
        recorder: Arc<dyn Recorder + Send + Sync>,
    ) -> MetricsExport {
        MetricsExport::install_inner(registry, Some(recorder))
    }

    fn install_inner(
        registry: &Registry,
        recorder: Option<Arc<dyn Recorder + Send + Sync>>,
    ) -> MetricsExport {
        let mut exports = EXPORTS.lock().unwrap_or_else(|e| e.into_inner());
        exports.retain(|(weak, _)| weak.upgrade().is_some());
        if let Some((_, export)) = exports
            .iter()
            .find(|(weak, _)| weak.upgrade().is_some_and(|r| r.ptr_eq(registry)))
        {
            return export.clone();
        }
        let exporter = Arc::new(Exporter {
            recorder,
            entries: papaya::HashMap::new(),
        });
        exporter.with_recorder(describe);
        // Listen first, then learn of new breakers, then register the existing ones, so that
        // no breaker falls between the three.
        let listener = Arc::clone(&exporter);
        registry
            .subscribe(move |event| listener.on_event(event))
            .forever();
        let hook = Arc::clone(&exporter);
        registry.on_registry_event(move |event| match event {
            RegistryEvent::Added(breaker) => hook.register(breaker),
            RegistryEvent::Removed(breaker) => hook.unregister(breaker),
            RegistryEvent::Replaced { new, .. } => hook.register(new),
        });
        for breaker in registry.breakers() {
            exporter.register(&breaker);
        }
        let export = MetricsExport { inner: exporter };
        exports.push((registry.downgrade(), export.clone()));
        export
    }

    /// Re-reads every breaker's metrics and state into the gauges. This takes each breaker's
    /// lock for a moment, like [`CircuitBreaker::metrics`]: call it off the call path, for
    /// example when a scrape arrives, so the gauges are exact at that moment (a time-based
    /// window empties without any event to say so).
    ///
    /// It also keeps the series of every breaker in the registry from counting as idle to a
    /// recorder with an idle timeout: every gauge and counter is written, and every handle is
    /// registered again (see "Breakers that leave the registry" in the module docs).
    pub fn refresh(&self) {
        for entry in self.inner.entries.pin().values() {
            if let Some(shared) = entry.breaker.upgrade() {
                let breaker = CircuitBreaker { shared };
                let fresh = self.inner.with_recorder(|| Handles::new(breaker.name()));
                *entry.handles.write().unwrap_or_else(|e| e.into_inner()) = fresh;
                entry.set_snapshot(&breaker.metrics());
                let handles = entry.read();
                handles.not_permitted.increment(0);
                handles.not_permitted_1x.increment(0);
                drop(handles);
                entry.stale.store(true, Ordering::SeqCst);
                entry.refresh_state();
            }
        }
    }

    /// How many breakers are exported.
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// Whether no breaker is exported yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for MetricsExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsExport")
            .field("breakers", &self.len())
            .field("own_recorder", &self.inner.recorder.is_some())
            .finish()
    }
}

fn describe() {
    use MetricsExport as M;
    metrics::describe_gauge!(M::STATE, "The states of the circuit breaker");
    metrics::describe_histogram!(
        M::CALLS,
        Unit::Seconds,
        "Calls recorded by the circuit breaker: successful, failed, or failed with an ignored error"
    );
    metrics::describe_counter!(
        M::NOT_PERMITTED_CALLS,
        "Total number of not permitted calls"
    );
    metrics::describe_counter!(
        M::NOT_PERMITTED_CALLS_1X,
        "Total number of not permitted calls (Resilience4j 1.x name)"
    );
    metrics::describe_gauge!(M::FAILURE_RATE, "The failure rate of the circuit breaker");
    metrics::describe_gauge!(
        M::SLOW_CALL_RATE,
        "The slow call rate of the circuit breaker"
    );
    metrics::describe_gauge!(
        M::BUFFERED_CALLS,
        "The number of buffered calls stored in the sliding window"
    );
    metrics::describe_gauge!(
        M::SLOW_CALLS,
        "The number of slow calls which were slower than the slow call duration threshold"
    );
}

impl Exporter {
    fn with_recorder<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.recorder {
            Some(recorder) => metrics::with_local_recorder(recorder.as_ref(), f),
            None => f(),
        }
    }

    /// Registers `breaker`'s handles and sets its gauges. A breaker that takes a name another
    /// one had (replaced, or made again after an eviction) takes its entry over.
    fn register(&self, breaker: &CircuitBreaker) {
        let entries = self.entries.pin();
        let current = entries.get(breaker.name());
        let entry = match current {
            Some(entry) if entry.is(breaker) => entry,
            _ => {
                let made = Entry {
                    breaker: Arc::downgrade(&breaker.shared),
                    handles: RwLock::new(self.with_recorder(|| Handles::new(breaker.name()))),
                    writing: AtomicBool::new(false),
                    stale: AtomicBool::new(false),
                };
                entries.insert(breaker.name().into(), made);
                let Some(entry) = entries.get(breaker.name()) else {
                    return;
                };
                entry
            }
        };
        entry.set_snapshot(&breaker.metrics());
        entry.refresh_state();
    }

    /// Drops the handles of a breaker that left the registry, unless its name already has a
    /// breaker of its own again.
    fn unregister(&self, breaker: &CircuitBreaker) {
        let _ = self
            .entries
            .pin()
            .remove_if(breaker.name(), |_, entry| entry.is(breaker));
    }

    fn on_event(&self, event: &Event) {
        let entries = self.entries.pin();
        let Some(entry) = entries.get(event.breaker_name()) else {
            return;
        };
        let handles = entry.read();
        match event.kind() {
            EventKind::Success { elapsed } => handles.successful.record(elapsed.as_secs_f64()),
            EventKind::Error { elapsed } => handles.failed.record(elapsed.as_secs_f64()),
            EventKind::IgnoredError { elapsed } => handles.ignored.record(elapsed.as_secs_f64()),
            EventKind::NotPermitted => {
                handles.not_permitted.increment(1);
                handles.not_permitted_1x.increment(1);
            }
            EventKind::StateTransition { .. } | EventKind::Reset => {
                drop(handles);
                entry.refresh_state();
                entry.set_snapshot(event.metrics());
                return;
            }
            _ => {}
        }
        handles.set_snapshot(event.metrics());
    }
}

impl Handles {
    fn new(name: &str) -> Handles {
        let name = name.to_owned();
        let n = || name.clone();
        let states = State::ALL.map(
            |state| metrics::gauge!(MetricsExport::STATE, "name" => n(), "state" => state.as_tag()),
        );
        let calls = |kind: &'static str| metrics::histogram!(MetricsExport::CALLS, "kind" => kind, "name" => n());
        let by_kind = |metric: &'static str, kind: &'static str| metrics::gauge!(metric, "kind" => kind, "name" => n());
        Handles {
            states,
            successful: calls("successful"),
            failed: calls("failed"),
            ignored: calls("ignored"),
            not_permitted: metrics::counter!(
                MetricsExport::NOT_PERMITTED_CALLS, "kind" => "not_permitted", "name" => n()
            ),
            not_permitted_1x: metrics::counter!(
                MetricsExport::NOT_PERMITTED_CALLS_1X, "kind" => "not_permitted", "name" => n()
            ),
            failure_rate: metrics::gauge!(MetricsExport::FAILURE_RATE, "name" => n()),
            slow_call_rate: metrics::gauge!(MetricsExport::SLOW_CALL_RATE, "name" => n()),
            buffered_successful: by_kind(MetricsExport::BUFFERED_CALLS, "successful"),
            buffered_failed: by_kind(MetricsExport::BUFFERED_CALLS, "failed"),
            slow_successful: by_kind(MetricsExport::SLOW_CALLS, "successful"),
            slow_failed: by_kind(MetricsExport::SLOW_CALLS, "failed"),
        }
    }

    fn set_snapshot(&self, m: &Metrics) {
        self.failure_rate
            .set(m.failure_rate.map_or(-1.0, f64::from));
        self.slow_call_rate
            .set(m.slow_call_rate.map_or(-1.0, f64::from));
        self.buffered_successful.set(f64::from(m.successful_calls));
        self.buffered_failed.set(f64::from(m.failed_calls));
        self.slow_successful.set(f64::from(m.slow_successful_calls));
        self.slow_failed.set(f64::from(m.slow_failed_calls));
    }
}

impl Entry {
    fn is(&self, breaker: &CircuitBreaker) -> bool {
        std::ptr::eq(self.breaker.as_ptr(), Arc::as_ptr(&breaker.shared))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Handles> {
        self.handles.read().unwrap_or_else(|e| e.into_inner())
    }

    fn set_snapshot(&self, m: &Metrics) {
        self.read().set_snapshot(m);
    }

    /// Writes the state gauges from the breaker's current state. Events may be published out
    /// of order, so the state is read, not taken from the event. One writer at a time, and
    /// nobody waits: a thread that finds a writer marks the gauges stale and leaves; the writer
    /// checks the mark after it is done and writes again. Whoever writes last has read the
    /// state after the last transition, so the gauges always settle on the current state.
    fn refresh_state(&self) {
        self.stale.store(true, Ordering::SeqCst);
        loop {
            if self.writing.swap(true, Ordering::SeqCst) {
                return; // the writer will see `stale`
            }
            while self.stale.swap(false, Ordering::SeqCst) {
                let Some(shared) = self.breaker.upgrade() else {
                    break;
                };
                let current = CircuitBreaker { shared }.state();
                for (state, gauge) in State::ALL.iter().zip(&self.read().states) {
                    gauge.set(if *state == current { 1.0 } else { 0.0 });
                }
            }
            self.writing.store(false, Ordering::SeqCst);
            if !self.stale.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}
