//! The retry: a failed call made again, up to `max-attempts`, with Resilience4j's semantics and
//! Spring's keys (`resilience4j.retry.*`), and a budget that keeps retries to a fraction of the
//! calls.
//!
//! A call's attempts are classified with [`Classify`]: a failure is retried, an ignored error
//! ends the call at once (`IGNORED_ERROR`), a success ends it (`SUCCESS` if it took retries).
//! So [`Classifier::result`](crate::Classifier::result) is the result predicate (retry on an
//! `Ok`, for example a 503), and `retry-exceptions` / `ignore-exceptions` apply on top as the
//! breaker's `record-exceptions` / `ignore-exceptions` do. When the attempts run out on an
//! error the call ends with it ([`CallError::Inner`], `ERROR`); on a retried `Ok` it ends with
//! that value, or with [`MaxRetriesExceeded`] when `fail-after-max-attempts` is set.
//!
//! The wait after failed attempt `n` (from 1) is [`RetryConfig::wait_interval`]'s
//! `wait(n, ..)`: `wait-duration`, with exponential or randomized backoff as configured, the
//! same computation as the breaker's OPEN wait. Randomized waits draw from the retry's own
//! sequence, seeded from its registry's seed and its name. Async waits are timers on the
//! registry's scheduler and blocking waits park the thread until such a timer fires, so both
//! run on the injected clock ([`ManualClock::advance`](crate::ManualClock::advance) ends them).
//!
//! The budget (`budget-*` keys, breaker's own, on by default) refuses a retry once the
//! retries over the last `budget-window` would pass `budget-ratio` times the calls in it plus
//! `budget-min-retries-per-second` per second of it: the call then ends at once with its last
//! error or result, counted in [`RetryMetrics::retries_refused_by_budget`] and published as
//! `BUDGET_EXHAUSTED`. `budget.rs` says exactly how calls and retries are counted.
//!
//! ```
//! use std::time::Duration;
//! use breaker_core::retry::{Retry, RetryConfig};
//!
//! let retry = Retry::new(
//!     "inventory",
//!     RetryConfig::builder()
//!         .max_attempts(3)
//!         .wait_duration(Duration::ZERO)
//!         .build()?,
//! );
//! let mut attempts = 0;
//! let result = retry.call_sync(|| {
//!     attempts += 1;
//!     if attempts < 3 { Err("connection reset") } else { Ok(attempts) }
//! });
//! assert_eq!(result.ok(), Some(3));
//! assert_eq!(retry.metrics().successful_calls_with_retry_attempt(), 1);
//! # Ok::<(), breaker_core::ConfigError>(())
//! ```
//!
//! # Cost
//!
//! A call whose first attempt succeeds costs what the classification costs and one
//! `fetch_add` on the retry's counter: no allocation, no clock read, no event. A retry reads
//! the clock, asks the budget (a load of each bucket and one compare-and-swap), and sets a
//! timer on the scheduler, which allocates the wait's slot (and may add a node to the
//! scheduler's ordered map). `tests/no_alloc/retry.rs` counts the allocations.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::classify::{Classifier, Classify};
use crate::env::Env;
use crate::error::CallError;
use crate::event::listeners::Subscription;
use crate::time::clock::Clock;

use self::core::RetryCore;

/// The classification of [`Retry::call`] and [`Retry::call_sync`]: every error a failure.
const EVERY_ERROR: Classifier = Classifier::new();

mod budget;
mod call;
mod core;
pub(crate) mod event;

pub use self::core::Retry;
pub use self::event::{RetryEvent, RetryEventKind};
pub use crate::config::retry::{keys, RetryConfig, RetryConfigBuilder};
pub use crate::error::MaxRetriesExceeded;

impl Retry {
    /// A retry of its own, outside any registry, on the system clock. Its timers run on one
    /// scheduler shared by all such retries (and stand-alone breakers and bulkheads).
    pub fn new(name: &str, config: RetryConfig) -> Retry {
        Retry::with_env(name, config, Env::standalone())
    }

    /// A retry of a registry, on the registry's clock, scheduler, listeners and seed.
    pub(crate) fn with_env(name: &str, config: RetryConfig, env: Arc<Env>) -> Retry {
        Retry {
            core: Arc::new(RetryCore::new(name, config, env)),
        }
    }

    /// The retry's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The retry's configuration.
    pub fn config(&self) -> &RetryConfig {
        self.core.config()
    }

    /// A snapshot of the retry's counters. Each counter is read on its own, so a snapshot
    /// taken while calls end may count a call that ended during the read in one counter and
    /// not yet in another.
    pub fn metrics(&self) -> RetryMetrics {
        let [succeeded_without, succeeded_with, failed_without, failed_with, refused] =
            self.core.counts();
        RetryMetrics {
            succeeded_without,
            succeeded_with,
            failed_without,
            failed_with,
            refused,
        }
    }

    /// The clock the retry reads (its registry's).
    pub fn clock(&self) -> &Clock {
        self.core.env().clock()
    }

    /// Calls `listener` for every event of this retry until the [`Subscription`] is dropped.
    pub fn subscribe<F>(&self, listener: F) -> Subscription
    where
        F: Fn(&RetryEvent) + Send + Sync + 'static,
    {
        self.core.subscribe(Arc::new(listener))
    }

