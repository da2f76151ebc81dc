//! One loan-service replica as an HTTP process: the fleet game day's unit (fleet.rs,
//! docs/GAME_DAY.md "The fleet").
//!
//! An axum server on 127.0.0.1 that answers `POST /v1/loan-applications` (JSON
//! `{application_id, tax_id}`) through [`CreditCheck::check`], the same breaker, bulkhead and
//! fallback as the in-process game day, on the contract's real parts (the review queue in
//! PostgreSQL, the score cache in Redis) when their URLs are given:
//!
//! - 200 `{application_id, score, source}` with `X-Credit-Source: BUREAU` (the bureau's answer)
//!   or `CACHED-FALLBACK` (a cached score younger than 30 days, with its age);
//! - 202 `{application_id, status: "QUEUED_FOR_OFFLINE_REVIEW"}`, given only once the row is
//!   committed (the fallback's queue commits before it returns);
//! - the bureau's 4xx as it is, with a JSON body naming it;
//! - 503 `{error}` naming the queue that could not be written: the application was not captured;
//! - 400 or 422 `{error}` for a body that is not an application, saying what was wrong.
//!
//! `GET /v1/replica/report` is what the replica has seen: its breaker's transitions (time since
//! start, from, to, why, and how many bureau requests it had sent and calls it had recorded
//! by then), the bureau requests sent, the answers by outcome, and the Redis hint's counters.
//!
//! With `--hint on` (cargo feature `redis-hint`) the replica runs the Redis advisory hint
//! (docs/REDIS_HINT.md) on the registry, and runs one hint check before it listens: a replica
//! started while another has its breaker OPEN then refuses its first call already, instead of
//! spending its own requests on a dead bureau to find out.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as StdInstant, SystemTime, UNIX_EPOCH};

use axum::extract::rejection::JsonRejection;
use axum::extract::State as Shared;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use breaker::{Clock, EventKind, Registry, Subscription};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

use super::loan::{lock, Application, BureauError, CreditCheck, Decision, BREAKER};
use super::store::{ReviewQueue, ScoreCache, StoreConfig, QUEUED};

/// The route of the loan applications.
pub(crate) const APPLICATIONS: &str = "/v1/loan-applications";

/// The route of the replica's report.
pub(crate) const REPORT: &str = "/v1/replica/report";

/// The header naming where a 200's score came from.
pub(crate) const CREDIT_SOURCE: &str = "x-credit-source";

/// [`CREDIT_SOURCE`] for the bureau's own answer.
pub(crate) const FROM_BUREAU: &str = "BUREAU";

/// [`CREDIT_SOURCE`] for a cached score.
pub(crate) const FROM_CACHE: &str = "CACHED-FALLBACK";

/// How long one queue or cache operation may take (pool wait and I/O together). Not scaled
/// with the run: these are real round trips to real servers, not the script's durations.
const STORE_TIMEOUT: Duration = Duration::from_secs(1);

/// How to run one replica: `replica --bureau URL [--postgres URL] [--redis URL] [--hint on|off]
/// [--scale S] [--name NAME] [--config PATH]`.
#[derive(Clone, Debug)]
pub(crate) struct ReplicaOptions {
    /// Its name, in the report, the listening line and the hint's origin.
    pub(crate) name: String,
    /// The bureau: `http://127.0.0.1:PORT`.
    pub(crate) bureau: SocketAddr,
    /// The queue and the cache (embedded defaults for a URL not given).
    pub(crate) store: StoreConfig,
    /// Whether the Redis hint runs (needs `store.redis_url`).
    pub(crate) hint: bool,
    /// The time scale of every configured duration (1.0: real time).
    pub(crate) scale: f64,
    /// The breaker's configuration file.
    pub(crate) config: PathBuf,
}

/// What `replica` accepts, for the error messages.
const USAGE: &str = "replica --bureau URL [--postgres URL] [--redis URL] [--hint on|off] \
                     [--scale S] [--name NAME] [--config PATH]";

