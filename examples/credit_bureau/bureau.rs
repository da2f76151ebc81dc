//! The credit-bureau simulator: an axum server on 127.0.0.1 that answers
//! `GET /v2/credit-reports/{tax_id}` with JSON, following a scripted sequence of phases.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::wire::{Wire, REQUEST_ID};

/// How the bureau answers during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Answers after the normal latency (350 ms real time): 200, or 400 for a bad tax id.
    Healthy,
    /// The brownout: holds every request for 15 s (real time) before answering 504.
    Hanging,
    /// Answers 503 at once.
    ServerErrors,
}

/// One scripted phase of the game day.
#[derive(Clone, Debug)]
pub(crate) struct Phase {
    /// A name for the report.
    pub(crate) name: &'static str,
    /// How long it lasts (already scaled).
    pub(crate) length: Duration,
    /// What the bureau does.
    pub(crate) bureau: Behaviour,
    /// Percent of applications whose tax id is malformed (the bureau answers 400).
    pub(crate) bad_id_percent: u32,
}

/// The whole script: the phases in order and the bureau's latencies (all scaled).
#[derive(Clone, Debug)]
pub(crate) struct Script {
    /// The phases, in order.
    pub(crate) phases: Vec<Phase>,
    /// The healthy bureau's latency (350 ms real time).
    pub(crate) latency: Duration,
    /// How long a hanging request is held (15 s real time).
    pub(crate) hang: Duration,
}

impl Script {
    /// The game day (docs/GAME_DAY.md), every duration multiplied by `scale` (1.0 is real time).
    ///
    /// Real-time lengths: healthy 30 s, a burst of bad tax ids 20 s (must not open the
    /// breaker), brownout 60 s, 5xx errors 60 s, recovery 90 s: 260 s in all.
    pub(crate) fn game_day(scale: f64) -> Script {
        let s = |secs: f64| Duration::from_secs_f64(secs * scale);
        let phase = |name, secs, bureau, bad_id_percent| Phase {
            name,
            length: s(secs),
            bureau,
            bad_id_percent,
        };
        Script {
            phases: vec![
                phase("healthy", 30.0, Behaviour::Healthy, 5),
                phase("bad tax ids (4xx)", 20.0, Behaviour::Healthy, 70),
                phase("brownout (15 s hangs)", 60.0, Behaviour::Hanging, 5),
                phase("5xx errors", 60.0, Behaviour::ServerErrors, 5),
                phase("recovery", 90.0, Behaviour::Healthy, 5),
            ],
            latency: s(0.350),
            hang: s(15.0),
        }
    }

    /// The length of the whole script.
    pub(crate) fn total(&self) -> Duration {
        self.phases.iter().map(|p| p.length).sum()
    }

    /// The phase running `elapsed` after the start (the last one after the end).
    pub(crate) fn phase_at(&self, elapsed: Duration) -> &Phase {
        let mut end = Duration::ZERO;
        for phase in &self.phases {
            end += phase.length;
            if elapsed < end {
                return phase;
            }
        }
        self.phases.last().unwrap_or(&HEALTHY)
    }

    /// When the phase whose behaviour is `bureau` first starts, after the start.
    pub(crate) fn first_start_of(&self, bureau: Behaviour) -> Option<Duration> {
        let mut start = Duration::ZERO;
        for phase in &self.phases {
            if phase.bureau == bureau {
                return Some(start);
            }
            start += phase.length;
        }
        None
    }
}

/// The phase of an empty script.
static HEALTHY: Phase = Phase {
    name: "healthy",
    length: Duration::ZERO,
    bureau: Behaviour::Healthy,
    bad_id_percent: 0,
};

/// The bureau's answer to a credit-report request (200).
#[derive(Debug, Serialize)]
struct CreditReport {
    tax_id: String,
    score: u32,
}

/// The bureau's body for every other status.
#[derive(Debug, Serialize)]
struct ErrorBody {
    error: &'static str,
}

/// A status with a JSON error body.
fn error(status: StatusCode, error: &'static str) -> Response {
    (status, Json(ErrorBody { error })).into_response()
}

/// What the handlers share.
#[derive(Debug)]
struct Shared {
    script: Arc<Script>,
    start: Instant,
    hits: AtomicU64,
    abandoned: AtomicU64,
    per_second: PerSecond,
    wire: Arc<Wire>,
}

/// Requests received, counted per second of the script (one counter per `width`, the last
/// one also counting anything later), so the bureau's request rate can be set beside the rate
/// the loan service was offered. Allocated up front: its size is fixed by the script's length.
#[derive(Debug)]
struct PerSecond {
    width: Duration,
    counts: Box<[AtomicU32]>,
}