    /// Whether two handles are the same retry.
    pub fn ptr_eq(&self, other: &Retry) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    /// Runs the future `make` returns, and again after a wait while its attempt is a failure
    /// (every error, with `retry-exceptions` and `ignore-exceptions` applied), up to
    /// `max-attempts` in all. `make` is called once per attempt.
    ///
    /// The waits are timers on the retry's scheduler: no thread is held, and a
    /// [`ManualClock`](crate::ManualClock)'s `advance` ends them. Dropping the returned future
    /// stops the retries: the attempt in flight is dropped, the wait's timer is removed, and
    /// `make` is not called again.
    pub fn call<'a, T, E, F, Fut>(
        &'a self,
        make: F,
    ) -> impl Future<Output = Result<T, CallError<E>>> + use<'a, T, E, F, Fut>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: 'static,
    {
        call::run(&self.core, &EVERY_ERROR, make)
    }

    /// [`call`](Retry::call), with `classify` deciding which attempts are retried: an attempt
    /// it calls a failure is retried, one it ignores ends the call at once with its result
    /// (for example, [`Classifier::result`] retries on an `Ok` value). The configured kinds
    /// apply on top, as [`RetryConfig::classifier`] says.
    pub fn call_with<'a, T, E, F, Fut, C>(
        &'a self,
        classify: &'a C,
        make: F,
    ) -> impl Future<Output = Result<T, CallError<E>>> + use<'a, T, E, F, Fut, C>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        call::run(&self.core, classify, make)
    }

    /// Runs `f`, and again after a wait while its attempt is a failure, up to `max-attempts`
    /// in all, as [`call`](Retry::call) does; the thread is parked during a wait, until the
    /// timer set on the retry's scheduler fires (from another thread, a
    /// [`ManualClock`](crate::ManualClock)'s `advance` ends it). Do not call it on an async
    /// runtime's worker thread: use [`call`](Retry::call) there.
    pub fn call_sync<T, E, F>(&self, f: F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
        E: 'static,
    {
        call::run_sync(&self.core, &EVERY_ERROR, f)
    }

    /// [`call_sync`](Retry::call_sync), with `classify` deciding which attempts are retried,
    /// as [`call_with`](Retry::call_with) does.
    pub fn call_sync_with<T, E, F, C>(&self, classify: &C, f: F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        call::run_sync(&self.core, classify, f)
    }

    /// Whether the retry left the registry that made it (removed): a call site that cached
    /// it then looks its name up again.
    #[allow(dead_code)] // for the registry's map of retries
    #[inline]
    pub(crate) fn is_detached(&self) -> bool {
        self.core.is_detached()
    }

    /// Stops the registry's listeners hearing this retry (it was removed from its registry;
    /// it goes on working for whoever holds it).
    #[allow(dead_code)] // for the registry's map of retries
    pub(crate) fn detach(&self) {
        self.core.detach();
    }
}

/// A handle that does not keep a retry alive: the metrics export's, whose registry hooks would
/// otherwise keep every retry (and the registry's scheduler) alive for ever.
#[cfg(feature = "metrics")]
pub(crate) struct WeakRetry(std::sync::Weak<RetryCore>);

#[cfg(feature = "metrics")]
impl Retry {
    /// A handle that does not keep this retry alive.
    pub(crate) fn downgrade(&self) -> WeakRetry {
        WeakRetry(Arc::downgrade(&self.core))
    }
}

#[cfg(feature = "metrics")]
impl WeakRetry {
    /// The retry, while it exists.
    pub(crate) fn upgrade(&self) -> Option<Retry> {
        self.0.upgrade().map(|core| Retry { core })
    }

    /// Whether this is a handle to `retry`.
    pub(crate) fn is(&self, retry: &Retry) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&retry.core))
    }

    /// Whether two handles are to the same retry.
    pub(crate) fn ptr_eq(&self, other: &WeakRetry) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

// No user code runs while a retry's lock is held and listeners' panics are caught, so a panic
// anywhere leaves the retry whole.
impl std::panic::UnwindSafe for Retry {}
impl std::panic::RefUnwindSafe for Retry {}

impl fmt::Debug for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("name", &self.name())
            .field("metrics", &self.metrics())
            .finish()
    }
}

/// A snapshot of a retry's counters, from [`Retry::metrics`]: Resilience4j's four
/// (`resilience4j_retry_calls_total` by `kind`), and the budget's refusals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryMetrics {
    succeeded_without: u64,
    succeeded_with: u64,
    failed_without: u64,
    failed_with: u64,
    refused: u64,
}

impl RetryMetrics {
    /// Calls whose first attempt succeeded (`successful_without_retry`).
    pub fn successful_calls_without_retry_attempt(&self) -> u64 {
        self.succeeded_without
    }

    /// Calls that succeeded after one or more retries (`successful_with_retry`).
    pub fn successful_calls_with_retry_attempt(&self) -> u64 {
        self.succeeded_with
    }

    /// Calls that failed without a retry (`failed_without_retry`): their error is ignored
    /// (`ignore-exceptions`, or the code's classification; also after retries, as in
    /// Resilience4j), or the budget refused their first retry.
    pub fn failed_calls_without_retry_attempt(&self) -> u64 {
        self.failed_without
    }

    /// Calls that failed after their attempts ran out (`failed_with_retry`; also with
    /// `max-attempts` 1, as in Resilience4j), or after a retry when the budget refused the
    /// next.
    pub fn failed_calls_with_retry_attempt(&self) -> u64 {
        self.failed_with
    }

    /// breaker's own: retries the budget refused (each ended its call).
    pub fn retries_refused_by_budget(&self) -> u64 {
        self.refused
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
