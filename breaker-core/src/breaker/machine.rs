//! The state machine, under the breaker's lock: Resilience4j's `CircuitBreakerStateMachine`.
//!
//! Every step takes the lock, changes the state object, gathers its events in a [`Pending`],
//! releases the lock and only then publishes. [`Shared::enter`] is the one place a state is
//! entered: it builds the new state object, sets its timers, and stores the new [`StateTag`]
//! last, so a lock-free reader that sees the tag sees the state it names.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::breaker::publish::Pending;
use crate::breaker::shared::{Machine, Phase, Shared};
use crate::call::permit::Permit;
use crate::classify::Outcome;
use crate::error::{CallNotPermitted, IllegalTransition};
use crate::event::{EventKind, TransitionCause};
use crate::state::State;
use crate::time::scheduler::TimerTarget;
use crate::time::timestamp::Timestamp;
use crate::window::{StateMetrics, Verdict};

impl Shared {
    /// A permit where the lock-free paths could not decide: HALF_OPEN's trials, FORCED_OPEN,
    /// and OPEN at the end of its wait (which moves to HALF_OPEN and takes the first trial).
    #[cold]
    pub(crate) fn acquire_slow(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let now = self.clock.now();
        let mut pending = Pending::new();
        let granted = {
            let mut m = self.lock();
            let granted = match m.phase {
                Phase::Closed | Phase::Disabled | Phase::MetricsOnly { .. } => Ok(m.id),
                Phase::Open if now.unix_nanos() > self.retry_after.load(Ordering::Acquire) => {
                    let cause = TransitionCause::WaitElapsed;
                    self.enter(&mut m, State::HalfOpen, now, cause, &mut pending);
                    self.try_trial(&mut m, &mut pending)
                }
                Phase::HalfOpen { .. } => self.try_trial(&mut m, &mut pending),
                Phase::Open => {
                    self.not_permitted.fetch_add(1, Ordering::Relaxed);
                    self.push_call_event(&mut pending, EventKind::NotPermitted);
                    Err(State::Open)
                }
                Phase::ForcedOpen => {
                    self.not_permitted.fetch_add(1, Ordering::Relaxed);
                    Err(State::ForcedOpen)
                }
            };
            pending.seal(&mut m, now, &self.not_permitted);
            granted
        };
        self.publish(&pending, now);
        match granted {
            Ok(id) => Ok(Permit::new(self, id, now)),
            Err(state) => {
                let remaining = self.retry_after.load(Ordering::Acquire);
                Err(self.not_permitted_error(state, remaining.saturating_sub(now.unix_nanos())))
            }
        }
    }

    /// HALF_OPEN: one of the trial permits, or a rejection when all are out.
    fn try_trial(&self, m: &mut Machine, pending: &mut Pending) -> Result<u64, State> {
        if let Phase::HalfOpen { trials_left } = &mut m.phase {
            if *trials_left > 0 {
                *trials_left -= 1;
                return Ok(m.id);
            }
        }
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.push_call_event(pending, EventKind::NotPermitted);
        Err(State::HalfOpen)
    }

    /// Completes a permit under the lock: any state, any window, with listeners. `position`
    /// is a ring position of the lock-free window that the call already took.
    #[inline(never)]
    pub(crate) fn complete_locked(
        &self,
        permit_id: u64,
        outcome: Outcome,
        elapsed_nanos: u64,
        now: Timestamp,
        position: Option<u32>,
    ) {
        let failed = outcome == Outcome::Failure;
        if outcome != Outcome::Ignored {
            self.note_history();
        }
        let mut m = self.lock();
        if m.phase == Phase::Closed && outcome != Outcome::Ignored && !self.wants_call_events() {
            // The common case: a CLOSED call, nobody listening. Nothing to publish unless the
            // call trips the breaker.
            if let Verdict::Exceeded {
                failure_rate,
                slow_call_rate,
            } = m.metrics.record_at(failed, elapsed_nanos, now, position)
            {
                let mut pending = Pending::new();
                self.push_exceeded(&mut pending, failure_rate, slow_call_rate);
                let cause = TransitionCause::Evaluation;
                self.enter(&mut m, State::Open, now, cause, &mut pending);
                pending.seal(&mut m, now, &self.not_permitted);
                drop(m);
                self.publish(&pending, now);
            }
            return;
        }
        let elapsed = Duration::from_nanos(elapsed_nanos);
        let mut pending = Pending::new();
        {
            let quiet = matches!(m.phase, Phase::Disabled | Phase::ForcedOpen);
            match outcome {
                Outcome::Ignored => {
                    self.give_back(&mut m, permit_id);
                    if !quiet {
                        self.push_call_event(&mut pending, EventKind::IgnoredError { elapsed });
                    }
                }
                Outcome::Success | Outcome::Failure => {
                    if !quiet {
                        self.push_call_event(
                            &mut pending,
                            if failed {
                                EventKind::Error { elapsed }
                            } else {
                                EventKind::Success { elapsed }
                            },
                        );
                    }
                    let call = (failed, elapsed_nanos, position);
                    self.record(&mut m, call, now, &mut pending);
                }
            }
            pending.seal(&mut m, now, &self.not_permitted);
        }
        drop(m);
        self.publish(&pending, now);
    }

    /// Gives a trial permit back to the HALF_OPEN state that granted it (and to no other).
    pub(crate) fn give_back(&self, m: &mut Machine, permit_id: u64) {
        if let Phase::HalfOpen { trials_left } = &mut m.phase {
            if m.id == permit_id {
                *trials_left += 1;
            }
        }
    }