impl PerSecond {
    fn new(width: Duration, span: Duration) -> PerSecond {
        let count = (span.as_secs_f64() / width.as_secs_f64()).ceil().max(1.0) as usize;
        PerSecond {
            width,
            counts: (0..count).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    fn count(&self, elapsed: Duration) {
        let index = (elapsed.as_secs_f64() / self.width.as_secs_f64()) as usize;
        let last = self.counts.len() - 1;
        self.counts[index.min(last)].fetch_add(1, Ordering::SeqCst);
    }
}

/// The running simulator.
#[derive(Debug)]
pub(crate) struct Bureau {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: oneshot::Sender<()>,
    server: JoinHandle<io::Result<()>>,
}

impl Bureau {
    /// Binds 127.0.0.1 on a free port and serves `script`, timed from `start` on Tokio's clock,
    /// on the current Tokio runtime, counting the requests it receives per `width` (one second
    /// of the script) over `span` (anything later in the last count), and telling `wire` when
    /// it has a request, answers one, or drops one whose client hung up.
    pub(crate) async fn start(
        script: Arc<Script>,
        start: Instant,
        width: Duration,
        span: Duration,
        wire: Arc<Wire>,
    ) -> io::Result<Bureau> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            start,
            hits: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            per_second: PerSecond::new(width, span),
            wire,
        });
        let app = Router::new()
            .route("/v2/credit-reports/{tax_id}", get(credit_report))
            .fallback(|| async { error(StatusCode::NOT_FOUND, "not found") })
            .with_state(shared.clone());
        let (shutdown, signal) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    // A dropped sender (the `Bureau` dropped without `stop`) stops it too.
                    let _ = signal.await;
                })
                .await
        });
        Ok(Bureau {
            addr,
            shared,
            shutdown,
            server,
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets the requests being served finish (idle keep-alive connections
    /// are closed at once), waits for the server to end, and says what it served.
    pub(crate) async fn stop(self) -> io::Result<Served> {
        let _ = self.shutdown.send(());
        self.server.await.map_err(io::Error::other)??;
        Ok(Served {
            hits: self.shared.hits.load(Ordering::SeqCst),
            abandoned: self.shared.abandoned.load(Ordering::SeqCst),
            per_second: (self.shared.per_second.counts.iter())
                .map(|n| n.load(Ordering::SeqCst))
                .collect(),
        })
    }
}

/// What the bureau served, once it has stopped.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    /// `GET /v2/credit-reports/...` requests received.
    pub(crate) hits: u64,
    /// Of those, the ones whose client hung up before the bureau answered: hyper saw the
    /// connection close and dropped the handler. A call that the breaker's `timeout-duration`
    /// cancels closes its connection, so a timed-out call that reached the bureau is counted
    /// here.
    pub(crate) abandoned: u64,
    /// The requests received in each second of the script, the first starting at the start.
    pub(crate) per_second: Vec<u32>,
}

/// A request in the handler: counted as abandoned if it is dropped before
/// [`Unanswered::answered`], and told to the wire either way.
struct Unanswered<'a> {
    bureau: &'a Shared,
    id: Option<u64>,
    answered: bool,
}

impl Unanswered<'_> {
    fn answered(mut self, response: Response) -> Response {
        self.answered = true;
        self.bureau.wire.answering(self.id);
        response
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.bureau.abandoned.fetch_add(1, Ordering::SeqCst);
            self.bureau.wire.abandoned(self.id);
        }
    }
}

/// `GET /v2/credit-reports/{tax_id}`: what the current phase says.
async fn credit_report(
    State(bureau): State<Arc<Shared>>,
    headers: HeaderMap,
    tax_id: Result<Path<String>, PathRejection>,
) -> Response {
    bureau.hits.fetch_add(1, Ordering::SeqCst);
    bureau.per_second.count(bureau.start.elapsed());
    let id = headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok()?.parse().ok());
    bureau.wire.received(id);
    let pending = Unanswered {
        bureau: &bureau,
        id,
        answered: false,
    };
    // A segment that is not UTF-8 once percent-decoded is a malformed tax id too.
    let Ok(Path(tax_id)) = tax_id else {
        return pending.answered(error(StatusCode::BAD_REQUEST, "malformed tax id"));
    };
    let response = match bureau.script.phase_at(bureau.start.elapsed()).bureau {
        Behaviour::Hanging => {
            tokio::time::sleep(bureau.script.hang).await;
            error(StatusCode::GATEWAY_TIMEOUT, "gateway timeout")
        }
        Behaviour::ServerErrors => error(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        Behaviour::Healthy => {
            tokio::time::sleep(bureau.script.latency).await;
            if tax_id.starts_with("bad") || tax_id.is_empty() {
                error(StatusCode::BAD_REQUEST, "malformed tax id")
            } else {
                let score = score_of(&tax_id);
                Json(CreditReport { tax_id, score }).into_response()
            }
        }
    };
    pending.answered(response)
}

/// A deterministic score in 300..850 for a tax id (FNV-1a).
pub(crate) fn score_of(tax_id: &str) -> u32 {
    let hash = tax_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    300 + (hash % 550) as u32
}
