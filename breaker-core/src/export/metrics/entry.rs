//! One breaker in the export: its handles, its decaying maxima, and the two ways its series
//! are written, from each event the breaker publishes and from its current metrics at a
//! refresh.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use metrics::Key;

use crate::breaker::core::BreakerCore;
use crate::breaker::CircuitBreaker;
use crate::event::{Event, EventKind};
use crate::export::decaying_max::DecayingMax;
use crate::export::metrics::handles::Handles;
use crate::time::clock::Clock;
use crate::time::timestamp::Timestamp;

/// One breaker in the export: its handles (replaced whole when they are registered again) and
/// what outlives a registration.
pub(super) struct Entry {
    pub(super) live: Arc<Live>,
    pub(super) handles: Handles,
}

/// The part of a breaker's entry that outlives a registration.
pub(super) struct Live {
    /// Weak: the registry's listener holds the export, so a strong handle here would keep the
    /// breakers, and through them the registry's scheduler, alive for ever.
    breaker: Weak<BreakerCore>,
    /// The keys of the call timers, which every refresh registers again. (The other keys are
    /// built again for the rarer registration of every handle: a breaker's keys take a few
    /// kilobytes, and a registry may hold many breakers.)
    pub(super) calls: [Key; 3],
    /// The handles came from the no-op recorder: register them all at the next refresh that
    /// finds a recorder.
    pub(super) unregistered: AtomicBool,
    /// A thread is writing the state gauges.
    writing: AtomicBool,
    /// The state gauges must be written (again).
    stale: AtomicBool,
    /// The decaying maximum of each call kind.
    max: [DecayingMax; 3],
}

impl Entry {
    /// Writes what `event` changes: a call's histogram sample and maximum, or a rejection's
    /// counters, then the gauges of the metrics snapshot it carries. (The state gauges are
    /// read from the breaker instead: [`Live::write_state`].)
    pub(super) fn record(&self, event: &Event) {
        let handles = &self.handles;
        let call = |kind: usize, elapsed: Duration| {
            handles.calls[kind].record(elapsed.as_secs_f64());
            let max = &self.live.max[kind];
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
            _ => {}
        }
        handles.set_snapshot(&event.metrics());
    }

    /// Writes every series but the state gauges from `breaker`'s current metrics: the
    /// gauges, the maxima at the clock's time, and the counters (adding 0, which marks them
    /// as recently updated for a recorder's idle timeout).
    pub(super) fn write(&self, breaker: &CircuitBreaker, clock: &Clock) {
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
    /// A new breaker's part: `calls` are its call timers' keys, `noop` whether its handles
    /// came from the no-op recorder, `now` the start of its maxima.
    pub(super) fn new(
        breaker: &CircuitBreaker,
        calls: [Key; 3],
        noop: bool,
        now: Timestamp,
    ) -> Live {
        Live {
            breaker: Arc::downgrade(&breaker.core),
            calls,
            unregistered: AtomicBool::new(noop),
            writing: AtomicBool::new(false),
            stale: AtomicBool::new(false),
            max: [(); 3].map(|()| DecayingMax::new(now)),
        }
    }

    /// Whether this is `breaker`'s part (not that of another breaker with its name).
    pub(super) fn is(&self, breaker: &CircuitBreaker) -> bool {
        std::ptr::eq(self.breaker.as_ptr(), Arc::as_ptr(&breaker.core))
    }

    /// The breaker, while it exists.
    pub(super) fn breaker(&self) -> Option<CircuitBreaker> {
        self.breaker.upgrade().map(|core| CircuitBreaker { core })
    }

    /// Has the state gauges written by `write`, which reads the breaker's state and writes it
    /// to the handles in the map then, and returns `false` when there is nothing to write to
    /// any more. Events may be published out of order, so the state is read, not taken from
    /// the event. One writer at a time, and nobody waits: a thread that finds a writer marks
    /// the gauges stale and leaves; the writer checks the mark after it is done and writes
    /// again. Whoever writes last has read the state after the last transition, so the gauges
    /// always settle on the current state.
    pub(super) fn write_state(&self, mut write: impl FnMut() -> bool) {
        self.stale.store(true, Ordering::SeqCst);
        loop {
            if self.writing.swap(true, Ordering::SeqCst) {
                return; // the writer will see `stale`
            }
            while self.stale.swap(false, Ordering::SeqCst) {
                if !write() {
                    break;
                }
            }
            self.writing.store(false, Ordering::SeqCst);
            if !self.stale.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}
