//! The loan service as separate replica processes (`credit_bureau replica`,
//! examples/credit_bureau/service.rs) on a real PostgreSQL and a real Redis, started by the
//! tests on free loopback ports (docs/GAME_DAY.md, "The fleet").
//!
//! - A replica answers as the contract says: the bureau's score with `X-Credit-Source:
//!   BUREAU`, the bureau's 4xx as a 4xx, a body that is not an application as a 400/422 that
//!   says what was wrong, and its report counts what it answered.
//! - The crash after a 202: against a bureau that fails, the first application answered 202
//!   has its replica killed (SIGKILL) the moment the answer arrives, and its row is in
//!   PostgreSQL, read back through tokio-postgres. Sending the same application to a new
//!   replica queues nothing twice.
//! - The fleet game day (examples/credit_bureau/fleet.rs): three replicas sharing the
//!   PostgreSQL and the Redis, one restarted during the bureau's outage, run without the hint,
//!   with it, and with it while Redis is killed as the outage begins. In every run no
//!   application is lost (each ends as a bureau answer, a cached one, a 202 whose row is
//!   committed, a 4xx or a 503; the rows counted by status are the 202s, plus only rows of
//!   applications sent again after their replica died under them), and no hint closed a
//!   breaker or re-opened one that local evidence had moved. With the hint, the restarted
//!   replica's breaker is opened by the hint before it sends the bureau anything; without it,
//!   or with Redis dead, it opens on its own evidence, after at least the minimum number of
//!   calls. The replicas that ran before the outage are never opened by a hint (they have
//!   local history). The run's picture draws one band per replica, as its transitions were.
//!
//! The replicas run in real time as separate processes, so nothing here is on a paused clock:
//! the assertions are counts, orders and causes, never latencies. The fleet runs at a tenth of
//! the contract's durations (the healthy bureau answers in 35 ms, the breaker's timeout is
//! 250 ms, its wait in OPEN 3 s), roomy enough for a loaded 2-core machine.
//!
//! The replicas are the example's binary, found next to this test's (`cargo test --workspace
//! --all-features` builds the examples before it runs the tests; alone: `cargo build --example
//! credit_bureau --features redis-hint`), or at `CREDIT_BUREAU_EXAMPLE`. The fleet runs the Redis
//! hint, so this test is built with the `redis-hint` feature only (`required-features`).

// Tests cannot run examples, so the example's modules are included here. The test does not
// use every item the example's `main` uses.
#[allow(dead_code)]
#[path = "../examples/credit_bureau/game.rs"]
mod game;
#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "../breaker-core/tests/support/redis_server.rs"]
mod redis_server;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::header::CONTENT_TYPE;
use game::bureau::{self, Behaviour, Bureau, Phase, Script};
use game::fleet::{FleetOptions, FleetRun, Mode, ReplicaCommand, MINIMUM_CALLS};
use game::service::{ReplicaReport, APPLICATIONS, CREDIT_SOURCE, FROM_BUREAU, REPORT};
use game::store::{QUEUED, QUEUE_TABLE};
use game::wire::Wire;
use postgres_server::PostgresServer;
use redis_server::RedisServer;
use reqwest::StatusCode;
use tokio::time::Instant;

/// The example's binary: `CREDIT_BUREAU_EXAMPLE` if set (a copy kept apart, when several
/// checkouts share one target directory and build the example in turn), else the one next to
/// this test's: `target/debug/examples/credit_bureau`.
fn example_binary() -> PathBuf {
    if let Some(exe) = std::env::var_os("CREDIT_BUREAU_EXAMPLE") {
        let exe = PathBuf::from(exe);
        assert!(
            exe.is_file(),
            "CREDIT_BUREAU_EXAMPLE names no file: {}",
            exe.display()
        );
        return exe;
    }
    let me = std::env::current_exe().expect("the test binary's own path");
    let exe = me
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("examples").join("credit_bureau"))
        .expect("the test binary is in target/<profile>/deps");
    assert!(
        exe.is_file(),
        "the credit_bureau example is not built at {}: `cargo test --workspace --all-features` \
         builds it before the tests, or run `cargo build --example credit_bureau --features \
         redis-hint` first",
        exe.display()
    );
    exe
}

/// A fresh directory for the replicas' logs.
fn log_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("game_day_fleet_{name}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the log directory");
    dir
}

