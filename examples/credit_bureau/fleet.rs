//! The fleet game day (docs/GAME_DAY.md, "The fleet"): loan-service replicas as separate OS
//! processes (service.rs) sharing one PostgreSQL (the review queue) and one Redis (the score
//! cache and the advisory hint), in front of one simulated bureau that browns out.
//!
//! One run: the bureau (bureau.rs, scaled) listens once per replica, every listener serving
//! the same script from the same start, so each request is counted against the replica that
//! sent it; three replicas start; the load is spread over them round-robin; the bureau goes
//! healthy -> brownout (15 s hangs) -> 5xx -> recovery. Once a replica's breaker has opened in
//! the outage (and, with the hint, has published its hint), the last replica is killed with
//! SIGKILL and a new one is started in its place, with no local history. An application whose
//! replica dies under it is sent again to another: the queue is idempotent on the application
//! id, so nothing is lost or queued twice.
//!
//! Three runs: without the hint, with it, and with it while Redis is killed as the outage
//! begins. Each measures, per replica, the bureau requests it spent in the outage before its
//! breaker opened, reads every replica's transitions for a hint that closed a breaker or
//! re-opened one against local evidence, and accounts for every application sent: a bureau
//! answer, a cached one, a 202 whose row is in PostgreSQL, a 4xx or a 503.
//!
//! Each run has a PostgreSQL database of its own (`fleet_<mode>`, created afresh) and a Redis
//! database of its own (1, 2, 3), so one run's hints and rows never reach the next.
//!
//! ```text
//! cargo run --example credit_bureau --features redis-hint -- fleet [--scale 0.1] [--rate 150] [--html PATH]
//! ```
//!
//! The command starts its own `redis-server` and PostgreSQL cluster on free loopback ports
//! (Debian packages `redis-server` and `postgresql`), as the tests do, because the run kills
//! Redis on purpose.

// The command's own servers. Only in the example: a test that includes game.rs starts its own,
// from the same files.
#[cfg(not(test))]
#[path = "../../tests/support/postgres_server.rs"]
#[allow(unreachable_pub)]
mod postgres_server;
#[cfg(not(test))]
#[path = "../../breaker-core/tests/support/redis_server.rs"]
#[allow(unreachable_pub)]
mod redis_server;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::http::header::CONTENT_TYPE;
use reqwest::StatusCode;
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use super::bureau::{self, Behaviour, Bureau, Phase, Script};
use super::loan::lock;
use super::service::{
    self, Listening, ReplicaOptions, ReplicaReport, APPLICATIONS, CREDIT_SOURCE, FROM_BUREAU,
    FROM_CACHE, REPORT,
};
use super::store::{ReviewQueue, ScoreCache, StoreConfig, QUEUED};
use super::wire::Wire;

/// The breaker's `minimum-number-of-calls` in examples/credit_bureau.toml: what a replica with
/// no local history must record before its breaker can open on its own evidence.
pub(crate) const MINIMUM_CALLS: u64 = 20;

/// How many times an application is sent before it counts as unanswered: its replica died
/// under it, the next one too, and so on.
const ATTEMPTS: usize = 4;

/// The three runs of the fleet game day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) enum Mode {
    /// Every replica with `--hint off`.
    NoHint,
    /// Every replica with `--hint on`.
    Hint,
    /// With the hint, and Redis killed (SIGKILL) as the outage begins.
    RedisKilled,
}

impl Mode {
    /// The runs, in the order the command makes them.
    pub(crate) const ALL: [Mode; 3] = [Mode::NoHint, Mode::Hint, Mode::RedisKilled];

    /// A short key (the PostgreSQL database's suffix, the picture's ids).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Mode::NoHint => "no_hint",
            Mode::Hint => "hint",
            Mode::RedisKilled => "redis_killed",
        }
    }

    /// What the run is, in words.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Mode::NoHint => "without the hint",
            Mode::Hint => "with the hint",
            Mode::RedisKilled => "with the hint, Redis killed as the outage begins",
        }
    }

    /// Whether the replicas run the hint.
    pub(crate) fn hint(self) -> bool {
        self != Mode::NoHint
    }

    /// The Redis database the run uses (hints, cache), one per run.
    fn redis_db(self) -> u32 {
        match self {
            Mode::NoHint => 1,
            Mode::Hint => 2,
            Mode::RedisKilled => 3,
        }
    }
}

/// How to run the fleet.
#[derive(Clone, Debug)]
pub(crate) struct FleetOptions {
    /// The `credit_bureau` binary: each replica is `EXE replica ...`.
    pub(crate) exe: PathBuf,
    /// A PostgreSQL server the run may create its database in (`postgres://...`).
    pub(crate) postgres_url: String,
    /// `redis://HOST:PORT`, without a database: the run picks its own.
    pub(crate) redis_url: String,
    /// The time scale of the script and of every configured duration.
    pub(crate) scale: f64,
    /// Applications per second, over the whole fleet.
    pub(crate) rate: u32,
    /// Replicas at the start (the last one is the one restarted).
    pub(crate) replicas: usize,
    /// Where the replicas' stderr goes, one file each.
    pub(crate) log_dir: PathBuf,
}

