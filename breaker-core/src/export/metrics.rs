//! Resilience4j's metrics through the [`metrics`] facade, under the names and tags that
//! Resilience4j's Micrometer binding (`TaggedCircuitBreakerMetrics`) gives them, so existing
//! dashboards and alerts read them unchanged.
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
//!
//! Names come from `CircuitBreakerMetricNames` and `AbstractCircuitBreakerMetrics` in
//! resilience4j-micrometer 2.x (`resilience4j.circuitbreaker.state`, `.calls`,
//! `.not.permitted.calls`, `.failure.rate`, ...), spelled as Micrometer's Prometheus registry
//! spells them. Every series also carries the registry's tags ([`Registry::tags`]: Spring's
//! `resilience4j.circuitbreaker.tags.*`, or `RegistryBuilder::tag`), and the labels of a series
//! are sorted by name, as Micrometer sorts its tags.
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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder, SharedString, Unit,
};
use once_cell::sync::Lazy;
use papaya::{Compute, Operation};

use crate::breaker::core::{BreakerCore, Env};
use crate::breaker::metrics::Metrics;
use crate::breaker::CircuitBreaker;
use crate::event::{Event, EventKind};
use crate::export::decaying_max::{self, DecayingMax};
use crate::registry::hooks::RegistryEvent;
use crate::registry::{Registry, WeakRegistry};
use crate::state::State;
use crate::time::clock::Clock;
use crate::time::scheduler::{TimerAction, TimerKey, TimerTarget};

/// Every registry exported so far, so that a registry is exported once: the export hears the
/// registry through its public hooks, which cannot be taken back, so a second export would
/// count every call twice.
static EXPORTS: Lazy<Mutex<Vec<(WeakRegistry, MetricsExport)>>> = Lazy::new(Mutex::default);

/// The "no recorder" warning was logged (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// What the `metrics` macros would pass for a registration from this module.
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The `kind` of each call timer, in the order of `Handles::calls` and `Live::max`.
const CALL_KINDS: [&str; 3] = ["successful", "failed", "ignored"];
/// The `kind` of each window gauge, in the order of `Handles::buffered` and `Handles::slow`.
const WINDOW_KINDS: [&str; 2] = ["successful", "failed"];

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

struct Exporter {
    /// The recorder of the last `install_with_recorder`, else `None`: the facade's.
    recorder: RwLock<Option<Arc<dyn Recorder + Send + Sync>>>,
    /// The registry's tags, as labels of every series.
    tags: Vec<Label>,
    /// The registry's clock and scheduler. Weak, like the breakers: the export refreshes while
    /// the registry or any of its breakers is there.
    env: Weak<Env>,
    clock: Clock,
    /// By display name: the breakers in the registry.
    entries: papaya::HashMap<Box<str>, Entry>,
    /// The descriptions went to the no-op recorder: give them again once a recorder is there.
    undescribed: AtomicBool,
    /// The refresh timer waiting in the registry's scheduler, if any.
    timer: Mutex<Option<TimerKey>>,
    this: Weak<Exporter>,
}

/// One breaker in the export: its handles (replaced whole when they are registered again) and
/// what outlives a registration.
struct Entry {
    live: Arc<Live>,
    handles: Handles,
}

/// The part of a breaker's entry that outlives a registration.
struct Live {
    /// Weak: the registry's listener holds the export, so a strong handle here would keep the
    /// breakers, and through them the registry's scheduler, alive for ever.
    breaker: Weak<BreakerCore>,
    /// The keys of the call timers, which every refresh registers again. (The other keys are
    /// built again for the rarer registration of every handle: a breaker's keys take a few
    /// kilobytes, and a registry may hold many breakers.)
    calls: [Key; 3],
    /// The handles came from the no-op recorder: register them all at the next refresh that
    /// finds a recorder.
    unregistered: AtomicBool,
    /// A thread is writing the state gauges.
    writing: AtomicBool,
    /// The state gauges must be written (again).
    stale: AtomicBool,
    /// The decaying maximum of each call kind.
    max: [DecayingMax; 3],
}

/// A breaker's series: its name, labels and the registry's tags, sorted by label name.
struct Keys {
    states: [Key; 6],
    calls: [Key; 3],
    max: [Key; 3],
    not_permitted: Key,
    not_permitted_1x: Key,
    failure_rate: Key,
    slow_call_rate: Key,
    buffered: [Key; 2],
    slow: [Key; 2],
}