impl ReplicaOptions {
    /// Reads the `replica` subcommand's arguments (those after `replica`).
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<ReplicaOptions, String> {
        let mut args = args.into_iter();
        let mut bureau = None;
        let mut store = StoreConfig {
            timeout: STORE_TIMEOUT,
            ..StoreConfig::default()
        };
        let (mut hint, mut scale) = (false, 1.0);
        let mut name = format!("replica-{}", std::process::id());
        let mut config = PathBuf::from(super::CONFIG_PATH);
        while let Some(arg) = args.next() {
            let Some(value) = args.next() else {
                return Err(format!("{arg} needs a value; usage: {USAGE}"));
            };
            match arg.as_str() {
                "--bureau" => bureau = Some(parse_bureau(&value)?),
                "--postgres" => store.postgres_url = Some(value),
                "--redis" => store.redis_url = Some(value),
                "--hint" => {
                    hint = match value.as_str() {
                        "on" => true,
                        "off" => false,
                        _ => return Err(format!("--hint takes on or off, not {value:?}")),
                    }
                }
                "--scale" => match value.parse::<f64>() {
                    Ok(s) if s > 0.0 && s.is_finite() => scale = s,
                    _ => return Err(format!("--scale takes a number above 0, not {value:?}")),
                },
                "--name" => name = value,
                "--config" => config = value.into(),
                other => return Err(format!("unknown argument `{other}`; usage: {USAGE}")),
            }
        }
        let Some(bureau) = bureau else {
            return Err(format!("--bureau is required; usage: {USAGE}"));
        };
        if hint && store.redis_url.is_none() {
            return Err("--hint on needs --redis URL: the hint lives in Redis".to_owned());
        }
        Ok(ReplicaOptions {
            name,
            bureau,
            store,
            hint,
            scale,
            config,
        })
    }
}

/// `http://127.0.0.1:PORT` (or `127.0.0.1:PORT`) as a socket address: the bureau is on this
/// machine, and the client takes an address.
fn parse_bureau(url: &str) -> Result<SocketAddr, String> {
    let bare = url
        .strip_prefix("http://")
        .unwrap_or(url)
        .trim_end_matches('/');
    bare.parse()
        .map_err(|e| format!("--bureau takes http://IP:PORT, not {url:?} ({e})"))
}

/// The line a replica prints on stdout once it listens.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Listening {
    /// Its name.
    pub(crate) replica: String,
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// Its process id.
    pub(crate) pid: u32,
    /// Whether the hint runs.
    pub(crate) hint: bool,
    /// The queue it writes (`ReviewQueue::describe`).
    pub(crate) queue: String,
    /// The cache it reads (`ScoreCache::describe`).
    pub(crate) cache: String,
}

/// One breaker transition, as the replica saw it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReplicaTransition {
    /// Milliseconds since the replica started.
    pub(crate) at_ms: f64,
    /// The state left (`CLOSED`, `OPEN`, `HALF_OPEN`, ...).
    pub(crate) from: String,
    /// The state entered.
    pub(crate) to: String,
    /// Why (`TransitionCause` by name: `Evaluation`, `WaitElapsed`, `Hint`, ...).
    pub(crate) cause: String,
    /// Requests sent to the bureau by then.
    pub(crate) bureau_requests: u64,
    /// Calls the breaker had recorded (successes and failures) by then: its local evidence.
    pub(crate) recorded_calls: u64,
    /// Of those, the failures.
    pub(crate) failed_calls: u64,
    /// Of those, the slow ones (longer than `slow-call-duration-threshold`).
    pub(crate) slow_calls: u64,
}

/// How the replica's answers ended.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Outcomes {
    /// 200 from the bureau.
    pub(crate) bureau: u64,
    /// 200 from the cache.
    pub(crate) cached: u64,
    /// 202, row committed.
    pub(crate) queued: u64,
    /// The bureau's 4xx.
    pub(crate) client_errors: u64,
    /// 503: the queue could not be written.
    pub(crate) unavailable: u64,
    /// 400/422: not an application.
    pub(crate) bad_requests: u64,
}

/// The Redis hint's counters (`HintStats`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct HintReport {
    /// Checks completed with Redis answering.
    pub(crate) checks: u64,
    /// Hints written.
    pub(crate) published: u64,
    /// Breakers opened by a hint.
    pub(crate) fast_opened: u64,
    /// Hint values ignored.
    pub(crate) ignored_values: u64,
    /// Failed or timed-out Redis operations.
    pub(crate) redis_errors: u64,
    /// Events the hint's listener dropped.
    pub(crate) dropped_events: u64,
    /// Whether it holds a connection now.
    pub(crate) connected: bool,
}

