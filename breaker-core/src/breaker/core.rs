//! What one breaker is made of, and the one path every call takes through it.
//!
//! [`BreakerCore`] is the breaker behind every [`CircuitBreaker`](crate::CircuitBreaker)
//! handle. Its fields are private to this module, grouped by job:
//! - who it is ([`Identity`]), its configuration, and what it shares with its registry
//!   ([`Env`](crate::env::Env));
//! - [`LockFreeView`]: what the lock-free call paths read without the lock (the current
//!   [`StateTag`], OPEN's end and figures, the not-permitted count, CLOSED's lock-free window);
//! - the state object ([`Machine`]) behind the lock, with each state's own data in its
//!   [`Phase`];
//! - who hears its events ([`Audience`]), the rejection log and the once-only warnings.
//!
//! This file holds the call path: [`BreakerCore::acquire`] hands every call path (the sync
//! calls, the async call's future, the permits, the attribute) a [`Grant`], which is completed
//! or given back here too. The paths that take no lock are in `core/lock_free.rs`; the state
//! machine under the lock, with its one lock -> change -> publish step, is in
//! `core/machine.rs`.

use std::any::Any;
use std::panic::resume_unwind;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::breaker::metrics::{metrics_of, Metrics, OpenView};
use crate::breaker::reject_log::RejectLog;
use crate::breaker::tag::{AtomicStateTag, StateTag};
use crate::breaker::warned::Warned;
use crate::classify::Outcome;
use crate::config::{Config, SlidingWindowType};
use crate::env::Env;
use crate::error::CallNotPermitted;
use crate::event::audience::Audience;
use crate::event::listeners::Subscription;
use crate::event::{ErrorText, Event, EventName};
use crate::name::Name;
use crate::state::{State, StateId};
use crate::sync::{AtomicU64, Mutex, MutexGuard};
use crate::time::clock::Clock;
use crate::time::scheduler::TimerKey;
use crate::time::timestamp::{duration_nanos, Timestamp};
use crate::window::closed::{self, ClosedWindow};
use crate::window::{StateMetrics, Thresholds};

mod lock_free;
mod machine;

/// Who a breaker is: the name it is shown and found by, the name it is configured by, and
/// its key, if it is a keyed breaker (see `name::keyed_display`).
pub(crate) struct Identity {
    pub(crate) name: Name,
    pub(crate) config_name: Name,
    pub(crate) key: Option<Box<str>>,
}

impl Identity {
    /// A plain breaker configured by `name`.
    pub(crate) fn plain(name: &str) -> Identity {
        Identity {
            name: crate::name::intern(&crate::name::plain_display(name)),
            config_name: crate::name::intern(name),
            key: None,
        }
    }
}

/// One breaker: its identity and configuration, the state the lock-free paths read, the state
/// object behind its lock, and who hears its events.
pub(crate) struct BreakerCore {
    identity: Identity,
    /// The display name as its events carry it.
    event_name: EventName,
    config: Config,
    env: Arc<Env>,
    /// The registry's clock (the same as `env`'s), held here so that the hot path reaches it
    /// with one pointer less.
    clock: Clock,
    view: LockFreeView,
    machine: Mutex<Machine>,
    audience: Audience,
    /// The rate-limited DEBUG line for rejected calls.
    rejections: RejectLog,
    /// The warnings written once per breaker.
    warned: Warned,
    /// This breaker, for the timers it sets (which hold it weakly).
    this: Weak<BreakerCore>,
}

/// [`LockFreeView::open_window`] when OPEN's metrics are not a lock-free window's.
const NO_WINDOW: u64 = u64::MAX;

