//! Who hears a breaker's events, and the events a state-machine step gathers for them.
//!
//! A step pushes what happened into a [`Pending`] while it holds the breaker's lock, and seals
//! it with the metrics as they are after the step; [`Audience::publish`] then writes the
//! tracing line for a transition and calls the listeners, with no lock held. Nothing is built
//! when nobody listens. Who the listeners are is the [`Audience`] (`event/audience.rs`).

use crate::breaker::metrics::Metrics;
use crate::event::audience::Audience;
use crate::event::{Event, EventKind, TransitionCause};
use crate::log_safe::LogSafe;
use crate::name::Name;
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

/// What a breaker's audience does with the events of a state-machine step.
impl Audience<Event> {
    /// Pushes a call's event (a result, a rejection) if anyone hears it.
    #[inline]
    pub(crate) fn push_call_event(&self, pending: &mut Pending, kind: EventKind) {
        if self.wants_call_events() {
            pending.push(kind);
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
