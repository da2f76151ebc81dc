//! The loan service's side: the bureau client behind `#[circuit_breaker]` and `#[bulkhead]`
//! (and, for `--retry`, a retry around them), the contract's fallback (a recent cached score,
//! else the durable manual-review queue), on the parts of store.rs.

use std::collections::HashSet;
use std::error::Error as _;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use breaker::{
    bulkhead, circuit_breaker, BulkheadFull, CallError, CallNotPermitted, CallTimedOut, Classifier,
    ErrorKind, Registry,
};
use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use tokio::time::Instant;

use super::store::{ReviewQueue, ScoreCache};
use super::wire::{Wire, REQUEST_ID};

/// The breaker's name, in the attribute and in examples/credit_bureau.toml.
pub(crate) const BREAKER: &str = "credit_bureau_cb";

/// The bulkhead's name, in the attribute and in examples/credit_bureau.toml: the breaker's, as
/// a Spring service names one backend alike in every Resilience4j module.
pub(crate) const BULKHEAD: &str = "credit_bureau_cb";

/// The retry's name, in examples/credit_bureau.toml: the breaker's, as for the bulkhead. The
/// game day's `--retry budget` runs it as the file has it, with its budget.
pub(crate) const RETRY: &str = "credit_bureau_cb";

/// The same retry without its budget, made in code from the file's (game.rs's
/// `load_registry`): the contract's rejected option A, "timeouts plus three retries"
/// (`--retry option-a`).
pub(crate) const RETRY_OPTION_A: &str = "credit_bureau_option_a";

/// How a call to the bureau failed.
#[derive(Debug)]
pub(crate) enum BureauError {
    /// The bureau answered with this non-200 status.
    Status(u16),
    /// The client's own timeout fired: Java's `SocketTimeoutException`. (The breaker's
    /// `timeout-duration` is shorter and normally cancels the call first, as
    /// `CallError::TimedOut`.)
    SocketTimeout,
    /// The connection could not be made: `ConnectException`.
    Connect(String),
    /// The exchange broke off, or the answer was not the JSON credit report we expect.
    Protocol(String),
    /// The breaker refused one attempt of a retried call (the attribute's way of returning
    /// `CallError::Rejected` without a fallback).
    Refused(CallNotPermitted),
    /// The breaker's `timeout-duration` cancelled one attempt of a retried call.
    TimedOut(CallTimedOut),
    /// The bulkhead refused one attempt of a retried call.
    BulkheadFull(BulkheadFull),
}

impl From<CallNotPermitted> for BureauError {
    fn from(refused: CallNotPermitted) -> Self {
        BureauError::Refused(refused)
    }
}

impl From<CallTimedOut> for BureauError {
    fn from(timed_out: CallTimedOut) -> Self {
        BureauError::TimedOut(timed_out)
    }
}

impl From<BulkheadFull> for BureauError {
    fn from(full: BulkheadFull) -> Self {
        BureauError::BulkheadFull(full)
    }
}

impl BureauError {
    /// The error as the fallback takes it: an attempt the breaker or the bulkhead refused, or
    /// the timeout cancelled, as the guard's own [`CallError`] variant.
    fn into_call_error(self) -> CallError<BureauError> {
        match self {
            BureauError::Refused(refused) => CallError::Rejected(refused),
            BureauError::TimedOut(timed_out) => CallError::TimedOut(timed_out),
            BureauError::BulkheadFull(full) => CallError::BulkheadFull(full),
            other => CallError::Inner(other),
        }
    }
}

impl fmt::Display for BureauError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BureauError::Status(s) => write!(f, "bureau answered HTTP {s}"),
            BureauError::SocketTimeout => write!(f, "the bureau client timed out"),
            BureauError::Connect(e) => write!(f, "cannot connect to the bureau: {e}"),
            BureauError::Protocol(e) => write!(f, "bad answer from the bureau: {e}"),
            BureauError::Refused(e) => e.fmt(f),
            BureauError::TimedOut(e) => e.fmt(f),
            BureauError::BulkheadFull(e) => e.fmt(f),
        }
    }
}

