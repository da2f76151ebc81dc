//! Resilience4j's metrics through the [`metrics`] facade, under the names and tags that
//! Resilience4j's Micrometer binding (`TaggedCircuitBreakerMetrics`, `TaggedBulkheadMetrics`,
//! `TaggedRetryMetrics`) gives them, so existing dashboards and alerts read them unchanged; plus
//! one series of breaker's own, the retry budget's refusals.
//!
//! | metric (Prometheus name) | type | tags | value |
//! |---|---|---|---|
//! | `resilience4j_circuitbreaker_state` | gauge | `name`, `state` | 1 for the current state, 0 for the five others (`closed`, `open`, `half_open`, `disabled`, `forced_open`, `metrics_only`) |
//! | `resilience4j_circuitbreaker_calls_seconds` | histogram | `name`, `kind` = `successful`, `failed`, `ignored` | call durations (Micrometer's timer: `_count`, `_sum`) |
//! | `resilience4j_circuitbreaker_calls_seconds_max` | gauge | `name`, `kind` = `successful`, `failed`, `ignored` | the longest call of the last 2 to 3 minutes, in seconds (Micrometer's timer max; see below) |
//! | `resilience4j_circuitbreaker_not_permitted_calls_total` | counter | `name`, `kind` = `not_permitted` | rejected calls |
//! | `resilience4j_circuitbreaker_calls_total` | counter | `name`, `kind` = `not_permitted` | the same count, under Resilience4j 1.x's name (its Grafana dashboard reads it) |
//! | `resilience4j_circuitbreaker_failure_rate` | gauge | `name` | percent; -1 below the minimum number of calls, as Resilience4j reports it |
//! | `resilience4j_circuitbreaker_slow_call_rate` | gauge | `name` | percent; -1 below the minimum number of calls |
//! | `resilience4j_circuitbreaker_buffered_calls` | gauge | `name`, `kind` = `successful`, `failed` | calls in the window |
//! | `resilience4j_circuitbreaker_slow_calls` | gauge | `name`, `kind` = `successful`, `failed` | slow calls in the window |
//! | `resilience4j_bulkhead_available_concurrent_calls` | gauge | `name` | a bulkhead's free places (0 while a lowered limit waits for calls to finish) |
//! | `resilience4j_bulkhead_max_allowed_concurrent_calls` | gauge | `name` | a bulkhead's `max-concurrent-calls` |
//! | `resilience4j_retry_calls_total` | counter | `name`, `kind` = `successful_without_retry`, `successful_with_retry`, `failed_without_retry`, `failed_with_retry` | a retry's calls of each kind since its creation (Resilience4j's function counters) |
//! | `resilience4j_retry_calls` | gauge | `name`, `kind` as above | the same counts, as the gauges of Resilience4j 1.0 to 1.2 |
//! | `resilience4j_retry_refused_by_budget_total` | counter | `name` | **breaker's own** (Resilience4j has no retry budget): retries the budget refused, each of which ended its call |
//!
//! Names come from `CircuitBreakerMetricNames` and `AbstractCircuitBreakerMetrics` in
//! resilience4j-micrometer 2.x (`resilience4j.circuitbreaker.state`, `.calls`,
//! `.not.permitted.calls`, `.failure.rate`, ...), and the bulkheads' from `BulkheadMetricNames`
//! and `AbstractBulkheadMetrics` (`resilience4j.bulkhead.available.concurrent.calls`,
//! `.max.allowed.concurrent.calls`, with their descriptions), and the retries' from
//! `RetryMetricNames` and `AbstractRetryMetrics` (`resilience4j.retry.calls`, four function
//! counters told apart by `kind`, so `_total` in Prometheus; the HELP line is the first one's
//! description), spelled as Micrometer's Prometheus registry spells them. Every series also carries the registry's tags ([`Registry::tags`]: Spring's
//! `resilience4j.circuitbreaker.tags.*`, or `RegistryBuilder::tag`), and the labels of a series
//! are sorted by name, as Micrometer sorts its tags.
//!
//! # Percentiles
//!
//! `resilience4j_circuitbreaker_calls_seconds` is a histogram of the facade; what a scrape
//! shows of it is the recorder's choice. metrics-exporter-prometheus renders a summary by
//! default (`quantile` lines, `_sum`, `_count`), and `_bucket` series, which
//! `histogram_quantile` and Resilience4j's Grafana dashboard's percentile panel read, only for
//! a metric it is given buckets for: `PrometheusBuilder::set_buckets_for_metric` with
//! `Matcher::Full(MetricsExport::CALLS.to_owned())`. README.md ("Percentiles need buckets")
//! recommends 1 ms to 30 s, the range of Micrometer's timer histograms. It is the export's only
//! histogram.
//!
//! # The maximum
//!
//! `_max` is Micrometer's `TimeWindowMax` as `PrometheusMeterRegistry` configures it: a ring of
//! [`MetricsExport::CALLS_MAX_BUFFERS`] (3) maxima rotated every
//! [`MetricsExport::CALLS_MAX_ROTATION`] (1 minute, the registry's default `step`), counted from
//! the breaker's creation on the registry's clock. A call's duration is the maximum for 2 to 3
//! minutes after it ended, then the value decays to the longest call since, or 0. Recording a
//! call costs one atomic load (and a compare-and-swap when it is a new maximum); the algorithm
//! is in `decaying_max.rs`.
//!
//! # How it stays off the call path
//!
//! Every breaker's handles (one per series above) are registered with the recorder when the
//! breaker is created, and kept in a map by display name (papaya: lock-free reads, and an entry
//! can be removed or replaced). A registry-level event listener finds them there and updates
//! them: a histogram sample and a decaying maximum per recorded call, a counter increment per
//! rejection, and the gauges from the metrics snapshot the event carries. Nothing is locked:
//! handles registered again are put in the map as a new entry, which readers see at once. The
//! state gauges are written from the breaker's current state (one atomic read) by one thread at
//! a time, without waiting: a thread that finds another one writing leaves it a note to write
//! again.
//!
//! # Fresh at every scrape
//!
//! Gauges follow the events, and a time-based window also empties as time passes without any
//! event; the maximum decays without one. So the export refreshes itself: a timer in the
//! registry's scheduler, every [`MetricsExport::REFRESH_INTERVAL`] (1 second) of the registry's
//! clock while it exports a breaker, re-reads every breaker's metrics and state (taking each
//! breaker's lock for a moment, on the scheduler's thread) into the gauges, and writes the
//! maxima. A scrape therefore reads gauges at most about a second old, with no call from the
//! application; with a [`ManualClock`](crate::ManualClock), advancing the clock runs the
//! refreshes it passes, so tests see the same. [`MetricsExport::refresh`] does the same at a
//! moment of the caller's choosing. (The facade has no gauges computed on read: a recorder
//! stores the last value it was given.)
//!
//! # The recorder, and installing before it
//!
//! [`MetricsExport::install`] uses the recorder the facade lends at registration time (global,
//! or local to the registering thread). Before any is installed, that is the facade's no-op
//! recorder, and handles from it record nothing. The facade has no query for "is a recorder
//! installed"; the export tells the no-op recorder by its size, 0 (it is a unit struct, and a
//! recorder that records anything holds its storage or a handle to it), and then:
//! - `install` logs one WARN per process saying nothing is exported yet;
//! - each refresh (the timer's, or [`refresh`](MetricsExport::refresh)) that finds a recorder on
//!   its thread registers every handle that came from the no-op recorder with it, so a global
//!   recorder installed later gets every breaker's series within a second;
//! - a second `install` registers every handle with the recorder in place now (and a second
//!   [`install_with_recorder`](MetricsExport::install_with_recorder) with the recorder it is
//!   given, which the export uses from then on).
//!
//! A zero-sized recorder of the application's own would be taken for the no-op one: it would
//! draw the warning, and the refreshes would not register its histograms again (which matters
//! only to a recorder that drops idle series); its handles work all the same.
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
//! The breakers still in the registry keep their series: every refresh writes each of their
//! gauges and counters (a counter by adding 0), so none of them counts as idle while the timeout
//! is longer than [`MetricsExport::REFRESH_INTERVAL`]. A histogram cannot be touched without a
//! sample, so the `calls_seconds` series of a breaker that made no call for the whole timeout
//! leave the scrape; every refresh registers the histograms again, so they come back within a
//! second, counting from zero. Without an idle timeout, a removed breaker's series stay in the
//! scrape (frozen) for the life of the recorder.
//!
//! # Bulkheads
//!
//! Every bulkhead of the registry ([`Registry::bulkheads`], and each one added later, through
//! the registry's bulkhead hooks) has its two gauges, written when it is added and at every
//! refresh, not from its calls: a gauge of free places changes with every call, and the
//! refresh keeps it at most about a second old, as the breakers' gauges, with nothing on the
//! call path. The calls in flight are `max_allowed - available`. A bulkhead that is removed or
//! replaced leaves the export at once, and its series leave the scrape as a removed breaker's
//! do (below).
//!
//! # Retries
//!
//! Every retry of the registry ([`Registry::retries`], and each one added later, through the
//! registry's retry hooks) has its four `resilience4j_retry_calls_total` counters, the same four
//! counts as `resilience4j_retry_calls` gauges, and its
//! `resilience4j_retry_refused_by_budget_total` counter, written the same way as a bulkhead's
//! gauges: from the retry's [`metrics`](crate::retry::Retry::metrics) when it is added and at
//! every refresh, nothing on the call path; a scrape reads counts at most about a second old.
//! Resilience4j registers the four counts as function counters (since 1.3; Resilience4j's own
//! Grafana dashboard reads `rate(resilience4j_retry_calls_total[1m])`); releases 1.0 to 1.2
//! registered them as gauges, which Prometheus names without `_total`, and dashboards written
//! then read that name, so both are exported. The refusals are a counter too. A retry that is
//! removed or replaced leaves the export at once.
//!
//! # The files
//!
//! This file is the public type and its installation (the registry's listener and hooks).
//! Below it, `exporter.rs` is the export of one registry: the breakers' entries by name, the
//! refresh and its timer; `entry.rs` is one breaker in it, written from each event and at each
//! refresh, with the single writer of its state gauges; `handles.rs` registers one breaker's
//! handles; `polled.rs` is the series written only at a refresh, those of `bulkheads.rs` (the
//! bulkheads' gauges) and `retries.rs` (the retries' counts); `names.rs` is the series' names,
//! descriptions and keys; `recorder.rs` chooses the recorder and tells the facade's no-op one
//! apart.

