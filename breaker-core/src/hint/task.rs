//! The registry listener (a non-blocking send, nothing more) and the background task that does
//! everything else: it keeps the local-history record, writes hints and reads them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tokio::time::MissedTickBehavior;

use super::error::HintError;
use super::redis::{Conn, Read};
use super::settings::Settings;
use super::stats::HintStats;
use super::value::{encode_key, parse_value};
use crate::breaker::CircuitBreaker;
use crate::concurrent_map::ConcurrentMap;
use crate::event::listeners::Subscription;
use crate::event::{Event, EventKind, TransitionCause};
use crate::log_safe::LogSafe;
use crate::registry::{Registry, WeakRegistry};
use crate::state::State;

/// How often one kind of problem is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// Keys whose last log time is remembered; past this the memory is cleared.
const THROTTLE_KEYS: usize = 1024;
const TARGET: &str = "breaker::hint";

/// What the listener and the handle send to the task.
pub(super) enum Msg {
    /// A transition not caused by a hint.
    Transition {
        name: Arc<str>,
        to: State,
        cause: TransitionCause,
        at: Instant,
    },
    /// Local evidence that is not a transition: a first recorded call, a reset.
    Local { name: Arc<str> },
    /// `HintHandle::check_now`.
    Check(oneshot::Sender<Result<(), HintError>>),
}

/// What the listener, the task and the handle share: the counters behind [`HintStats`], whether
/// Redis answered last, and the record of breakers with local history.
pub(super) struct Ledger {
    checks: AtomicU64,
    published: AtomicU64,
    fast_opened: AtomicU64,
    ignored_values: AtomicU64,
    redis_errors: AtomicU64,
    dropped_events: AtomicU64,
    connected: AtomicBool,
    /// Breakers with local history, by name. Grow-only; the listener reads it without a lock
    /// so that it sends a breaker's first calls to the task only until the task has them.
    history: ConcurrentMap<Arc<str>, ()>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            checks: AtomicU64::new(0),
            published: AtomicU64::new(0),
            fast_opened: AtomicU64::new(0),
            ignored_values: AtomicU64::new(0),
            redis_errors: AtomicU64::new(0),
            dropped_events: AtomicU64::new(0),
            connected: AtomicBool::new(false),
            history: ConcurrentMap::new(),
        }
    }
}

impl Ledger {
    pub(super) fn stats(&self) -> HintStats {
        HintStats {
            checks: self.checks.load(Ordering::Relaxed),
            published: self.published.load(Ordering::Relaxed),
            fast_opened: self.fast_opened.load(Ordering::Relaxed),
            ignored_values: self.ignored_values.load(Ordering::Relaxed),
            redis_errors: self.redis_errors.load(Ordering::Relaxed),
            dropped_events: self.dropped_events.load(Ordering::Relaxed),
            connected: self.connected.load(Ordering::Relaxed),
        }
    }

