//! The bulkhead: at most `max-concurrent-calls` calls to one dependency at once, with
//! Resilience4j's semantics (its `SemaphoreBulkhead`) and Spring's keys
//! (`resilience4j.bulkhead.*`).
//!
//! A call takes a place before it runs and gives it back when it ends. When every place is
//! taken, a call waits up to `max-wait-duration` for one (0, the default: it is refused at
//! once), and is refused with [`BulkheadFull`] if none comes free in time; a refused call
//! never runs. Waiting calls get places in the order they came when
//! `fair-call-handling-enabled` (the default); when it is off, a call that arrives while
//! others wait may take a place freed before them.
//!
//! - [`Bulkhead::call`] and [`Bulkhead::call_sync`] run a call in a place.
//! - One level lower, [`Bulkhead::try_acquire`] (never waits), [`Bulkhead::acquire`] (a future)
//!   and [`Bulkhead::acquire_blocking`] (parks the thread) hand out a [`BulkheadPermit`] that
//!   gives the place back when dropped; the `_owned` forms hold the bulkhead by `Arc`, for
//!   `'static` futures.
//! - Events ([`BulkheadEvent`]): `CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`, published
//!   after any lock is released and built only when someone listens.
//!
//! ```
//! use std::time::Duration;
//! use breaker_core::bulkhead::{Bulkhead, BulkheadConfig};
//!
//! let bulkhead = Bulkhead::new(
//!     "inventory",
//!     BulkheadConfig::builder()
//!         .max_concurrent_calls(2)
//!         .max_wait_duration(Duration::ZERO)
//!         .build()?,
//! );
//! let first = bulkhead.try_acquire()?;
//! let second = bulkhead.try_acquire()?;
//! // Both places are taken: a third call is refused, and never runs.
//! let refused = bulkhead.call_sync(|| Ok::<_, std::io::Error>("never runs"));
//! assert!(refused.unwrap_err().is_bulkhead_full());
//! assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
//!
//! drop(first);
//! assert_eq!(bulkhead.call_sync(|| Ok::<_, std::io::Error>(7)).ok(), Some(7));
//! drop(second);
//! assert_eq!(bulkhead.metrics().available_concurrent_calls(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Cost
//!
//! Taking a free place is one compare-and-swap on one atomic word; giving it back is one
//! `fetch_add`; a refusal without waiting is one load. Each then asks whether anyone listens
//! (the bulkhead's own list and its registry's: a null pointer each when nobody ever
//! subscribed), all inlined into the caller; a refusal carries the bulkhead's name, interned
//! for the process, so building and dropping it touches no count. None of them locks or
//! allocates, and an event is built only when someone listens. A call that waits takes the queue's lock and
//! sets a timer in the scheduler's queue; both keep their capacity, so a wait allocates only
//! when more calls wait at once than before (the scheduler's ordered map may then add a node).
//! `semaphore.rs` describes the algorithm; `tests/no_alloc/bulkhead.rs` counts the
//! allocations.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::bulkhead::core::BulkheadCore;
use crate::env::Env;
use crate::error::CallError;
use crate::event::listeners::Subscription;
use crate::time::clock::Clock;

mod acquire;
mod core;
pub(crate) mod event;
mod permit;
mod semaphore;

pub use self::acquire::{Acquire, AcquireOwned};
pub use self::core::Bulkhead;
pub use self::event::{BulkheadEvent, BulkheadEventKind};
pub use self::permit::{BulkheadPermit, OwnedBulkheadPermit};
pub use crate::config::bulkhead::{keys, BulkheadConfig, BulkheadConfigBuilder};
pub use crate::error::BulkheadFull;

impl Bulkhead {
    /// A bulkhead of its own, outside any registry, on the system clock. Its timers run on one
    /// scheduler shared by all such bulkheads (and stand-alone breakers).
    pub fn new(name: &str, config: BulkheadConfig) -> Bulkhead {
        Bulkhead::with_env(name, config, Env::standalone())
    }

    /// A bulkhead of a registry, on the registry's clock, scheduler and listeners.
    pub(crate) fn with_env(name: &str, config: BulkheadConfig, env: Arc<Env>) -> Bulkhead {
        Bulkhead {
            core: Arc::new(BulkheadCore::new(name, config, env)),
        }
    }

    /// The bulkhead's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The current configuration ([`change_config`](Bulkhead::change_config) replaces it).
    pub fn config(&self) -> BulkheadConfig {
        self.core.lock_config().clone()
    }

    /// Replaces the configuration at run time; never blocks.
    ///
    /// - A higher `max-concurrent-calls` frees places at once, and they go to the waiting
    ///   calls first.
    /// - A lower one lets the calls in flight finish: no new call gets a place until fewer
    ///   than the new limit run, and [`available_concurrent_calls`] reads 0 meanwhile.
    ///   (Resilience4j's blocks the caller of `changeConfig` until enough calls finish.)
    /// - `max-wait-duration` and `fair-call-handling-enabled` apply to calls that start
    ///   waiting afterwards; turning fairness on hands free places to the waiters in order.
    ///
    /// [`available_concurrent_calls`]: BulkheadMetrics::available_concurrent_calls
    pub fn change_config(&self, config: BulkheadConfig) {
        self.core.reconfigure(config);
    }

    /// The current `max-wait-duration`, as [`config`](Bulkhead::config) has it, in one atomic
    /// load (no lock, no clone): for a caller that decides per call whether it may wait, as
    /// the tower layer does.
    pub fn max_wait_duration(&self) -> Duration {
        self.core.max_wait()
    }

