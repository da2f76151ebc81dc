//! The loan service's side: the bureau client behind `#[circuit_breaker]`, the contract's fallback
//! (a recent cached score, else the durable manual-review queue) and the score cache.

use std::collections::{HashMap, HashSet};
use std::error::Error as _;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use breaker::{circuit_breaker, CallError, ErrorKind, Registry};
use reqwest::header::ACCEPT;
use reqwest::{StatusCode, Url};
use serde::Deserialize;

use super::queue::ReviewQueue;

/// The breaker's name, in the attribute and in examples/credit_bureau.toml.
pub(crate) const BREAKER: &str = "credit_bureau_cb";

/// A cached score is used only if it is younger than this (docs/CREDIT_BUREAU.md §6: < 30 days).
pub(crate) const CACHE_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);

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
}

impl fmt::Display for BureauError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BureauError::Status(s) => write!(f, "bureau answered HTTP {s}"),
            BureauError::SocketTimeout => write!(f, "the bureau client timed out"),
            BureauError::Connect(e) => write!(f, "cannot connect to the bureau: {e}"),
            BureauError::Protocol(e) => write!(f, "bad answer from the bureau: {e}"),
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
    /// When the loan service received it.
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
    /// Queued for manual review: "202 pending manual review".
    Queued,
    /// The queue could not be written: 503, the application was not captured.
    Unavailable(String),
}

/// Scores fetched earlier, with when they were fetched.
#[derive(Debug, Default)]
pub(crate) struct ScoreCache {
    entries: Mutex<HashMap<String, (u32, SystemTime)>>,
}

impl ScoreCache {
    /// Stores a score fetched `age` ago.
    pub(crate) fn put_aged(&self, tax_id: &str, score: u32, age: Duration) {
        let at = SystemTime::now()
            .checked_sub(age)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.insert(tax_id.to_owned(), (score, at));
    }

    /// The score and its age in days, if one younger than [`CACHE_MAX_AGE`] is cached.
    pub(crate) fn recent(&self, tax_id: &str) -> Option<(u32, u64)> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let (score, at) = *entries.get(tax_id)?;
        let age = SystemTime::now().duration_since(at).unwrap_or_default();
        (age < CACHE_MAX_AGE).then_some((score, age.as_secs() / 86_400))
    }
}

/// Counters the report and the game-day test read.
#[derive(Debug, Default)]
pub(crate) struct ClientStats {
    /// Calls that went on to reach for a socket to the bureau (a new connection or one from
    /// reqwest's pool), counted before the request is built.
    pub(crate) sockets_opened: AtomicU64,
    /// Fallbacks for a call the breaker refused.
    pub(crate) rejected: AtomicU64,
    /// Fallbacks for a call cancelled by `timeout-duration`.
    pub(crate) timed_out: AtomicU64,
    /// Of those, the ones whose request to the bureau was still under way when their fallback
    /// ran: a request that outlived its cancellation (a thread or task left waiting on a dead
    /// bureau). The breaker drops the call's future before the fallback, so this stays 0.
    pub(crate) outlived_timeout: AtomicU64,
    /// The applications whose request to the bureau is under way (see [`InFlight`]).
    pub(crate) in_flight: Mutex<HashSet<String>>,
    /// Fallbacks for a call that failed (5xx, socket errors).
    pub(crate) failed: AtomicU64,
    /// Time from receiving an application to its fallback starting, for refused calls.
    pub(crate) fail_fast: Mutex<Vec<Duration>>,
    /// The ids of the applications answered 202 (the queue file must hold exactly these).
    pub(crate) queued_ids: Mutex<Vec<String>>,
}

/// The bureau's answer to `GET /v2/credit-reports/{tax_id}` (200).
#[derive(Debug, Deserialize)]
struct CreditReport {
    tax_id: String,
    score: u32,
}

/// The loan service's credit check: the protected call of docs/CREDIT_BUREAU.md §1.
#[derive(Debug)]
pub(crate) struct CreditCheck {
    http: reqwest::Client,
    /// `http://{bureau}/v2/credit-reports`; each call appends the tax id as a path segment.
    reports: Url,
    cache: ScoreCache,
    queue: Arc<ReviewQueue>,
    stats: ClientStats,
}