/// The script of the fleet's bureau, in real-time seconds: healthy 20 s (long enough for every
/// replica's window of 100 to fill with the bureau's answers), the brownout 40 s, 5xx 30 s and
/// recovery 60 s (two of the breaker's 30 s waits in OPEN, so every replica recovers through
/// its own trials). 5 % of the tax ids are malformed throughout.
pub(crate) fn script(scale: f64) -> Script {
    let s = |secs: f64| Duration::from_secs_f64(secs * scale);
    let phase = |name, secs, bureau| Phase {
        name,
        length: s(secs),
        bureau,
        bad_id_percent: 5,
    };
    Script {
        phases: vec![
            phase("healthy", 20.0, Behaviour::Healthy),
            phase("brownout (15 s hangs)", 40.0, Behaviour::Hanging),
            phase("5xx errors", 30.0, Behaviour::ServerErrors),
            phase("recovery", 60.0, Behaviour::Healthy),
        ],
        latency: s(0.350),
        hang: s(15.0),
    }
}

/// One replica process of a run, as it ended.
#[derive(Clone, Debug)]
pub(crate) struct ReplicaRun {
    /// Its name (`r1`..; the one started in the outage is `r3-restarted` in a fleet of 3).
    pub(crate) name: String,
    /// Whether it was started during the outage, in place of the killed one.
    pub(crate) restarted: bool,
    /// When it started, in ms since the run started (its report's start on the run's clock).
    pub(crate) offset_ms: f64,
    /// When it was killed, in ms since the run started; `None`: it ran to the end.
    pub(crate) killed_ms: Option<f64>,
    /// Bureau requests it had sent when the outage began (`None` if it started later).
    pub(crate) requests_at_outage: Option<u64>,
    /// The requests the bureau received on this replica's listener.
    pub(crate) bureau_hits: u64,
    /// Its last report: at the end of the run, or just before it was killed.
    pub(crate) report: ReplicaReport,
}

impl ReplicaRun {
    /// Bureau requests this replica sent in the outage before its breaker first opened in it
    /// (`None` if it never opened in the outage, or started after it ended).
    pub(crate) fn requests_before_open(&self, outage_start_ms: f64) -> Option<u64> {
        let base = if self.restarted {
            0
        } else {
            self.requests_at_outage?
        };
        self.report
            .transitions
            .iter()
            .find(|t| t.to == "OPEN" && self.offset_ms + t.at_ms >= outage_start_ms)
            .map(|t| t.bureau_requests.saturating_sub(base))
    }

    /// The transition that first opened the breaker in the outage, if any.
    pub(crate) fn first_open(&self, outage_start_ms: f64) -> Option<&service::ReplicaTransition> {
        self.report
            .transitions
            .iter()
            .find(|t| t.to == "OPEN" && self.offset_ms + t.at_ms >= outage_start_ms)
    }

    /// Transitions a hint made against docs/REDIS_HINT.md's rules: a hint only ever opens a
    /// CLOSED breaker with no local history, so a hint-caused transition that is not
    /// CLOSED -> OPEN (a hint that closed, or moved towards closing), that follows any other
    /// transition (a breaker that local evidence had moved, opened or closed, re-opened by a
    /// hint), or that came after a recorded call, breaks them. Also a disagreement between the
    /// hint's own count of fast-opens and the transitions.
    pub(crate) fn hint_violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut by_hint = 0;
        for (i, t) in self.report.transitions.iter().enumerate() {
            if t.cause != "Hint" {
                continue;
            }
            by_hint += 1;
            if t.from != "CLOSED" || t.to != "OPEN" {
                found.push(format!(
                    "{}: a hint moved {} -> {}",
                    self.name, t.from, t.to
                ));
            }
            if i > 0 {
                found.push(format!(
                    "{}: a hint moved the breaker after {i} transition(s) of its own",
                    self.name
                ));
            }
            if t.recorded_calls > 0 {
                found.push(format!(
                    "{}: a hint opened a breaker that had recorded {} call(s)",
                    self.name, t.recorded_calls
                ));
            }
        }
        let fast_opened = self.report.hint_stats.map_or(0, |s| s.fast_opened);
        if fast_opened != by_hint {
            found.push(format!(
                "{}: the hint counted {fast_opened} fast-open(s), the transitions show {by_hint}",
                self.name
            ));
        }
        found
    }
}