    fn has_history(&self, name: &str) -> bool {
        self.history.get(name).is_some()
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Subscribes the listener. It runs on the caller's thread for every event, so it only
/// filters and does a non-blocking `try_send`; a full queue drops the event and counts it.
pub(super) fn subscribe(
    registry: &Registry,
    tx: mpsc::Sender<Msg>,
    ledger: Arc<Ledger>,
) -> Subscription {
    registry.subscribe(move |event: &Event| {
        let msg = match event.kind() {
            EventKind::StateTransition { to, .. } => {
                let cause = event.cause().unwrap_or(TransitionCause::Manual);
                if cause == TransitionCause::Hint {
                    return; // the task made it, and logs it
                }
                Msg::Transition {
                    name: Arc::from(event.breaker_name()),
                    to,
                    cause,
                    at: Instant::now(),
                }
            }
            // The first call of an empty window (a new breaker, or a time window that emptied):
            // after the task has it, the lock-free lookup stops further sends.
            EventKind::Success { .. } | EventKind::Error { .. }
                if event.metrics().buffered_calls <= 1
                    && !ledger.has_history(event.breaker_name()) =>
            {
                Msg::Local {
                    name: Arc::from(event.breaker_name()),
                }
            }
            EventKind::Reset if !ledger.has_history(event.breaker_name()) => Msg::Local {
                name: Arc::from(event.breaker_name()),
            },
            _ => return,
        };
        if tx.try_send(msg).is_err() {
            Ledger::bump(&ledger.dropped_events);
        }
    })
}

/// The background task's state.
pub(super) struct Task {
    settings: Settings,
    conn: Conn,
    registry: WeakRegistry,
    /// Unsubscribes the listener when the task ends (or is aborted).
    _subscription: Subscription,
    rx: mpsc::Receiver<Msg>,
    ledger: Arc<Ledger>,
    /// OPEN transitions from local evidence whose hint is not written yet, with when they
    /// happened (the hint expires `ttl` after that, however late it is written).
    pending: HashMap<Arc<str>, Instant>,
    throttle: Throttle,
    dropped_seen: u64,
    /// Whether the last Redis operation failed (to log the recovery once).
    failing: bool,
    /// Check requests that arrived during a check, for the next one.
    deferred: Vec<oneshot::Sender<Result<(), HintError>>>,
}

impl Task {
    pub(super) fn new(
        settings: Settings,
        client: redis::Client,
        registry: WeakRegistry,
        subscription: Subscription,
        rx: mpsc::Receiver<Msg>,
        ledger: Arc<Ledger>,
    ) -> Task {
        Task {
            conn: Conn::new(client, settings.command_timeout),
            settings,
            registry,
            _subscription: subscription,
            rx,
            ledger,
            pending: HashMap::new(),
            throttle: Throttle::default(),
            dropped_seen: 0,
            failing: false,
            deferred: Vec::new(),
        }
    }

    fn mark(&self, name: &str) {
        if !self.ledger.has_history(name) {
            self.ledger
                .history
                .get_or_insert_with(Arc::from(name), || ());
        }
    }

    /// Applies an event message. Returns a `Check` request for the caller to run.
    fn apply(&mut self, msg: Msg) -> Option<oneshot::Sender<Result<(), HintError>>> {
        match msg {
            Msg::Transition {
                name,
                to,
                cause,
                at,
            } => {
                self.mark(&name);
                if to == State::Open && cause == TransitionCause::Evaluation {
                    self.pending.insert(name, at);
                } else {
                    // It left OPEN (or went there by hand): a hint not yet written is stale.
                    self.pending.remove(&name);
                }
                None
            }
            Msg::Local { name } => {
                self.mark(&name);
                None
            }
            Msg::Check(done) => Some(done),
        }
    }

    /// Applies every queued event; returns the check requests found among them.
    fn drain(&mut self) -> Vec<oneshot::Sender<Result<(), HintError>>> {
        let mut checks = Vec::new();
        while let Ok(msg) = self.rx.try_recv() {
            checks.extend(self.apply(msg));
        }
        let dropped = self.ledger.dropped_events.load(Ordering::Relaxed);
        if dropped > self.dropped_seen {
            self.dropped_seen = dropped;
            if let Some(suppressed) = self.throttle.allow("dropped") {
                tracing::warn!(
                    target: TARGET,
                    dropped,
                    suppressed,
                    "breaker: the Redis hint fell behind and dropped breaker events; \
                     some hints may not have been published"
                );
            }
        }
        checks
    }

    fn redis_failed(&mut self, what: &str, error: String) -> HintError {
        Ledger::bump(&self.ledger.redis_errors);
        self.failing = true;
        self.ledger
            .connected
            .store(self.conn.is_connected(), Ordering::Relaxed);
        if let Some(suppressed) = self.throttle.allow("redis") {
            tracing::warn!(
                target: TARGET,
                error = %error,
                suppressed,
                "breaker: Redis hint {what} failed; breakers go on with local state only"
            );
        }
        HintError::Redis(format!("{what}: {error}"))
    }

    fn redis_ok(&mut self, new_connection: bool) {
        self.ledger.connected.store(true, Ordering::Relaxed);
        if new_connection || self.failing {
            if self.failing {
                tracing::info!(target: TARGET, "breaker: Redis hint reconnected");
            } else {
                tracing::debug!(target: TARGET, "breaker: Redis hint connected");
            }
            self.failing = false;
        }
    }

    /// Writes the pending hints, in one round trip.
    async fn flush(&mut self) -> Result<(), HintError> {
        let ttl = self.settings.ttl;
        self.pending.retain(|_, at| at.elapsed() < ttl);
        if self.pending.is_empty() || self.conn.is_backing_off() {
            return Ok(()); // a backing-off connection is retried, pending hints too, at the next check
        }
        let names: Vec<Arc<str>> = self.pending.keys().cloned().collect();
        let writes: Vec<(String, u64)> = names
            .iter()
            .map(|name| {
                let left = ttl.saturating_sub(self.pending[name].elapsed());
                let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1);
                (encode_key(&self.settings.prefix, name), ms)
            })
            .collect();
        match self.conn.set_all(&writes, &self.settings.value).await {
            Ok(new) => {
                self.redis_ok(new);
                for (name, (key, ttl_ms)) in names.iter().zip(&writes) {
                    self.pending.remove(name);
                    Ledger::bump(&self.ledger.published);
                    tracing::debug!(target: TARGET, breaker = %LogSafe(name), key = %key, ttl_ms, "breaker: hint published");
                }
                Ok(())
            }
            Err(e) => Err(self.redis_failed("publish", e)),
        }
    }

    /// Checks until every request is answered: `waiting` (and requests found among the
    /// queued events) get the result of a check that started after they arrived.
    async fn check(
        &mut self,
        mut waiting: Vec<oneshot::Sender<Result<(), HintError>>>,
    ) -> Result<(), HintError> {
        loop {
            self.conn.allow_retry();
            waiting.extend(self.drain());
            let result = self.check_inner().await;
            for done in waiting.drain(..) {
                let _ = done.send(result.clone());
            }
            // Requests that arrived while this check ran need a check of their own.
            if self.deferred.is_empty() || result == Err(HintError::Stopped) {
                return result;
            }
            waiting = std::mem::take(&mut self.deferred);
        }
    }

    async fn check_inner(&mut self) -> Result<(), HintError> {
        self.flush().await?;
        let Some(registry) = self.registry.upgrade() else {
            return Err(HintError::Stopped);
        };
        let mut candidates: Vec<CircuitBreaker> = Vec::new();
        for breaker in registry.breakers() {
            if self.ledger.has_history(breaker.name()) {
                continue;
            }
            let m = breaker.metrics();
            if m.state == State::Closed && m.buffered_calls == 0 {
                candidates.push(breaker);
            } else {
                // Calls in its window, or a state it reached before the hint started (or by
                // a hint: it can only leave OPEN through local evidence anyway).
                self.mark(breaker.name());
            }
        }
        drop(registry); // never keep the registry alive across an await
        if !candidates.is_empty() {
            let keys: Vec<String> = candidates
                .iter()
                .map(|b| encode_key(&self.settings.prefix, b.name()))
                .collect();
            let reads = match self.conn.read_all(&keys).await {
                Ok((new, reads)) => {
                    self.redis_ok(new);
                    reads
                }
                Err(e) => return Err(self.redis_failed("check", e)),
            };
            // Events that arrived while Redis answered: local evidence wins over the hint.
            let late = self.drain();
            self.deferred.extend(late);
            for ((breaker, key), read) in candidates.iter().zip(&keys).zip(reads) {
                self.consider(breaker, key, read);
            }
        } else {
            // Nothing to read: a PING, so that an outage shows in the log and the stats.
            match self.conn.ping().await {
                Ok(new) => self.redis_ok(new),
                Err(e) => return Err(self.redis_failed("check", e)),
            }
        }
        Ledger::bump(&self.ledger.checks);
        Ok(())
    }

    fn consider(&mut self, breaker: &CircuitBreaker, key: &str, read: Read) {
        let bad = match read {
            Read::Absent => return,
            Read::Value(value) => match parse_value(&value) {
                Ok(origin) => {
                    if !self.ledger.has_history(breaker.name()) && breaker.open_from_hint() {
                        Ledger::bump(&self.ledger.fast_opened);
                        tracing::info!(
                            target: TARGET,
                            breaker = %LogSafe(breaker.name()),
                            key = %key,
                            origin = %origin,
                            "breaker: fast-opened by another replica's Redis hint \
                             (no local call history)"
                        );
                    }
                    return;
                }
                Err(why) => why,
            },
            Read::Refused(error) => format!("not readable as a string: {error}"),
        };
        Ledger::bump(&self.ledger.ignored_values);
        if let Some(suppressed) = self.throttle.allow(key) {
            tracing::warn!(
                target: TARGET,
                breaker = %LogSafe(breaker.name()),
                key = %key,
                reason = %bad,
                suppressed,
                "breaker: ignored a malformed Redis hint"
            );
        }
    }
}

/// The task: events and check requests as they come, a check every `check_interval`. Ends when
/// the registry is gone (or the task is aborted by its handle).
pub(super) async fn run(mut task: Task) {
    let mut tick = tokio::time::interval(task.settings.check_interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick is immediate: a check at start, before any request is taken.
    tick.tick().await;
    if task.check(Vec::new()).await == Err(HintError::Stopped) {
        return;
    }
    loop {
        let outcome = tokio::select! {
            msg = task.rx.recv() => match msg {
                None => break,
                Some(msg) => {
                    let mut waiting: Vec<_> = task.apply(msg).into_iter().collect();
                    waiting.extend(task.drain());
                    if waiting.is_empty() {
                        // Publish promptly, but leave reconnecting to the checks.
                        task.flush().await
                    } else {
                        task.check(waiting).await
                    }
                }
            },
            _ = tick.tick() => task.check(Vec::new()).await,
        };
        if outcome == Err(HintError::Stopped) || task.registry.upgrade().is_none() {
            break;
        }
    }
    task.ledger.connected.store(false, Ordering::Relaxed);
    tracing::debug!(target: TARGET, "breaker: Redis hint stopped");
}

/// Logs one kind of problem at most once per [`LOG_EVERY`], counting what it held back.
#[derive(Default)]
struct Throttle {
    last: HashMap<String, (Instant, u64)>,
}

impl Throttle {
    /// `Some(suppressed since the last log)` if `key` may be logged now.
    fn allow(&mut self, key: &str) -> Option<u64> {
        let now = Instant::now();
        if let Some((at, suppressed)) = self.last.get_mut(key) {
            if now.duration_since(*at) < LOG_EVERY {
                *suppressed += 1;
                return None;
            }
            let n = *suppressed;
            *at = now;
            *suppressed = 0;
            return Some(n);
        }
        if self.last.len() >= THROTTLE_KEYS {
            self.last.clear();
        }
        self.last.insert(key.to_owned(), (now, 0));
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_logs_once_per_period_per_key() {
        let mut t = Throttle::default();
        assert_eq!(t.allow("a"), Some(0));
        assert_eq!(t.allow("a"), None);
        assert_eq!(t.allow("a"), None);
        assert_eq!(t.allow("b"), Some(0));
        let (at, _) = t.last.get_mut("a").unwrap();
        *at -= LOG_EVERY;
        assert_eq!(t.allow("a"), Some(2));
    }
}