/// A bureau on 127.0.0.1 that behaves as `bureau` for the whole test.
async fn bureau_that(bureau: Behaviour) -> Bureau {
    let script = Script {
        phases: vec![Phase {
            name: "the whole test",
            length: Duration::from_secs(3600),
            bureau,
            bad_id_percent: 0,
        }],
        latency: Duration::from_millis(5),
        hang: Duration::from_secs(5),
    };
    Bureau::start(
        Arc::new(script),
        Instant::now(),
        Duration::from_secs(1),
        Duration::from_secs(60),
        Wire::new(false),
    )
    .await
    .expect("start the bureau")
}

/// A replica process, killed (SIGKILL) when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts one replica (no hint) against `bureau`, on the test's servers.
fn replica(
    name: &str,
    bureau: SocketAddr,
    postgres: &PostgresServer,
    redis: &RedisServer,
) -> Replica {
    let command = ReplicaCommand {
        exe: example_binary(),
        postgres_url: postgres.url(),
        redis_url: redis.url(),
        hint: false,
        scale: 1.0,
        log_dir: log_dir(name),
    };
    let (child, listening) = command
        .spawn(name, bureau)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listening.replica, name);
    assert!(
        listening.queue.contains("PostgreSQL") && listening.cache.contains("Redis"),
        "the replica runs on the given servers: {listening:?}"
    );
    Replica {
        child,
        addr: listening.addr,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

/// POSTs `body` as JSON to the replica; the status, the credit-source header and the JSON
/// body.
async fn post(
    http: &reqwest::Client,
    replica: SocketAddr,
    body: &str,
) -> (StatusCode, Option<String>, serde_json::Value) {
    let response = http
        .post(format!("http://{replica}{APPLICATIONS}"))
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("the replica answers");
    let status = response.status();
    let source = (response.headers().get(CREDIT_SOURCE))
        .map(|v| v.to_str().expect("an ASCII header").to_owned());
    let bytes = response.bytes().await.expect("the whole body");
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&bytes)));
    (status, source, json)
}

fn application(id: &str, tax_id: &str) -> String {
    serde_json::json!({ "application_id": id, "tax_id": tax_id }).to_string()
}

async fn report(http: &reqwest::Client, replica: SocketAddr) -> ReplicaReport {
    let bytes = (http.get(format!("http://{replica}{REPORT}")).send().await)
        .expect("the report")
        .bytes()
        .await
        .expect("the report's body");
    serde_json::from_slice(&bytes).expect("the report is a ReplicaReport")
}