    /// Records `(failed, elapsed nanoseconds, ring position taken)` in the current state.
    fn record(
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
                self.push_exceeded(pending, failure_rate, slow_call_rate);
                self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
            }
            (Phase::HalfOpen { .. }, Verdict::BelowThresholds) => {
                self.enter(m, State::Closed, now, TransitionCause::Evaluation, pending);
            }
            (Phase::Open, _) => self.open_view.store(&m.snapshot(now, 0)),
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
                self.push_exceeded(pending, failure_rate, slow_call_rate);
            }
            _ => {}
        }
    }

    /// Enters `to` (a legal transition), building its state object. Leaving a state cancels its
    /// timers, since they name the old state id.
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
            self.note_history();
        }
        if let Some(timer) = m.timer.take() {
            self.env.scheduler.cancel(timer);
        }
        m.id += 1;
        let config = &self.config;
        m.phase = match to {
            State::Closed => {
                m.attempts = 0;
                m.metrics = StateMetrics::closed(config, now, self.fast.as_ref(), m.id);
                Phase::Closed
            }
            State::MetricsOnly => {
                m.attempts = 0;
                m.metrics = StateMetrics::closed(config, now, self.fast.as_ref(), m.id);
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
                self.retry_after
                    .store(retry_after.unix_nanos(), Ordering::Release);
                if config.automatic_transition_from_open_to_half_open_enabled() {
                    m.timer = Some(self.env.scheduler.schedule(
                        retry_after,
                        self.this.clone(),
                        m.id,
                    ));
                }
                Phase::Open
            }
            State::HalfOpen => {
                m.metrics = StateMetrics::half_open(config);
                let max_wait = config.max_wait_duration_in_half_open_state();
                if !max_wait.is_zero() {
                    m.timer = Some(self.env.scheduler.schedule(
                        now.saturating_add(max_wait),
                        self.this.clone(),
                        m.id,
                    ));
                }
                Phase::HalfOpen {
                    trials_left: config.permitted_number_of_calls_in_half_open_state(),
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
            self.open_view.store(&m.snapshot(now, 0));
        } else {
            self.not_permitted.store(0, Ordering::Relaxed);
        }
        self.tag.store(m.tag());
        if from != to {
            pending.push_with_cause(EventKind::StateTransition { from, to }, Some(cause));
        }
    }

    /// CLOSED state `epoch` saw a call reach a threshold without the lock: if it is still the
    /// current state, decide again under the lock (on the window as it is now) and open.
    /// `call` is that call's event, if anyone listens: published first, and alone if another
    /// call decided first.
    #[cold]
    pub(crate) fn trip(&self, epoch: u64, now: Timestamp, call: Option<EventKind>) {
        let mut pending = Pending::new();
        if let Some(kind) = call {
            pending.push(kind);
        }
        {
            let mut m = self.lock();
            // Unless another call decided first.
            if m.id == epoch && m.phase == Phase::Closed {
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.verdict(now)
                {
                    self.push_exceeded(&mut pending, failure_rate, slow_call_rate);
                    let cause = TransitionCause::Evaluation;
                    self.enter(&mut m, State::Open, now, cause, &mut pending);
                }
            }
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
    }

    /// A call recorded without the lock while the breaker left CLOSED `epoch`: if OPEN carries
    /// that window on, its lock-free view must show the call.
    #[cold]
    pub(crate) fn refresh_open_view(&self, epoch: u64, now: Timestamp) {
        let mut m = self.lock();
        if m.phase == Phase::Open && m.metrics.is_closed_window(epoch) {
            let snapshot = m.snapshot(now, 0);
            self.open_view.store(&snapshot);
        }
    }

    /// A manual transition.
    pub(crate) fn transition(&self, to: State) -> Result<(), IllegalTransition> {
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            let from = m.state();
            if !from.can_transition_to(to) {
                return Err(IllegalTransition::new(self.shared_name(), from, to));
            }
            self.enter(&mut m, to, now, TransitionCause::Manual, &mut pending);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
        Ok(())
    }

    /// Back to a fresh CLOSED state from any state.
    pub(crate) fn reset(&self) {
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            let cause = TransitionCause::Reset;
            self.enter(&mut m, State::Closed, now, cause, &mut pending);
            pending.push(EventKind::Reset);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
    }

    /// Opens a CLOSED breaker that has no local history (an advisory hint from another
    /// process). Returns whether it opened. Local evidence always wins: a breaker with any
    /// recorded call, or in any other state, is left alone.
    pub(crate) fn open_from_hint(&self) -> bool {
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if self.history.load(Ordering::Relaxed)
                || self.fast.as_ref().is_some_and(|w| w.has_recorded())
                || m.phase != Phase::Closed
                || m.metrics.totals(now).calls != 0
            {
                return false;
            }
            let cause = TransitionCause::Hint;
            self.enter(&mut m, State::Open, now, cause, &mut pending);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
        true
    }
}

/// A breaker's timer token is the id of the state that set the timer; a state sets at most
/// one, so the state says which it is (OPEN's wait, HALF_OPEN's max wait).
impl TimerTarget for Shared {
    fn on_timer(&self, state_id: u64) {
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if m.id != state_id {
                return; // that state was left in the instant the timer fired
            }
            m.timer = None; // fired: no longer in the queue
            match m.phase {
                Phase::Open => {
                    let cause = TransitionCause::WaitElapsed;
                    self.enter(&mut m, State::HalfOpen, now, cause, &mut pending);
                }
                Phase::HalfOpen { .. } => {
                    let to = self.config.transition_to_state_after_wait_duration();
                    let cause = TransitionCause::HalfOpenMaxWait;
                    self.enter(&mut m, to, now, cause, &mut pending);
                }
                _ => return,
            }
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
    }
}
