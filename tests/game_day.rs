//! The staging game day (docs/GAME_DAY.md), compressed (every duration / 100), run in-process:
//! the example's logic (examples/credit_bureau/game.rs), its reqwest client against its axum
//! bureau on 127.0.0.1.
//!
//! Asserts outcomes, never latencies: no handler crashed and no queue write failed (the two ways
//! an application can go unanswered), the queue file holds exactly the 202s, the brownout was
//! seen as slow calls and timeouts and opened the breaker while it lasted, the timed-out calls
//! were cancelled (none's request still under way when its fallback ran, and the bureau saw
//! their clients hang up before it answered), no socket opened while OPEN, 4xx never open the
//! breaker, and recovery through the half-open trials. Then, with the pool scaled like time, the
//! pool does run out, and every application that found no free worker is answered by the
//! fallback.
//!
//! A second test holds the loan client to its error handling: a 200 that is not a credit report
//! (truncated, mistyped, about someone else) is a protocol error that says what was wrong, a
//! bureau that is not there is a connection error, and a tax id with `/` or `?` in it stays one
//! path segment.

// Tests cannot run examples, so the example's modules are included here. The test does not
// use every item the example's `main` uses.
#[allow(dead_code)]
#[path = "../examples/credit_bureau/game.rs"]
mod game;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{header, StatusCode};
use breaker::{Registry, State};
use game::loan::{Application, BureauError, CreditCheck};
use game::queue::ReviewQueue;

/// Removes the queue file however the test ends.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A fresh path in the temp dir for a queue file, removed when dropped.
fn temp_queue(label: &str) -> TempFile {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    TempFile(std::env::temp_dir().join(format!(
        "breaker_game_day_{label}_{}_{nanos}.log",
        std::process::id()
    )))
}

#[tokio::test(flavor = "multi_thread")]
async fn compressed_game_day_loses_no_application_and_recovers() {
    // The attribute uses the global registry: this is the only test in this binary that uses
    // it, so it is installed exactly once, from the example's own TOML file.
    let registry = game::load_registry(Path::new(game::CONFIG_PATH), game::COMPRESSED_SCALE)
        .unwrap_or_else(|e| panic!("examples/credit_bureau.toml: {e}"));
    Registry::install_global(registry).expect("nothing used the global registry before");

    let queue = temp_queue("run");
    let options = game::Options {
        scale: game::COMPRESSED_SCALE,
        rate: 220,
        workers: 200,
        queue_path: queue.0.clone(),
    };
    // About 3 s of script; the bound only guards against a hang.
    let report = tokio::time::timeout(Duration::from_secs(50), game::run(&options))
        .await
        .expect("the game day ends within 50 s")
        .expect("the game day runs");
    println!("{report}");

    // Zero applications lost. Every application's handler is joined and counted once, so
    // `report.lost()` is exactly `crashed + unavailable`: a handler that panicked, or a 503
    // because the queue could not be written. Those two are what can go wrong.
    assert!(report.requests > 0);
    assert_eq!(report.crashed, 0, "handlers crashed");
    assert_eq!(report.unavailable, 0, "queue writes failed");
    // ... and the queue file holds exactly the ones answered 202.
    assert!(report.queued > 0, "the brownout queued nothing: {report}");
    assert_eq!(report.queue_lines as u64, report.queued);
    assert!(
        report.queue_matches,
        "queue file differs from the 202 answers"
    );
    assert!(report.cached > 0, "the cache fallback never answered");

    // The brownout was seen: calls timed out, the breaker recorded them as slow calls (a
    // timed-out call took at least the 25 ms timeout, over the 20 ms threshold), and it first
    // opened while the brownout lasted. (The pool of 200 cannot run out here: compressed, about
    // 6 calls are in flight at once, docs/GAME_DAY.md; the scaled run below exhausts its pool.)
    assert!(report.fallback_causes.1 > 0, "no call timed out: {report}");
    assert!(report.slow_calls > 0, "no slow call recorded: {report}");
    let brownout = report
        .phases
        .iter()
        .find(|(name, _)| name.starts_with("brownout"))
        .map(|(_, length)| *length)
        .expect("the script has a brownout");
    let first_open = report
        .transitions
        .iter()
        .find(|t| t.to == State::Open)
        .map(|t| t.at)
        .expect("the breaker opened");
    assert!(
        report.brownout_start <= first_open && first_open < report.brownout_start + brownout,
        "first OPEN at {first_open:?}, brownout from {:?} for {brownout:?}",
        report.brownout_start
    );
    // The timeouts cancelled their requests: the call's future was dropped with reqwest's
    // request in it before the fallback ran (no request of a timed-out call was still under
    // way then), its connection closed, and the bureau dropped the held request before its
    // 15 s (150 ms) were up. Each such hang-up is a call that ended in the fallback.
    assert_eq!(
        report.timeouts_outlived, 0,
        "timed-out requests still running at their fallback: {report}"
    );
    assert!(
        report.bureau_abandoned > 0,
        "the bureau saw no client hang up: {report}"
    );
    assert!(
        report.bureau_abandoned <= report.fallback_causes.1 + report.fallback_causes.2,
        "more hang-ups than calls that timed out or failed: {report}"
    );

    // The breaker opened, and while OPEN no call reached for a socket.
    assert!(report.transitions.iter().any(|t| t.to == State::Open));
    assert!(report.fallback_causes.0 > 0, "no call was refused");
    assert_eq!(report.sockets_while_open, 0, "sockets opened while OPEN");

    // 4xx never open the breaker: the burst of bad tax ids came and went with it CLOSED, and
    // the breaker saw them as ignored errors.
    assert!(report.client_errors > 0);
    assert!(report.ignored_errors > 0);
    assert!(
        !report.opened_before_brownout(),
        "opened before the brownout"
    );

    // Recovery through the half-open trials.
    assert!(
        report.recovered_through_half_open(),
        "no HALF_OPEN -> CLOSED"
    );
    assert_eq!(report.final_state, State::Closed);

    // The same day with the worker pool scaled like time (200 -> 2), so that the pool runs out
    // at the start of the brownout as the real-time run's does (220/s x 2.5 s timeouts is about
    // 550 calls in flight against 200 workers). Applications that find no free worker take the
    // fallback at once: each is answered (cached or queued), none crashed, and the queue file
    // still holds exactly the 202s.
    Registry::global().breaker("credit_bureau_cb").reset();
    let scaled_queue = temp_queue("scaled");
    let scaled = game::Options {
        workers: 2,
        queue_path: scaled_queue.0.clone(),
        ..options
    };
    let report = tokio::time::timeout(Duration::from_secs(50), game::run(&scaled))
        .await
        .expect("the game day ends within 50 s")
        .expect("the game day runs");
    println!("{report}");
    assert_eq!(
        report.max_busy_workers, 2,
        "the whole pool was busy at once"
    );
    assert!(
        report.workers_exhausted > 0,
        "the pool never ran out: {report}"
    );
    assert_eq!(
        report.shed_answered, report.workers_exhausted,
        "applications without a worker and without a fallback answer"
    );
    assert_eq!(report.crashed + report.unavailable, 0);
    assert!(
        report.queue_matches,
        "queue file differs from the 202 answers"
    );
    assert_eq!(report.sockets_while_open, 0, "sockets opened while OPEN");
}

