//! Who hears a breaker's events, and the events a state-machine step gathers for them.
//!
//! A step pushes what happened into a [`Pending`] while it holds the breaker's lock, and seals
//! it with the metrics as they are after the step; [`Audience::publish`] then writes the
//! tracing line for a transition and calls the listeners, with no lock held. Nothing is built
//! when nobody listens. Who the listeners are is the [`Audience`] (`event/audience.rs`).
//!
//! A step completes at most one call, whose event may carry the call's error text for the
//! listeners that asked for it (`Pending::error`).

use crate::breaker::metrics::{EventMetrics, Metrics};
use crate::event::audience::Audience;
use crate::event::{ErrorText, Event, EventKind, EventName, TransitionCause};
use crate::log_safe::LogSafe;
use crate::time::timestamp::Timestamp;

/// Events gathered under the lock and published after it is released.
pub(crate) struct Pending {
    events: [Option<(EventKind, Option<TransitionCause>)>; 6],
    len: usize,
    /// The metrics after the step, taken under the lock when there is anything to publish.
    metrics: Option<Metrics>,
    /// The error text of the step's call event (ERROR or IGNORED_ERROR), for the listeners
    /// that asked for error texts.
    error: Option<ErrorText>,
}

impl Pending {
    pub(crate) fn new() -> Pending {
        Pending {
            events: [None; 6],
            len: 0,
            metrics: None,
            error: None,
        }
    }

    /// Pushes a call's event with the call's error text, if it has one.
    pub(crate) fn push_call(&mut self, kind: EventKind, error: Option<&ErrorText>) {
        self.push(kind);
        if let Some(error) = error {
            self.error = Some(error.clone());
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
    /// Pushes a call's event (a result, a rejection) if anyone hears it, with the call's error
    /// text if it has one.
    #[inline]
    pub(crate) fn push_call_event(
        &self,
        pending: &mut Pending,
        kind: EventKind,
        error: Option<&ErrorText>,
    ) {
        if self.wants_call_events() {
            pending.push_call(kind, error);
        }
    }

    /// Publishes what a step of breaker `name` gathered (sealed, with the lock released).
    pub(crate) fn publish(&self, name: &EventName, pending: &Pending, now: Timestamp) {
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
                let taken = EventMetrics::Taken(metrics);
                let event = Event::new(name.clone(), now, kind, cause, taken);
                self.deliver_call(&event, pending.error_of(kind));
            }
        }
    }

    /// Delivers a call's event: with `error`, in its detailed form to the listeners that asked
    /// for error texts.
    #[inline(always)]
    pub(crate) fn deliver_call(&self, event: &Event, error: Option<&ErrorText>) {
        match error {
            None => self.deliver(event),
            Some(error) => self.deliver_with_error(event, error),
        }
    }

    /// [`deliver_call`](Audience::deliver_call) with an error text: out of the listened call's
    /// way.
    #[cold]
    #[inline(never)]
    fn deliver_with_error(&self, event: &Event, error: &ErrorText) {
        self.deliver_detailed(event, &event.with_error(error));
    }
}

impl Pending {
    /// The error text of an event of kind `kind`: the step's call's, for its ERROR or
    /// IGNORED_ERROR event.
    fn error_of(&self, kind: EventKind) -> Option<&ErrorText> {
        match kind {
            EventKind::Error { .. } | EventKind::IgnoredError { .. } => self.error.as_ref(),
            _ => None,
        }
    }
}
