//! The staging game day (docs/GAME_DAY.md), compressed (every duration / 100), run in-process:
//! the example's logic (examples/credit_bureau/game.rs) against a real HTTP server on 127.0.0.1.
//!
//! Asserts outcomes, never latencies: no handler crashed and no queue write failed (the two ways
//! an application can go unanswered), the queue file holds exactly the 202s, the brownout was
//! seen as slow calls and timeouts and opened the breaker while it lasted, no socket opened while
//! OPEN, 4xx never open the breaker, and recovery through the half-open trials. Then, with the
//! pool scaled like time, the pool does run out, and every application that found no free
//! worker is answered by the fallback.

// Tests cannot run examples, so the example's modules are included here. The test does not
// use every item the example's `main` uses.
#[allow(dead_code)]
#[path = "../examples/credit_bureau/game.rs"]
mod game;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker::{Registry, State};

/// Removes the queue file however the test ends.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn compressed_game_day_loses_no_application_and_recovers() {
    // The attribute uses the global registry: this is the only test in this binary, so it is
    // installed exactly once, from the example's own TOML file.
    let registry = game::load_registry(Path::new(game::CONFIG_PATH), game::COMPRESSED_SCALE)
        .unwrap_or_else(|e| panic!("examples/credit_bureau.toml: {e}"));
    Registry::install_global(registry).expect("nothing used the global registry before");

    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let queue = TempFile(std::env::temp_dir().join(format!(
        "breaker_game_day_{}_{nanos}.log",
        std::process::id()
    )));
    let options = game::Options {
        scale: game::COMPRESSED_SCALE,
        rate: 220,
        workers: 200,
        queue_path: queue.0.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // About 3 s of script; the bound only guards against a hang.
    let report = runtime
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(50), game::run(&options)).await
        })
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
    let scaled_queue = TempFile(std::env::temp_dir().join(format!(
        "breaker_game_day_scaled_{}_{nanos}.log",
        std::process::id()
    )));
    let scaled = game::Options {
        workers: 2,
        queue_path: scaled_queue.0.clone(),
        ..options
    };
    let report = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(50), game::run(&scaled)).await })
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