/// A breaker's handles, one per series.
#[derive(Clone)]
struct Handles {
    states: [Gauge; 6],
    calls: [Histogram; 3],
    max: [Gauge; 3],
    not_permitted: Counter,
    not_permitted_1x: Counter,
    failure_rate: Gauge,
    slow_call_rate: Gauge,
    buffered: [Gauge; 2],
    slow: [Gauge; 2],
}

impl MetricsExport {
    /// `resilience4j_circuitbreaker_state{name, state}`.
    pub const STATE: &'static str = "resilience4j_circuitbreaker_state";
    /// `resilience4j_circuitbreaker_calls_seconds{name, kind}` (histogram).
    pub const CALLS: &'static str = "resilience4j_circuitbreaker_calls_seconds";
    /// `resilience4j_circuitbreaker_calls_seconds_max{name, kind}` (gauge: Micrometer's
    /// decaying timer max).
    pub const CALLS_MAX: &'static str = "resilience4j_circuitbreaker_calls_seconds_max";
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

    /// How often, on the registry's clock, the export re-reads every breaker into the gauges
    /// (see "Fresh at every scrape" in the module docs): 1 second.
    pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);
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
                *export
                    .inner
                    .recorder
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Some(recorder);
            }
            export.inner.describe();
            export.inner.refresh(true);
            return export;
        }
        let exporter = Arc::new_cyclic(|this| Exporter {
            recorder: RwLock::new(recorder),
            tags: registry
                .tags()
                .iter()
                .map(|(name, value)| Label::new(shared(name), shared(value)))
                .collect(),
            env: Arc::downgrade(&registry.inner.env),
            clock: registry.clock().clone(),
            entries: papaya::HashMap::new(),
            undescribed: AtomicBool::new(false),
            timer: Mutex::new(None),
            this: this.clone(),
        });
        exporter.describe();
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

    /// Re-reads every breaker's metrics and state into the gauges now, as the export's own
    /// refresh does every [`REFRESH_INTERVAL`](MetricsExport::REFRESH_INTERVAL), and registers
    /// every handle again (when a recorder is in place), so a series that a recorder's idle
    /// timeout removed comes back (see "Breakers that leave the registry" in the module docs).
    /// This takes each breaker's lock for a moment, like [`CircuitBreaker::metrics`]: call it
    /// off the call path.
    pub fn refresh(&self) {
        self.inner.refresh(true);
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
        let own = self
            .inner
            .recorder
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        f.debug_struct("MetricsExport")
            .field("breakers", &self.len())
            .field("own_recorder", &own)
            .finish()
    }
}

/// A label value shared by every series that carries it (a reference count, not a copy).
fn shared(text: &str) -> SharedString {
    SharedString::from(Arc::<str>::from(text))
}

/// Whether `recorder` is the facade's no-op recorder, the one it lends when none is installed.
/// The facade has no query for this; its no-op recorder is a unit struct, and a recorder that
/// records anything holds its storage or a handle to it (see the module docs).
fn is_noop(recorder: &dyn Recorder) -> bool {
    std::mem::size_of_val(recorder) == 0
}

fn describe_to(recorder: &dyn Recorder) {
    use MetricsExport as M;
    let name = KeyName::from_const_str;
    let text = SharedString::const_str;
    recorder.describe_gauge(
        name(M::STATE),
        None,
        text("The states of the circuit breaker"),
    );
    recorder.describe_histogram(
        name(M::CALLS),
        Some(Unit::Seconds),
        text("Calls recorded by the circuit breaker: successful, failed, or failed with an ignored error"),
    );
    recorder.describe_gauge(
        name(M::CALLS_MAX),
        Some(Unit::Seconds),
        text("The longest call recorded by the circuit breaker in the last 2 to 3 minutes"),
    );
    recorder.describe_counter(
        name(M::NOT_PERMITTED_CALLS),
        None,
        text("Total number of not permitted calls"),
    );
    recorder.describe_counter(
        name(M::NOT_PERMITTED_CALLS_1X),
        None,
        text("Total number of not permitted calls (Resilience4j 1.x name)"),
    );
    recorder.describe_gauge(
        name(M::FAILURE_RATE),
        None,
        text("The failure rate of the circuit breaker"),
    );
    recorder.describe_gauge(
        name(M::SLOW_CALL_RATE),
        None,
        text("The slow call rate of the circuit breaker"),
    );
    recorder.describe_gauge(
        name(M::BUFFERED_CALLS),
        None,
        text("The number of buffered calls stored in the sliding window"),
    );
    recorder.describe_gauge(
        name(M::SLOW_CALLS),
        None,
        text("The number of slow calls which were slower than the slow call duration threshold"),
    );
}