/// The error kinds examples/credit_bureau.toml names in `record-exceptions` and
/// `ignore-exceptions`; register them before loading the file.
pub(crate) fn error_kinds() -> Vec<ErrorKind> {
    vec![
        ErrorKind::new("ServerError", |e: &BureauError| {
            matches!(e, BureauError::Status(500..=599))
        }),
        ErrorKind::new("SocketTimeout", |e: &BureauError| {
            matches!(e, BureauError::SocketTimeout)
        }),
        ErrorKind::new("ConnectException", |e: &BureauError| {
            matches!(e, BureauError::Connect(_))
        }),
        ErrorKind::new("ProtocolError", |e: &BureauError| {
            matches!(e, BureauError::Protocol(_))
        }),
        ErrorKind::new("ClientError", |e: &BureauError| {
            matches!(e, BureauError::Status(400..=499))
        }),
    ]
}

/// The attribute's `record` predicate: the file's `record-exceptions` (all errors if empty).
fn recorded_by_config(e: &BureauError) -> bool {
    let kinds = Registry::global().config_for(BREAKER).record_exceptions();
    kinds.is_empty() || kinds.iter().any(|k| k.matches(e))
}

/// The attribute's `ignore` predicate: the file's `ignore-exceptions` (the 4xx).
fn ignored_by_config(e: &BureauError) -> bool {
    let kinds = Registry::global().config_for(BREAKER).ignore_exceptions();
    kinds.iter().any(|k| k.matches(e))
}

/// One loan application asking for a credit check.
#[derive(Clone, Debug)]
pub(crate) struct Application {
    /// The application's own id (what the review queue holds).
    pub(crate) id: String,
    /// The applicant's tax id (what the bureau is asked about).
    pub(crate) tax_id: String,
    /// When the loan service received it, on Tokio's clock (the run's).
    pub(crate) received: Instant,
}

/// What the credit check decided, when it did not end in a 4xx.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The bureau's own answer.
    Bureau {
        /// The score.
        score: u32,
    },
    /// A recent cached score (`X-Credit-Source: CACHED-FALLBACK`).
    Cached {
        /// The score.
        score: u32,
        /// How old it is, in days.
        age_days: u64,
    },
    /// Queued for manual review, the row committed: "202 pending manual review".
    Queued,
    /// The queue was unavailable (refused, failed, or silent past the store timeout): 503, the
    /// application was not captured. The text is the store's error, naming the queue (e.g.
    /// "the manual-review queue (PostgreSQL at 127.0.0.1:5432/postgres) is unavailable: ...").
    Unavailable(String),
}

/// Why the fallback answered an application instead of the bureau.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FallbackCause {
    /// The breaker refused the call (OPEN, or HALF_OPEN with its trials under way).
    Refused,
    /// The bulkhead refused the call: as many calls to the bureau were under way as it allows.
    BulkheadFull,
    /// `timeout-duration` cancelled the call.
    TimedOut,
    /// The call failed: a 5xx, a socket or a protocol error.
    Failed,
}

impl FallbackCause {
    /// Every cause, in the order the report prints them (and the picture draws them).
    pub(crate) const ALL: [FallbackCause; 4] = [
        FallbackCause::Refused,
        FallbackCause::BulkheadFull,
        FallbackCause::TimedOut,
        FallbackCause::Failed,
    ];

    /// The report's name for it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            FallbackCause::Refused => "refused by OPEN/HALF_OPEN",
            FallbackCause::BulkheadFull => "bulkhead full",
            FallbackCause::TimedOut => "timed out",
            FallbackCause::Failed => "5xx/socket error",
        }
    }
}

/// Counters the report and the game-day test read.
#[derive(Debug, Default)]
pub(crate) struct ClientStats {
    /// Calls that went on to reach for a socket to the bureau (a new connection or one from
    /// reqwest's pool), counted before the request is built.
    pub(crate) sockets_opened: AtomicU64,
    /// Fallbacks, by cause (indexed in the order of [`FallbackCause::ALL`]).
    pub(crate) fallbacks: [AtomicU64; FallbackCause::ALL.len()],
    /// Of the fallbacks for a call cancelled by `timeout-duration`, the ones whose request to
    /// the bureau was still under way when their fallback ran: a request that outlived its
    /// cancellation (a thread or task left waiting on a dead bureau). The breaker drops the
    /// call's future before the fallback, so this stays 0.
    pub(crate) outlived_timeout: AtomicU64,
    /// The applications whose request to the bureau is under way (see [`InFlight`]).
    pub(crate) in_flight: Mutex<HashSet<String>>,
    /// The most requests to the bureau ever under way at once: the most workers the bureau
    /// held (each request holds the worker that waits for it).
    pub(crate) most_in_flight: AtomicUsize,
    /// Time from receiving an application to its fallback starting, for refused calls.
    pub(crate) fail_fast: Mutex<Vec<Duration>>,
    /// The ids of the applications answered 202 (the queue must hold exactly these).
    pub(crate) queued_ids: Mutex<Vec<String>>,
    /// Cache operations that failed: a lookup (answered as a miss, the application going
    /// straight to the queue), storing a fresh score, or counting a hit.
    pub(crate) cache_errors: AtomicU64,
}