/// `GET /v1/replica/report`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReplicaReport {
    /// The replica's name.
    pub(crate) name: String,
    /// Its process id.
    pub(crate) pid: u32,
    /// When it started, in milliseconds since the Unix epoch.
    pub(crate) started_unix_ms: u64,
    /// Milliseconds since it started.
    pub(crate) uptime_ms: f64,
    /// Whether the hint runs.
    pub(crate) hint: bool,
    /// The breaker's state now.
    pub(crate) state: String,
    /// Every transition, in the order the event stream told them.
    pub(crate) transitions: Vec<ReplicaTransition>,
    /// Requests sent to the bureau.
    pub(crate) bureau_requests: u64,
    /// Calls the breaker recorded.
    pub(crate) recorded_calls: u64,
    /// Answers by outcome.
    pub(crate) outcomes: Outcomes,
    /// Cache reads that failed (answered as misses: the application went to the queue).
    pub(crate) cache_errors: u64,
    /// The hint's counters, if it runs.
    pub(crate) hint_stats: Option<HintReport>,
}

/// What the handlers share.
struct Replica {
    name: String,
    hint_on: bool,
    check: Arc<CreditCheck>,
    started: SystemTime,
    start: StdInstant,
    transitions: Arc<Mutex<Vec<ReplicaTransition>>>,
    recorded: Arc<AtomicU64>,
    outcomes: [AtomicU64; 6],
    #[cfg(feature = "redis-hint")]
    hint: Option<breaker::hint::HintHandle>,
    _subscription: Subscription,
}

/// Indexes into [`Replica::outcomes`], in [`Outcomes`]'s order.
#[derive(Clone, Copy)]
enum Counted {
    Bureau,
    Cached,
    Queued,
    ClientError,
    Unavailable,
    BadRequest,
}

impl Replica {
    fn count(&self, outcome: Counted) {
        self.outcomes[outcome as usize].fetch_add(1, Ordering::SeqCst);
    }