/// How the fleet's applications were answered, each counted once, by its last attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Answers {
    /// 200 with `X-Credit-Source: BUREAU`.
    pub(crate) bureau: u64,
    /// 200 with `X-Credit-Source: CACHED-FALLBACK`.
    pub(crate) cached: u64,
    /// 202 `QUEUED_FOR_OFFLINE_REVIEW`.
    pub(crate) queued: u64,
    /// 4xx (a malformed tax id).
    pub(crate) client_errors: u64,
    /// 503 naming the unavailable queue.
    pub(crate) unavailable: u64,
    /// No answer after every attempt, or an answer none of the above: lost.
    pub(crate) unanswered: u64,
}

/// One run of the fleet game day.
#[derive(Clone, Debug)]
pub(crate) struct FleetRun {
    /// Which run.
    pub(crate) mode: Mode,
    /// The time scale.
    pub(crate) scale: f64,
    /// Applications per second over the fleet.
    pub(crate) rate: u32,
    /// When it started, on the wall clock.
    pub(crate) started: SystemTime,
    /// The script's phases: name, start and end in ms since the run started, behaviour.
    pub(crate) phases: Vec<(&'static str, f64, f64, Behaviour)>,
    /// The outage (brownout and 5xx), in ms since the run started.
    pub(crate) outage_ms: (f64, f64),
    /// When the last application was answered, in ms since the run started.
    pub(crate) ended_ms: f64,
    /// When Redis was killed, in ms since the run started.
    pub(crate) redis_killed_ms: Option<f64>,
    /// Every replica process, in the order started.
    pub(crate) replicas: Vec<ReplicaRun>,
    /// Applications sent.
    pub(crate) sent: u64,
    /// How they were answered.
    pub(crate) answers: Answers,
    /// Applications sent again because their replica died under them.
    pub(crate) resent: BTreeSet<String>,
    /// The applications answered 202.
    pub(crate) answered_queued: BTreeSet<String>,
    /// The application ids in the queue table, read back from PostgreSQL.
    pub(crate) rows: BTreeSet<String>,
    /// `SELECT status, count(*) ... GROUP BY status`.
    pub(crate) rows_by_status: BTreeMap<String, u64>,
    /// Where the replicas' queue was (`ReviewQueue::describe`).
    pub(crate) queue: String,
}

impl FleetRun {
    /// Applications with no answer of their own, plus 202s without a committed row.
    pub(crate) fn lost(&self) -> u64 {
        self.answers.unanswered + self.answered_queued.difference(&self.rows).count() as u64
    }

    /// Rows of applications not answered 202: queued by a replica that died before it could
    /// answer, then answered otherwise (from the cache) by the replica they were sent to again.
    /// Always among [`Self::resent`].
    pub(crate) fn rows_without_202(&self) -> BTreeSet<String> {
        self.rows
            .difference(&self.answered_queued)
            .cloned()
            .collect()
    }

    /// The rows counted by status, as one number.
    pub(crate) fn rows_counted(&self) -> u64 {
        self.rows_by_status.values().sum()
    }

    /// The replica started in the outage.
    pub(crate) fn restarted(&self) -> Option<&ReplicaRun> {
        self.replicas.iter().find(|r| r.restarted)
    }

    /// Every hint violation of every replica.
    pub(crate) fn hint_violations(&self) -> Vec<String> {
        self.replicas
            .iter()
            .flat_map(ReplicaRun::hint_violations)
            .collect()
    }
}

impl fmt::Display for FleetRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (outage_start, outage_end) = self.outage_ms;
        writeln!(
            f,
            "== fleet game day, {} (time scale {}, {} applications/s over {} replicas) ==",
            self.mode.label(),
            self.scale,
            self.rate,
            self.replicas.iter().filter(|r| !r.restarted).count()
        )?;
        writeln!(
            f,
            "outage (brownout + 5xx): {outage_start:.0} ms to {outage_end:.0} ms; queue: {}",
            self.queue
        )?;
        if let Some(at) = self.redis_killed_ms {
            writeln!(f, "Redis killed at {at:.0} ms")?;
        }
        writeln!(
            f,
            "replica        started   killed    requests-before-OPEN  first OPEN (cause, recorded calls)  bureau requests  fast-opened  hints published"
        )?;
        for r in &self.replicas {
            let before = r
                .requests_before_open(outage_start)
                .map_or_else(|| "never opened".to_owned(), |n| n.to_string());
            let first = r.first_open(outage_start).map_or_else(
                || "-".to_owned(),
                |t| {
                    format!(
                        "{:.0} ms ({}, {})",
                        r.offset_ms + t.at_ms,
                        t.cause,
                        t.recorded_calls
                    )
                },
            );
            let hint = r.report.hint_stats.unwrap_or_default();
            writeln!(
                f,
                "{:<14} {:>6.0} ms {:>9} {:>21}  {:<36} {:>15}  {:>11}  {:>15}",
                r.name,
                r.offset_ms,
                r.killed_ms
                    .map_or_else(|| "-".to_owned(), |k| format!("{k:.0} ms")),
                before,
                first,
                r.bureau_hits,
                hint.fast_opened,
                hint.published
            )?;
        }
        if let Some(r) = self.restarted() {
            writeln!(
                f,
                "the restarted replica, {}, spent {} bureau request(s) before its breaker opened \
                 (on its own evidence a breaker with no history records at least {MINIMUM_CALLS} calls first)",
                r.name,
                r.requests_before_open(outage_start)
                    .map_or_else(|| "all of its".to_owned(), |n| n.to_string()),
            )?;
        }
        let a = &self.answers;
        writeln!(
            f,
            "applications sent {}: bureau {}, cached {}, queued (202) {}, 4xx {}, 503 {}, unanswered {}",
            self.sent, a.bureau, a.cached, a.queued, a.client_errors, a.unavailable, a.unanswered
        )?;
        writeln!(
            f,
            "sent again after their replica died: {}; rows in the queue by status: {:?}, {} in all (202 answers {}, rows without a 202 {})",
            self.resent.len(),
            self.rows_by_status,
            self.rows_counted(),
            self.answered_queued.len(),
            self.rows_without_202().len()
        )?;
        let violations = self.hint_violations();
        writeln!(
            f,
            "lost: {}; hint transitions against local evidence: {}",
            self.lost(),
            if violations.is_empty() {
                "none".to_owned()
            } else {
                violations.join("; ")
            }
        )
    }
}

