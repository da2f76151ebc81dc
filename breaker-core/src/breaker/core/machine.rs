//! The state machine, under the breaker's lock: Resilience4j's `CircuitBreakerStateMachine`.
//!
//! Every step goes through [`BreakerCore::step`]: take the lock, change the state object and
//! gather its events in a [`Pending`], seal them with the metrics after the change, release
//! the lock and only then publish. [`BreakerCore::enter`] is the one place a state is entered:
//! it builds the new state object, sets its timers, and stores the new
//! [`StateTag`](crate::breaker::tag::StateTag) last, so a lock-free reader that sees the tag
//! sees the state it names.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{give_back, BreakerCore, Grant, Machine, Phase, NO_WINDOW};
use crate::breaker::publish::Pending;
use crate::classify::Outcome;
use crate::error::{CallNotPermitted, IllegalTransition};
use crate::event::{ErrorText, EventKind, TransitionCause};
use crate::state::{State, StateId};
use crate::time::scheduler::{TimerKey, TimerTarget};
use crate::time::timestamp::Timestamp;
use crate::window::{StateMetrics, Verdict};

impl BreakerCore {
    /// One step of the state machine: takes the lock, lets `change` change the state object
    /// and gather its events, seals them with the metrics as they are after the change,
    /// releases the lock, and publishes. Every transition goes through here, so events are
    /// always published with no lock held.
    fn step<R>(&self, now: Timestamp, change: impl FnOnce(&mut Machine, &mut Pending) -> R) -> R {
        let mut pending = Pending::new();
        let result = {
            let mut m = self.lock();
            let result = change(&mut m, &mut pending);
            let not_permitted = &self.view.not_permitted;
            pending.seal(|| m.snapshot(now, not_permitted.load(Ordering::Relaxed)));
            result
        };
        self.audience.publish(&self.event_name, &pending, now);
        result
    }

    /// A permit where the lock-free paths could not decide: HALF_OPEN's trials, FORCED_OPEN,
    /// and OPEN at the end of its wait (which moves to HALF_OPEN and takes the first trial).
    #[cold]
    pub(super) fn acquire_slow(&self) -> Result<Grant, CallNotPermitted> {
        let now = self.clock.now();
        let granted = self.step(now, |m, pending| match m.phase {
            Phase::Closed | Phase::Disabled | Phase::MetricsOnly { .. } => Ok(m.id),
            Phase::Open { .. } if self.open_wait_elapsed(now) => {
                let cause = TransitionCause::WaitElapsed;
                self.enter(m, State::HalfOpen, now, cause, pending);
                self.try_trial(m, pending)
            }
            Phase::HalfOpen { .. } => self.try_trial(m, pending),
            Phase::Open { .. } => {
                self.view.not_permitted.fetch_add(1, Ordering::Relaxed);
                self.audience
                    .push_call_event(pending, EventKind::NotPermitted, None);
                Err(State::Open)
            }
            Phase::ForcedOpen => {
                self.view.not_permitted.fetch_add(1, Ordering::Relaxed);
                self.audience
                    .push_call_event(pending, EventKind::NotPermitted, None);
                Err(State::ForcedOpen)
            }
        });
        match granted {
            Ok(granted_by) => Ok(Grant {
                state: granted_by,
                start: now,
            }),
            Err(state) => {
                let remaining = self.view.retry_after.load(Ordering::Acquire);
                Err(self.not_permitted_error(state, remaining.saturating_sub(now.unix_nanos())))
            }
        }
    }

    /// HALF_OPEN: one of the trial permits, or a rejection when all are out.
    fn try_trial(&self, m: &mut Machine, pending: &mut Pending) -> Result<StateId, State> {
        if let Phase::HalfOpen { trials_left, .. } = &mut m.phase {
            if *trials_left > 0 {
                *trials_left -= 1;
                return Ok(m.id);
            }
        }
        self.view.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.audience
            .push_call_event(pending, EventKind::NotPermitted, None);
        Err(State::HalfOpen)
    }