/// What the lock-free call paths read without the breaker's lock. The state machine writes it
/// under the lock, `tag` last (see `enter` in `core/machine.rs`).
struct LockFreeView {
    /// The current state object's id and state.
    tag: AtomicStateTag,
    /// OPEN: calls are let through once the clock is strictly after this (Unix nanoseconds).
    /// Written before `tag` when OPEN is entered, so a reader that sees OPEN in `tag` sees it.
    retry_after: AtomicU64,
    /// The not-permitted count of the current state's metrics object: reset when a state gets a
    /// new object, carried on when OPEN inherits the previous one.
    not_permitted: AtomicU64,
    /// OPEN's window figures, kept up to date under the lock, so that a rejection made without
    /// the lock can still publish an event carrying the metrics.
    open_metrics: OpenView,
    /// While OPEN carries on CLOSED's lock-free window: the id of that CLOSED state
    /// ([`NO_WINDOW`] otherwise). A rejection made without the lock then reads the window's
    /// totals as they are, which holds every call recorded in it, even one recorded without
    /// the lock as the breaker opened (after `open_metrics` was taken). Written before `tag`.
    open_window: AtomicU64,
    /// CLOSED's count window, recorded without the lock (count-based windows of up to
    /// `window::closed::MAX_SIZE` calls; others record under the lock).
    closed_window: Option<Arc<ClosedWindow>>,
    /// CLOSED's thresholds, for deciding on a call recorded without the lock.
    thresholds: Thresholds,
}

/// The current state object, behind the breaker's lock. Every transition makes a new one (the
/// next [`StateId`]), as Resilience4j builds a new state object.
struct Machine {
    id: StateId,
    phase: Phase,
    /// What the state measures. OPEN keeps the metrics of the state it came from; DISABLED
    /// and FORCED_OPEN have an empty window that records nothing.
    metrics: StateMetrics,
    /// Resilience4j's attempt count: OPEN states since the breaker was last CLOSED (entering
    /// OPEN or FORCED_OPEN adds one, HALF_OPEN keeps it, CLOSED, DISABLED and METRICS_ONLY
    /// start again from 0). The wait of an OPEN with backoff is that of its attempt.
    attempts: u32,
    /// The breaker's random sequence (SplitMix64), for randomized waits.
    random: u64,
    /// Whether this breaker has any evidence of its own: a recorded call, or a transition that
    /// no hint caused. A hint may open only a breaker without it (docs/REDIS_HINT.md). Calls
    /// recorded without the lock do not set it: `ClosedWindow::has_recorded` tells of them.
    history: bool,
}

impl Machine {
    /// A number drawn uniformly from `[0, 1)`, the next of the breaker's sequence.
    fn uniform(&mut self) -> f64 {
        self.random = self.random.wrapping_add(crate::env::SEQUENCE_STEP);
        crate::env::uniform_at(self.random)
    }

    fn state(&self) -> State {
        self.phase.state()
    }

    fn tag(&self) -> StateTag {
        StateTag::new(self.id, self.state())
    }

    fn snapshot(&mut self, now: Timestamp, not_permitted: u64) -> Metrics {
        let totals = self.metrics.totals(now);
        let rates = self.metrics.rates(&totals);
        metrics_of(self.state(), &totals, rates, not_permitted)
    }
}

/// The state, with what only that state has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Closed,
    Open {
        /// The timer that moves it to HALF_OPEN (automatic transition only), until it fires
        /// or the state is left, which removes it from the scheduler's queue.
        timer: Option<TimerKey>,
    },
    HalfOpen {
        /// Trial permits not handed out yet.
        trials_left: u32,
        /// The timer of `max-wait-duration-in-half-open-state`, if one is set, as OPEN's.
        timer: Option<TimerKey>,
    },
    Disabled,
    ForcedOpen,
    MetricsOnly {
        /// Which "rate exceeded" events this state published already (once each).
        reported_failure_rate: bool,
        reported_slow_rate: bool,
    },
}

impl Phase {
    fn state(self) -> State {
        match self {
            Phase::Closed => State::Closed,
            Phase::Open { .. } => State::Open,
            Phase::HalfOpen { .. } => State::HalfOpen,
            Phase::Disabled => State::Disabled,
            Phase::ForcedOpen => State::ForcedOpen,
            Phase::MetricsOnly { .. } => State::MetricsOnly,
        }
    }

    /// The timer this state set and that has not fired yet, taken out of the state.
    fn take_timer(&mut self) -> Option<TimerKey> {
        match self {
            Phase::Open { timer } | Phase::HalfOpen { timer, .. } => timer.take(),
            _ => None,
        }
    }
}