/// A replica process, killed (SIGKILL) when dropped.
#[derive(Debug)]
struct Process {
    name: String,
    child: Child,
    addr: SocketAddr,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How to start a replica process: `EXE replica --postgres URL --redis URL --hint on|off
/// --scale S`, its stderr in a file of `log_dir`.
#[derive(Clone, Debug)]
pub(crate) struct ReplicaCommand {
    /// The `credit_bureau` binary.
    pub(crate) exe: PathBuf,
    /// The queue's PostgreSQL.
    pub(crate) postgres_url: String,
    /// The cache's (and the hint's) Redis.
    pub(crate) redis_url: String,
    /// Whether the replica runs the hint.
    pub(crate) hint: bool,
    /// The time scale.
    pub(crate) scale: f64,
    /// Where its stderr goes (`{name}.log`).
    pub(crate) log_dir: PathBuf,
}

impl ReplicaCommand {
    /// Starts the replica `name` against the bureau at `bureau` and waits for its
    /// [`Listening`] line. If it does not come up, the error quotes the end of its stderr.
    pub(crate) fn spawn(
        &self,
        name: &str,
        bureau: SocketAddr,
    ) -> Result<(Child, Listening), String> {
        spawn_replica(self, name, bureau)
    }
}

fn spawn_replica(
    command: &ReplicaCommand,
    name: &str,
    bureau: SocketAddr,
) -> Result<(Child, Listening), String> {
    let ReplicaCommand {
        exe,
        postgres_url,
        redis_url,
        hint,
        scale,
        log_dir,
    } = command;
    if !exe.is_file() {
        return Err(format!(
            "the credit_bureau example binary is not at {}: build it first \
             (cargo build --example credit_bureau --features redis-hint)",
            exe.display()
        ));
    }
    let log = log_dir.join(format!("{name}.log"));
    let stderr =
        std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut child = Command::new(exe)
        .arg("replica")
        .args(["--name", name])
        .args(["--bureau", &format!("http://{bureau}")])
        .args(["--postgres", postgres_url])
        .args(["--redis", redis_url])
        .args(["--hint", if *hint { "on" } else { "off" }])
        .args(["--scale", &scale.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let mut line = String::new();
    let read = match child.stdout.take() {
        Some(stdout) => BufReader::new(stdout).read_line(&mut line),
        None => Ok(0),
    };
    let failed = |why: String, child: &mut Child| {
        let _ = child.kill();
        let _ = child.wait();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = text
            .lines()
            .rev()
            .take(8)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        format!("replica {name} did not come up: {why}; its stderr ends:\n{tail}")
    };
    match read {
        Ok(n) if n > 0 => match serde_json::from_str::<Listening>(line.trim()) {
            Ok(listening) => Ok((child, listening)),
            Err(e) => Err(failed(
                format!("its first line is not the listening line ({e}): {line:?}"),
                &mut child,
            )),
        },
        Ok(_) => Err(failed("it exited before listening".to_owned(), &mut child)),
        Err(e) => Err(failed(format!("cannot read its stdout: {e}"), &mut child)),
    }
}

/// Reads a replica's report.
async fn read_report(http: &reqwest::Client, addr: SocketAddr) -> Result<ReplicaReport, String> {
    let response = http
        .get(format!("http://{addr}{REPORT}"))
        .send()
        .await
        .map_err(|e| format!("GET {REPORT} from {addr}: {e}"))?;
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("GET {REPORT} from {addr}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("the report from {addr} is not JSON ({e})"))
}

/// `url` with its database (the path) replaced by `db`.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// Drops and creates the database `db` on the server at `url`.
async fn fresh_database(url: &str, db: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("cannot connect to PostgreSQL to create {db}: {e}"))?;
    let connection = tokio::spawn(connection);
    // Two statements: a multi-statement batch is one transaction, which neither may run in.
    let mut done = Ok(());
    for sql in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ] {
        if let Err(e) = client.batch_execute(&sql).await {
            let why = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |db| db.message().to_owned());
            done = Err(format!("cannot create the database {db}: {sql}: {why}"));
            break;
        }
    }
    drop(client);
    let _ = connection.await;
    done
}

/// How long the replicas are given to come up before the script starts. They usually take
/// well under a second; one that takes longer only shortens the healthy phase it sees.
const LAUNCH_ALLOWANCE: Duration = Duration::from_secs(1);

/// What starts a replica process of a run.
#[derive(Clone, Debug)]
struct Launcher {
    command: ReplicaCommand,
    /// The bureau's listener for each slot.
    bureaus: Vec<SocketAddr>,
}

impl Launcher {
    /// Starts the replica `name` against the bureau's listener `slot` (on a blocking thread:
    /// it waits for the replica's listening line).
    async fn launch(&self, name: String, slot: usize) -> Result<Process, String> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.command
                .spawn(&name, this.bureaus[slot])
                .map(|(child, listening)| Process {
                    name,
                    child,
                    addr: listening.addr,
                })
        })
        .await
        .map_err(|e| format!("the replica's launch panicked: {e}"))?
    }
}

