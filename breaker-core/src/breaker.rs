//! The circuit breaker: Resilience4j's state machine, with permits as values.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::clock::{Clock, Timestamp};
use crate::config::Config;
use crate::error::{CallNotPermitted, IllegalTransition};
use crate::event::{Event, EventKind, Listeners, Subscription, TransitionCause};
use crate::permit::{Outcome, Permit};
use crate::scheduler::{Scheduler, TimerAction};
use crate::state::State;
use crate::sync::{AtomicU64, Mutex, MutexGuard};
use crate::window::{StateMetrics, Verdict};

/// What a breaker shares with the other breakers of its registry.
#[derive(Debug)]
pub(crate) struct Env {
    pub(crate) clock: Clock,
    pub(crate) scheduler: Scheduler,
    pub(crate) listeners: Arc<Listeners>,
}

impl Env {
    pub(crate) fn new(clock: Clock) -> Arc<Env> {
        Arc::new(Env {
            scheduler: Scheduler::new(clock.clone()),
            clock,
            listeners: Arc::default(),
        })
    }
}

/// A circuit breaker. Cloning gives another handle to the same breaker.
///
/// Calls go through [`call`](CircuitBreaker::call), [`call_sync`](CircuitBreaker::call_sync),
/// or, one level lower, [`try_acquire`](CircuitBreaker::try_acquire), which hands out a
/// [`Permit`] to complete with the call's outcome.
///
/// The semantics are Resilience4j 2.x's `CircuitBreakerStateMachine`, with three deliberate
/// differences, all about stale work never acting on a later state:
/// - a [`reset`](CircuitBreaker::reset) cancels the pending OPEN and HALF_OPEN timers, as every
///   other transition does;
/// - a result arriving in a state whose window has size 0 (an OPEN state entered from
///   FORCED_OPEN or DISABLED) is dropped instead of failing the caller;
/// - a permit that is released, or ends in an ignored error, gives a trial permit back to
///   HALF_OPEN only if that same HALF_OPEN state granted it, so the trial cap holds even when
///   calls that started in CLOSED finish during HALF_OPEN.
#[derive(Clone)]
pub struct CircuitBreaker {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    name: &'static str,
    config: Config,
    env: Arc<Env>,
    /// `state_id << 3 | state code`: the current state, readable without the lock.
    tag: AtomicU64,
    /// OPEN: calls are let through once the clock is strictly after this (Unix nanoseconds).
    /// Written before `tag` when OPEN is entered, so a reader that sees OPEN in `tag` sees it.
    retry_after: AtomicU64,
    /// The not-permitted count of the current state's metrics object: reset when a state gets a
    /// new object, carried on when OPEN inherits the previous one.
    not_permitted: AtomicU64,
    /// OPEN's window figures, kept up to date under the lock, so that a rejection made without
    /// the lock can still publish an event carrying the metrics.
    open_view: OpenView,
    machine: Mutex<Machine>,
    listeners: Arc<Listeners>,
    this: Weak<Shared>,
}

/// The current state object. Every transition makes a new one (a new `id`), as Resilience4j
/// builds a new state object; timers and permits remember the id they belong to.
struct Machine {
    state: State,
    id: u64,
    metrics: StateMetrics,
    /// HALF_OPEN: trial permits left.
    trials_left: u32,
    /// Whether this breaker has any evidence of its own: a recorded call, or a transition that
    /// no hint caused. A hint may open only a breaker without it (seed 000's addendum).
    has_history: bool,
    /// METRICS_ONLY: which "rate exceeded" events were published already.
    reported_failure_rate: bool,
    reported_slow_rate: bool,
}

/// OPEN's metrics in atomics: written under the lock, read by the lock-free rejection path.
/// (Each word is consistent in itself; a reader racing a late result may mix two snapshots,
/// which an event about a rejection can afford.)
#[derive(Default)]
struct OpenView {
    /// Failure rate and slow-call rate as `f32` bits (`u32::MAX`: no rate).
    rates: AtomicU64,
    /// Buffered and failed calls.
    calls: AtomicU64,
    /// Slow calls and slow failed calls.
    slow: AtomicU64,
}