impl Exporter {
    /// Runs `f` with the export's own recorder, else the one the facade lends this thread.
    fn with_recorder<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        let own = self
            .recorder
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match own {
            Some(recorder) => f(&*recorder),
            None => metrics::with_recorder(f),
        }
    }

    /// Describes the metrics to the recorder in place; without one, warns (once per process)
    /// and leaves the descriptions for the first refresh that finds a recorder.
    fn describe(&self) {
        let found = self.with_recorder(|recorder| {
            let found = !is_noop(recorder);
            if found {
                describe_to(recorder);
            }
            found
        });
        self.undescribed.store(!found, Ordering::Relaxed);
        if !found && !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "breaker: MetricsExport::install found no `metrics` recorder: nothing is \
                 exported until one is installed; a global recorder gets every breaker's series \
                 at the export's next refresh (within a second), any recorder at the next \
                 MetricsExport::install"
            );
        }
    }

    /// Registers `breaker`'s handles and writes its series. A breaker that takes a name another
    /// one had (replaced, or made again after an eviction) takes its entry over.
    fn register(&self, breaker: &CircuitBreaker) {
        let entries = self.entries.pin();
        let live = match entries.get(breaker.name()) {
            Some(entry) if entry.live.is(breaker) => Arc::clone(&entry.live),
            _ => {
                let now = self.clock.now();
                let keys = Keys::new(breaker.name(), &self.tags);
                let (noop, handles) = self.with_recorder(|recorder| {
                    (is_noop(recorder), Handles::register(recorder, &keys))
                });
                let live = Arc::new(Live {
                    breaker: Arc::downgrade(&breaker.core),
                    calls: keys.calls,
                    unregistered: AtomicBool::new(noop),
                    writing: AtomicBool::new(false),
                    stale: AtomicBool::new(false),
                    max: [(); 3].map(|()| DecayingMax::new(now)),
                });
                let entry = Entry {
                    live: Arc::clone(&live),
                    handles,
                };
                entries.insert(breaker.name().into(), entry);
                live
            }
        };
        if let Some(entry) = entries.get(breaker.name()) {
            entry.write(breaker, &self.clock);
        }
        drop(entries);
        self.refresh_state(breaker.name(), &live);
        self.arm_timer();
    }

    /// Drops the handles of a breaker that left the registry, unless its name already has a
    /// breaker of its own again.
    fn unregister(&self, breaker: &CircuitBreaker) {
        let _ = self
            .entries
            .pin()
            .remove_if(breaker.name(), |_, entry| entry.live.is(breaker));
    }

    fn on_event(&self, event: &Event) {
        let entries = self.entries.pin();
        let Some(entry) = entries.get(event.breaker_name()) else {
            return;
        };
        let handles = &entry.handles;
        let call = |kind: usize, elapsed: Duration| {
            handles.calls[kind].record(elapsed.as_secs_f64());
            let max = &entry.live.max[kind];
            if max.record(event.at(), elapsed) {
                handles.max[kind].set(max.seconds_at(event.at()));
            }
        };
        match event.kind() {
            EventKind::Success { elapsed } => call(0, elapsed),
            EventKind::Error { elapsed } => call(1, elapsed),
            EventKind::IgnoredError { elapsed } => call(2, elapsed),
            EventKind::NotPermitted => {
                handles.not_permitted.increment(1);
                handles.not_permitted_1x.increment(1);
            }
            EventKind::StateTransition { .. } | EventKind::Reset => {
                self.refresh_state(event.breaker_name(), &entry.live);
            }
            _ => {}
        }
        handles.set_snapshot(event.metrics());
    }

    /// Writes every breaker's series from its current metrics and state. With a recorder in
    /// place (the export's own, or one the facade lends this thread), registers handles again
    /// first: all of them if `all` or if they came from the no-op recorder, else the
    /// histograms (the only series a refresh cannot keep from going idle).
    fn refresh(&self, all: bool) {
        let own = self
            .recorder
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match own {
            Some(recorder) => self.refresh_with(&*recorder, all),
            None => metrics::with_recorder(|recorder| self.refresh_with(recorder, all)),
        }
    }

    fn refresh_with(&self, recorder: &dyn Recorder, all: bool) {
        let registering = !is_noop(recorder);
        if registering && self.undescribed.swap(false, Ordering::Relaxed) {
            describe_to(recorder);
        }
        let entries = self.entries.pin();
        for (name, entry) in entries.iter() {
            let Some(breaker) = entry.live.breaker() else {
                // Gone with its registry: nothing will write these series again.
                let _ = entries.remove_if(&**name, |_, held| Arc::ptr_eq(&held.live, &entry.live));
                continue;
            };
            let mut current = entry;
            if registering {
                let every = all || entry.live.unregistered.load(Ordering::Relaxed);
                let fresh = if every {
                    Handles::register(recorder, &Keys::new(name, &self.tags))
                } else {
                    entry.handles.with_calls(recorder, &entry.live.calls)
                };
                let swapped = entries.compute(name.clone(), |now| match now {
                    Some((_, held)) if Arc::ptr_eq(&held.live, &entry.live) => {
                        Operation::Insert(Entry {
                            live: Arc::clone(&held.live),
                            handles: fresh.clone(),
                        })
                    }
                    _ => Operation::Abort(()),
                });
                match swapped {
                    Compute::Updated { new: (_, new), .. } => current = new,
                    _ => continue, // the name has another breaker now, or none
                }
                if every {
                    entry.live.unregistered.store(false, Ordering::Relaxed);
                }
            }
            current.write(&breaker, &self.clock);
            self.refresh_state(name, &entry.live);
        }
    }

    /// Writes the state gauges of `name`'s entry from the breaker's current state. Events may
    /// be published out of order, so the state is read, not taken from the event. One writer
    /// at a time, and nobody waits: a thread that finds a writer marks the gauges stale and
    /// leaves; the writer checks the mark after it is done and writes again, to the handles in
    /// the map then. Whoever writes last has read the state after the last transition, so the
    /// gauges always settle on the current state.
    fn refresh_state(&self, name: &str, live: &Arc<Live>) {
        live.stale.store(true, Ordering::SeqCst);
        loop {
            if live.writing.swap(true, Ordering::SeqCst) {
                return; // the writer will see `stale`
            }
            while live.stale.swap(false, Ordering::SeqCst) {
                let Some(breaker) = live.breaker() else {
                    break;
                };
                let current = breaker.state();
                let entries = self.entries.pin();
                let Some(entry) = entries.get(name).filter(|e| Arc::ptr_eq(&e.live, live)) else {
                    break;
                };
                for (state, gauge) in State::ALL.iter().zip(&entry.handles.states) {
                    gauge.set(if *state == current { 1.0 } else { 0.0 });
                }
            }
            live.writing.store(false, Ordering::SeqCst);
            if !live.stale.load(Ordering::SeqCst) {
                return;
            }
        }
    }

    /// Sets the refresh timer, if none is set and the registry's scheduler is still there.
    fn arm_timer(&self) {
        let Some(env) = self.env.upgrade() else {
            return;
        };
        let mut timer = self.timer.lock().unwrap_or_else(PoisonError::into_inner);
        if timer.is_some() {
            return;
        }
        let target: Weak<dyn TimerTarget> = self.this.clone();
        let due = self
            .clock
            .now()
            .saturating_add(MetricsExport::REFRESH_INTERVAL);
        *timer = Some(
            env.scheduler
                .schedule(due, target, 0, TimerAction::MetricsRefresh),
        );
    }
}