/// The test's own connection to PostgreSQL.
async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to PostgreSQL");
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_answers_as_the_contract_says() {
    let postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let bureau = bureau_that(Behaviour::Healthy).await;
    let replica = replica("contract", bureau.addr(), &postgres, &redis);
    let http = client();

    let (status, source, body) =
        post(&http, replica.addr, &application("app-1", "tx-000001")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(source.as_deref(), Some(FROM_BUREAU));
    assert_eq!(body["score"], bureau::score_of("tx-000001"));
    assert_eq!(body["application_id"], "app-1");

    // The bureau's 400 for a malformed tax id comes back as a 4xx, named.
    let (status, _, body) = post(&http, replica.addr, &application("app-2", "bad-2")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let error = body["error"].as_str().expect("an error text");
    assert!(error.contains("bureau") && error.contains("400"), "{error}");

    // Bodies that are not applications: the answer says what was wrong.
    for (body, status, says) in [
        (
            "{\"application_id\": \"app-3\"",
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            "{\"application_id\": \"app-3\"}",
            StatusCode::UNPROCESSABLE_ENTITY,
            "tax_id",
        ),
        (
            "{\"application_id\": 7, \"tax_id\": \"tx-3\"}",
            StatusCode::UNPROCESSABLE_ENTITY,
            "application_id",
        ),
        (
            "{\"application_id\": \" \", \"tax_id\": \"tx-3\"}",
            StatusCode::UNPROCESSABLE_ENTITY,
            "application_id",
        ),
    ] {
        let (got, _, answer) = post(&http, replica.addr, body).await;
        assert_eq!(got, status, "{body} -> {answer}");
        let error = answer["error"].as_str().expect("an error text");
        assert!(
            error.starts_with("not a loan application") && error.contains(says),
            "{body} -> {error}"
        );
    }

    let seen = report(&http, replica.addr).await;
    assert_eq!(seen.name, "contract");
    assert_eq!(
        (seen.outcomes.bureau, seen.outcomes.client_errors),
        (1, 1),
        "{seen:?}"
    );
    assert_eq!(seen.outcomes.bad_requests, 4, "{seen:?}");
    assert_eq!(seen.bureau_requests, 2, "{seen:?}");
    assert!(seen.transitions.is_empty(), "{seen:?}");
    assert!(seen.hint_stats.is_none(), "no hint was asked for");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_right_after_a_202_has_committed_the_row() {
    let postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let bureau = bureau_that(Behaviour::ServerErrors).await;
    let http = client();

    let mut first = replica("crash-1", bureau.addr(), &postgres, &redis);
    let mut queued = None;
    for n in 1..=50 {
        let id = format!("crash-{n:03}");
        let response = http
            .post(format!("http://{}{APPLICATIONS}", first.addr))
            .header(CONTENT_TYPE, "application/json")
            .body(application(&id, &format!("tx-{n:06}")))
            .send()
            .await
            .expect("the replica answers");
        if response.status() == StatusCode::ACCEPTED {
            // The moment the 202's head is here: SIGKILL, before anything else can happen.
            first.child.kill().expect("SIGKILL the replica");
            first.child.wait().expect("the replica is gone");
            queued = Some(id);
            break;
        }
    }
    let id = queued.expect("an application answered 202 by a replica whose bureau fails");
    drop(first);

    let db = sql(&postgres.url()).await;
    let select = format!("SELECT status FROM {QUEUE_TABLE} WHERE application_id = $1");
    let rows = db.query(&select, &[&id]).await.expect("read the queue");
    assert_eq!(
        rows.len(),
        1,
        "the application answered 202 is in the queue after the crash"
    );
    assert_eq!(rows[0].get::<_, String>(0), QUEUED);

    // The same application again, to a new replica: answered 202, and still one row.
    let second = replica("crash-2", bureau.addr(), &postgres, &redis);
    let (status, _, body) = post(&http, second.addr, &application(&id, "tx-000001")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], QUEUED);
    let count = format!("SELECT count(*) FROM {QUEUE_TABLE} WHERE application_id = $1");
    let n: i64 = db
        .query_one(&count, &[&id])
        .await
        .expect("count the rows")
        .get(0);
    assert_eq!(n, 1, "a resent application is queued once");
    let all: i64 = db
        .query_one(&format!("SELECT count(*) FROM {QUEUE_TABLE}"), &[])
        .await
        .expect("count the rows")
        .get(0);
    assert_eq!(all, 1, "nothing else was queued");
}

/// Checks that hold for every run of the fleet.
fn nothing_lost_and_no_hint_against_local_evidence(run: &FleetRun) {
    let a = &run.answers;
    assert_eq!(
        a.bureau + a.cached + a.queued + a.client_errors + a.unavailable + a.unanswered,
        run.sent,
        "every application is counted once:\n{run}"
    );
    assert_eq!(a.unanswered, 0, "every application was answered:\n{run}");
    assert_eq!(run.lost(), 0, "nothing lost:\n{run}");
    assert!(
        run.answered_queued.is_subset(&run.rows),
        "every 202 has its row:\n{run}"
    );
    assert!(
        run.rows_without_202().is_subset(&run.resent),
        "a row without a 202 is only ever one queued by a replica that died before answering:\n{run}"
    );
    assert_eq!(
        run.rows_by_status.keys().collect::<Vec<_>>(),
        [QUEUED],
        "{run}"
    );
    assert_eq!(
        run.rows_by_status[QUEUED],
        run.rows.len() as u64,
        "SELECT count(*) by status counts the rows:\n{run}"
    );
    assert_eq!(
        run.rows_by_status[QUEUED],
        a.queued + run.rows_without_202().len() as u64,
        "the 202s equal SELECT count(*), but for rows of replicas that died:\n{run}"
    );
    assert!(a.queued > 0, "the outage queued applications:\n{run}");
    assert!(
        a.bureau > 0,
        "the bureau answered outside the outage:\n{run}"
    );
    assert!(
        run.hint_violations().is_empty(),
        "no hint closed a breaker or re-opened one against local evidence: {:?}\n{run}",
        run.hint_violations()
    );
    assert_eq!(
        run.replicas.len(),
        4,
        "three replicas and the restarted one:\n{run}"
    );
    for r in run.replicas.iter().filter(|r| !r.restarted) {
        assert!(
            r.report.transitions.iter().all(|t| t.cause != "Hint"),
            "{} had local history from the healthy phase: no hint may move it:\n{run}",
            r.name
        );
    }
    let killed: Vec<_> = run
        .replicas
        .iter()
        .filter(|r| r.killed_ms.is_some())
        .collect();
    assert_eq!(killed.len(), 1, "one replica was killed:\n{run}");
    let restarted = run.restarted().expect("a restarted replica");
    let (outage_start, outage_end) = run.outage_ms;
    assert!(
        restarted.offset_ms > outage_start && restarted.offset_ms < outage_end,
        "the replica was restarted during the outage:\n{run}"
    );
}

/// The restarted replica opened on its own evidence: no hint moved it, and its first OPEN came
/// after at least `minimum-number-of-calls` recorded calls, at least one of them a request to
/// the bureau.
fn opened_on_its_own_evidence(run: &FleetRun) -> u64 {
    let restarted = run.restarted().expect("a restarted replica");
    assert!(
        restarted
            .report
            .transitions
            .iter()
            .all(|t| t.cause != "Hint"),
        "{run}"
    );
    let open = (restarted.first_open(run.outage_ms.0))
        .unwrap_or_else(|| panic!("the restarted replica's breaker opened in the outage:\n{run}"));
    assert_eq!(
        (open.from.as_str(), open.cause.as_str()),
        ("CLOSED", "Evaluation"),
        "{run}"
    );
    assert!(open.recorded_calls >= MINIMUM_CALLS, "{run}");
    let spent = restarted
        .requests_before_open(run.outage_ms.0)
        .expect("counted");
    assert!(spent > 0, "{run}");
    spent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_game_day_with_and_without_the_hint_and_with_redis_killed() {
    let exe = example_binary();
    let postgres = PostgresServer::start();
    let redis = Arc::new(Mutex::new(RedisServer::start()));
    let redis_url = redis.lock().expect("the Redis server").url();
    let dir = log_dir("fleet");
    let options = FleetOptions {
        exe,
        postgres_url: postgres.url(),
        redis_url,
        scale: 0.1,
        rate: 150,
        replicas: 3,
        log_dir: dir.clone(),
    };

    let without = game::fleet::run(&options, Mode::NoHint, None)
        .await
        .unwrap_or_else(|e| panic!("the run without the hint: {e}"));
    println!("{without}");
    nothing_lost_and_no_hint_against_local_evidence(&without);
    let spent_without = opened_on_its_own_evidence(&without);
    for r in &without.replicas {
        assert!(r.report.hint_stats.is_none(), "{without}");
    }

    let with = game::fleet::run(&options, Mode::Hint, None)
        .await
        .unwrap_or_else(|e| panic!("the run with the hint: {e}"));
    println!("{with}");
    nothing_lost_and_no_hint_against_local_evidence(&with);
    let restarted = with.restarted().expect("a restarted replica");
    let first = restarted
        .report
        .transitions
        .first()
        .unwrap_or_else(|| panic!("the restarted replica's breaker moved:\n{with}"));
    assert_eq!(
        (first.from.as_str(), first.to.as_str(), first.cause.as_str()),
        ("CLOSED", "OPEN", "Hint"),
        "the hint opened the restarted replica's breaker:\n{with}"
    );
    assert_eq!(
        (first.bureau_requests, first.recorded_calls),
        (0, 0),
        "before it sent the bureau anything:\n{with}"
    );
    assert_eq!(restarted.requests_before_open(with.outage_ms.0), Some(0));
    assert!(
        spent_without > 0,
        "without the hint the restarted replica paid for its own evidence"
    );
    assert!(
        with.replicas
            .iter()
            .any(|r| r.report.hint_stats.is_some_and(|s| s.published > 0)),
        "{with}"
    );

    let killer = {
        let redis = redis.clone();
        Box::new(move || redis.lock().expect("the Redis server").kill()) as Box<dyn FnOnce() + Send>
    };
    let killed = game::fleet::run(&options, Mode::RedisKilled, Some(killer))
        .await
        .unwrap_or_else(|e| panic!("the run with Redis killed: {e}"));
    println!("{killed}");
    nothing_lost_and_no_hint_against_local_evidence(&killed);
    assert!(killed.redis_killed_ms.is_some());
    opened_on_its_own_evidence(&killed);
    let cache_errors: u64 = killed.replicas.iter().map(|r| r.report.cache_errors).sum();
    assert!(
        cache_errors > 0,
        "with Redis dead the cache failed, and the fallback queued:\n{killed}"
    );
    let restarted = killed.restarted().expect("a restarted replica");
    assert!(
        restarted
            .report
            .hint_stats
            .is_some_and(|s| !s.connected && s.fast_opened == 0),
        "the restarted replica's hint never reached Redis:\n{killed}"
    );

    let runs = [without, with, killed];
    let picture = dir.join("fleet.html");
    game::fleet_picture::write_html(&runs, &picture).expect("write the picture");
    the_picture_draws_every_replica_as_it_ran(&runs, &std::fs::read_to_string(&picture).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The picture: well-formed XML; per run, one band per replica process whose segments are its
/// transitions in order, with their causes; the restart marked where the replica was killed and
/// where the new one came up; hint-caused transitions marked on the restarted replica's band
/// in the run with the hint only; Redis's death marked in its run only.
fn the_picture_draws_every_replica_as_it_ran(runs: &[FleetRun], html: &str) {
    // The file starts with `<!DOCTYPE html>`, which roxmltree reads only when allowed to.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(html, options)
        .expect("the picture is well-formed XML");
    let class = |n: &roxmltree::Node, c: &str| n.attribute("class") == Some(c);
    let ms = |n: &roxmltree::Node, a: &str| -> f64 {
        n.attribute(a)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{a} on {n:?}"))
    };
    let drawn: Vec<_> = doc.descendants().filter(|n| class(n, "run")).collect();
    assert_eq!(drawn.len(), runs.len());
    for (run, g) in runs.iter().zip(&drawn) {
        assert_eq!(g.attribute("data-mode"), Some(run.mode.key()));
        let bands: Vec<_> = g
            .descendants()
            .filter(|n| class(n, "replica-band"))
            .collect();
        assert_eq!(bands.len(), run.replicas.len());
        for (replica, band) in run.replicas.iter().zip(&bands) {
            assert_eq!(band.attribute("data-replica"), Some(replica.name.as_str()));
            let segments: Vec<_> = band.descendants().filter(|n| class(n, "state")).collect();
            let states: Vec<&str> = segments
                .iter()
                .map(|s| s.attribute("data-state").expect("a state"))
                .collect();
            let expected: Vec<&str> = std::iter::once("CLOSED")
                .chain(replica.report.transitions.iter().map(|t| t.to.as_str()))
                .collect();
            assert_eq!(states, expected, "{}'s band", replica.name);
            let causes: Vec<&str> = segments
                .iter()
                .skip(1)
                .map(|s| s.attribute("data-cause").expect("a cause"))
                .collect();
            let told: Vec<&str> = (replica.report.transitions.iter())
                .map(|t| t.cause.as_str())
                .collect();
            assert_eq!(causes, told, "{}'s band", replica.name);
            for pair in segments.windows(2) {
                assert!(ms(&pair[0], "data-to-ms") <= ms(&pair[1], "data-from-ms") + 0.1);
            }
            let end = replica.killed_ms.unwrap_or(run.ended_ms);
            assert!((ms(band, "data-to-ms") - end).abs() < 0.1);
            let hints = band
                .descendants()
                .filter(|n| class(n, "hint-transition"))
                .count();
            let expected_hints = usize::from(run.mode == Mode::Hint && replica.restarted);
            assert_eq!(hints, expected_hints, "{}'s hint marks", replica.name);
        }
        let restarts: Vec<f64> = g
            .descendants()
            .filter(|n| class(n, "restart"))
            .map(|n| ms(&n, "data-at-ms"))
            .collect();
        let killed = run
            .replicas
            .iter()
            .find_map(|r| r.killed_ms)
            .expect("a killed replica");
        let up = run.restarted().expect("a restarted replica").offset_ms;
        assert_eq!(restarts.len(), 2);
        assert!((restarts[0] - killed).abs() < 0.1 && (restarts[1] - up).abs() < 0.1);
        let redis_marks = g.descendants().filter(|n| class(n, "redis-killed")).count();
        assert_eq!(redis_marks, usize::from(run.mode == Mode::RedisKilled));
    }
    let modes: BTreeSet<&str> = drawn
        .iter()
        .filter_map(|g| g.attribute("data-mode"))
        .collect();
    assert_eq!(modes.len(), 3);
}