impl OpenView {
    fn store(&self, m: &Metrics) {
        let bits = |r: Option<f32>| u64::from(r.map_or(u32::MAX, f32::to_bits));
        let pair = |a: u32, b: u32| u64::from(a) << 32 | u64::from(b);
        self.rates.store(
            bits(m.failure_rate) << 32 | bits(m.slow_call_rate),
            Ordering::Relaxed,
        );
        self.calls
            .store(pair(m.buffered_calls, m.failed_calls), Ordering::Relaxed);
        self.slow
            .store(pair(m.slow_calls, m.slow_failed_calls), Ordering::Relaxed);
    }

    fn load(&self, not_permitted: u64) -> Metrics {
        let rate = |b: u64| {
            let b = b as u32;
            (b != u32::MAX).then(|| f32::from_bits(b))
        };
        let (rates, calls, slow) = (
            self.rates.load(Ordering::Relaxed),
            self.calls.load(Ordering::Relaxed),
            self.slow.load(Ordering::Relaxed),
        );
        let (buffered, failed) = ((calls >> 32) as u32, calls as u32);
        let (slow_calls, slow_failed) = ((slow >> 32) as u32, slow as u32);
        Metrics {
            state: State::Open,
            failure_rate: rate(rates >> 32),
            slow_call_rate: rate(rates),
            buffered_calls: buffered,
            failed_calls: failed,
            successful_calls: buffered.saturating_sub(failed),
            slow_calls,
            slow_successful_calls: slow_calls.saturating_sub(slow_failed),
            slow_failed_calls: slow_failed,
            not_permitted_calls: not_permitted,
        }
    }
}

/// Events gathered under the lock and published after it is released.
struct Pending {
    events: [Option<(EventKind, Option<TransitionCause>)>; 6],
    len: usize,
    /// The metrics after the operation, taken under the lock when there is anything to publish.
    metrics: Option<Metrics>,
}

impl Pending {
    fn new() -> Pending {
        Pending {
            events: [None; 6],
            len: 0,
            metrics: None,
        }
    }

    fn push(&mut self, kind: EventKind) {
        self.push_with_cause(kind, None);
    }

    fn push_with_cause(&mut self, kind: EventKind, cause: Option<TransitionCause>) {
        if let Some(slot) = self.events.get_mut(self.len) {
            *slot = Some((kind, cause));
            self.len += 1;
        }
    }

    /// Takes the metrics snapshot the events will carry, if there are events.
    fn seal(&mut self, m: &mut Machine, now: Timestamp, not_permitted: &AtomicU64) {
        if self.len > 0 {
            self.metrics = Some(m.snapshot(now, not_permitted.load(Ordering::Relaxed)));
        }
    }
}

impl Machine {
    fn snapshot(&mut self, now: Timestamp, not_permitted: u64) -> Metrics {
        let totals = self.metrics.totals(now);
        let (failure_rate, slow_call_rate) = self.metrics.rates(&totals);
        Metrics {
            state: self.state,
            failure_rate,
            slow_call_rate,
            buffered_calls: totals.calls,
            failed_calls: totals.failed,
            successful_calls: totals.calls - totals.failed,
            slow_calls: totals.slow,
            slow_successful_calls: totals.slow - totals.slow_failed,
            slow_failed_calls: totals.slow_failed,
            not_permitted_calls: not_permitted,
        }
    }
}

/// A point-in-time view of a breaker's metrics: those of its current state, as Resilience4j's
/// `getMetrics()` reports them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Metrics {
    /// The state.
    pub state: State,
    /// Failed calls in percent of buffered calls; `None` below the minimum number of calls.
    pub failure_rate: Option<f32>,
    /// Slow calls in percent of buffered calls; `None` below the minimum number of calls.
    pub slow_call_rate: Option<f32>,
    /// Calls in the window (successes and failures; ignored calls never count).
    pub buffered_calls: u32,
    /// Failed calls in the window (slow or not).
    pub failed_calls: u32,
    /// Successful calls in the window (slow or not).
    pub successful_calls: u32,
    /// Slow calls in the window (successes and failures).
    pub slow_calls: u32,
    /// Slow successful calls in the window.
    pub slow_successful_calls: u32,
    /// Slow failed calls in the window.
    pub slow_failed_calls: u32,
    /// Calls rejected since this state's metrics began (OPEN continues the count of the state
    /// it came from).
    pub not_permitted_calls: u64,
}