/// A live replica the load may go to.
#[derive(Clone, Debug)]
struct Target {
    name: String,
    addr: SocketAddr,
}

/// How one application ended, by its last attempt.
#[derive(Debug)]
enum Answer {
    Bureau,
    Cached,
    Queued,
    ClientError,
    Unavailable,
    Unanswered,
}

/// The application's JSON body.
#[derive(Serialize)]
struct Body<'a> {
    application_id: &'a str,
    tax_id: &'a str,
}

/// Sends one application to the live replicas, starting with the `first`-th, and to the next
/// one each time a replica fails to answer (it died under the request). Returns the answer
/// and whether it had to be sent more than once.
async fn send(
    http: reqwest::Client,
    live: Arc<Mutex<Vec<Target>>>,
    first: usize,
    id: String,
    tax_id: String,
) -> (String, Answer, bool) {
    let body = match serde_json::to_vec(&Body {
        application_id: &id,
        tax_id: &tax_id,
    }) {
        Ok(body) => body,
        Err(_) => return (id, Answer::Unanswered, false),
    };
    let mut resent = false;
    for attempt in 0..ATTEMPTS {
        let target = {
            let live = lock(&live);
            if live.is_empty() {
                None
            } else {
                Some(live[(first + attempt) % live.len()].clone())
            }
        };
        let Some(target) = target else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            resent = true;
            continue;
        };
        let sent = http
            .post(format!("http://{}{APPLICATIONS}", target.addr))
            .header(CONTENT_TYPE, "application/json")
            .body(body.clone())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(_) => {
                resent = true;
                continue;
            }
        };
        let status = response.status();
        let source = response
            .headers()
            .get(CREDIT_SOURCE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Ok(bytes) = response.bytes().await else {
            // The replica died between the head and the body: not an answer.
            resent = true;
            continue;
        };
        let answer = match status {
            StatusCode::OK => match source.as_deref() {
                Some(FROM_BUREAU) => Answer::Bureau,
                Some(FROM_CACHE) => Answer::Cached,
                _ => Answer::Unanswered,
            },
            StatusCode::ACCEPTED => {
                let queued = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .is_ok_and(|v| v["status"] == QUEUED && v["application_id"] == id.as_str());
                if queued {
                    Answer::Queued
                } else {
                    Answer::Unanswered
                }
            }
            StatusCode::SERVICE_UNAVAILABLE => Answer::Unavailable,
            s if s.is_client_error() => Answer::ClientError,
            _ => Answer::Unanswered,
        };
        return (id, answer, resent);
    }
    (id, Answer::Unanswered, resent)
}

/// A deterministic pseudo-random sequence (xorshift), so every run sends the same mix.
struct Mix(u64);

impl Mix {
    fn next_percent(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % 100) as u32
    }
}

/// Milliseconds between two instants of the run.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A replica process with what the run knows of it.
struct Running {
    process: Process,
    restarted: bool,
    requests_at_outage: Option<u64>,
    killed_ms: Option<f64>,
    last_report: Option<ReplicaReport>,
    slot: usize,
}