/// The client's request on its own (no breaker, so no global registry), against a bureau that
/// answers 200 with bodies that are not credit reports.
#[tokio::test]
async fn answers_that_are_not_credit_reports_are_named_errors() {
    let report = |tax_id: axum::extract::Path<String>| async move {
        let body = match tax_id.as_str() {
            "truncated" => r#"{"tax_id":"truncated","score":"#.to_owned(),
            "mistyped" => r#"{"tax_id":"mistyped","score":"high"}"#.to_owned(),
            "someone" => r#"{"tax_id":"someone-else","score":700}"#.to_owned(),
            other => serde_json::json!({ "tax_id": other, "score": 640 }).to_string(),
        };
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
    };
    let app = axum::Router::new().route("/v2/credit-reports/{tax_id}", axum::routing::get(report));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let queue = temp_queue("errors");
    let get = |tax_id: &str| Application {
        id: format!("app-{tax_id}"),
        tax_id: tax_id.to_owned(),
        received: Instant::now(),
    };
    let check = CreditCheck::new(
        addr,
        Duration::from_secs(5),
        ReviewQueue::open(&queue.0).expect("a queue file"),
    )
    .expect("a client");
    let protocol = |result: Result<u32, BureauError>| match result {
        Err(BureauError::Protocol(message)) => message,
        other => panic!("expected a protocol error, got {other:?}"),
    };

    let truncated = protocol(check.get_report(&get("truncated")).await);
    assert!(truncated.contains("not a credit report"), "{truncated}");
    assert!(truncated.contains("EOF"), "{truncated}");
    let mistyped = protocol(check.get_report(&get("mistyped")).await);
    assert!(mistyped.contains("invalid type"), "{mistyped}");
    let someone = protocol(check.get_report(&get("someone")).await);
    assert!(someone.contains(r#"about "someone-else""#), "{someone}");
    // Percent-encoded on the way out, decoded by the bureau: still this applicant's report.
    assert_eq!(
        check.get_report(&get("tx/1?x")).await.expect("a report"),
        640
    );

    server.abort();

    // A bureau that is not there: a port that was just free, and nothing listens on it.
    let gone = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let gone_addr = gone.local_addr().expect("an address");
    drop(gone);
    let nowhere = CreditCheck::new(
        gone_addr,
        Duration::from_secs(5),
        ReviewQueue::open(&queue.0).expect("a queue file"),
    )
    .expect("a client");
    match nowhere.get_report(&get("tx-1")).await {
        Err(BureauError::Connect(message)) => assert!(!message.is_empty()),
        other => panic!("expected a connection error, got {other:?}"),
    }
}
