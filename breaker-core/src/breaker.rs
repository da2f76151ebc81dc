//! The circuit breaker: Resilience4j's state machine, with permits as values.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::clock::{Clock, Timestamp};
use crate::closed_window::{self, ClosedWindow, Recorded};
use crate::config::{Config, SlidingWindowType};
use crate::error::{CallNotPermitted, IllegalTransition};
use crate::event::{Event, EventKind, Listeners, Subscription, TransitionCause};
use crate::name::Name;
use crate::permit::{Outcome, Permit};
use crate::scheduler::{Scheduler, TimerAction};
use crate::state::State;
use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard};
use crate::window::{StateMetrics, Thresholds, Verdict};

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
    name: &'static Name,
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
    /// CLOSED's count window, recorded without the lock (count-based windows of up to
    /// `closed_window::MAX_SIZE` calls; others record under the lock).
    fast: Option<Arc<ClosedWindow>>,
    /// CLOSED's thresholds, for deciding on a call recorded without the lock.
    thresholds: Thresholds,
    /// Whether this breaker has any evidence of its own: a recorded call, or a transition that
    /// no hint caused. A hint may open only a breaker without it (seed 000's addendum). Calls
    /// recorded without the lock do not set it: `ClosedWindow::has_recorded` tells of them.
    history: AtomicBool,
    machine: Mutex<Machine>,
    listeners: Arc<Listeners>,
    /// The registry's listeners and clock, the same as `env`'s, held here so that the hot path
    /// reaches them with one pointer less.
    registry_listeners: Arc<Listeners>,
    clock: Clock,
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
        let size = config.sliding_window_size();
        let fast = (config.sliding_window_type() == SlidingWindowType::CountBased
            && size <= closed_window::MAX_SIZE
            && config.lock_free_window())
        .then(|| Arc::new(ClosedWindow::new(size)));
        let thresholds = Thresholds::new(&config, config.minimum_number_of_calls());
        let machine = Machine {
            state: State::Closed,
            id: 0,
            metrics: StateMetrics::closed(&config, now, fast.as_ref(), 0),
            trials_left: 0,
            reported_failure_rate: false,
            reported_slow_rate: false,
        };
        let registry_listeners = Arc::clone(&env.listeners);
        let clock = env.clock.clone();
        let shared = Arc::new_cyclic(|this| Shared {
            name: crate::name::intern(name),
            config,
            env,
            tag: AtomicU64::new(State::Closed.code()),
            retry_after: AtomicU64::new(0),
            not_permitted: AtomicU64::new(0),
            open_view: OpenView::default(),
            thresholds,
            fast,
            history: AtomicBool::new(false),
            machine: Mutex::new(machine),
            listeners: Arc::default(),
            registry_listeners,
            clock,
            this: this.clone(),
        });
        CircuitBreaker { shared }
    }

    /// The breaker's name.
    pub fn name(&self) -> &'static str {
        self.shared.name.as_str()
    }

    /// The breaker's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
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
        let now = self.shared.clock.now();
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
        if let Some((state_id, start)) = shared.begin_unlimited() {
            return Ok(Permit::new(shared, state_id, start));
        }
        if shared.reject_while_open() {
            return Err(shared.not_permitted_error(State::Open));
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

#[cfg(loom)]
impl CircuitBreaker {
    /// For the loom models: the lock-free window's totals `[calls, failed, slow, slow failed]`
    /// as packed, and as recounted from its slots, if the breaker is CLOSED on that window.
    pub fn model_window_totals(&self) -> Option<([u32; 4], [u32; 4])> {
        let m = self.shared.lock();
        let window = self.shared.fast.as_ref()?;
        if m.state != State::Closed {
            return None;
        }
        let flat = |t: crate::window::Totals| [t.calls, t.failed, t.slow, t.slow_failed];
        let packed = window.totals(m.id).map_or([u32::MAX; 4], flat);
        Some((packed, flat(window.recount(m.id))))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Machine> {
        // Nothing that can panic runs under this lock, so poisoning cannot hide a broken state.
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// In a state that permits every call (CLOSED, DISABLED, METRICS_ONLY), the state's id and
    /// the call's start: a permit without the permit value, for the protected-call fast path.
    #[inline(always)]
    pub(crate) fn begin_unlimited(&self) -> Option<(u64, Timestamp)> {
        let tag = self.tag.load(Ordering::Acquire);
        State::from_code(tag & 7)
            .permits_all()
            .then(|| (tag >> 3, self.clock.now()))
    }

    /// In OPEN before the end of its wait: counts and publishes a rejection, without the lock,
    /// and returns `true`. Otherwise `false`: ask [`acquire_slow`](Shared::acquire_slow).
    #[inline(always)]
    pub(crate) fn reject_while_open(&self) -> bool {
        let tag = self.tag.load(Ordering::Acquire);
        if State::from_code(tag & 7) != State::Open {
            return false;
        }
        let now = self.clock.now();
        if now.unix_nanos() > self.retry_after.load(Ordering::Acquire) {
            return false;
        }
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        if self.wants_call_events() {
            self.publish_rejection(now);
        }
        true
    }

    /// Records the outcome of a call granted by state `state_id` at `start`, taking the time
    /// since then as its duration (one clock read).
    #[inline(always)]
    pub(crate) fn finish(&self, state_id: u64, start: Timestamp, outcome: Outcome) {
        let now = self.clock.now();
        let elapsed = now.unix_nanos().saturating_sub(start.unix_nanos());
        self.complete(state_id, outcome, elapsed, now);
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name.as_str()
    }

    pub(crate) fn interned_name(&self) -> &'static Name {
        self.name
    }

    #[inline]
    fn wants_call_events(&self) -> bool {
        !self.listeners.is_empty() || !self.registry_listeners.is_empty()
    }

    #[cold]
    pub(crate) fn acquire_slow(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let now = self.clock.now();
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
    pub(crate) fn not_permitted_error(&self, state: State) -> CallNotPermitted {
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
    #[inline]
    pub(crate) fn complete(
        &self,
        permit_id: u64,
        outcome: Outcome,
        elapsed_nanos: u64,
        now: Timestamp,
    ) {
        let mut position = None;
        if let Some(window) = &self.fast {
            if outcome != Outcome::Ignored {
                let failed = outcome == Outcome::Failure;
                match self.complete_closed(window, failed, elapsed_nanos, now) {
                    Ok(()) => return,
                    Err(taken) => position = taken,
                }
            }
        }
        self.complete_locked(permit_id, outcome, elapsed_nanos, now, position);
    }

    /// Completes a permit under the lock: any state, any window, with listeners. `position`
    /// is a ring position of the lock-free window that the call already took.
    #[inline(never)]
    fn complete_locked(
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
        if m.state == State::Closed && outcome != Outcome::Ignored && !self.wants_call_events() {
            // The common case: a CLOSED call, nobody listening. Nothing to publish unless the
            // call trips the breaker.
            if let Verdict::Exceeded {
                failure_rate,
                slow_call_rate,
            } = m.metrics.record_at(failed, elapsed_nanos, now, position)
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
                    let call = (failed, elapsed_nanos, position);
                    self.record(&mut m, call, now, &mut pending);
                }
            }
            pending.seal(&mut m, now, &self.not_permitted);
        }
        drop(m);
        self.publish(&pending, now);
    }

    /// Records a call in CLOSED's window without the lock. Returns an error (nothing recorded)
    /// if the breaker is not CLOSED, someone listens for call events, or the window has moved
    /// on to a later CLOSED state since the state was read; in the last case the error holds
    /// the ring position the call took, for the locked path to record it there.
    ///
    /// A call that read CLOSED and records after the breaker left it counts in the window it
    /// read, which OPEN carries on (as a call finishing an instant earlier would have).
    #[inline(always)]
    fn complete_closed(
        &self,
        window: &ClosedWindow,
        failed: bool,
        elapsed: u64,
        now: Timestamp,
    ) -> Result<(), Option<u32>> {
        let tag = self.tag.load(Ordering::Acquire);
        if tag & 7 != State::Closed.code() || self.wants_call_events() {
            return Err(None);
        }
        // No `note_history` here: a call recorded in this window is history by itself
        // (`ClosedWindow::has_recorded`).
        let epoch = tag >> 3;
        match window.record(epoch, self.thresholds.outcome(failed, elapsed), false) {
            // Totals as they were: nothing for OPEN's view either, should OPEN carry them on.
            Recorded::Unchanged => {}
            Recorded::Stale(position) => return Err(Some(position)),
            Recorded::Changed(totals) => {
                if let Verdict::Exceeded { .. } = self.thresholds.verdict(&totals) {
                    self.trip(epoch, now);
                }
                if self.tag.load(Ordering::Acquire) != tag {
                    self.refresh_open_view(epoch, now);
                }
            }
        }
        Ok(())
    }

    /// CLOSED state `epoch` saw a call reach a threshold without the lock: if it is still the
    /// current state, decide again under the lock (on the window as it is now) and open.
    #[cold]
    fn trip(&self, epoch: u64, now: Timestamp) {
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if m.id != epoch || m.state != State::Closed {
                return; // another call decided first
            }
            let Verdict::Exceeded {
                failure_rate,
                slow_call_rate,
            } = m.metrics.verdict(now)
            else {
                return;
            };
            self.push_exceeded(&mut pending, failure_rate, slow_call_rate);
            let cause = TransitionCause::Evaluation;
            self.enter(&mut m, State::Open, now, cause, &mut pending);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
    }

    /// A call recorded without the lock while the breaker left CLOSED `epoch`: if OPEN carries
    /// that window on, its lock-free view must show the call.
    #[cold]
    fn refresh_open_view(&self, epoch: u64, now: Timestamp) {
        let mut m = self.lock();
        if m.state == State::Open && m.metrics.is_closed_window(epoch) {
            let snapshot = m.snapshot(now, 0);
            self.open_view.store(&snapshot);
        }
    }

    #[inline]
    fn note_history(&self) {
        if !self.history.load(Ordering::Relaxed) {
            self.history.store(true, Ordering::Relaxed);
        }
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

    /// Records `(failed, elapsed nanoseconds, ring position taken)` in the current state.
    fn record(
        &self,
        m: &mut Machine,
        (failed, elapsed, position): (bool, u64, Option<u32>),
        now: Timestamp,
        pending: &mut Pending,
    ) {
        match m.state {
            State::Closed => {
                if let Verdict::Exceeded {
                    failure_rate,
                    slow_call_rate,
                } = m.metrics.record_at(failed, elapsed, now, position)
                {
                    self.push_exceeded(pending, failure_rate, slow_call_rate);
                    self.enter(m, State::Open, now, TransitionCause::Evaluation, pending);
                }
            }
            State::Open => {
                m.metrics.record_at(failed, elapsed, now, position);
                self.open_view.store(&m.snapshot(now, 0));
            }
            State::HalfOpen => match m.metrics.record_at(failed, elapsed, now, position) {
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
                } = m.metrics.record_at(failed, elapsed, now, position)
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
        if cause != TransitionCause::Hint {
            self.note_history();
        }
        m.id += 1;
        m.state = to;
        let config = &self.config;
        match to {
            State::Closed => {
                m.metrics = StateMetrics::closed(config, now, self.fast.as_ref(), m.id);
            }
            State::MetricsOnly => {
                m.metrics = StateMetrics::closed(config, now, self.fast.as_ref(), m.id);
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
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if !m.state.can_transition_to(to) {
                return Err(IllegalTransition::new(self.name(), m.state, to));
            }
            self.enter(&mut m, to, now, TransitionCause::Manual, &mut pending);
            pending.seal(&mut m, now, &self.not_permitted);
        }
        self.publish(&pending, now);
        Ok(())
    }

    fn reset(&self) {
        let now = self.clock.now();
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
        let now = self.clock.now();
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
                    breaker = %self.name(),
                    from = %from,
                    to = %to,
                    cause = ?cause.unwrap_or(TransitionCause::Manual),
                    failure_rate = metrics.failure_rate.unwrap_or(-1.0),
                    slow_call_rate = metrics.slow_call_rate.unwrap_or(-1.0),
                    "circuit breaker state changed"
                );
            }
            if listen {
                let event = Event::new(self.name(), now, kind, cause, metrics);
                self.listeners.publish(&event);
                self.registry_listeners.publish(&event);
            }
        }
    }

    /// Opens a CLOSED breaker that has no call in its window (an advisory hint from another
    /// process). Returns whether it opened. Local evidence always wins: a breaker with any
    /// recorded call, or in any other state, is left alone.
    fn open_from_hint(&self) -> bool {
        let now = self.clock.now();
        let mut pending = Pending::new();
        {
            let mut m = self.lock();
            if self.history.load(Ordering::Relaxed)
                || self.fast.as_ref().is_some_and(|w| w.has_recorded())
                || m.state != State::Closed
                || m.metrics.totals(now).calls != 0
            {
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
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}