impl CircuitBreaker {
    /// A breaker of its own, outside any registry, on the system clock. Its timers run on one
    /// scheduler shared by all such breakers.
    pub fn new(name: &str, config: Config) -> CircuitBreaker {
        static STANDALONE: once_cell::sync::Lazy<Arc<Env>> =
            once_cell::sync::Lazy::new(|| Env::new(Clock::system()));
        CircuitBreaker::with_env(name, config, Arc::clone(&STANDALONE))
    }

    pub(crate) fn with_env(name: &str, config: Config, env: Arc<Env>) -> CircuitBreaker {
        let now = env.clock.now();
        let machine = Machine {
            state: State::Closed,
            id: 0,
            metrics: StateMetrics::closed(&config, now),
            trials_left: 0,
            has_history: false,
            reported_failure_rate: false,
            reported_slow_rate: false,
        };
        let shared = Arc::new_cyclic(|this| Shared {
            name: crate::name::intern(name),
            config,
            env,
            tag: AtomicU64::new(State::Closed.code()),
            retry_after: AtomicU64::new(0),
            not_permitted: AtomicU64::new(0),
            open_view: OpenView::default(),
            machine: Mutex::new(machine),
            listeners: Arc::default(),
            this: this.clone(),
        });
        CircuitBreaker { shared }
    }

    /// The breaker's name.
    pub fn name(&self) -> &'static str {
        self.shared.name
    }

    /// The breaker's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &Clock {
        &self.shared.env.clock
    }

    /// The current state. Reading it never moves the breaker: an OPEN breaker whose wait is
    /// over stays OPEN until a call asks for a permit (or its timer fires, with automatic
    /// transition enabled).
    #[inline]
    pub fn state(&self) -> State {
        State::from_code(self.shared.tag.load(Ordering::Acquire) & 7)
    }

    /// The metrics of the current state.
    pub fn metrics(&self) -> Metrics {
        let now = self.shared.env.clock.now();
        let mut m = self.shared.lock();
        m.snapshot(now, self.shared.not_permitted.load(Ordering::Relaxed))
    }

    /// Asks for permission to make one call.
    ///
    /// CLOSED, DISABLED and METRICS_ONLY always permit. OPEN rejects until the clock is strictly
    /// past the end of its wait; the first request after that moves it to HALF_OPEN and is the
    /// first trial. HALF_OPEN permits up to `permitted-number-of-calls-in-half-open-state`
    /// calls. FORCED_OPEN rejects. A rejection is counted and published; it never blocks.
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let shared = &*self.shared;
        let tag = shared.tag.load(Ordering::Acquire);
        let state = State::from_code(tag & 7);
        if state.permits_all() {
            return Ok(Permit::new(shared, tag >> 3, shared.env.clock.now()));
        }
        if state == State::Open {
            let now = shared.env.clock.now();
            if now.unix_nanos() <= shared.retry_after.load(Ordering::Acquire) {
                // Still waiting: reject without the lock.
                shared.not_permitted.fetch_add(1, Ordering::Relaxed);
                if shared.wants_call_events() {
                    shared.publish_rejection(now);
                }
                return Err(shared.not_permitted_error(State::Open));
            }
        }
        shared.acquire_slow()
    }

    /// Moves the breaker to `to` by hand. Illegal transitions (CLOSED -> HALF_OPEN,
    /// METRICS_ONLY -> OPEN or HALF_OPEN) leave the state unchanged and return an error. A
    /// transition to the current state builds a fresh state (a new window, a new wait) and
    /// publishes no event.
    pub fn transition_to(&self, to: State) -> Result<(), IllegalTransition> {
        self.shared.transition(to)
    }

    /// Moves to CLOSED with a fresh window.
    pub fn transition_to_closed_state(&self) {
        let _always_legal = self.shared.transition(State::Closed);
    }

    /// Moves to OPEN, starting a new wait and keeping the current window.
    pub fn transition_to_open_state(&self) -> Result<(), IllegalTransition> {
        self.shared.transition(State::Open)
    }

    /// Moves to HALF_OPEN with fresh trial permits.
    pub fn transition_to_half_open_state(&self) -> Result<(), IllegalTransition> {
        self.shared.transition(State::HalfOpen)
    }

    /// Moves to DISABLED: every call passes, nothing is recorded.
    pub fn transition_to_disabled_state(&self) {
        let _always_legal = self.shared.transition(State::Disabled);
    }

    /// Moves to FORCED_OPEN: every call is rejected until a manual transition.
    pub fn transition_to_forced_open_state(&self) {
        let _always_legal = self.shared.transition(State::ForcedOpen);
    }

    /// Moves to METRICS_ONLY: calls are measured but the breaker never opens.
    pub fn transition_to_metrics_only_state(&self) {
        let _always_legal = self.shared.transition(State::MetricsOnly);
    }

    /// Back to a fresh CLOSED state, from any state, cancelling every pending timer.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Calls `listener` for every event of this breaker until the [`Subscription`] is dropped.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.shared.listeners.add(Arc::new(listener))
    }

    /// Opens the breaker on another process's advisory hint, only if it is CLOSED and has no
    /// local history at all, as seed 000's addendum requires; returns whether it opened. Local
    /// history is any call this breaker recorded (success or failure, even one that has since
    /// left the window) and any transition a hint did not cause, so a breaker that recovered
    /// through its own half-open trials (and so has an empty, fresh window) is never re-opened
    /// by a stale hint. The transition's cause is
    /// [`TransitionCause::Hint`], so it is never mistaken for local evidence.
    pub fn open_from_hint(&self) -> bool {
        self.shared.open_from_hint()
    }

    /// Whether two handles are the same breaker.
    pub fn ptr_eq(&self, other: &CircuitBreaker) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