    /// A snapshot of the places and the waiting calls.
    pub fn metrics(&self) -> BulkheadMetrics {
        let semaphore = self.core.semaphore();
        BulkheadMetrics {
            available: semaphore.available(),
            max_allowed: semaphore.limit(),
            waiting: semaphore.waiting(),
        }
    }

    /// The clock the bulkhead reads (its registry's).
    pub fn clock(&self) -> &Clock {
        self.core.env().clock()
    }

    /// A place if one is free now, else [`BulkheadFull`] at once, whatever
    /// `max-wait-duration` says. In fair mode a place is not free while calls wait for one.
    #[inline]
    pub fn try_acquire(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.core.try_acquire()?;
        Ok(BulkheadPermit::new(&self.core))
    }

    /// [`try_acquire`](Bulkhead::try_acquire), for a permit that holds its own handle on the
    /// bulkhead (`'static` and `Send`).
    #[inline]
    pub fn try_acquire_owned(&self) -> Result<OwnedBulkheadPermit, BulkheadFull> {
        self.core.try_acquire()?;
        Ok(OwnedBulkheadPermit::new(Arc::clone(&self.core)))
    }

    /// A place, waiting for one up to `max-wait-duration` without blocking the thread; the
    /// future ends with [`BulkheadFull`] if none came free in time. The wait's timer runs on
    /// the bulkhead's scheduler, so a [`ManualClock`](crate::ManualClock)'s `advance` ends
    /// it.
    pub fn acquire(&self) -> Acquire<'_> {
        Acquire::new(self)
    }

    /// [`acquire`](Bulkhead::acquire), as a `'static` and `Send` future whose permit holds its
    /// own handle on the bulkhead.
    pub fn acquire_owned(&self) -> AcquireOwned {
        AcquireOwned::new(self.clone())
    }

    /// A place, waiting for one up to `max-wait-duration` with this thread parked. Do not
    /// call it on an async runtime's worker thread: use [`acquire`](Bulkhead::acquire) there.
    pub fn acquire_blocking(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        self.core.acquire_blocking()?;
        Ok(BulkheadPermit::new(&self.core))
    }

    /// Runs `fut` in a place, waiting for one as [`acquire`](Bulkhead::acquire) does. A
    /// refused call ends with [`CallError::BulkheadFull`] without polling `fut`; the call's
    /// own error is [`CallError::Inner`]. The place is given back when `fut` ends or the
    /// returned future is dropped.
    pub async fn call<T, E, F>(&self, fut: F) -> Result<T, CallError<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let _permit = self.acquire().await?;
        fut.await.map_err(CallError::Inner)
    }

    /// Runs `f` in a place, waiting for one as [`acquire_blocking`](Bulkhead::acquire_blocking)
    /// does. A refused call ends with [`CallError::BulkheadFull`] without running `f`. The
    /// place is given back when `f` returns or panics.
    pub fn call_sync<T, E, F>(&self, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        let _permit = self.acquire_blocking()?;
        f().map_err(CallError::Inner)
    }

    /// Calls `listener` for every event of this bulkhead until the [`Subscription`] is
    /// dropped.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&BulkheadEvent) + Send + Sync + 'static,
    {
        self.core.subscribe(Arc::new(listener))
    }

    /// Whether two handles are the same bulkhead.
    pub fn ptr_eq(&self, other: &Bulkhead) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    /// Whether the bulkhead left the registry that made it (removed): a call site that cached
    /// it then looks its name up again.
    #[inline]
    pub(crate) fn is_detached(&self) -> bool {
        self.core.is_detached()
    }

    /// Stops the registry's listeners hearing this bulkhead (it was removed from its
    /// registry; it goes on working for whoever holds it).
    pub(crate) fn detach(&self) {
        self.core.detach();
    }
}

/// A handle that does not keep its bulkhead alive: the metrics export's, which the registry's
/// hooks hold for the registry's life.
#[cfg(feature = "metrics")]
#[derive(Clone)]
pub(crate) struct WeakBulkhead(std::sync::Weak<BulkheadCore>);

#[cfg(feature = "metrics")]
impl Bulkhead {
    /// A handle that does not keep this bulkhead alive.
    pub(crate) fn downgrade(&self) -> WeakBulkhead {
        WeakBulkhead(Arc::downgrade(&self.core))
    }
}

#[cfg(feature = "metrics")]
impl WeakBulkhead {
    /// The bulkhead, while it exists.
    pub(crate) fn upgrade(&self) -> Option<Bulkhead> {
        self.0.upgrade().map(|core| Bulkhead { core })
    }

    /// Whether this is a handle to `bulkhead`.
    pub(crate) fn is(&self, bulkhead: &Bulkhead) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&bulkhead.core))
    }

    /// Whether two handles are to the same bulkhead.
    pub(crate) fn ptr_eq(&self, other: &WeakBulkhead) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

// No user code runs while a bulkhead's lock is held and listeners' panics are caught, so a
// panic anywhere leaves the bulkhead whole.
impl std::panic::UnwindSafe for Bulkhead {}
impl std::panic::RefUnwindSafe for Bulkhead {}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("name", &self.name())
            .field("metrics", &self.metrics())
            .finish()
    }
}

/// A snapshot of a bulkhead's places, from [`Bulkhead::metrics`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkheadMetrics {
    available: u32,
    max_allowed: u32,
    waiting: u32,
}

impl BulkheadMetrics {
    /// Places free now; 0 while a lowered limit still has more calls in flight than it allows.
    pub fn available_concurrent_calls(&self) -> u32 {
        self.available
    }

    /// The limit: `max-concurrent-calls`.
    pub fn max_allowed_concurrent_calls(&self) -> u32 {
        self.max_allowed
    }

    /// Calls waiting for a place.
    pub fn waiting_calls(&self) -> u32 {
        self.waiting
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