impl BreakerCore {
    /// A breaker called `identity` in `env`, CLOSED.
    pub(crate) fn new(identity: Identity, config: Config, env: Arc<Env>) -> Arc<BreakerCore> {
        let now = env.clock().now();
        let size = config.sliding_window_size();
        let closed_window = (config.sliding_window_type() == SlidingWindowType::CountBased
            && size <= closed::MAX_SIZE
            && config.lock_free_window())
        .then(|| Arc::new(ClosedWindow::new(size)));
        let thresholds = Thresholds::new(&config, config.minimum_number_of_calls());
        let random = env.sequence_start(identity.name.as_str());
        let id = StateId::FIRST;
        let machine = Machine {
            id,
            phase: Phase::Closed,
            metrics: StateMetrics::closed(&config, now, closed_window.as_ref(), id),
            attempts: 0,
            random,
            history: false,
        };
        let audience = Audience::new(Arc::clone(env.breaker_listeners()));
        let clock = env.clock().clone();
        let event_name = EventName::of(&identity.name);
        Arc::new_cyclic(|this| BreakerCore {
            identity,
            event_name,
            config,
            env,
            clock,
            view: LockFreeView {
                tag: AtomicStateTag::new(machine.tag()),
                retry_after: AtomicU64::new(0),
                not_permitted: AtomicU64::new(0),
                open_metrics: OpenView::default(),
                open_window: AtomicU64::new(NO_WINDOW),
                closed_window,
                thresholds,
            },
            machine: Mutex::new(machine),
            audience,
            rejections: RejectLog::default(),
            warned: Warned::default(),
            this: this.clone(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Machine> {
        // Nothing that can panic runs under this lock, so poisoning cannot hide a broken state.
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The display name: unique in its registry, plain or keyed.
    pub(crate) fn name(&self) -> &str {
        self.identity.name.as_str()
    }

    /// The display name, for an error to carry.
    pub(crate) fn display_name(&self) -> Name {
        self.identity.name.clone()
    }

    /// The display name, for an event to carry.
    #[inline]
    pub(crate) fn event_name(&self) -> EventName {
        self.event_name.clone()
    }

    /// The name the breaker is configured by.
    pub(crate) fn config_name(&self) -> &str {
        self.identity.config_name.as_str()
    }

    /// The key's text, for a keyed breaker.
    pub(crate) fn key(&self) -> Option<&str> {
        self.identity.key.as_deref()
    }

    #[inline]
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The warnings written once per breaker.
    pub(crate) fn warned(&self) -> &Warned {
        &self.warned
    }

    /// The rate-limited log of rejected calls.
    #[cfg(test)]
    pub(crate) fn reject_log(&self) -> &RejectLog {
        &self.rejections
    }

    /// The current state, without the lock.
    #[inline]
    pub(crate) fn state(&self) -> State {
        self.view.tag.load().state()
    }

    /// The metrics of the current state.
    pub(crate) fn metrics(&self) -> Metrics {
        let now = self.clock.now();
        let mut m = self.lock();
        m.snapshot(now, self.view.not_permitted.load(Ordering::Relaxed))
    }

    /// Whether the breaker was removed from its registry.
    pub(crate) fn is_detached(&self) -> bool {
        self.audience.is_detached()
    }

    /// The breaker left its registry (removed, replaced or evicted).
    pub(crate) fn detach(&self) {
        self.audience.detach();
    }

    /// Adds a listener of this breaker's own.
    pub(crate) fn subscribe(&self, listener: Arc<dyn Fn(&Event) + Send + Sync>) -> Subscription {
        self.audience.subscribe(listener)
    }

    /// Adds a listener of this breaker's own that gets the error texts of failed calls.
    pub(crate) fn subscribe_with_error_texts(
        &self,
        listener: Arc<dyn Fn(&Event) + Send + Sync>,
    ) -> Subscription {
        self.audience.subscribe_detailed(listener)
    }

    /// Whether a listener that hears this breaker asked for error texts: asked only for a
    /// failed or ignored call, before its error's text is built.
    #[inline]
    pub(crate) fn wants_error_texts(&self) -> bool {
        self.audience.wants_detail()
    }

    /// Asks for permission to make one call: the step every call path takes (`try_acquire`,
    /// the owned permit, the sync call, the async call's first poll, the attribute).
    ///
    /// CLOSED, DISABLED and METRICS_ONLY permit without a lock; OPEN rejects without a lock
    /// until its wait is over; everything else (HALF_OPEN's trials, FORCED_OPEN, OPEN at the
    /// end of its wait) asks the state machine. Inlined into every caller: the two lock-free
    /// cases are the protected call's whole cost in the common states.
    #[inline(always)]
    pub(crate) fn acquire(&self) -> Result<Grant, CallNotPermitted> {
        if let Some(grant) = self.begin_unlimited() {
            return Ok(grant);
        }
        if let Some(rejected) = self.reject_while_open() {
            return Err(rejected);
        }
        self.acquire_slow()
    }

    /// Records the outcome of a call granted by `grant`, taking the time since the grant as
    /// its duration (one clock read).
    #[inline(always)]
    pub(crate) fn finish(&self, grant: Grant, outcome: Outcome) {
        let now = self.clock.now();
        let elapsed = now.unix_nanos().saturating_sub(grant.start.unix_nanos());
        self.complete(grant.state, outcome, elapsed, now, None);
    }

    /// [`finish`](BreakerCore::finish) for a failed or ignored call whose error's text a
    /// listener asked for: its event carries `error` to those listeners.
    #[cold]
    #[inline(never)]
    pub(crate) fn finish_described(&self, grant: Grant, outcome: Outcome, error: &ErrorText) {
        let now = self.clock.now();
        let elapsed = now.unix_nanos().saturating_sub(grant.start.unix_nanos());
        self.complete(grant.state, outcome, elapsed, now, Some(error));
    }

    /// Records the outcome of a call granted by `grant`, with a duration the caller measured
    /// (and the error's text, if a listener asked for it).
    pub(crate) fn record(
        &self,
        grant: Grant,
        outcome: Outcome,
        elapsed: Duration,
        error: Option<&ErrorText>,
    ) {
        let now = self.clock.now();
        self.complete(grant.state, outcome, duration_nanos(elapsed), now, error);
    }

    /// The call granted by `grant` panicked: records a failure (its event carries the panic's
    /// message to the listeners that asked for error texts), then lets the panic go on.
    #[cold]
    pub(crate) fn panicked(&self, grant: Grant, payload: Box<dyn Any + Send>) -> ! {
        if self.wants_error_texts() {
            self.finish_described(grant, Outcome::Failure, &ErrorText::of_panic(&*payload));
        } else {
            self.finish(grant, Outcome::Failure);
        }
        resume_unwind(payload)
    }

    /// Time since `grant` was granted, on the breaker's clock.
    pub(crate) fn elapsed(&self, grant: Grant) -> Duration {
        self.clock.now().saturating_duration_since(grant.start)
    }

    /// Returns a grant without recording anything (a cancelled call).
    pub(crate) fn release(&self, grant: Grant) {
        // Only a HALF_OPEN state takes permits back, and only its own: skip the lock otherwise.
        if self.view.tag.load() == StateTag::new(grant.state, State::HalfOpen) {
            let mut m = self.lock();
            give_back(&mut m, grant.state);
        }
    }
}

/// Gives a trial permit back to the HALF_OPEN state that granted it (and to no other).
fn give_back(m: &mut Machine, granted_by: StateId) {
    if let Phase::HalfOpen { trials_left, .. } = &mut m.phase {
        if m.id == granted_by {
            *trials_left += 1;
        }
    }
}

/// What a permit is besides its breaker: the state that granted it, and when. Every way of
/// completing or giving back a permit hands it to its [`BreakerCore`], whoever holds the
/// breaker.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grant {
    state: StateId,
    start: Timestamp,
}

impl Grant {
    /// When the permit was granted, on the breaker's clock.
    #[inline]
    pub(crate) fn started_at(self) -> Timestamp {
        self.start
    }
}

#[cfg(loom)]
impl BreakerCore {
    /// The lock-free window's totals `[calls, failed, slow, slow failed]` as packed, and as
    /// recounted from its slots, if the breaker is CLOSED on that window (for the loom models).
    pub(crate) fn model_window_totals(&self) -> Option<([u32; 4], [u32; 4])> {
        let m = self.lock();
        let window = self.view.closed_window.as_ref()?;
        if m.phase != Phase::Closed {
            return None;
        }
        let flat = |t: crate::window::totals::Totals| [t.calls, t.failed, t.slow, t.slow_failed];
        let packed = window.totals(m.id).map_or([u32::MAX; 4], flat);
        Some((packed, flat(window.recount(m.id))))
    }
}