// A panic anywhere (in a protected call, a listener, a fallback) cannot leave a breaker broken:
// no user code runs while its lock is held, listeners' panics are caught, and a panicking call
// records a failure before the panic goes on. So a breaker is safe to use across unwinding.
impl std::panic::UnwindSafe for CircuitBreaker {}
impl std::panic::RefUnwindSafe for CircuitBreaker {}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name())
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Machine> {
        // Nothing that can panic runs under this lock, so poisoning cannot hide a broken state.
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.env.clock
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    fn wants_call_events(&self) -> bool {
        !self.listeners.is_empty() || !self.env.listeners.is_empty()
    }

    #[cold]
    fn acquire_slow(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let now = self.env.clock.now();
        let mut pending = Pending::new();
        let granted = {
            let mut m = self.lock();
            let granted = match m.state {
                s if s.permits_all() => Ok(m.id),
                State::Open if now.unix_nanos() > self.retry_after.load(Ordering::Acquire) => {
                    let cause = TransitionCause::WaitElapsed;
                    self.enter(&mut m, State::HalfOpen, now, cause, &mut pending);
                    self.try_trial(&mut m, &mut pending)
                }
                State::HalfOpen => self.try_trial(&mut m, &mut pending),
                state => {
                    self.not_permitted.fetch_add(1, Ordering::Relaxed);
                    if state == State::Open {
                        self.push_call_event(&mut pending, EventKind::NotPermitted);
                    }
                    Err(state)
                }
            };
            pending.seal(&mut m, now, &self.not_permitted);
            granted
        };
        self.publish(&pending, now);
        match granted {
            Ok(id) => Ok(Permit::new(self, id, now)),
            Err(state) => Err(self.not_permitted_error(state)),
        }
    }

    /// The error for a rejected call (and its rate-limited log line).
    #[inline]
    fn not_permitted_error(&self, state: State) -> CallNotPermitted {
        crate::reject_log::not_permitted(self, state);
        CallNotPermitted::new(self.name, state)
    }

    /// Publishes a rejection made on the lock-free OPEN path.
    #[cold]
    fn publish_rejection(&self, now: Timestamp) {
        let mut pending = Pending::new();
        pending.push(EventKind::NotPermitted);
        pending.metrics = Some(
            self.open_view
                .load(self.not_permitted.load(Ordering::Relaxed)),
        );
        self.publish(&pending, now);
    }

    fn try_trial(&self, m: &mut Machine, pending: &mut Pending) -> Result<u64, State> {
        if m.trials_left > 0 {
            m.trials_left -= 1;
            Ok(m.id)
        } else {
            self.not_permitted.fetch_add(1, Ordering::Relaxed);
            self.push_call_event(pending, EventKind::NotPermitted);
            Err(State::HalfOpen)
        }
    }

    /// Completes a permit granted by state `permit_id`.
    pub(crate) fn complete(
        &self,
        permit_id: u64,
        outcome: Outcome,
        elapsed_nanos: u64,
        now: Timestamp,
    ) {
        let failed = outcome == Outcome::Failure;
        let mut m = self.lock();
        if outcome != Outcome::Ignored {
            m.has_history = true;
        }
        if m.state == State::Closed && outcome != Outcome::Ignored && !self.wants_call_events() {
            // The common case: a CLOSED call, nobody listening. Nothing to publish unless the
            // call trips the breaker.
            if let Verdict::Exceeded {
                failure_rate,
                slow_call_rate,
            } = m.metrics.record(failed, elapsed_nanos, now)
            {
                let mut pending = Pending::new();
                self.push_exceeded(&mut pending, failure_rate, slow_call_rate);
                self.enter(
                    &mut m,
                    State::Open,
                    now,
                    TransitionCause::Evaluation,
                    &mut pending,
                );
                pending.seal(&mut m, now, &self.not_permitted);
                drop(m);
                self.publish(&pending, now);
            }
            return;
        }
        let elapsed = Duration::from_nanos(elapsed_nanos);
        let mut pending = Pending::new();
        {
            let quiet = matches!(m.state, State::Disabled | State::ForcedOpen);
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
                    self.record(&mut m, failed, elapsed_nanos, now, &mut pending);
                }
            }
            pending.seal(&mut m, now, &self.not_permitted);
        }
        drop(m);
        self.publish(&pending, now);
    }

    /// Returns a permit without recording anything (a cancelled call).
    pub(crate) fn release(&self, permit_id: u64) {
        // Only a HALF_OPEN state takes permits back, and only its own: skip the lock otherwise.
        let tag = self.tag.load(Ordering::Acquire);
        if tag == (permit_id << 3 | State::HalfOpen.code()) {
            let mut m = self.lock();
            self.give_back(&mut m, permit_id);
        }
    }

    fn give_back(&self, m: &mut Machine, permit_id: u64) {
        if m.state == State::HalfOpen && m.id == permit_id {
            m.trials_left += 1;
        }
    }

    fn record(
        &self,
        m: &mut Machine,
        failed: bool,
        elapsed: u64,
        now: Timestamp,
        pending: &mut Pending,
    ) {
        match m.state {
            State::Closed => {
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.record(failed, elapsed, now)
                {
                    self.push_exceeded(pending, failure_rate, slow_call_rate);
                    self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
                }
            }
            State::Open => {
                m.metrics.record(failed, elapsed, now);
                self.open_view.store(&m.snapshot(now, 0));
            }
            State::HalfOpen => match m.metrics.record(failed, elapsed, now) {
                Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } => {
                    self.push_exceeded(pending, failure_rate, slow_call_rate);
                    self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
                }
                Verdict::BelowThresholds => {
                    self.enter(m, State::Closed, now, TransitionCause::Evaluation, pending)
                }
                Verdict::BelowMinimumCalls | Verdict::Unchanged => {}
            },
            State::MetricsOnly => {
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.record(failed, elapsed, now)
                {
                    let failure_rate = failure_rate.filter(|_| !m.reported_failure_rate);
                    let slow_call_rate = slow_call_rate.filter(|_| !m.reported_slow_rate);
                    m.reported_failure_rate |= failure_rate.is_some();
                    m.reported_slow_rate |= slow_call_rate.is_some();
                    self.push_exceeded(pending, failure_rate, slow_call_rate);
                }
            }
            State::Disabled | State::ForcedOpen => {}
        }
    }

    fn push_exceeded(&self, pending: &mut Pending, failure: Option<f32>, slow: Option<f32>) {
        if let Some(rate) = failure {
            pending.push(EventKind::FailureRateExceeded { rate });
        }
        if let Some(rate) = slow {
            pending.push(EventKind::SlowCallRateExceeded { rate });
        }
    }

    #[inline]
    fn push_call_event(&self, pending: &mut Pending, kind: EventKind) {
        if self.wants_call_events() {
            pending.push(kind);
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
        let from = m.state;
        debug_assert!(from.can_transition_to(to));
        m.has_history |= cause != TransitionCause::Hint;
        m.id += 1;
        m.state = to;
        let config = &self.config;
        match to {
            State::Closed => m.metrics = StateMetrics::closed(config, now),
            State::MetricsOnly => {
                m.metrics = StateMetrics::closed(config, now);
                m.reported_failure_rate = false;
                m.reported_slow_rate = false;
            }
            State::Open => {
                // OPEN keeps the metrics (and the not-permitted count) of the state it came from.
                let wait = config.wait_duration_in_open_state();
                let retry_after = now.saturating_add(wait);
                self.retry_after
                    .store(retry_after.unix_nanos(), Ordering::Release);
                if config.automatic_transition_from_open_to_half_open_enabled() {
                    self.env.scheduler.schedule(
                        retry_after,
                        self.this.clone(),
                        m.id,
                        TimerAction::OpenToHalfOpen,
                    );
                }
            }
            State::HalfOpen => {
                m.metrics = StateMetrics::half_open(config);
                m.trials_left = config.permitted_number_of_calls_in_half_open_state();
                let max_wait = config.max_wait_duration_in_half_open_state();
                if !max_wait.is_zero() {
                    self.env.scheduler.schedule(
                        now.saturating_add(max_wait),
                        self.this.clone(),
                        m.id,
                        TimerAction::HalfOpenMaxWait,
                    );
                }
            }
            State::Disabled | State::ForcedOpen => m.metrics = StateMetrics::empty(config),
        }
        if to == State::Open {
            self.open_view.store(&m.snapshot(now, 0));
        } else {
            self.not_permitted.store(0, Ordering::Relaxed);
        }
        self.tag.store(m.id << 3 | to.code(), Ordering::Release);
        if from != to {
            pending.push_with_cause(EventKind::StateTransition { from, to }, Some(cause));
        }
    }

    fn transition(&self, to: State) -> Result<(), IllegalTransition> {
        let now = self.env.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if !m.state.can_transition_to(to) {
                return Err(IllegalTransition::new(self.name, m.state, to));
            }
            self.enter(&mut m, to, now, TransitionCause::Manual, &mut pending);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
        Ok(())
    }

    fn reset(&self) {
        let now = self.env.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            self.enter(
                &mut m,
                State::Closed,
                now,
                TransitionCause::Reset,
                &mut pending,
            );
            pending.push(EventKind::Reset);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
    }

    /// A timer set by state `state_id` fell due.
    pub(crate) fn on_timer(&self, state_id: u64, action: TimerAction) {
        let now = self.env.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if m.id != state_id {
                return; // that state was left: the timer was cancelled
            }
            match (action, m.state) {
                (TimerAction::OpenToHalfOpen, State::Open) => {
                    let cause = TransitionCause::WaitElapsed;
                    self.enter(&mut m, State::HalfOpen, now, cause, &mut pending);
                }
                (TimerAction::HalfOpenMaxWait, State::HalfOpen) => {
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

    fn publish(&self, pending: &Pending, now: Timestamp) {
        let Some(metrics) = pending.metrics else {
            return;
        };
        let listen = self.wants_call_events();
        for &(kind, cause) in pending.events[..pending.len].iter().flatten() {
            if let EventKind::StateTransition { from, to } = kind {
                tracing::info!(
                    breaker = %self.name,
                    from = %from,
                    to = %to,
                    cause = ?cause.unwrap_or(TransitionCause::Manual),
                    failure_rate = metrics.failure_rate.unwrap_or(-1.0),
                    slow_call_rate = metrics.slow_call_rate.unwrap_or(-1.0),
                    "circuit breaker state changed"
                );
            }
            if listen {
                let event = Event::new(self.name, now, kind, cause, metrics);
                self.listeners.publish(&event);
                self.env.listeners.publish(&event);
            }
        }
    }

    /// Opens a CLOSED breaker that has no call in its window (an advisory hint from another
    /// process). Returns whether it opened. Local evidence always wins: a breaker with any
    /// recorded call, or in any other state, is left alone.
    fn open_from_hint(&self) -> bool {
        let now = self.env.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if m.has_history || m.state != State::Closed || m.metrics.totals(now).calls != 0 {
                return false;
            }
            self.enter(
                &mut m,
                State::Open,
                now,
                TransitionCause::Hint,
                &mut pending,
            );
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
        true
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