mod bulkheads;
mod entry;
mod exporter;
mod handles;
mod names;
mod polled;
mod recorder;
mod retries;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use metrics::Recorder;
use once_cell::sync::Lazy;

use crate::export::decaying_max;
use crate::export::metrics::exporter::{Exporter, REFRESH_INTERVAL};
use crate::registry::hooks::RegistryEvent;
use crate::registry::{Registry, WeakRegistry};

/// Every registry exported so far, so that a registry is exported once: the export hears the
/// registry through its public hooks, which cannot be taken back, so a second export would
/// count every call twice.
static EXPORTS: Lazy<Mutex<Vec<(WeakRegistry, MetricsExport)>>> = Lazy::new(Mutex::default);

/// A registry's metrics, exported through the `metrics` facade with Resilience4j's names
/// (see the table in the module docs), and kept fresh by a refresh every
/// [`REFRESH_INTERVAL`](MetricsExport::REFRESH_INTERVAL) of the registry's clock. Needs the
/// cargo feature `metrics`.
///
/// ```
/// use breaker_core::{MetricsExport, Registry};
///
/// // Install a `metrics` recorder first (for example metrics-exporter-prometheus); one
/// // installed later gets the series at the next refresh or the next `install`.
/// let registry = Registry::new();
/// let export = MetricsExport::install(&registry);
/// registry.breaker("productService"); // its series exist from now on
/// assert_eq!(export.len(), 1);
/// ```
///
/// Cloning gives another handle to the same export.
#[derive(Clone)]
pub struct MetricsExport {
    inner: Arc<Exporter>,
}

