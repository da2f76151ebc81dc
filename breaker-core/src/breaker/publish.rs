//! Who hears a breaker's events, and the events a state-machine step gathers for them.
//!
//! A step pushes what happened into a [`Pending`] while it holds the breaker's lock, and seals
//! it with the metrics as they are after the step; [`Audience::publish`] then writes the
//! tracing line for a transition and calls the listeners, with no lock held. Nothing is built
//! when nobody listens.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::breaker::metrics::Metrics;
use crate::event::listeners::{Listeners, Subscription};
use crate::event::{Event, EventKind, TransitionCause};
use crate::log_safe::LogSafe;
use crate::name::Name;
use crate::sync::AtomicBool;
use crate::time::timestamp::Timestamp;

/// Events gathered under the lock and published after it is released.
pub(crate) struct Pending {
    events: [Option<(EventKind, Option<TransitionCause>)>; 6],
    len: usize,
    /// The metrics after the step, taken under the lock when there is anything to publish.
    metrics: Option<Metrics>,
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

    /// The "rate exceeded" events of the rates given.
    pub(crate) fn push_exceeded(&mut self, failure: Option<f32>, slow: Option<f32>) {
        if let Some(rate) = failure {
            self.push(EventKind::FailureRateExceeded { rate });
        }
        if let Some(rate) = slow {
            self.push(EventKind::SlowCallRateExceeded { rate });
        }
    }

    /// Takes the metrics snapshot the events will carry, if there are events.
    pub(crate) fn seal(&mut self, metrics: impl FnOnce() -> Metrics) {
        if self.len > 0 {
            self.metrics = Some(metrics());
        }
    }
}

/// Who hears one breaker's events: its own listeners, and its registry's while it is in the
/// registry.
pub(crate) struct Audience {
    listeners: Arc<Listeners>,
    /// The registry's listeners, held here so that the hot path reaches them with one pointer
    /// less than through the registry.
    registry: Arc<Listeners>,
    /// Removed from its registry (removed, replaced or evicted): the breaker goes on working
    /// for the handles that hold it, but the registry's listeners no longer hear it.
    detached: AtomicBool,
}

impl Audience {
    /// A breaker's audience: no listener of its own yet, and `registry`'s.
    pub(crate) fn new(registry: Arc<Listeners>) -> Audience {
        Audience {
            listeners: Arc::default(),
            registry,
            detached: AtomicBool::new(false),
        }
    }

    /// Adds a listener of the breaker's own.
    pub(crate) fn subscribe(&self, listener: Arc<dyn Fn(&Event) + Send + Sync>) -> Subscription {
        self.listeners.add(listener)
    }

    /// Whether the breaker was removed from its registry.
    #[inline]
    pub(crate) fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Relaxed)
    }

    /// The breaker left its registry: the registry's listeners stop hearing it.
    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Relaxed);
    }

    /// Whether anyone hears a call's event, so that it is worth building.
    #[inline]
    pub(crate) fn wants_call_events(&self) -> bool {
        !self.listeners.is_empty() || self.registry_hears()
    }

    /// Whether the registry's listeners hear this breaker: someone listens, and the breaker is
    /// still in its registry.
    #[inline]
    fn registry_hears(&self) -> bool {
        !self.registry.is_empty() && !self.is_detached()
    }

    /// Pushes a call's event (a result, a rejection) if anyone hears it.
    #[inline]
    pub(crate) fn push_call_event(&self, pending: &mut Pending, kind: EventKind) {
        if self.wants_call_events() {
            pending.push(kind);
        }
    }

    /// Hands `event` to the breaker's listeners, then to the registry's if they hear it.
    #[inline]
    pub(crate) fn deliver(&self, event: &Event) {
        self.listeners.publish(event);
        if self.registry_hears() {
            self.registry.publish(event);
        }
    }

    /// Publishes what a step of breaker `name` gathered (sealed, with the lock released).
    pub(crate) fn publish(&self, name: &Name, pending: &Pending, now: Timestamp) {
        let Some(metrics) = pending.metrics else {
            return;
        };
        let listen = self.wants_call_events();
        for &(kind, cause) in pending.events[..pending.len].iter().flatten() {
            if let EventKind::StateTransition { from, to } = kind {
                tracing::info!(
                    breaker = %LogSafe(name.as_str()),
                    from = %from,
                    to = %to,
                    cause = ?cause.unwrap_or(TransitionCause::Manual),
                    failure_rate = metrics.failure_rate.unwrap_or(-1.0),
                    slow_call_rate = metrics.slow_call_rate.unwrap_or(-1.0),
                    "circuit breaker state changed"
                );
            }
            if listen {
                self.deliver(&Event::new(name.clone(), now, kind, cause, metrics));
            }
        }
    }
}