/// Runs the fleet once. `kill_redis` is called (on a blocking thread) as the outage begins in
/// [`Mode::RedisKilled`], and must leave Redis dead for the rest of the run.
pub(crate) async fn run(
    options: &FleetOptions,
    mode: Mode,
    kill_redis: Option<Box<dyn FnOnce() + Send>>,
) -> Result<FleetRun, String> {
    let db = format!("fleet_{}", mode.key());
    fresh_database(&options.postgres_url, &db).await?;
    let postgres_url = with_database(&options.postgres_url, &db);
    let redis_url = format!(
        "{}/{}",
        options.redis_url.trim_end_matches('/'),
        mode.redis_db()
    );
    let store = StoreConfig {
        postgres_url: Some(postgres_url.clone()),
        redis_url: Some(redis_url.clone()),
        queue_path: None,
        timeout: Duration::from_secs(5),
    };
    // The queue's table exists before any replica starts, and the cache holds the returning
    // applicants: 60 with a score younger than 30 days, 40 with an older one.
    let queue = ReviewQueue::open(&store).await.map_err(|e| e.to_string())?;
    let cache = ScoreCache::open(&store).await.map_err(|e| e.to_string())?;
    for n in 0..100u64 {
        let days = if n < 60 { 1 + n % 29 } else { 31 + n };
        let tax_id = format!("ret-{n:03}");
        let fetched = SystemTime::now()
            .checked_sub(Duration::from_secs(days * 86_400))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        cache
            .put(&tax_id, bureau::score_of(&tax_id), fetched)
            .await
            .map_err(|e| e.to_string())?;
    }
    drop(cache);

    let script = Arc::new(script(options.scale));
    let total = script.total();
    let outage_start = script.first_start_of(Behaviour::Hanging).unwrap_or(total);
    // The outage lasts from the brownout's start to the end of the last phase that is not
    // healthy (the 5xx).
    let mut outage_end = outage_start;
    let mut end = Duration::ZERO;
    for phase in &script.phases {
        end += phase.length;
        if phase.bureau != Behaviour::Healthy {
            outage_end = end;
        }
    }
    let width = Duration::from_secs_f64(options.scale);
    let span = total + Duration::from_secs(10);

    // One listener per replica, the restarted one included, all on one script and one start.
    // The script starts once the replicas have had time to come up: until then the bureau is
    // in its first phase, healthy, and nothing calls it.
    let started = SystemTime::now() + LAUNCH_ALLOWANCE;
    let start = Instant::now() + LAUNCH_ALLOWANCE;
    let mut bureaus = Vec::new();
    for _ in 0..=options.replicas {
        let bureau = Bureau::start(script.clone(), start, width, span, Wire::new(false))
            .await
            .map_err(|e| format!("cannot start the bureau: {e}"))?;
        bureaus.push(bureau);
    }
    let addrs: Vec<SocketAddr> = bureaus.iter().map(Bureau::addr).collect();

    let launcher = Launcher {
        command: ReplicaCommand {
            exe: options.exe.clone(),
            postgres_url: postgres_url.clone(),
            redis_url: redis_url.clone(),
            hint: mode.hint(),
            scale: options.scale,
            log_dir: options.log_dir.clone(),
        },
        bureaus: addrs,
    };
    // The replicas start side by side, while the bureau's clock waits for them (see
    // `LAUNCH_ALLOWANCE`).
    let mut launches = JoinSet::new();
    for i in 0..options.replicas {
        let launcher = launcher.clone();
        launches.spawn(async move { (i, launcher.launch(format!("r{}", i + 1), i).await) });
    }
    let mut running = Vec::new();
    while let Some(launched) = launches.join_next().await {
        let (slot, process) = launched.map_err(|e| format!("a replica's launch panicked: {e}"))?;
        running.push(Running {
            process: process?,
            restarted: false,
            requests_at_outage: None,
            killed_ms: None,
            last_report: None,
            slot,
        });
    }
    running.sort_by_key(|r| r.slot);
    let live = Arc::new(Mutex::new(
        running
            .iter()
            .map(|r| Target {
                name: r.process.name.clone(),
                addr: r.process.addr,
            })
            .collect::<Vec<_>>(),
    ));
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let running = Arc::new(tokio::sync::Mutex::new(running));

    // The controller: at the outage's start, reads every replica's request count (and kills
    // Redis in that run); then waits for a breaker to open (with the hint, for its hint to be
    // published), and replaces the last replica.
    let controller = {
        let (http, live, running) = (http.clone(), live.clone(), running.clone());
        let replicas = options.replicas;
        let launcher = launcher.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(start + outage_start).await;
            {
                let mut running = running.lock().await;
                for r in running.iter_mut() {
                    let report = read_report(&http, r.process.addr).await?;
                    r.requests_at_outage = Some(report.bureau_requests);
                }
            }
            let mut redis_killed_ms = None;
            if let Some(kill) = kill_redis {
                tokio::task::spawn_blocking(kill)
                    .await
                    .map_err(|e| format!("killing Redis panicked: {e}"))?;
                redis_killed_ms = Some(ms(start.elapsed()));
            }
            loop {
                if start.elapsed() >= outage_end {
                    return Err("no replica's breaker opened during the outage".to_owned());
                }
                let mut opened = false;
                {
                    let running = running.lock().await;
                    for r in running.iter() {
                        let report = read_report(&http, r.process.addr).await?;
                        let since = ms(outage_start) - report_offset(&report, started);
                        let open = report
                            .transitions
                            .iter()
                            .any(|t| t.to == "OPEN" && t.at_ms >= since);
                        let published = report.hint_stats.is_some_and(|s| s.published > 0);
                        if open && (mode != Mode::Hint || published) {
                            opened = true;
                        }
                    }
                }
                if opened {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // The restart: out of the rotation first, so that only the applications already
            // under way in it see it die; its last report; SIGKILL; a new process, with no
            // local history, on a listener of its own.
            let victim = replicas - 1;
            let name = {
                let mut running = running.lock().await;
                let r = &mut running[victim];
                lock(&live).retain(|t| t.name != r.process.name);
                r.last_report = Some(read_report(&http, r.process.addr).await?);
                r.killed_ms = Some(ms(start.elapsed()));
                r.process.name.clone()
            };
            {
                let mut running = running.lock().await;
                let r = &mut running[victim];
                let _ = r.process.child.kill();
                let _ = r.process.child.wait();
            }
            let process = launcher
                .launch(format!("{name}-restarted"), replicas)
                .await?;
            lock(&live).push(Target {
                name: process.name.clone(),
                addr: process.addr,
            });
            running.lock().await.push(Running {
                process,
                restarted: true,
                requests_at_outage: None,
                killed_ms: None,
                last_report: None,
                slot: replicas,
            });
            Ok::<_, String>(redis_killed_ms)
        })
    };

    // The load: `rate` applications a second, round-robin over the live replicas, from the
    // script's start (or now, if the replicas took longer than the allowance).
    tokio::time::sleep_until(start).await;
    let mut handlers = JoinSet::new();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(options.rate)));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut mix = Mix(0x9e37_79b9_7f4a_7c15);
    let mut sent = 0u64;
    loop {
        ticker.tick().await;
        let elapsed = start.elapsed();
        if elapsed >= total {
            break;
        }
        sent += 1;
        let phase = script.phase_at(elapsed);
        let roll = mix.next_percent();
        let tax_id = if roll < phase.bad_id_percent {
            format!("bad-{sent}")
        } else if roll < phase.bad_id_percent + (100 - phase.bad_id_percent) / 4 {
            format!("ret-{:03}", mix.next_percent())
        } else {
            format!("tx-{sent:06}")
        };
        let id = format!("{}-{sent:06}", mode.key());
        handlers.spawn(send(http.clone(), live.clone(), sent as usize, id, tax_id));
    }
    let mut answers = Answers::default();
    let (mut resent, mut answered_queued) = (BTreeSet::new(), BTreeSet::new());
    while let Some(joined) = handlers.join_next().await {
        let Ok((id, answer, again)) = joined else {
            answers.unanswered += 1;
            continue;
        };
        if again {
            resent.insert(id.clone());
        }
        match answer {
            Answer::Bureau => answers.bureau += 1,
            Answer::Cached => answers.cached += 1,
            Answer::Queued => {
                answers.queued += 1;
                answered_queued.insert(id);
            }
            Answer::ClientError => answers.client_errors += 1,
            Answer::Unavailable => answers.unavailable += 1,
            Answer::Unanswered => answers.unanswered += 1,
        }
    }
    let ended_ms = ms(start.elapsed());
    let redis_killed_ms = controller
        .await
        .map_err(|e| format!("the fleet's controller panicked: {e}"))??;

    // Every replica's last word, then the bureau's own counts per listener.
    let mut running = Arc::try_unwrap(running)
        .map_err(|_| "the controller still holds the replicas".to_owned())?
        .into_inner();
    for r in running.iter_mut() {
        if r.killed_ms.is_none() {
            r.last_report = Some(read_report(&http, r.process.addr).await?);
        }
    }
    let mut hits = Vec::new();
    for bureau in bureaus {
        let served = bureau
            .stop()
            .await
            .map_err(|e| format!("the bureau failed: {e}"))?;
        hits.push(served.hits);
    }
    let replicas = running
        .into_iter()
        .map(|r| {
            let report = r
                .last_report
                .clone()
                .ok_or_else(|| format!("no report from {}", r.process.name))?;
            Ok(ReplicaRun {
                name: r.process.name.clone(),
                restarted: r.restarted,
                offset_ms: report_offset(&report, started),
                killed_ms: r.killed_ms,
                requests_at_outage: r.requests_at_outage,
                bureau_hits: hits.get(r.slot).copied().unwrap_or(0),
                report,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let rows: BTreeSet<String> = queue
        .ids()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    let rows_by_status = queue.count_by_status().await.map_err(|e| e.to_string())?;

    let mut phases = Vec::new();
    let mut at = Duration::ZERO;
    for p in &script.phases {
        phases.push((p.name, ms(at), ms(at + p.length), p.bureau));
        at += p.length;
    }
    Ok(FleetRun {
        mode,
        scale: options.scale,
        rate: options.rate,
        started,
        phases,
        outage_ms: (ms(outage_start), ms(outage_end)),
        ended_ms,
        redis_killed_ms,
        replicas,
        sent,
        answers,
        resent,
        answered_queued,
        rows,
        rows_by_status,
        queue: queue.describe(),
    })
}

/// When the replica of `report` started, in ms since the run started.
fn report_offset(report: &ReplicaReport, run_started: SystemTime) -> f64 {
    report.started_unix_ms as f64 - service::unix_ms(run_started) as f64
}

/// `credit_bureau replica ...`: one replica (service.rs), until killed. Returns the exit code.
pub(crate) fn replica_main(args: impl IntoIterator<Item = String>) -> i32 {
    match ReplicaOptions::parse(args).and_then(service::run) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("replica: {e}");
            1
        }
    }
}

/// `credit_bureau fleet [--scale S] [--rate N] [--html PATH]`: the three runs on a Redis and a
/// PostgreSQL of their own. Returns the exit code: 0, 3 if an application was lost or a hint
/// broke its rules, 1 on a setup error.
#[cfg(not(test))]
pub(crate) fn fleet_main(args: impl IntoIterator<Item = String>) -> i32 {
    // Two of the three runs are the hint's: say so before the first run, not after it.
    if cfg!(not(feature = "redis-hint")) {
        eprintln!(
            "fleet: the replicas run the Redis hint, which needs the cargo feature `redis-hint`: \
             cargo run --example credit_bureau --features redis-hint -- fleet"
        );
        return 2;
    }
    let (mut scale, mut rate) = (0.1, 150);
    let mut html = PathBuf::from(super::fleet_picture::DEFAULT_FILE);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--scale", Some(v)) => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() => scale = s,
                _ => {
                    eprintln!("--scale takes a number above 0, not {v:?}");
                    return 2;
                }
            },
            ("--rate", Some(v)) => match v.parse::<u32>() {
                Ok(r) if r > 0 => rate = r,
                _ => {
                    eprintln!("--rate takes a whole number above 0, not {v:?}");
                    return 2;
                }
            },
            ("--html", Some(v)) => html = v.into(),
            (other, _) => {
                eprintln!("fleet: unknown argument or missing value `{other}`; usage: fleet [--scale S] [--rate N] [--html PATH]");
                return 2;
            }
        }
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("fleet: cannot find this program's own path: {e}");
            return 1;
        }
    };
    let log_dir = std::env::temp_dir().join(format!("credit_bureau_fleet_{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&log_dir) {
        eprintln!("fleet: cannot create {}: {e}", log_dir.display());
        return 1;
    }
    let redis = Arc::new(Mutex::new(redis_server::RedisServer::start()));
    let postgres = postgres_server::PostgresServer::start();
    let redis_url = lock(&redis).url();
    println!(
        "fleet game day: Redis at {redis_url}, PostgreSQL at {}, replicas' logs in {}",
        postgres.url(),
        log_dir.display()
    );
    let options = FleetOptions {
        exe,
        postgres_url: postgres.url(),
        redis_url,
        scale,
        rate,
        replicas: 3,
        log_dir,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fleet: cannot start the Tokio runtime: {e}");
            return 1;
        }
    };
    let mut runs = Vec::new();
    for mode in Mode::ALL {
        let kill: Option<Box<dyn FnOnce() + Send>> = (mode == Mode::RedisKilled).then(|| {
            let redis = redis.clone();
            Box::new(move || lock(&redis).kill()) as Box<dyn FnOnce() + Send>
        });
        match runtime.block_on(run(&options, mode, kill)) {
            Ok(fleet) => {
                println!("{fleet}");
                runs.push(fleet);
            }
            Err(e) => {
                eprintln!("fleet: the run {} failed: {e}", mode.label());
                return 1;
            }
        }
    }
    match super::fleet_picture::write_html(&runs, &html) {
        Ok(()) => println!("picture of the runs:      {}", html.display()),
        Err(e) => {
            eprintln!("fleet: cannot write {}: {e}", html.display());
            return 1;
        }
    }
    let bad = runs
        .iter()
        .any(|r| r.lost() > 0 || !r.hint_violations().is_empty());
    if bad {
        3
    } else {
        0
    }
}
