//! What one breaker is made of: its shared state, the state object behind its lock, and what
//! it shares with the other breakers of its registry.
//!
//! The methods are spread by concern: the lock-free call paths in `lock_free.rs`, the state
//! machine under the lock in `machine.rs`, publishing in `publish.rs`.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::breaker::metrics::{Metrics, OpenView};
use crate::breaker::reject_log::RejectLog;
use crate::breaker::tag::{AtomicStateTag, StateTag};
use crate::breaker::warned::Warned;
use crate::config::{Config, SlidingWindowType};
use crate::event::listeners::Listeners;
use crate::name::Name;
use crate::state::State;
use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard};
use crate::time::clock::Clock;
use crate::time::scheduler::{Scheduler, TimerKey};
use crate::time::timestamp::Timestamp;
use crate::window::closed::{self, ClosedWindow};
use crate::window::totals::Totals;
use crate::window::{StateMetrics, Thresholds};

/// What a breaker shares with the other breakers of its registry.
#[derive(Debug)]
pub(crate) struct Env {
    pub(crate) clock: Clock,
    pub(crate) scheduler: Scheduler,
    pub(crate) listeners: Arc<Listeners>,
    /// The seed of the breakers' random draws (randomized waits in OPEN).
    pub(crate) seed: u64,
}

impl Env {
    /// The registry's environment; without a seed, a different one in every process.
    pub(crate) fn new(clock: Clock, seed: Option<u64>) -> Arc<Env> {
        let seed = seed.unwrap_or_else(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        });
        Arc::new(Env {
            scheduler: Scheduler::new(clock.clone()),
            clock,
            listeners: Arc::default(),
            seed,
        })
    }
}

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

pub(crate) struct Shared {
    /// The display name: unique in its registry, plain or keyed.
    pub(crate) name: Name,
    pub(crate) config_name: Name,
    pub(crate) key: Option<Box<str>>,
    /// Removed from its registry (removed, replaced or evicted): it goes on working for the
    /// handles that hold it, but the registry's listeners no longer hear it.
    pub(crate) detached: AtomicBool,
    pub(crate) config: Config,
    pub(crate) env: Arc<Env>,
    /// The current state, readable without the lock.
    pub(crate) tag: AtomicStateTag,
    /// OPEN: calls are let through once the clock is strictly after this (Unix nanoseconds).
    /// Written before `tag` when OPEN is entered, so a reader that sees OPEN in `tag` sees it.
    pub(crate) retry_after: AtomicU64,
    /// The not-permitted count of the current state's metrics object: reset when a state gets a
    /// new object, carried on when OPEN inherits the previous one.
    pub(crate) not_permitted: AtomicU64,
    /// OPEN's window figures, kept up to date under the lock, so that a rejection made without
    /// the lock can still publish an event carrying the metrics.
    pub(crate) open_view: OpenView,
    /// CLOSED's count window, recorded without the lock (count-based windows of up to
    /// `window::closed::MAX_SIZE` calls; others record under the lock).
    pub(crate) fast: Option<Arc<ClosedWindow>>,
    /// CLOSED's thresholds, for deciding on a call recorded without the lock.
    pub(crate) thresholds: Thresholds,
    /// Whether this breaker has any evidence of its own: a recorded call, or a transition that
    /// no hint caused. A hint may open only a breaker without it (docs/REDIS_HINT.md). Calls
    /// recorded without the lock do not set it: `ClosedWindow::has_recorded` tells of them.
    pub(crate) history: AtomicBool,
    pub(crate) machine: Mutex<Machine>,
    pub(crate) listeners: Arc<Listeners>,
    /// The registry's listeners and clock, the same as `env`'s, held here so that the hot path
    /// reaches them with one pointer less.
    pub(crate) registry_listeners: Arc<Listeners>,
    pub(crate) clock: Clock,
    /// The rate-limited DEBUG line for rejected calls.
    pub(crate) rejections: RejectLog,
    /// The warnings written once per breaker.
    pub(crate) warned: Warned,
    pub(crate) this: Weak<Shared>,
}