    /// Completes a permit under the lock: any state, any window, with listeners. `position`
    /// is a ring position of the lock-free window that the call already took; `error` the
    /// call's error text, for the listeners that asked for it.
    #[inline(never)]
    pub(super) fn complete_locked(
        &self,
        granted_by: StateId,
        outcome: Outcome,
        (elapsed_nanos, now): (u64, Timestamp),
        position: Option<u32>,
        error: Option<&ErrorText>,
    ) {
        let failed = outcome == Outcome::Failure;
        self.step(now, |m, pending| {
            if outcome != Outcome::Ignored {
                m.history = true;
            }
            if m.phase == Phase::Closed
                && outcome != Outcome::Ignored
                && !self.audience.wants_call_events()
            {
                // The common case: a CLOSED call, nobody listening. Nothing to publish unless
                // the call trips the breaker.
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.record_at(failed, elapsed_nanos, now, position)
                {
                    pending.push_exceeded(failure_rate, slow_call_rate);
                    self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
                }
                return;
            }
            let elapsed = Duration::from_nanos(elapsed_nanos);
            let quiet = matches!(m.phase, Phase::Disabled | Phase::ForcedOpen);
            match outcome {
                Outcome::Ignored => {
                    give_back(m, granted_by);
                    if !quiet {
                        let kind = EventKind::IgnoredError { elapsed };
                        self.audience.push_call_event(pending, kind, error);
                    }
                }
                Outcome::Success | Outcome::Failure => {
                    if !quiet {
                        let kind = match failed {
                            true => EventKind::Error { elapsed },
                            false => EventKind::Success { elapsed },
                        };
                        self.audience.push_call_event(pending, kind, error);
                    }
                    self.record_outcome(m, (failed, elapsed_nanos, position), now, pending);
                }
            }
        });
    }