impl MetricsExport {
    /// `resilience4j_circuitbreaker_state{name, state}`.
    pub const STATE: &'static str = names::STATE;
    /// `resilience4j_circuitbreaker_calls_seconds{name, kind}` (histogram).
    pub const CALLS: &'static str = names::CALLS;
    /// `resilience4j_circuitbreaker_calls_seconds_max{name, kind}` (gauge: Micrometer's
    /// decaying timer max).
    pub const CALLS_MAX: &'static str = names::CALLS_MAX;
    /// `resilience4j_circuitbreaker_not_permitted_calls_total{name, kind="not_permitted"}`.
    pub const NOT_PERMITTED_CALLS: &'static str = names::NOT_PERMITTED_CALLS;
    /// `resilience4j_circuitbreaker_calls_total{name, kind="not_permitted"}` (Resilience4j 1.x).
    pub const NOT_PERMITTED_CALLS_1X: &'static str = names::NOT_PERMITTED_CALLS_1X;
    /// `resilience4j_circuitbreaker_failure_rate{name}`.
    pub const FAILURE_RATE: &'static str = names::FAILURE_RATE;
    /// `resilience4j_circuitbreaker_slow_call_rate{name}`.
    pub const SLOW_CALL_RATE: &'static str = names::SLOW_CALL_RATE;
    /// `resilience4j_circuitbreaker_buffered_calls{name, kind}`.
    pub const BUFFERED_CALLS: &'static str = names::BUFFERED_CALLS;
    /// `resilience4j_circuitbreaker_slow_calls{name, kind}`.
    pub const SLOW_CALLS: &'static str = names::SLOW_CALLS;
    /// `resilience4j_bulkhead_available_concurrent_calls{name}`: a bulkhead's free places.
    pub const BULKHEAD_AVAILABLE_CONCURRENT_CALLS: &'static str =
        names::BULKHEAD_AVAILABLE_CONCURRENT_CALLS;
    /// `resilience4j_bulkhead_max_allowed_concurrent_calls{name}`: a bulkhead's limit.
    pub const BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS: &'static str =
        names::BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS;
    /// `resilience4j_retry_calls_total{name, kind}`: a retry's calls of each kind
    /// (`successful_without_retry`, `successful_with_retry`, `failed_without_retry`,
    /// `failed_with_retry`), counters as Resilience4j's.
    pub const RETRY_CALLS_TOTAL: &'static str = names::RETRY_CALLS_TOTAL;
    /// `resilience4j_retry_calls{name, kind}`: the same counts as
    /// [`RETRY_CALLS_TOTAL`](MetricsExport::RETRY_CALLS_TOTAL), as the gauges of Resilience4j
    /// 1.0 to 1.2.
    pub const RETRY_CALLS: &'static str = names::RETRY_CALLS;
    /// `resilience4j_retry_refused_by_budget_total{name}`: retries the retry budget refused
    /// (breaker's own counter; Resilience4j has no budget).
    pub const RETRY_REFUSED_BY_BUDGET: &'static str = names::RETRY_REFUSED_BY_BUDGET;