impl CreditCheck {
    /// A credit check against the bureau at `bureau` (plain HTTP), whose calls the breaker
    /// cancels after `timeout` (the configuration's `timeout-duration`), and a review queue.
    pub(crate) fn new(
        bureau: SocketAddr,
        timeout: Duration,
        queue: ReviewQueue,
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
            cache: ScoreCache::default(),
            queue: Arc::new(queue),
            stats: ClientStats::default(),
        })
    }

    /// The score cache (to seed it).
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

    /// `GET /v2/credit-reports/{tax_id}`, protected by the breaker. A 4xx comes back as
    /// `Err(BureauError::Status(4xx))` (ignored by the breaker); everything else that is not a
    /// bureau answer becomes a cached score or a queued application in [`Self::degrade`].
    #[circuit_breaker(
        name = "credit_bureau_cb",
        fallback = "degrade",
        record = recorded_by_config,
        ignore = ignored_by_config
    )]
    pub(crate) async fn credit_report(&self, app: &Application) -> Result<Decision, BureauError> {
        // Counted here, inside the permitted call, before any socket is used: the game day
        // checks that this never moves while the breaker is OPEN (docs/CREDIT_BUREAU.md §1).
        self.stats.sockets_opened.fetch_add(1, Ordering::SeqCst);
        // Nothing below runs on a thread of its own: when `timeout-duration` passes, the
        // breaker drops this future, which drops reqwest's request and closes its connection.
        let score = self.get_report(app).await?;
        self.cache.put_aged(&app.tax_id, score, Duration::ZERO);
        Ok(Decision::Bureau { score })
    }

    /// `GET /v2/credit-reports/{tax_id}`, unprotected: the score on 200, the status otherwise,
    /// and a [`BureauError::Protocol`] naming what was wrong with a 200 that is not a report.
    pub(crate) async fn get_report(&self, app: &Application) -> Result<u32, BureauError> {
        let _in_flight = InFlight::enter(&self.stats.in_flight, &app.id);
        let tax_id = app.tax_id.as_str();
        let mut url = self.reports.clone();
        url.path_segments_mut()
            .map_err(|()| BureauError::Protocol(format!("{} takes no path", self.reports)))?
            // Percent-encoded: a `/` or `?` in a tax id stays inside its segment.
            .push(tax_id);
        let response = self
            .http
            .get(url)
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(BureauError::Status(status.as_u16()));
        }
        let body = response.bytes().await.map_err(transport)?;
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
    /// it is; any other failure, timeout or refusal answers with a cached score younger than 30
    /// days, else queues the application durably and answers "202 pending manual review".
    async fn degrade(
        &self,
        app: &Application,
        err: CallError<BureauError>,
    ) -> Result<Decision, BureauError> {
        match err {
            CallError::Inner(e @ BureauError::Status(400..=499)) => return Err(e),
            CallError::Rejected(_) => {
                let waited = app.received.elapsed();
                self.stats.rejected.fetch_add(1, Ordering::SeqCst);
                lock(&self.stats.fail_fast).push(waited);
            }
            CallError::TimedOut(_) => {
                self.stats.timed_out.fetch_add(1, Ordering::SeqCst);
                if lock(&self.stats.in_flight).contains(&app.id) {
                    self.stats.outlived_timeout.fetch_add(1, Ordering::SeqCst);
                }
            }
            // A failed call, or any way of ending a later version adds.
            _ => {
                self.stats.failed.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(self.cached_or_queued(app).await)
    }

    /// An application that found every worker busy: it never reaches the bureau (no thread is
    /// left to wait on it) but it is not lost either. It gets the contract's fallback directly: a
    /// cached score, else the durable review queue.
    pub(crate) async fn shed(&self, app: &Application) -> Decision {
        self.cached_or_queued(app).await
    }

    /// A cached score younger than 30 days, else the application queued durably (202).
    async fn cached_or_queued(&self, app: &Application) -> Decision {
        if let Some((score, age_days)) = self.cache.recent(&app.tax_id) {
            return Decision::Cached { score, age_days };
        }
        let queue = self.queue.clone();
        let (id, tax_id) = (app.id.clone(), app.tax_id.clone());
        // The line is on disk (fsync) before the 202 is given.
        let written = tokio::task::spawn_blocking(move || queue.append(&id, &tax_id)).await;
        match written {
            Ok(Ok(())) => {
                lock(&self.stats.queued_ids).push(app.id.clone());
                Decision::Queued
            }
            Ok(Err(e)) => Decision::Unavailable(e.to_string()),
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
    fn enter(ids: &'a Mutex<HashSet<String>>, id: &'a str) -> Self {
        lock(ids).insert(id.to_owned());
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
