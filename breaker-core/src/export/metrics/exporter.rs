//! The export of one registry: its breakers' entries by display name, kept up to date by the
//! registry's hooks and events, its bulkheads' and retries' series (`polled.rs`), and the
//! refresh that rewrites every series on a timer in the registry's scheduler.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use metrics::{Label, Recorder};
use papaya::{Compute, Operation};

use crate::breaker::CircuitBreaker;
use crate::bulkhead::Bulkhead;
use crate::env::Env;
use crate::event::{Event, EventKind};
use crate::export::metrics::entry::{Entry, Live};
use crate::export::metrics::handles::Handles;
use crate::export::metrics::names::{shared, Keys};
use crate::export::metrics::polled::{Polled, PolledSeries};
use crate::export::metrics::recorder::{is_noop, ExportRecorder};
use crate::registry::Registry;
use crate::retry::Retry;
use crate::time::clock::Clock;
use crate::time::scheduler::{TimerKey, TimerTarget};

/// How often, on the registry's clock, the export rewrites every breaker's, bulkhead's and
/// retry's series.
pub(super) const REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// What a `MetricsExport` handle holds: the export of one registry.
pub(super) struct Exporter {
    pub(super) recorder: ExportRecorder,
    /// The registry's tags, as labels of every series.
    tags: Vec<Label>,
    /// The registry's clock and scheduler. Weak, like the breakers: the export refreshes while
    /// the registry or any of its breakers is there.
    env: Weak<Env>,
    clock: Clock,
    /// By display name: the breakers in the registry.
    entries: papaya::HashMap<Box<str>, Entry>,
    /// The bulkheads in the registry.
    bulkheads: PolledSeries<Bulkhead>,
    /// The retries in the registry.
    retries: PolledSeries<Retry>,
    /// The refresh timer waiting in the registry's scheduler, if any.
    timer: Mutex<Option<TimerKey>>,
    this: Weak<Exporter>,
}

impl Exporter {
    /// An export of `registry` with no breaker yet, writing to `recorder` (else the facade's).
    pub(super) fn new(
        registry: &Registry,
        recorder: Option<Arc<dyn Recorder + Send + Sync>>,
    ) -> Arc<Exporter> {
        Arc::new_cyclic(|this| Exporter {
            recorder: ExportRecorder::new(recorder),
            tags: registry
                .tags()
                .iter()
                .map(|(name, value)| Label::new(shared(name), shared(value)))
                .collect(),
            env: Arc::downgrade(&registry.inner.env),
            clock: registry.clock().clone(),
            entries: papaya::HashMap::new(),
            bulkheads: PolledSeries::default(),
            retries: PolledSeries::default(),
            timer: Mutex::new(None),
            this: this.clone(),
        })
    }

    /// How many breakers are exported.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Registers `breaker`'s handles and writes its series. A breaker that takes a name another
    /// one had (replaced, or made again after an eviction) takes its entry over.
    pub(super) fn register(&self, breaker: &CircuitBreaker) {
        let entries = self.entries.pin();
        let live = match entries.get(breaker.name()) {
            Some(entry) if entry.live.is(breaker) => Arc::clone(&entry.live),
            _ => {
                let now = self.clock.now();
                let keys = Keys::new(breaker.name(), &self.tags);
                let (noop, handles) = self
                    .recorder
                    .with(|recorder| (is_noop(recorder), Handles::register(recorder, &keys)));
                let live = Arc::new(Live::new(breaker, keys.calls, noop, now));
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

    /// How many bulkheads are exported.
    pub(super) fn bulkhead_count(&self) -> usize {
        self.bulkheads.len()
    }

    /// Registers `bulkhead`'s gauges and writes them.
    pub(super) fn register_bulkhead(&self, bulkhead: &Bulkhead) {
        self.register_polled(&self.bulkheads, bulkhead);
    }

    /// Drops the gauges of a bulkhead that left the registry.
    pub(super) fn unregister_bulkhead(&self, bulkhead: &Bulkhead) {
        self.bulkheads.unregister(bulkhead);
    }

    /// How many retries are exported.
    pub(super) fn retry_count(&self) -> usize {
        self.retries.len()
    }

    /// Registers `retry`'s series and writes them.
    pub(super) fn register_retry(&self, retry: &Retry) {
        self.register_polled(&self.retries, retry);
    }

    /// Drops the series of a retry that left the registry.
    pub(super) fn unregister_retry(&self, retry: &Retry) {
        self.retries.unregister(retry);
    }

    fn register_polled<P: Polled>(&self, series: &PolledSeries<P>, instance: &P) {
        self.recorder
            .with(|recorder| series.register(instance, recorder, &self.tags));
        self.arm_timer();
    }

    /// Drops the handles of a breaker that left the registry, unless its name already has a
    /// breaker of its own again.
    pub(super) fn unregister(&self, breaker: &CircuitBreaker) {
        let _ = self
            .entries
            .pin()
            .remove_if(breaker.name(), |_, entry| entry.live.is(breaker));
    }

    /// The registry's listener: writes what `event` changes to its breaker's series.
    pub(super) fn on_event(&self, event: &Event) {
        let entries = self.entries.pin();
        let Some(entry) = entries.get(event.breaker_name()) else {
            return;
        };
        if matches!(
            event.kind(),
            EventKind::StateTransition { .. } | EventKind::Reset
        ) {
            self.refresh_state(event.breaker_name(), &entry.live);
        }
        entry.record(event);
    }

    /// Writes every breaker's series from its current metrics and state, and every bulkhead's
    /// and retry's.
    /// With a recorder in place (the export's own, or one the facade lends this thread),
    /// registers handles again first: all of them if `all` or if they came from the no-op
    /// recorder, else the histograms (the only series a refresh cannot keep from going idle).
    pub(super) fn refresh(&self, all: bool) {
        self.recorder
            .with(|recorder| self.refresh_with(recorder, all));
    }

    fn refresh_with(&self, recorder: &dyn Recorder, all: bool) {
        let registering = !is_noop(recorder);
        if registering {
            self.recorder.describe_late(recorder);
        }
        self.bulkheads.refresh(recorder, all, &self.tags);
        self.retries.refresh(recorder, all, &self.tags);
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

    /// Writes the state gauges of `name`'s entry from the breaker's current state, to the
    /// handles in the map at the time (see [`Live::write_state`]).
    fn refresh_state(&self, name: &str, live: &Arc<Live>) {
        live.write_state(|| {
            let Some(breaker) = live.breaker() else {
                return false;
            };
            let current = breaker.state();
            let entries = self.entries.pin();
            let Some(entry) = entries.get(name).filter(|e| Arc::ptr_eq(&e.live, live)) else {
                return false;
            };
            entry.handles.set_state(current);
            true
        });
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
        let due = self.clock.now().saturating_add(REFRESH_INTERVAL);
        *timer = Some(env.scheduler().schedule(due, target, 0));
    }
}

/// The export's one timer is its refresh; its token is unused.
impl TimerTarget for Exporter {
    fn on_timer(&self, _token: u64) {
        *self.timer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.refresh(false);
        if !self.entries.is_empty() || !self.bulkheads.is_empty() || !self.retries.is_empty() {
            self.arm_timer();
        }
    }
}