    /// How often, on the registry's clock, the export re-reads every breaker into the gauges
    /// (see "Fresh at every scrape" in the module docs): 1 second.
    pub const REFRESH_INTERVAL: Duration = REFRESH_INTERVAL;
    /// How often the ring of [`CALLS_MAX`](MetricsExport::CALLS_MAX) rotates: 1 minute, the
    /// default `step` of Micrometer's Prometheus registry.
    pub const CALLS_MAX_ROTATION: Duration = decaying_max::ROTATION;
    /// How many maxima the ring of [`CALLS_MAX`](MetricsExport::CALLS_MAX) holds: 3, so a call
    /// is the maximum for 2 to 3 rotations after it ended.
    pub const CALLS_MAX_BUFFERS: usize = decaying_max::BUFFERS;

    /// Exports `registry`'s metrics to the recorder installed in the `metrics` facade (global,
    /// or local to the registering thread) when each breaker is created; install the recorder
    /// first. Without one, this logs a WARN (once per process), and the series go to a global
    /// recorder installed later at the next refresh (within a second) or the next `install`.
    ///
    /// A registry is exported once: a second call returns the first export, after registering
    /// every breaker's handles again with the recorder in place now (or with the export's own,
    /// if it was installed with [`install_with_recorder`](MetricsExport::install_with_recorder)).
    pub fn install(registry: &Registry) -> MetricsExport {
        MetricsExport::install_inner(registry, None)
    }