impl TimerTarget for Exporter {
    fn on_timer(&self, _state_id: u64, action: TimerAction) {
        if action != TimerAction::MetricsRefresh {
            return;
        }
        *self.timer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.refresh(false);
        if !self.entries.is_empty() {
            self.arm_timer();
        }
    }
}

impl Keys {
    fn new(name: &str, tags: &[Label]) -> Keys {
        let name = shared(name);
        let key = |metric: &'static str, own: &[(&'static str, &'static str)]| {
            let mut labels: Vec<Label> = own
                .iter()
                .map(|&(label, value)| Label::new(label, value))
                .chain([Label::new("name", name.clone())])
                .chain(tags.iter().cloned())
                .collect();
            labels.sort_by(|a, b| a.key().cmp(b.key()));
            Key::from_parts(KeyName::from_const_str(metric), labels)
        };
        let kind = |metric, kind| key(metric, &[("kind", kind)]);
        Keys {
            states: State::ALL.map(|state| key(MetricsExport::STATE, &[("state", state.as_tag())])),
            calls: CALL_KINDS.map(|k| kind(MetricsExport::CALLS, k)),
            max: CALL_KINDS.map(|k| kind(MetricsExport::CALLS_MAX, k)),
            not_permitted: kind(MetricsExport::NOT_PERMITTED_CALLS, "not_permitted"),
            not_permitted_1x: kind(MetricsExport::NOT_PERMITTED_CALLS_1X, "not_permitted"),
            failure_rate: key(MetricsExport::FAILURE_RATE, &[]),
            slow_call_rate: key(MetricsExport::SLOW_CALL_RATE, &[]),
            buffered: WINDOW_KINDS.map(|k| kind(MetricsExport::BUFFERED_CALLS, k)),
            slow: WINDOW_KINDS.map(|k| kind(MetricsExport::SLOW_CALLS, k)),
        }
    }
}