impl ClientStats {
    /// The fallbacks for `cause` so far.
    pub(crate) fn fallbacks(&self, cause: FallbackCause) -> u64 {
        self.fallbacks[cause as usize].load(Ordering::SeqCst)
    }
}

/// The bureau's answer to `GET /v2/credit-reports/{tax_id}` (200).
#[derive(Debug, Deserialize)]
struct CreditReport {
    tax_id: String,
    score: u32,
}

/// What hears of each fallback as it starts (the game day's timeline).
type FallbackListener = Box<dyn Fn(FallbackCause) + Send + Sync>;

/// The loan service's credit check: the protected call of docs/CREDIT_BUREAU.md §1.
pub(crate) struct CreditCheck {
    http: reqwest::Client,
    /// `http://{bureau}/v2/credit-reports`; each call appends the tax id as a path segment.
    reports: Url,
    /// Whether the calls go through the bulkhead as well as the breaker.
    bulkhead: bool,
    /// The retry around the breaker, if the calls are retried.
    retry: Option<&'static str>,
    cache: ScoreCache,
    queue: ReviewQueue,
    stats: ClientStats,
    on_fallback: Option<FallbackListener>,
    /// Told of each request from its send to its answer, and of each store operation (see
    /// [`Wire`]).
    wire: Arc<Wire>,
    /// The run's clock, for the time an application is queued at and its hit's bucket.
    clock: RunClock,
}

/// The run's clock on the wall: its start on the wall clock plus the time since, on Tokio's
/// clock (so on the paused clock of tests/game_day.rs too, the times a row is queued at line
/// up with the script), and the buckets the cache's hits are counted in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunClock {
    /// The run's start on the wall clock.
    pub(crate) started: SystemTime,
    /// The same moment on Tokio's clock.
    pub(crate) start: Instant,
    /// One bucket of hits (the game day's timeline's).
    pub(crate) bucket: Duration,
    /// The number of buckets: a later hit is counted in the last one.
    pub(crate) buckets: usize,
}

impl RunClock {
    /// A clock starting now, in buckets of a second.
    fn starting_now() -> RunClock {
        RunClock {
            started: SystemTime::now(),
            start: Instant::now(),
            bucket: Duration::from_secs(1),
            buckets: usize::MAX,
        }
    }

    /// Now, on the run's clock.
    pub(crate) fn now(&self) -> SystemTime {
        self.started + self.start.elapsed()
    }

    /// The bucket now is in.
    fn bucket_now(&self) -> usize {
        let index = self.start.elapsed().as_secs_f64() / self.bucket.as_secs_f64();
        (index as usize).min(self.buckets.saturating_sub(1))
    }
}

impl CreditCheck {
    /// A credit check against the bureau at `bureau` (plain HTTP), whose calls the breaker
    /// cancels after `timeout` (the configuration's `timeout-duration`), with its fallback's
    /// review queue and score cache.
    pub(crate) fn new(
        bureau: SocketAddr,
        timeout: Duration,
        queue: ReviewQueue,
        cache: ScoreCache,
    ) -> io::Result<Self> {
        let http = reqwest::Client::builder()
            // The bureau is on this machine: a proxy from the environment must not see it.
            .no_proxy()
            .connect_timeout(timeout)
            // A backstop, for a configuration without `timeout-duration`: the breaker's
            // timeout is half of this and cancels the call first. Equal timeouts would race,
            // and the call would end as a failure or as a timeout by chance.
            .timeout(timeout.saturating_mul(2))
            .build()
            .map_err(|e| io::Error::other(chain(&e)))?;
        let reports = Url::parse(&format!("http://{bureau}/v2/credit-reports"))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(CreditCheck {
            http,
            reports,
            bulkhead: true,
            retry: None,
            cache,
            queue,
            stats: ClientStats::default(),
            on_fallback: None,
            wire: Wire::new(false),
            clock: RunClock::starting_now(),
        })
    }

