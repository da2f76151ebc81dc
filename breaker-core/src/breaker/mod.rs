//! The circuit breaker: Resilience4j's state machine, with permits as values.
//!
//! [`CircuitBreaker`] is the public handle. Behind it, [`BreakerCore`] holds one breaker's
//! state and the one path every call takes (`core.rs`): the lock-free call paths
//! (`core/lock_free.rs`) read its [`StateTag`](tag::StateTag) and fall back to the state
//! machine under its lock (`core/machine.rs`), which publishes what happened to its
//! [`Audience`](crate::event::audience::Audience) once the lock is released (`publish.rs`).

use std::fmt;
use std::sync::Arc;

use crate::breaker::core::{BreakerCore, Identity};
use crate::breaker::metrics::Metrics;
use crate::call::permit::{OwnedPermit, Permit};
use crate::config::Config;
use crate::env::Env;
use crate::error::{CallNotPermitted, IllegalTransition};
use crate::event::listeners::Subscription;
use crate::event::Event;
use crate::state::State;
use crate::time::clock::Clock;

pub(crate) mod core;
pub(crate) mod metrics;
mod publish;
mod reject_log;
pub(crate) mod tag;
pub(crate) mod warned;

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
    pub(crate) core: Arc<BreakerCore>,
}

impl CircuitBreaker {
    /// A breaker of its own, outside any registry, on the system clock. Its timers run on one
    /// scheduler shared by all such breakers.
    pub fn new(name: &str, config: Config) -> CircuitBreaker {
        CircuitBreaker::with_env(name, config, Env::standalone())
    }

    pub(crate) fn with_env(name: &str, config: Config, env: Arc<Env>) -> CircuitBreaker {
        CircuitBreaker::with_identity(Identity::plain(name), config, env)
    }

    pub(crate) fn with_identity(
        identity: Identity,
        config: Config,
        env: Arc<Env>,
    ) -> CircuitBreaker {
        CircuitBreaker {
            core: BreakerCore::new(identity, config, env),
        }
    }

    /// The breaker's display name: what its events, errors, log lines and metrics carry, and
    /// unique among the breakers of its registry.
    ///
    /// - A plain breaker's is its name, with `\` and `[` escaped as `\\` and `\[` (names
    ///   rarely have either, so it is usually the name as given).
    /// - A keyed breaker's is `name[key]`: the name escaped as above, then the key's
    ///   `Display` text in brackets, with `\` and `]` escaped as `\\` and `\]`. For the
    ///   name `tenantProducts` and the key `42` (a `u64`, or the string `"42"`: keys are
    ///   told apart by their text), it is `tenantProducts[42]`.
    ///
    /// The first `[` that no `\` escapes ends the name, and only keyed names have one, so two
    /// different breakers (plain or keyed) never share a display name. A per-key
    /// configuration entry is named by this form (`instances."tenantProducts[acme]"`).
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The name the breaker is configured by, as given: the plain breaker's name, or for a
    /// keyed breaker the name of its group (`tenantProducts` for `tenantProducts[42]`).
    pub fn config_name(&self) -> &str {
        self.core.config_name()
    }

    /// The key's text, for a keyed breaker; `None` for a plain one.
    pub fn key(&self) -> Option<&str> {
        self.core.key()
    }

    /// Whether the breaker is still in the registry that made it: false once it is removed,
    /// replaced or evicted (it goes on working for whoever holds it, on its own). A breaker
    /// made with [`CircuitBreaker::new`] belongs to no registry and is never detached.
    pub fn is_detached(&self) -> bool {
        self.core.is_detached()
    }

    /// The breaker's configuration.
    #[inline]
    pub fn config(&self) -> &Config {
        self.core.config()
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &Clock {
        self.core.clock()
    }

    /// The current state. Reading it never moves the breaker: an OPEN breaker whose wait is
    /// over stays OPEN until a call asks for a permit (or its timer fires, with automatic
    /// transition enabled).
    #[inline]
    pub fn state(&self) -> State {
        self.core.state()
    }

    /// The metrics of the current state.
    pub fn metrics(&self) -> Metrics {
        self.core.metrics()
    }

    /// Asks for permission to make one call.
    ///
    /// CLOSED, DISABLED and METRICS_ONLY always permit. OPEN rejects until the clock is strictly
    /// past the end of its wait; the first request after that moves it to HALF_OPEN and is the
    /// first trial. HALF_OPEN permits up to `permitted-number-of-calls-in-half-open-state`
    /// calls. FORCED_OPEN rejects. A rejection is counted and published; it never blocks.
    #[inline(always)]
    pub fn try_acquire(&self) -> Result<Permit<'_>, CallNotPermitted> {
        Permit::acquire(&self.core)
    }

    /// [`try_acquire`](CircuitBreaker::try_acquire), for a permit that holds its own handle on
    /// the breaker (a reference count; no allocation): an [`OwnedPermit`] is `'static` and
    /// `Send`, for a call future that outlives the borrow of the breaker, such as a
    /// `tower::Service`'s response future.
    #[inline]
    pub fn try_acquire_owned(&self) -> Result<OwnedPermit, CallNotPermitted> {
        OwnedPermit::acquire(&self.core)
    }

    /// Moves the breaker to `to` by hand. Illegal transitions (CLOSED -> HALF_OPEN,
    /// METRICS_ONLY -> OPEN or HALF_OPEN) leave the state unchanged and return an error. A
    /// transition to the current state builds a fresh state (a new window, a new wait) and
    /// publishes no event.
    pub fn transition_to(&self, to: State) -> Result<(), IllegalTransition> {
        self.core.transition(to)
    }

    /// Back to a fresh CLOSED state, from any state, cancelling every pending timer.
    pub fn reset(&self) {
        self.core.reset();
    }

    /// Calls `listener` for every event of this breaker until the [`Subscription`] is dropped.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.core.subscribe(Arc::new(listener))
    }

    /// [`subscribe`](CircuitBreaker::subscribe), and the events of failed and ignored calls
    /// carry the error's type and text ([`Event::error`], [`ErrorText`](crate::ErrorText)).
    ///
    /// While such a listener hears the breaker, each failed or ignored call builds its error's
    /// text once (one allocation, shared by every listener that asked); a success never does,
    /// and without such a listener nothing is built.
    pub fn subscribe_with_error_texts<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&Event) + Send + Sync + 'static,
    {
        self.core.subscribe_with_error_texts(Arc::new(listener))
    }

    /// Opens the breaker on another process's advisory hint, only if it is CLOSED and has no
    /// local history at all (docs/REDIS_HINT.md); returns whether it opened. Local
    /// history is any call this breaker recorded (success or failure, even one that has since
    /// left the window) and any transition a hint did not cause, so a breaker that recovered
    /// through its own half-open trials (and so has an empty, fresh window) is never re-opened
    /// by a stale hint. The transition's cause is
    /// [`TransitionCause::Hint`](crate::TransitionCause::Hint), so it is never mistaken for
    /// local evidence.
    pub fn open_from_hint(&self) -> bool {
        self.core.open_from_hint()
    }

    /// Whether two handles are the same breaker.
    pub fn ptr_eq(&self, other: &CircuitBreaker) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
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
    /// For the loom models only (not built otherwise): the lock-free window's totals `[calls,
    /// failed, slow, slow failed]` as packed, and as recounted from its slots, if the breaker
    /// is CLOSED on that window.
    #[doc(hidden)]
    pub fn model_window_totals(&self) -> Option<([u32; 4], [u32; 4])> {
        self.core.model_window_totals()
    }
}