impl Handles {
    fn register(recorder: &dyn Recorder, keys: &Keys) -> Handles {
        let gauge = |key: &Key| recorder.register_gauge(key, &METADATA);
        let counter = |key: &Key| recorder.register_counter(key, &METADATA);
        Handles {
            states: keys.states.each_ref().map(gauge),
            calls: Handles::histograms(recorder, &keys.calls),
            max: keys.max.each_ref().map(gauge),
            not_permitted: counter(&keys.not_permitted),
            not_permitted_1x: counter(&keys.not_permitted_1x),
            failure_rate: gauge(&keys.failure_rate),
            slow_call_rate: gauge(&keys.slow_call_rate),
            buffered: keys.buffered.each_ref().map(gauge),
            slow: keys.slow.each_ref().map(gauge),
        }
    }

    fn histograms(recorder: &dyn Recorder, keys: &[Key; 3]) -> [Histogram; 3] {
        keys.each_ref()
            .map(|key| recorder.register_histogram(key, &METADATA))
    }

    /// These handles with the histograms registered again.
    fn with_calls(&self, recorder: &dyn Recorder, keys: &[Key; 3]) -> Handles {
        Handles {
            calls: Handles::histograms(recorder, keys),
            ..self.clone()
        }
    }

    fn set_snapshot(&self, m: &Metrics) {
        self.failure_rate
            .set(m.failure_rate.map_or(-1.0, f64::from));
        self.slow_call_rate
            .set(m.slow_call_rate.map_or(-1.0, f64::from));
        let [successful, failed] = &self.buffered;
        successful.set(f64::from(m.successful_calls));
        failed.set(f64::from(m.failed_calls));
        let [successful, failed] = &self.slow;
        successful.set(f64::from(m.slow_successful_calls));
        failed.set(f64::from(m.slow_failed_calls));
    }
}

impl Entry {
    /// Writes every series but the state gauges from `breaker`'s current metrics: the
    /// gauges, the maxima at the clock's time, and the counters (adding 0, which marks them
    /// as recently updated for a recorder's idle timeout).
    fn write(&self, breaker: &CircuitBreaker, clock: &Clock) {
        self.handles.set_snapshot(&breaker.metrics());
        let now = clock.now();
        for (gauge, max) in self.handles.max.iter().zip(&self.live.max) {
            gauge.set(max.seconds_at(now));
        }
        self.handles.not_permitted.increment(0);
        self.handles.not_permitted_1x.increment(0);
    }
}

impl Live {
    fn is(&self, breaker: &CircuitBreaker) -> bool {
        std::ptr::eq(self.breaker.as_ptr(), Arc::as_ptr(&breaker.core))
    }

    fn breaker(&self) -> Option<CircuitBreaker> {
        self.breaker.upgrade().map(|core| CircuitBreaker { core })
    }
}