    fn report(&self) -> ReplicaReport {
        let n = |o: Counted| self.outcomes[o as usize].load(Ordering::SeqCst);
        #[cfg(feature = "redis-hint")]
        let hint_stats = self.hint.as_ref().map(|hint| {
            let s = hint.stats();
            HintReport {
                checks: s.checks,
                published: s.published,
                fast_opened: s.fast_opened,
                ignored_values: s.ignored_values,
                redis_errors: s.redis_errors,
                dropped_events: s.dropped_events,
                connected: s.connected,
            }
        });
        #[cfg(not(feature = "redis-hint"))]
        let hint_stats = None;
        let stats = self.check.stats();
        ReplicaReport {
            name: self.name.clone(),
            pid: std::process::id(),
            started_unix_ms: unix_ms(self.started),
            uptime_ms: self.start.elapsed().as_secs_f64() * 1000.0,
            hint: self.hint_on,
            state: Registry::global().breaker(BREAKER).state().to_string(),
            transitions: lock(&self.transitions).clone(),
            bureau_requests: stats.sockets_opened.load(Ordering::SeqCst),
            recorded_calls: self.recorded.load(Ordering::SeqCst),
            outcomes: Outcomes {
                bureau: n(Counted::Bureau),
                cached: n(Counted::Cached),
                queued: n(Counted::Queued),
                client_errors: n(Counted::ClientError),
                unavailable: n(Counted::Unavailable),
                bad_requests: n(Counted::BadRequest),
            },
            cache_errors: stats.cache_errors.load(Ordering::SeqCst),
            hint_stats,
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A loan application's body.
#[derive(Debug, Deserialize)]
struct LoanApplication {
    application_id: String,
    tax_id: String,
}

/// Every body this service writes that is not an answer: what went wrong.
#[derive(Debug, Serialize)]
struct ErrorBody {
    error: String,
}

fn error(status: StatusCode, error: String) -> Response {
    (status, Json(ErrorBody { error })).into_response()
}

/// A 200 with a score.
#[derive(Debug, Serialize)]
struct Scored<'a> {
    application_id: &'a str,
    score: u32,
    source: &'static str,
    /// For a cached score, its age in days.
    #[serde(skip_serializing_if = "Option::is_none")]
    age_days: Option<u64>,
}

/// The 202.
#[derive(Debug, Serialize)]
struct Queued<'a> {
    application_id: &'a str,
    status: &'static str,
}

/// `POST /v1/loan-applications`.
async fn apply(
    Shared(replica): Shared<Arc<Replica>>,
    body: Result<Json<LoanApplication>, JsonRejection>,
) -> Response {
    let body = match body {
        Ok(Json(body)) => body,
        Err(rejection) => {
            replica.count(Counted::BadRequest);
            return error(
                rejection.status(),
                format!("not a loan application: {}", rejection.body_text()),
            );
        }
    };
    for (field, value) in [
        ("application_id", &body.application_id),
        ("tax_id", &body.tax_id),
    ] {
        if value.trim().is_empty() {
            replica.count(Counted::BadRequest);
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("not a loan application: `{field}` is empty"),
            );
        }
    }
    let app = Application {
        id: body.application_id,
        tax_id: body.tax_id,
        received: tokio::time::Instant::now(),
    };
    let id = app.id.as_str();
    let scored = |score, source, age_days| {
        let mut response = Json(Scored {
            application_id: id,
            score,
            source,
            age_days,
        })
        .into_response();
        response
            .headers_mut()
            .insert(CREDIT_SOURCE, HeaderValue::from_static(source));
        response
    };
    match replica.check.check(&app).await {
        Ok(Decision::Bureau { score }) => {
            replica.count(Counted::Bureau);
            scored(score, FROM_BUREAU, None)
        }
        Ok(Decision::Cached { score, age_days }) => {
            replica.count(Counted::Cached);
            scored(score, FROM_CACHE, Some(age_days))
        }
        // `check` returns `Queued` only once the queue has committed the row.
        Ok(Decision::Queued) => {
            replica.count(Counted::Queued);
            let body = Queued {
                application_id: id,
                status: QUEUED,
            };
            (StatusCode::ACCEPTED, Json(body)).into_response()
        }
        Ok(Decision::Unavailable(why)) => {
            replica.count(Counted::Unavailable);
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the application was not captured: {why}"),
            )
        }
        Err(BureauError::Status(status @ 400..=499)) => {
            replica.count(Counted::ClientError);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            error(
                status,
                format!("the credit bureau rejected the application: HTTP {status}"),
            )
        }
        // The fallback answers every other failure; this is a guard, not a path.
        Err(other) => {
            replica.count(Counted::Unavailable);
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the application was not captured: {other}"),
            )
        }
    }
}

/// `GET /v1/replica/report`.
async fn report(Shared(replica): Shared<Arc<Replica>>) -> Json<ReplicaReport> {
    Json(replica.report())
}

/// Runs one replica until the process is killed: loads the configuration at `options.scale`
/// into the global registry, opens the queue and the cache, starts the hint if asked, prints
/// one [`Listening`] JSON line on stdout and serves. Returns only on a setup error.
pub(crate) fn run(options: ReplicaOptions) -> Result<(), String> {
    #[cfg(not(feature = "redis-hint"))]
    if options.hint {
        return Err("--hint on needs the cargo feature `redis-hint`: \
                    cargo run --example credit_bureau --features redis-hint -- replica ..."
            .to_owned());
    }
    let registry = super::load_registry(&options.config, options.scale, Clock::system())
        .map_err(|e| e.to_string())?;
    Registry::install_global(registry)
        .map_err(|_| "the global breaker registry was already in use".to_owned())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the Tokio runtime: {e}"))?;
    runtime.block_on(serve(options))
}