/// The current state object, behind the breaker's lock. Every transition makes a new one (a
/// new `id`), as Resilience4j builds a new state object; timers and permits remember the id
/// they belong to.
pub(crate) struct Machine {
    pub(crate) id: u64,
    pub(crate) phase: Phase,
    /// What the state measures. OPEN keeps the metrics of the state it came from; DISABLED
    /// and FORCED_OPEN have an empty window that records nothing.
    pub(crate) metrics: StateMetrics,
    /// The timer this state set (OPEN's wait, HALF_OPEN's max wait), until it fires or the
    /// state is left, which removes it from the scheduler's queue.
    pub(crate) timer: Option<TimerKey>,
    /// Resilience4j's attempt count: OPEN states since the breaker was last CLOSED (entering
    /// OPEN or FORCED_OPEN adds one, HALF_OPEN keeps it, CLOSED, DISABLED and METRICS_ONLY
    /// start again from 0). The wait of an OPEN with backoff is that of its attempt.
    pub(crate) attempts: u32,
    /// The breaker's random sequence (SplitMix64), for randomized waits.
    pub(crate) random: u64,
}

impl Machine {
    /// A number drawn uniformly from `[0, 1)`, the next of the breaker's sequence.
    pub(crate) fn uniform(&mut self) -> f64 {
        self.random = self.random.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.random;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits, as a fraction of 2^53.
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The state, with what only that state has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Closed,
    Open,
    HalfOpen {
        /// Trial permits not handed out yet.
        trials_left: u32,
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
    pub(crate) fn state(self) -> State {
        match self {
            Phase::Closed => State::Closed,
            Phase::Open => State::Open,
            Phase::HalfOpen { .. } => State::HalfOpen,
            Phase::Disabled => State::Disabled,
            Phase::ForcedOpen => State::ForcedOpen,
            Phase::MetricsOnly { .. } => State::MetricsOnly,
        }
    }
}

impl Machine {
    pub(crate) fn state(&self) -> State {
        self.phase.state()
    }

    pub(crate) fn tag(&self) -> StateTag {
        StateTag::new(self.id, self.state())
    }

    pub(crate) fn snapshot(&mut self, now: Timestamp, not_permitted: u64) -> Metrics {
        let totals = self.metrics.totals(now);
        let rates = self.metrics.rates(&totals);
        metrics_of(self.state(), &totals, rates, not_permitted)
    }
}

/// The public snapshot of a state's window totals and rates.
pub(crate) fn metrics_of(
    state: State,
    totals: &Totals,
    (failure_rate, slow_call_rate): (Option<f32>, Option<f32>),
    not_permitted: u64,
) -> Metrics {
    Metrics {
        state,
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

impl Shared {
    /// A breaker called `identity` in `env`, CLOSED.
    pub(crate) fn new(identity: Identity, config: Config, env: Arc<Env>) -> Arc<Shared> {
        let now = env.clock.now();
        let size = config.sliding_window_size();
        let fast = (config.sliding_window_type() == SlidingWindowType::CountBased
            && size <= closed::MAX_SIZE
            && config.lock_free_window())
        .then(|| Arc::new(ClosedWindow::new(size)));
        let thresholds = Thresholds::new(&config, config.minimum_number_of_calls());
        // Each breaker's sequence: the registry's seed mixed with the breaker's name (FNV-1a),
        // so breakers of one registry do not draw the same waits.
        let random = identity
            .name
            .as_str()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
            ^ env.seed;
        let machine = Machine {
            id: 0,
            phase: Phase::Closed,
            metrics: StateMetrics::closed(&config, now, fast.as_ref(), 0),
            timer: None,
            attempts: 0,
            random,
        };
        let registry_listeners = Arc::clone(&env.listeners);
        let clock = env.clock.clone();
        Arc::new_cyclic(|this| Shared {
            name: identity.name,
            config_name: identity.config_name,
            key: identity.key,
            detached: AtomicBool::new(false),
            config,
            env,
            tag: AtomicStateTag::new(machine.tag()),
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
            rejections: RejectLog::default(),
            warned: Warned::default(),
            this: this.clone(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Machine> {
        // Nothing that can panic runs under this lock, so poisoning cannot hide a broken state.
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    pub(crate) fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The name, for an error or event to carry.
    pub(crate) fn shared_name(&self) -> Name {
        self.name.clone()
    }

    #[inline]
    pub(crate) fn wants_call_events(&self) -> bool {
        !self.listeners.is_empty() || self.registry_hears()
    }

    /// Whether the registry's listeners hear this breaker: someone listens, and the breaker is
    /// still in its registry.
    #[inline]
    pub(crate) fn registry_hears(&self) -> bool {
        !self.registry_listeners.is_empty() && !self.detached.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}