    /// Whether [`Self::check`] goes through the bulkhead (`true` unless this says otherwise):
    /// `false` for the game day's run without one (`--no-bulkhead`).
    pub(crate) fn with_bulkhead(mut self, bulkhead: bool) -> Self {
        self.bulkhead = bulkhead;
        self
    }

    /// Retries [`Self::check`]'s calls with the registry's retry `name` (the game day's
    /// `--retry`), around the breaker and the bulkhead; `None` (the default): no retry. The
    /// retried calls always go through the bulkhead.
    pub(crate) fn with_retry(mut self, name: Option<&'static str>) -> Self {
        self.retry = name;
        self
    }

    /// Tells `wire` of each request to the bureau (the game day on Tokio's paused clock); a
    /// check without one tells nothing.
    pub(crate) fn with_wire(mut self, wire: Arc<Wire>) -> Self {
        self.wire = wire;
        self
    }

    /// Queues applications at, and counts cache hits by, `clock` (the game day's); a check
    /// without one uses a clock started when it was made, in buckets of a second.
    pub(crate) fn with_clock(mut self, clock: RunClock) -> Self {
        self.clock = clock;
        self
    }

    /// Calls `listener` with the cause of every fallback, as it starts.
    pub(crate) fn on_fallback(
        mut self,
        listener: impl Fn(FallbackCause) + Send + Sync + 'static,
    ) -> Self {
        self.on_fallback = Some(Box::new(listener));
        self
    }

    /// The score cache (to seed it, and to read its hits back).
    pub(crate) fn cache(&self) -> &ScoreCache {
        &self.cache
    }

    /// The counters.
    pub(crate) fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The review queue.
    pub(crate) fn queue(&self) -> &ReviewQueue {
        &self.queue
    }

    /// The credit check of one application, through the breaker and (unless
    /// [`Self::with_bulkhead`] said otherwise) the bulkhead. A 4xx comes back as
    /// `Err(BureauError::Status(4xx))` (ignored by the breaker); everything else that is not a
    /// bureau answer becomes a cached score or a queued application in [`Self::degrade`].
    ///
    /// A bureau answer's score is cached after the protected call, outside it: storing it is
    /// not the bureau's latency, and a cache that is down must not fail a call that succeeded.
    pub(crate) async fn check(&self, app: &Application) -> Result<Decision, BureauError> {
        let decision = match self.retry {
            Some(retry) => self.credit_report_retried(retry, app).await,
            None if self.bulkhead => self.credit_report(app).await,
            None => self.credit_report_without_bulkhead(app).await,
        }?;
        if let Decision::Bureau { score } = decision {
            let stored = {
                let _io = self.wire.store_io();
                self.cache.put(&app.tax_id, score, self.clock.now()).await
            };
            if stored.is_err() {
                self.stats.cache_errors.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(decision)
    }

    /// The call retried, in Spring's order: Retry(CircuitBreaker(Bulkhead(call))), with the
    /// one fallback outside the retry, so that it sees the call's end after every attempt (a
    /// fallback inside would answer the first failure and leave nothing to retry).
    ///
    /// Each attempt goes through the breaker and the bulkhead afresh ([`Self::attempt`]). A
    /// timeout, a 5xx, a socket error and a bulkhead's refusal are retried; a 4xx is not (the
    /// retry's `ignore-exceptions` in examples/credit_bureau.toml), nor is the breaker's
    /// refusal: an OPEN breaker says to stop calling, and a retry would only ask it again.
    async fn credit_report_retried(
        &self,
        retry: &str,
        app: &Application,
    ) -> Result<Decision, BureauError> {
        let not_retried =
            Classifier::new().ignore(|e: &BureauError| matches!(e, BureauError::Refused(_)));
        let ended = Registry::global()
            .retry(retry)
            .call_with(&not_retried, || self.attempt(app))
            .await;
        match ended {
            Ok(decision) => Ok(decision),
            Err(CallError::Inner(e)) => self.degrade(app, e.into_call_error()).await,
            Err(other) => self.degrade(app, other).await,
        }
    }

    /// One attempt of a retried call: the breaker around the bulkhead, as [`Self::credit_report`]
    /// but without its fallback (the retry's caller has it), so a refusal or a timeout comes
    /// back as a [`BureauError`] the retry can tell apart.
    #[circuit_breaker(
        name = "credit_bureau_cb",
        record = recorded_by_config,
        ignore = ignored_by_config
    )]
    #[bulkhead(name = "credit_bureau_cb")]
    async fn attempt(&self, app: &Application) -> Result<Decision, BureauError> {
        self.ask_bureau(app).await
    }

