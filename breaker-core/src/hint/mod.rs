//! The Redis advisory hint, behind the `redis-hint` feature. Its rules, and why each one is
//! there, are in docs/REDIS_HINT.md; this module keeps them as follows.
//!
//! Breaker state stays local to the process. The hint only lets one replica's evidence open a
//! *fresh* breaker of another replica sooner:
//!
//! - **Publish.** When a breaker goes to OPEN through its own evidence (a
//!   [`TransitionCause::Evaluation`](crate::TransitionCause::Evaluation): CLOSED or HALF_OPEN
//!   -> OPEN by its thresholds), the background task sets `{prefix}{name}` with the hint TTL,
//!   once per transition. Rejected calls never refresh it (docs/REDIS_HINT.md shows how a hint
//!   refreshed that way keeps re-opening a breaker that has recovered). A manual transition (an
//!   operator's decision about this process; FORCED_OPEN is the tool for that) and an OPEN
//!   caused by a hint never publish: otherwise replicas would keep each other's hints alive for
//!   ever. A hint is never deleted; it expires, `ttl` after the evidence that wrote it (a write
//!   delayed by a Redis outage gets only the rest of the TTL, and is dropped if the breaker has
//!   left OPEN in the meantime).
//! - **Check.** Every `check_interval` the task reads the hints of the local breakers that
//!   still have **no local history**, in one pipeline, and calls
//!   [`CircuitBreaker::open_from_hint`](crate::CircuitBreaker::open_from_hint) on those with a
//!   hint. A breaker has local history from its first recorded call or its first transition
//!   not caused by a hint (evaluation, a wait elapsing, a manual transition, a reset), and keeps
//!   it for the life of the hint task. This is stricter than "no call in the current window":
//!   a breaker that recovered through its own half-open trials is CLOSED with an *empty* window,
//!   and its own stale hint must not re-open it (docs/REDIS_HINT.md tells how that goes
//!   wrong). A hint never closes a breaker, never moves HALF_OPEN, and never touches a breaker
//!   that has local evidence.
//! - **Unknown names.** Only the breakers that exist locally are read; a hint for a name this
//!   process does not use creates nothing. A breaker created later is read at the next check,
//!   and fast-opened then if its hint is alive.
//! - **Faults.** No call ever waits on Redis: the registry listener only does a non-blocking
//!   channel send, and all Redis traffic is on one background task, each command bounded by
//!   `command_timeout`. Redis down at start, killed, restarted, stalled, or holding a value of
//!   the wrong type or size: breakers behave exactly as without Redis, errors are logged at most
//!   once per 10 s per kind (and per key for bad values), and the hint resumes on its own.
//! - **Shutdown.** Dropping the [`HintHandle`] aborts the task and closes its connection;
//!   [`HintHandle::detach`] instead keeps the hint running for as long as the registry lives.
//!   Either way the task ends at its next wake-up (at most one `check_interval`) after the
//!   registry is dropped, and [`HintHandle::shutdown`] waits for it to end.
//!
//! ```no_run
//! # async fn demo() -> Result<(), breaker_core::hint::HintError> {
//! use std::time::Duration;
//! use breaker_core::{hint::RedisHint, Registry};
//!
//! let registry = Registry::new();
//! let hint = RedisHint::builder("redis://:secret@127.0.0.1:6379/0")
//!     .prefix("cb:hint:")
//!     .ttl(Duration::from_secs(30))
//!     .check_interval(Duration::from_secs(1))
//!     .command_timeout(Duration::from_millis(500))
//!     .start(&registry)?; // inside a tokio runtime
//! // ... serve; `hint` must stay alive (or call `hint.detach()`).
//! hint.shutdown().await;
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::registry::Registry;

mod error;
mod redis;
mod settings;
mod stats;
mod task;
mod url;
mod value;

pub use self::error::HintError;
pub use self::settings::{
    RedisHintBuilder, DEFAULT_CHECK_INTERVAL, DEFAULT_COMMAND_TIMEOUT, DEFAULT_PREFIX, DEFAULT_TTL,
};
pub use self::stats::HintStats;
pub use self::value::{encode_key, HINT_VALUE_TAG, MAX_HINT_VALUE};

/// Events queued for the background task before the listener starts dropping them.
const CHANNEL_CAPACITY: usize = 4096;

/// Entry point of the Redis advisory hint; see the [module documentation](self).
#[derive(Debug)]
pub struct RedisHint {
    _private: (),
}

impl RedisHint {
    /// A builder for a hint on the Redis server at `url`: `redis://` or `rediss://` (TLS,
    /// with the `redis-hint-tls` feature), with the user and password in the URL if the server
    /// wants them (`redis://user:password@host:6379/0`).
    pub fn builder(url: impl Into<String>) -> RedisHintBuilder {
        RedisHintBuilder::new(url.into())
    }
}

impl RedisHintBuilder {
    /// Subscribes to `registry` and starts the background task on the current tokio runtime.
    ///
    /// Fails only on a bad URL or option, or outside a tokio runtime. Redis itself is reached
    /// in the background: an unreachable server is logged and retried, never an error here.
    pub fn start(self, registry: &Registry) -> Result<HintHandle, HintError> {
        let settings = self.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| HintError::NoRuntime)?;
        let client = redis::open_client(&settings.url)?;
        let ledger = Arc::new(task::Ledger::default());
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let subscription = task::subscribe(registry, tx.clone(), Arc::clone(&ledger));
        let task = runtime.spawn(task::run(task::Task::new(
            settings,
            client,
            registry.downgrade(),
            subscription,
            rx,
            Arc::clone(&ledger),
        )));
        Ok(HintHandle {
            tx,
            task: Some(task),
            ledger,
        })
    }
}

/// The running hint. Dropping it stops the hint (see [`detach`](HintHandle::detach)).
#[must_use = "dropping the HintHandle stops the hint at once; keep it, or call detach()"]
pub struct HintHandle {
    tx: mpsc::Sender<task::Msg>,
    task: Option<JoinHandle<()>>,
    ledger: Arc<task::Ledger>,
}

impl HintHandle {
    /// Handles every event published so far (writing the hints they call for), then reads the
    /// hints once, as the periodic check does. Useful at start-up and in tests.
    ///
    /// Returns an error if Redis could not be reached or did not answer within the command
    /// timeout, or if the hint has stopped; the breakers are unaffected either way.
    pub async fn check_now(&self) -> Result<(), HintError> {
        let (done, answer) = oneshot::channel();
        self.tx
            .send(task::Msg::Check(done))
            .await
            .map_err(|_| HintError::Stopped)?;
        answer.await.map_err(|_| HintError::Stopped)?
    }

    /// Counters of what the hint has done so far.
    pub fn stats(&self) -> HintStats {
        self.ledger.stats()
    }

    /// Whether the background task is still running.
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Lets the hint run for as long as the registry lives, without this handle.
    pub fn detach(mut self) {
        self.task = None;
    }

    /// Stops the hint and waits until its task has ended and its connection is closed.
    pub async fn shutdown(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for HintHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl fmt::Debug for HintHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HintHandle")
            .field("running", &self.is_running())
            .field("stats", &self.stats())
            .finish()
    }
}