async fn serve(options: ReplicaOptions) -> Result<(), String> {
    let started = SystemTime::now();
    let start = StdInstant::now();
    let queue = ReviewQueue::open(&options.store)
        .await
        .map_err(|e| e.to_string())?;
    let cache = match ScoreCache::open(&options.store).await {
        Ok(cache) => cache,
        // Redis down at start: the replica still takes applications, with an empty cache of
        // its own (every lookup a miss, so the fallback queues), as the fallback does when
        // Redis fails later.
        Err(e) => {
            eprintln!(
                "{}: {e}; starting with an empty in-process cache",
                options.name
            );
            let memory = StoreConfig {
                redis_url: None,
                ..options.store.clone()
            };
            ScoreCache::open(&memory).await.map_err(|e| e.to_string())?
        }
    };
    let (queue_text, cache_text) = (queue.describe(), cache.describe());
    let breaker = Registry::global().breaker(BREAKER);
    let timeout = breaker
        .config()
        .timeout_duration()
        .unwrap_or(Duration::from_secs_f64(2.5 * options.scale));
    let check = Arc::new(
        CreditCheck::new(options.bureau, timeout, queue, cache).map_err(|e| e.to_string())?,
    );

    let transitions = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::new(AtomicU64::new(0));
    let (failed, slow) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let slow_threshold = breaker.config().slow_call_duration_threshold();
    let subscription = {
        let (transitions, recorded, check) = (transitions.clone(), recorded.clone(), check.clone());
        let (failed, slow) = (failed.clone(), slow.clone());
        breaker.subscribe(move |event| match event.kind() {
            EventKind::StateTransition { from, to } => lock(&transitions).push(ReplicaTransition {
                at_ms: start.elapsed().as_secs_f64() * 1000.0,
                from: from.to_string(),
                to: to.to_string(),
                cause: event
                    .cause()
                    .map_or_else(|| "unknown".to_owned(), |c| format!("{c:?}")),
                bureau_requests: check.stats().sockets_opened.load(Ordering::SeqCst),
                recorded_calls: recorded.load(Ordering::SeqCst),
                failed_calls: failed.load(Ordering::SeqCst),
                slow_calls: slow.load(Ordering::SeqCst),
            }),
            EventKind::Success { elapsed } | EventKind::Error { elapsed } => {
                recorded.fetch_add(1, Ordering::SeqCst);
                if matches!(event.kind(), EventKind::Error { .. }) {
                    failed.fetch_add(1, Ordering::SeqCst);
                }
                if elapsed > slow_threshold {
                    slow.fetch_add(1, Ordering::SeqCst);
                }
            }
            _ => {}
        })
    };

    #[cfg(feature = "redis-hint")]
    let hint = match (&options.store.redis_url, options.hint) {
        (Some(url), true) => Some(start_hint(url, &options.name, options.scale).await?),
        _ => None,
    };

    let replica = Arc::new(Replica {
        name: options.name.clone(),
        hint_on: options.hint,
        check,
        started,
        start,
        transitions,
        recorded,
        outcomes: Default::default(),
        #[cfg(feature = "redis-hint")]
        hint,
        _subscription: subscription,
    });
    let app = Router::new()
        .route(APPLICATIONS, post(apply))
        .route(REPORT, get(report))
        .with_state(replica);
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let line = Listening {
        replica: options.name.clone(),
        addr,
        pid: std::process::id(),
        hint: options.hint,
        queue: queue_text,
        cache: cache_text,
    };
    let line = serde_json::to_string(&line).map_err(|e| e.to_string())?;
    {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}")
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
    }
    axum::serve(listener, app)
        .await
        .map_err(|e| format!("the server stopped: {e}"))
}

/// Starts the Redis hint on the global registry, named `name` in the hints it writes, checking
/// every second of the script (scaled), and runs one check before returning, so that the
/// replica's first application already finds its breaker OPEN if another replica's hint says
/// so. A Redis that cannot be reached is reported and is no error: the replica then runs as
/// without the hint (docs/REDIS_HINT.md, rule 7).
///
/// The hint's time to live stays the default 30 s, unscaled: longer than the scaled wait in
/// OPEN, so a stale hint is still there when the breakers recover, and the run shows that it
/// re-opens none of them (the failure docs/REDIS_HINT.md describes).
#[cfg(feature = "redis-hint")]
async fn start_hint(
    url: &str,
    name: &str,
    scale: f64,
) -> Result<breaker::hint::HintHandle, String> {
    let hint = breaker::hint::RedisHint::builder(url)
        .origin(name)
        .check_interval(Duration::from_secs_f64(scale).max(Duration::from_millis(10)))
        .command_timeout(Duration::from_millis(500))
        .start(Registry::global())
        .map_err(|e| format!("cannot start the Redis hint: {e}"))?;
    if let Err(e) = hint.check_now().await {
        eprintln!("{name}: the Redis hint's first check failed ({e}); running as without it");
    }
    Ok(hint)
}