    /// `GET /v2/credit-reports/{tax_id}` through the breaker and, inside it, the bulkhead
    /// (Spring's order whatever the order written): a call the breaker refuses never takes a
    /// place in the bulkhead, the breaker's `timeout-duration` covers the call, and a call the
    /// bulkhead refuses is a failure the breaker records (examples/credit_bureau.toml names
    /// `BulkheadFullException` in `record-exceptions`), answered by the fallback.
    #[circuit_breaker(
        name = "credit_bureau_cb",
        fallback = "degrade",
        record = recorded_by_config,
        ignore = ignored_by_config
    )]
    #[bulkhead(name = "credit_bureau_cb")]
    async fn credit_report(&self, app: &Application) -> Result<Decision, BureauError> {
        self.ask_bureau(app).await
    }

    /// The same call through the breaker alone: the game day without a bulkhead. Attributes are
    /// fixed when the code is compiled, so the run without one needs a function of its own.
    #[circuit_breaker(
        name = "credit_bureau_cb",
        fallback = "degrade",
        record = recorded_by_config,
        ignore = ignored_by_config
    )]
    async fn credit_report_without_bulkhead(
        &self,
        app: &Application,
    ) -> Result<Decision, BureauError> {
        self.ask_bureau(app).await
    }

    /// The protected call's body: the bureau's score ([`Self::check`] caches it).
    async fn ask_bureau(&self, app: &Application) -> Result<Decision, BureauError> {
        // Counted here, inside the permitted call, before any socket is used: the game day
        // checks that this never moves while the breaker is OPEN (docs/CREDIT_BUREAU.md §1).
        self.stats.sockets_opened.fetch_add(1, Ordering::SeqCst);
        // Nothing below runs on a thread of its own: when `timeout-duration` passes, the
        // breaker drops this future, which drops reqwest's request and closes its connection.
        let score = self.get_report(app).await?;
        Ok(Decision::Bureau { score })
    }

    /// `GET /v2/credit-reports/{tax_id}`, unprotected: the score on 200, the status otherwise,
    /// and a [`BureauError::Protocol`] naming what was wrong with a 200 that is not a report.
    pub(crate) async fn get_report(&self, app: &Application) -> Result<u32, BureauError> {
        let _in_flight = InFlight::enter(&self.stats, &app.id);
        let tax_id = app.tax_id.as_str();
        let mut url = self.reports.clone();
        url.path_segments_mut()
            .map_err(|()| BureauError::Protocol(format!("{} takes no path", self.reports)))?
            // Percent-encoded: a `/` or `?` in a tax id stays inside its segment.
            .push(tax_id);
        let sent = self.wire.send();
        let response = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .header(REQUEST_ID, sent.id())
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if status != StatusCode::OK {
            sent.landed();
            return Err(BureauError::Status(status.as_u16()));
        }
        let body = response.bytes().await.map_err(transport)?;
        sent.landed();
        let report: CreditReport = serde_json::from_slice(&body).map_err(|e| {
            BureauError::Protocol(format!(
                "the 200 body is not a credit report ({e}): {:?}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ))
        })?;
        if report.tax_id != tax_id {
            return Err(BureauError::Protocol(format!(
                "asked about {tax_id:?}, the report is about {:?}",
                report.tax_id
            )));
        }
        Ok(report.score)
    }

    /// The contract's fallback (docs/CREDIT_BUREAU.md §6): a 4xx goes back to the applicant as
    /// it is; any other failure, timeout or refusal (the breaker's or the bulkhead's) answers
    /// with a cached score younger than 30 days, else queues the application durably and
    /// answers "202 pending manual review".
    async fn degrade(
        &self,
        app: &Application,
        err: CallError<BureauError>,
    ) -> Result<Decision, BureauError> {
        let cause = match err {
            CallError::Inner(e @ BureauError::Status(400..=499)) => return Err(e),
            CallError::Rejected(_) => {
                lock(&self.stats.fail_fast).push(app.received.elapsed());
                FallbackCause::Refused
            }
            CallError::BulkheadFull(_) => FallbackCause::BulkheadFull,
            CallError::TimedOut(_) => {
                if lock(&self.stats.in_flight).contains(&app.id) {
                    self.stats.outlived_timeout.fetch_add(1, Ordering::SeqCst);
                }
                FallbackCause::TimedOut
            }
            // A failed call, or any way of ending a later version adds.
            _ => FallbackCause::Failed,
        };
        self.stats.fallbacks[cause as usize].fetch_add(1, Ordering::SeqCst);
        if let Some(listener) = &self.on_fallback {
            listener(cause);
        }
        Ok(self.cached_or_queued(app).await)
    }

    /// An application that found every worker busy: it never reaches the bureau (no thread is
    /// left to wait on it) but it is not lost either. It gets the contract's fallback directly: a
    /// cached score, else the durable review queue.
    pub(crate) async fn shed(&self, app: &Application) -> Decision {
        self.cached_or_queued(app).await
    }

    /// A cached score younger than 30 days, else the application queued durably (202), else
    /// a 503 that names the queue.
    ///
    /// A cache that fails counts as a miss (counted in [`ClientStats::cache_errors`]): the
    /// application goes straight to the queue. A queue that fails (down, stalled past the
    /// store's timeout) is [`Decision::Unavailable`]: the application was not captured, and
    /// is never counted as queued. Each store operation is marked on the wire while it runs,
    /// so that Tokio's paused clock does not jump over it (wire.rs).
    async fn cached_or_queued(&self, app: &Application) -> Decision {
        let now = self.clock.now();
        let looked_up = {
            let _io = self.wire.store_io();
            self.cache.recent(&app.tax_id, now).await
        };
        match looked_up {
            Ok(Some((score, age_days))) => {
                let counted = {
                    let _io = self.wire.store_io();
                    self.cache.count_hit(self.clock.bucket_now()).await
                };
                if counted.is_err() {
                    self.stats.cache_errors.fetch_add(1, Ordering::SeqCst);
                }
                return Decision::Cached { score, age_days };
            }
            Ok(None) => {}
            Err(_) => {
                self.stats.cache_errors.fetch_add(1, Ordering::SeqCst);
            }
        }
        let queued = {
            let _io = self.wire.store_io();
            self.queue.enqueue(&app.id, &app.tax_id, now).await
        };
        match queued {
            // A new row, or one already there for this id: committed either way. (The game day
            // never repeats an id, so each 202 it counts is one row.)
            Ok(_) => {
                lock(&self.stats.queued_ids).push(app.id.clone());
                Decision::Queued
            }
            Err(e) => Decision::Unavailable(e.to_string()),
        }
    }
}

/// Locks, ignoring poisoning (the data are counters and lists, valid after any panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An application's request to the bureau, marked as under way for as long as it lives: until
/// the request's future ends, or is dropped with the call that the breaker cancelled.
struct InFlight<'a> {
    ids: &'a Mutex<HashSet<String>>,
    id: &'a str,
}

impl<'a> InFlight<'a> {
    /// Marks `id`'s request as under way in `stats`, and counts it towards the most at once.
    fn enter(stats: &'a ClientStats, id: &'a str) -> Self {
        let ids = &stats.in_flight;
        let under_way = {
            let mut ids = lock(ids);
            ids.insert(id.to_owned());
            ids.len()
        };
        stats.most_in_flight.fetch_max(under_way, Ordering::SeqCst);
        InFlight { ids, id }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(self.ids).remove(self.id);
    }
}

/// A reqwest error as the breaker's error kinds see it.
fn transport(e: reqwest::Error) -> BureauError {
    if e.is_timeout() {
        BureauError::SocketTimeout
    } else if e.is_connect() {
        BureauError::Connect(chain(&e))
    } else {
        BureauError::Protocol(chain(&e))
    }
}

/// An error and its sources, `: `-separated (reqwest's own message names only the outer one).
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