    /// Exports `registry`'s metrics to `recorder`, whatever the facade's recorder is (tests, or
    /// an application with several recorders). A registry is exported once: a second call
    /// returns the first export, which uses `recorder` from then on and registers every
    /// breaker's handles with it at once.
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
        let mut exports = EXPORTS.lock().unwrap_or_else(PoisonError::into_inner);
        exports.retain(|(weak, _)| weak.upgrade().is_some());
        if let Some((_, export)) = exports
            .iter()
            .find(|(weak, _)| weak.upgrade().is_some_and(|r| r.ptr_eq(registry)))
        {
            let export = export.clone();
            drop(exports);
            if let Some(recorder) = recorder {
                export.inner.recorder.set_own(recorder);
            }
            export.inner.recorder.describe();
            export.inner.refresh(true);
            return export;
        }
        let exporter = Exporter::new(registry, recorder);
        exporter.recorder.describe();
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
        // The bulkheads likewise: the hook first, then the existing ones.
        let hook = Arc::clone(&exporter);
        registry.on_bulkhead_registry_event(move |event| match event {
            RegistryEvent::Added(bulkhead) => hook.register_bulkhead(bulkhead),
            RegistryEvent::Removed(bulkhead) => hook.unregister_bulkhead(bulkhead),
            RegistryEvent::Replaced { new, .. } => hook.register_bulkhead(new),
        });
        for bulkhead in registry.bulkheads() {
            exporter.register_bulkhead(&bulkhead);
        }
        // The retries likewise.
        let hook = Arc::clone(&exporter);
        registry.on_retry_registry_event(move |event| match event {
            RegistryEvent::Added(retry) => hook.register_retry(retry),
            RegistryEvent::Removed(retry) => hook.unregister_retry(retry),
            RegistryEvent::Replaced { new, .. } => hook.register_retry(new),
        });
        for retry in registry.retries() {
            exporter.register_retry(&retry);
        }
        let export = MetricsExport { inner: exporter };
        exports.push((registry.downgrade(), export.clone()));
        export
    }

    /// Re-reads every breaker's metrics and state into the gauges now, as the export's own
    /// refresh does every [`REFRESH_INTERVAL`](MetricsExport::REFRESH_INTERVAL), and registers
    /// every handle again (when a recorder is in place), so a series that a recorder's idle
    /// timeout removed comes back (see "Breakers that leave the registry" in the module docs).
    /// This takes each breaker's lock for a moment, like
    /// [`CircuitBreaker::metrics`](crate::CircuitBreaker::metrics): call it off the call path.
    pub fn refresh(&self) {
        self.inner.refresh(true);
    }

    /// How many breakers are exported.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// How many bulkheads are exported.
    pub fn bulkhead_count(&self) -> usize {
        self.inner.bulkhead_count()
    }

    /// How many retries are exported.
    pub fn retry_count(&self) -> usize {
        self.inner.retry_count()
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
            .field("bulkheads", &self.bulkhead_count())
            .field("retries", &self.retry_count())
            .field("own_recorder", &self.inner.recorder.has_own())
            .finish()
    }
}