    /// Records `(failed, elapsed nanoseconds, ring position taken)` in the current state.
    fn record_outcome(
        &self,
        m: &mut Machine,
        (failed, elapsed, position): (bool, u64, Option<u32>),
        now: Timestamp,
        pending: &mut Pending,
    ) {
        let verdict = match m.phase {
            Phase::Disabled | Phase::ForcedOpen => return,
            _ => m.metrics.record_at(failed, elapsed, now, position),
        };
        match (m.phase, verdict) {
            (
                Phase::Closed | Phase::HalfOpen { .. },
                Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                },
            ) => {
                pending.push_exceeded(failure_rate, slow_call_rate);
                self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
            }
            (Phase::HalfOpen { .. }, Verdict::BelowThresholds) => {
                self.enter(m, State::Closed, now, TransitionCause::Evaluation, pending);
            }
            (Phase::Open { .. }, _) => self.view.open_metrics.store(&m.snapshot(now, 0)),
            (
                Phase::MetricsOnly {
                    reported_failure_rate,
                    reported_slow_rate,
                },
                Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                },
            ) => {
                // METRICS_ONLY never opens; it reports each rate exceeded once.
                let failure_rate = failure_rate.filter(|_| !reported_failure_rate);
                let slow_call_rate = slow_call_rate.filter(|_| !reported_slow_rate);
                m.phase = Phase::MetricsOnly {
                    reported_failure_rate: reported_failure_rate || failure_rate.is_some(),
                    reported_slow_rate: reported_slow_rate || slow_call_rate.is_some(),
                };
                pending.push_exceeded(failure_rate, slow_call_rate);
            }
            _ => {}
        }
    }

    /// Enters `to` (a legal transition), building its state object. Leaving a state cancels its
    /// timer, since it names the old state id.
    fn enter(
        &self,
        m: &mut Machine,
        to: State,
        now: Timestamp,
        cause: TransitionCause,
        pending: &mut Pending,
    ) {
        let from = m.state();
        debug_assert!(from.can_transition_to(to));
        if cause != TransitionCause::Hint {
            m.history = true;
        }
        if let Some(timer) = m.phase.take_timer() {
            self.env.scheduler().cancel(timer);
        }
        m.id = m.id.next();
        let config = &self.config;
        let closed_window = self.view.closed_window.as_ref();
        m.phase = match to {
            State::Closed => {
                m.attempts = 0;
                m.metrics = StateMetrics::closed(config, now, closed_window, m.id);
                Phase::Closed
            }
            State::MetricsOnly => {
                m.attempts = 0;
                m.metrics = StateMetrics::closed(config, now, closed_window, m.id);
                Phase::MetricsOnly {
                    reported_failure_rate: false,
                    reported_slow_rate: false,
                }
            }
            State::Open => {
                // OPEN keeps the metrics (and the not-permitted count) of the state it came from,
                // and waits as long as its attempt's interval says.
                m.attempts = m.attempts.saturating_add(1);
                let interval = config.wait_interval();
                let uniform = if interval.is_fixed() {
                    0.0
                } else {
                    m.uniform()
                };
                let wait = interval.wait(m.attempts, uniform);
                let retry_after = now.saturating_add(wait);
                self.view
                    .retry_after
                    .store(retry_after.unix_nanos(), Ordering::Release);
                let timer = config
                    .automatic_transition_from_open_to_half_open_enabled()
                    .then(|| self.set_timer(retry_after, m.id));
                Phase::Open { timer }
            }
            State::HalfOpen => {
                m.metrics = StateMetrics::half_open(config);
                let max_wait = config.max_wait_duration_in_half_open_state();
                let timer = (!max_wait.is_zero()).then(|| {
                    let due = now.saturating_add(max_wait);
                    self.set_timer(due, m.id)
                });
                Phase::HalfOpen {
                    trials_left: config.permitted_number_of_calls_in_half_open_state(),
                    timer,
                }
            }
            State::Disabled => {
                m.attempts = 0;
                m.metrics = StateMetrics::empty(config);
                Phase::Disabled
            }
            State::ForcedOpen => {
                m.attempts = m.attempts.saturating_add(1);
                m.metrics = StateMetrics::empty(config);
                Phase::ForcedOpen
            }
        };
        if to == State::Open {
            let window = m
                .metrics
                .closed_window_state()
                .map_or(NO_WINDOW, StateId::get);
            self.view.open_window.store(window, Ordering::Relaxed);
            self.view.open_metrics.store(&m.snapshot(now, 0));
        } else {
            self.view.not_permitted.store(0, Ordering::Relaxed);
        }
        self.view.tag.store(m.tag());
        if from != to {
            pending.push_with_cause(EventKind::StateTransition { from, to }, Some(cause));
        }
    }

    /// CLOSED state `state` saw a call reach a threshold without the lock: if it is still the
    /// current state, decide again under the lock (on the window as it is now) and open.
    /// `call` is that call's event, if anyone listens: published first, and alone if another
    /// call decided first.
    #[cold]
    pub(super) fn trip(
        &self,
        state: StateId,
        now: Timestamp,
        call: Option<EventKind>,
        error: Option<&ErrorText>,
    ) {
        self.step(now, |m, pending| {
            if let Some(kind) = call {
                pending.push_call(kind, error);
            }
            // Unless another call decided first.
            if m.id == state && m.phase == Phase::Closed {
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.verdict(now)
                {
                    pending.push_exceeded(failure_rate, slow_call_rate);
                    self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
                }
            }
        });
    }

    /// A manual transition.
    pub(crate) fn transition(&self, to: State) -> Result<(), IllegalTransition> {
        let now = self.clock.now();
        self.step(now, |m, pending| {
            let from = m.state();
            if !from.can_transition_to(to) {
                return Err(IllegalTransition::new(self.display_name(), from, to));
            }
            self.enter(m, to, now, TransitionCause::Manual, pending);
            Ok(())
        })
    }

    /// Back to a fresh CLOSED state from any state.
    pub(crate) fn reset(&self) {
        let now = self.clock.now();
        self.step(now, |m, pending| {
            self.enter(m, State::Closed, now, TransitionCause::Reset, pending);
            pending.push(EventKind::Reset);
        });
    }

    /// Opens a CLOSED breaker that has no local history (an advisory hint from another
    /// process). Returns whether it opened. Local evidence always wins: a breaker with any
    /// recorded call, or in any other state, is left alone.
    pub(crate) fn open_from_hint(&self) -> bool {
        let now = self.clock.now();
        self.step(now, |m, pending| {
            if m.history
                || self
                    .view
                    .closed_window
                    .as_ref()
                    .is_some_and(|w| w.has_recorded())
                || m.phase != Phase::Closed
                || m.metrics.totals(now).calls != 0
            {
                return false;
            }
            self.enter(m, State::Open, now, TransitionCause::Hint, pending);
            true
        })
    }

    /// A timer of state `state` fell due: unless that state was left in the meantime, the
    /// transition it stands for. A state sets at most one timer, so its phase says which it
    /// is (OPEN's wait, HALF_OPEN's max wait).
    fn timer_fired(&self, state: StateId) {
        let now = self.clock.now();
        self.step(now, |m, pending| {
            if m.id != state {
                return; // that state was left in the instant the timer fired
            }
            m.phase.take_timer(); // fired: no longer in the queue
            match m.phase {
                Phase::Open { .. } => {
                    let cause = TransitionCause::WaitElapsed;
                    self.enter(m, State::HalfOpen, now, cause, pending);
                }
                Phase::HalfOpen { .. } => {
                    let to = self.config.transition_to_state_after_wait_duration();
                    let cause = TransitionCause::HalfOpenMaxWait;
                    self.enter(m, to, now, cause, pending);
                }
                _ => {}
            }
        });
    }

    /// Sets a timer of state `state`, due at `due`, that comes back to this breaker.
    fn set_timer(&self, due: Timestamp, state: StateId) -> TimerKey {
        let target = self.this.clone();
        self.env.scheduler().schedule(due, target, state.get())
    }
}

// The breaker as the scheduler's timer target: its token is the id of the state that set the
// timer, carried by the scheduler as a number.
impl TimerTarget for BreakerCore {
    fn on_timer(&self, state_id: u64) {
        self.timer_fired(StateId::from_raw(state_id));
    }
}
