//! Events gathered under the breaker's lock and published after it is released.
//!
//! A state-machine step pushes what happened into a [`Pending`] while it holds the lock, and
//! seals it with the metrics as they are after the step; [`Shared::publish`] then writes the
//! tracing line for a transition and calls the listeners, with no lock held. Nothing is built
//! when nobody listens.

use std::sync::atomic::Ordering;

use crate::breaker::metrics::Metrics;
use crate::breaker::shared::{metrics_of, Machine, Shared};
use crate::event::{Event, EventKind, TransitionCause};
use crate::log_safe::LogSafe;
use crate::state::State;
use crate::sync::AtomicU64;
use crate::time::timestamp::Timestamp;
use crate::window::totals::Totals;

/// Events gathered under the lock and published after it is released.
pub(crate) struct Pending {
    pub(crate) events: [Option<(EventKind, Option<TransitionCause>)>; 6],
    pub(crate) len: usize,
    /// The metrics after the operation, taken under the lock when there is anything to publish.
    pub(crate) metrics: Option<Metrics>,
}

impl Pending {
    pub(crate) fn new() -> Pending {
        Pending {
            events: [None; 6],
            len: 0,
            metrics: None,
        }
    }

    pub(crate) fn push(&mut self, kind: EventKind) {
        self.push_with_cause(kind, None);
    }

    pub(crate) fn push_with_cause(&mut self, kind: EventKind, cause: Option<TransitionCause>) {
        if let Some(slot) = self.events.get_mut(self.len) {
            *slot = Some((kind, cause));
            self.len += 1;
        }
    }

    /// Takes the metrics snapshot the events will carry, if there are events.
    pub(crate) fn seal(&mut self, m: &mut Machine, now: Timestamp, not_permitted: &AtomicU64) {
        if self.len > 0 {
            self.metrics = Some(m.snapshot(now, not_permitted.load(Ordering::Relaxed)));
        }
    }
}

impl Shared {
    pub(crate) fn publish(&self, pending: &Pending, now: Timestamp) {
        let Some(metrics) = pending.metrics else {
            return;
        };
        let listen = self.wants_call_events();
        for &(kind, cause) in pending.events[..pending.len].iter().flatten() {
            if let EventKind::StateTransition { from, to } = kind {
                tracing::info!(
                    breaker = %LogSafe(self.name()),
                    from = %from,
                    to = %to,
                    cause = ?cause.unwrap_or(TransitionCause::Manual),
                    failure_rate = metrics.failure_rate.unwrap_or(-1.0),
                    slow_call_rate = metrics.slow_call_rate.unwrap_or(-1.0),
                    "circuit breaker state changed"
                );
            }
            if listen {
                self.deliver(&Event::new(self.shared_name(), now, kind, cause, metrics));
            }
        }
    }

    /// Hands `event` to the breaker's listeners, then to the registry's if they hear it.
    #[inline]
    fn deliver(&self, event: &Event) {
        self.listeners.publish(event);
        if self.registry_hears() {
            self.registry_listeners.publish(event);
        }
    }

    /// Publishes a rejection made on the lock-free OPEN path.
    #[cold]
    pub(crate) fn publish_rejection(&self, now: Timestamp) {
        let metrics = self
            .open_view
            .load(self.not_permitted.load(Ordering::Relaxed));
        let kind = EventKind::NotPermitted;
        self.deliver(&Event::new(self.shared_name(), now, kind, None, metrics));
    }

    /// The event of a CLOSED call recorded without the lock, with the metrics of `totals`, the
    /// window's totals after it.
    ///
    /// The one event goes straight to the listeners (no `Pending`, no transition to log): this
    /// is the path every listened CLOSED call takes.
    #[inline]
    pub(crate) fn publish_closed_call(&self, kind: EventKind, totals: &Totals, now: Timestamp) {
        let rates = self.thresholds.rates(totals);
        let not_permitted = self.not_permitted.load(Ordering::Relaxed);
        let metrics = metrics_of(State::Closed, totals, rates, not_permitted);
        self.deliver(&Event::new(self.shared_name(), now, kind, None, metrics));
    }

    pub(crate) fn push_exceeded(
        &self,
        pending: &mut Pending,
        failure: Option<f32>,
        slow: Option<f32>,
    ) {
        if let Some(rate) = failure {
            pending.push(EventKind::FailureRateExceeded { rate });
        }
        if let Some(rate) = slow {
            pending.push(EventKind::SlowCallRateExceeded { rate });
        }
    }

    #[inline]
    pub(crate) fn push_call_event(&self, pending: &mut Pending, kind: EventKind) {
        if self.wants_call_events() {
            pending.push(kind);
        }
    }
}
