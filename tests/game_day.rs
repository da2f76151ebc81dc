//! The staging game day (docs/GAME_DAY.md), compressed (every duration / 100), run in-process:
//! the example's logic (examples/credit_bureau/game.rs), its reqwest client against its axum
//! bureau on 127.0.0.1.
//!
//! The day with the bulkhead runs on the contract's real parts: a PostgreSQL and a Redis the
//! test starts on free loopback ports (tests/support/postgres_server.rs,
//! breaker-core/tests/support/redis_server.rs). The test reads them itself (tokio-postgres and a
//! bare RESP client, not the example's code): the rows with status `QUEUED_FOR_OFFLINE_REVIEW`
//! are exactly the 202'd applications, and the cache's hit counters in Redis add up to the
//! cached answers. The other days stay on the embedded defaults (the queue file, the cache in
//! memory), which `cargo run --example credit_bureau` uses on a machine without servers: they
//! vary the breaker, the bulkhead and the retry, where the parts make no difference, and one
//! PostgreSQL and one Redis for the one run keep the test short.
//!
//! Asserts outcomes, never latencies, of the day with the bulkhead and of the same day without
//! it: no handler crashed and no queue write failed (the two ways an application can go
//! unanswered), the queue holds exactly the 202s (its rows by status, read back from it, are
//! the 202 answers), the brownout was seen as slow calls and
//! timeouts and opened the breaker while it lasted, the timed-out calls were cancelled (none's
//! request still under way when its fallback ran, and the bureau saw their clients hang up
//! before it answered), no socket opened while OPEN, 4xx never open the breaker, and recovery
//! through the half-open trials. With the bulkhead, the bureau never held more workers than its
//! limit, the calls it refused were answered by the fallback and counted apart, and no
//! application found every worker busy. Then, without the bulkhead and with the pool scaled like
//! time, the pool does run out, and every application that found no free worker is answered by
//! the fallback.
//!
//! Then the retry storm: the day with the bulkhead, its calls retried outside the breaker as the
//! contract's option A would (three retries, no budget) and then within the retry budget. The
//! budgeted run's retries stay within what the budget allows over the run, and it refuses
//! some; every retry follows one failure the breaker recorded; the bureau never receives more
//! requests than first attempts and retries, and its mean rate in the brownout stays under
//! the rate offered (with the budget, within its ratio and floor over it) in every run.
//!
//! Every run is drawn as the example draws them (examples/credit_bureau/picture.rs), and the
//! HTML file is held to what the run was: well-formed XML with one `<svg>`, the breaker's state
//! bands as the event stream told them (an OPEN band starting inside the brownout), the brownout
//! marked where the script puts it, and columns whose answers add up to the applications sent
//! in them and, over the run, to the report's counts; the rows queued per second as the queue
//! counts them (PostgreSQL's `queued_at`) and the cache hits as the cache counts them (Redis's
//! counters) add up to the 202 and the cached answers. A breaker name full of XML's special
//! characters is escaped.
//!
//! A second test holds the loan client to its error handling: a 200 that is not a credit report
//! (truncated, mistyped, about someone else) is a protocol error that says what was wrong, a
//! bureau that is not there is a connection error, and a tax id with `/` or `?` in it stays one
//! path segment.
//!
//! Every duration of the run is the test's own, so its outcome does not depend on how fast or
//! how busy the machine is. The test runs on Tokio's paused clock (`start_paused`): the load's
//! ticks, the bureau's latency and hangs, the breaker's `timeout-duration` and the client's
//! timeouts are Tokio timers, and the clock moves only when no task can run, straight to the
//! next timer, so a call that the script makes 3.5 ms long takes 3.5 ms of that clock however
//! long the machine takes to run it. A request on its way over the loopback holds the clock
//! still until it lands (examples/credit_bureau/wire.rs), so neither can the kernel's delivery
//! add to a call. The registry, which the attribute reads as the global one, runs on a
//! [`ManualClock`] that follows Tokio's clock ([`follow_tokio`]): the breaker measures the
//! same durations (slow calls, the OPEN state's wait, the retry's waits and its budget's
//! window) to within a millisecond.
//!
//! A binary of its own: the attribute reads the process's global registry, and this test
//! installs it from the example's file at the compressed scale, on its manual clock, which no
//! other test could share.

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
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{header, StatusCode};
use breaker::{BulkheadEventKind, EventKind, ManualClock, Registry, State};
use game::loan::{Application, BureauError, CreditCheck, FallbackCause};
use game::store::{ReviewQueue, ScoreCache, StoreConfig, QUEUED, QUEUE_TABLE};
use game::{Outcome, Report, RetryMode};
use postgres_server::PostgresServer;
use redis_server::{RedisServer, Reply};
use tokio::time::Instant;

/// Moves the breaker's clock with Tokio's paused clock (see [`follow_tokio`]) until dropped.
struct FollowTokio(tokio::task::JoinHandle<()>);

impl Drop for FollowTokio {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Moves `clock` forward with Tokio's clock, by the time that passed, at every millisecond of
/// Tokio's time (its timers' resolution, so the paused clock never jumps further without it).
/// A task woken at the same instant may run before this one: the breaker's readings trail
/// Tokio's by less than a millisecond, against a slow-call threshold of 20 ms and calls of
/// 3.5 ms, or of at least the 25 ms timeout.
fn follow_tokio(clock: ManualClock) -> FollowTokio {
    FollowTokio(tokio::spawn(async move {
        let mut last = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        loop {
            tick.tick().await;
            let now = Instant::now();
            clock.advance(now - last);
            last = now;
        }
    }))
}

/// Removes the queue file however the test ends.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A fresh path in the temp dir for a queue file, removed when dropped.
fn temp_queue(label: &str) -> TempFile {
    temp_file(label, "log")
}

/// The embedded default stores, with the queue in `queue`'s file.
fn file_stores(queue: &TempFile) -> StoreConfig {
    StoreConfig {
        queue_path: Some(queue.0.clone()),
        ..StoreConfig::default()
    }
}

/// A credit check against the bureau at `bureau` on the embedded defaults: the file `queue` and
/// a cache in memory.
async fn embedded_check(bureau: SocketAddr, queue: &TempFile) -> CreditCheck {
    CreditCheck::new(
        bureau,
        Duration::from_secs(5),
        ReviewQueue::open(&file_stores(queue))
            .await
            .expect("a queue file"),
        ScoreCache::open(&StoreConfig::default())
            .await
            .expect("a cache in memory"),
    )
    .expect("a client")
}

/// A fresh path in the temp dir, removed when dropped.
fn temp_file(label: &str, extension: &str) -> TempFile {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    TempFile(std::env::temp_dir().join(format!(
        "breaker_game_day_{label}_{}_{nanos}.{extension}",
        std::process::id()
    )))
}

/// One element of an XML document: its name, its attributes, and the text directly inside it
/// (entities decoded).
#[derive(Debug)]
struct Element {
    name: String,
    /// The element's namespace (`xmlns` declarations are not attributes).
    namespace: Option<String>,
    attributes: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A number from a `data-` attribute the picture writes.
    fn number(&self, name: &str) -> f64 {
        let value = self
            .attr(name)
            .unwrap_or_else(|| panic!("<{}> has no {name}", self.name));
        value
            .parse()
            .unwrap_or_else(|e| panic!("{name}={value:?}: {e}"))
    }

    fn count(&self, name: &str) -> u64 {
        let value = self.number(name);
        assert!(value >= 0.0 && value.fract() == 0.0, "{name}={value}");
        value as u64
    }
}

/// Reads `doc` as XML (an HTML5 doctype allowed) and returns its elements in document
/// order; an error says where it is not well-formed.
fn parse_xml(doc: &str) -> Result<Vec<Element>, String> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let parsed =
        roxmltree::Document::parse_with_options(doc, options).map_err(|e| e.to_string())?;
    let elements = parsed.descendants().filter(|node| node.is_element());
    Ok(elements
        .map(|node| Element {
            name: node.tag_name().name().to_owned(),
            namespace: node.tag_name().namespace().map(str::to_owned),
            attributes: node
                .attributes()
                .map(|a| (a.name().to_owned(), a.value().to_owned()))
                .collect(),
            text: node
                .children()
                .filter_map(|c| c.is_text().then(|| c.text()).flatten())
                .collect(),
        })
        .collect())
}

/// Milliseconds as the picture writes them in its data attributes.
fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

/// What the breaker's and the bulkhead's own event streams told during a run, counted by the
/// test beside the example's report.
#[derive(Debug, Default)]
struct Told {
    /// The breaker's `NotPermitted` events: one per call it refused.
    breaker_refusals: AtomicU64,
    /// The breaker's `Error` events: one per call it recorded as a failure.
    breaker_failures: AtomicU64,
    /// The bulkhead's `CALL_REJECTED` events: one per call it refused.
    bulkhead_refusals: AtomicU64,
}

/// Draws `report` as the example does, into a file, and holds the picture to the run: it
/// parses as XML with one `<svg>`, its state bands are the transitions the run had (in order,
/// with their times), the brownout is marked where the script has it, and its columns' answers
/// add up, column by column, to the applications sent in them, and over the run to the
/// report's counts. (Outcomes and counts only: nothing here depends on how fast the run was.)
fn check_picture(report: &Report, told: &Told, label: &str, opened_in_brownout: bool) {
    let file = temp_file(label, "html");
    game::picture::write_html(report, &file.0).expect("the picture is written");
    let html = std::fs::read_to_string(&file.0).expect("the picture reads back");
    let doc = parse_xml(&html).unwrap_or_else(|e| panic!("the picture is not well-formed: {e}"));
    let by_class = |class: &str| -> Vec<&Element> {
        doc.iter()
            .filter(|e| e.attr("class") == Some(class))
            .collect()
    };
    assert_eq!(doc[0].name, "html");
    assert_eq!(
        doc.iter().filter(|e| e.name == "svg").count(),
        1,
        "one <svg>"
    );
    let svg = doc.iter().find(|e| e.name == "svg").expect("an <svg>");
    assert_eq!(svg.namespace.as_deref(), Some("http://www.w3.org/2000/svg"));
    // Self-contained: nothing runs and nothing is fetched (the only URLs are namespaces).
    assert!(!doc
        .iter()
        .any(|e| matches!(e.name.as_str(), "script" | "link" | "img" | "iframe")));
    for element in &doc {
        for (key, value) in &element.attributes {
            assert!(
                key == "xmlns" || !value.contains("://"),
                "<{} {key}={value:?}> refers to something outside the file",
                element.name
            );
        }
    }

    // The state bands: the initial state, then one band per transition, with its times.
    let bands = by_class("state-band");
    let mut expected = vec![(report.initial_state.to_string(), ms(Duration::ZERO))];
    expected.extend(
        report
            .transitions
            .iter()
            .map(|t| (t.to.to_string(), ms(t.at))),
    );
    let drawn: Vec<(String, String)> = bands
        .iter()
        .map(|b| {
            (
                b.attr("data-state").expect("a band's state").to_owned(),
                b.attr("data-from-ms").expect("a band's start").to_owned(),
            )
        })
        .collect();
    assert_eq!(drawn, expected, "the state bands are the run's transitions");
    for pair in bands.windows(2) {
        assert_eq!(pair[0].attr("data-to-ms"), pair[1].attr("data-from-ms"));
    }

    // The brownout, where the script puts it, labelled with its phase's name, and (for a run
    // that opened the breaker during the brownout) an OPEN band starting inside it.
    let brownouts = by_class("brownout");
    assert_eq!(brownouts.len(), 1, "one brownout marker");
    let brownout = brownouts[0];
    assert_eq!(
        brownout.attr("data-from-ms"),
        Some(ms(report.brownout_start).as_str())
    );
    assert_eq!(
        brownout.attr("data-to-ms"),
        Some(ms(report.brownout_end).as_str())
    );
    let brownout_name = report
        .phases
        .iter()
        .map(|(name, _)| *name)
        .find(|name| name.starts_with("brownout"))
        .expect("the script names its brownout");
    assert!(
        doc.iter()
            .any(|e| e.name == "tspan" && e.text == brownout_name),
        "the brownout is labelled {brownout_name:?}"
    );
    let (from, to) = (
        brownout.number("data-from-ms"),
        brownout.number("data-to-ms"),
    );
    assert!(
        !opened_in_brownout
            || bands.iter().any(|b| b.attr("data-state") == Some("OPEN")
                && (from..to).contains(&b.number("data-from-ms"))),
        "no OPEN band starts inside the brownout ({from} ms to {to} ms): {bands:?}"
    );
    for state in ["CLOSED", "OPEN", "HALF_OPEN"] {
        assert!(
            doc.iter().any(|e| e.name == "text" && e.text == state),
            "the legend or a band names {state}"
        );
    }

    // The columns: each one's answers add up to the applications sent in it, and over the run
    // to the applications sent and to each of the report's counts.
    let columns = by_class("column");
    assert!(!columns.is_empty());
    let mut sums = [0u64; Outcome::ALL.len()];
    let (mut sent, mut refused, mut bulkhead_full, mut no_worker) = (0, 0, 0, 0);
    let (mut most_busy, mut most_held, mut bureau_hits) = (0, 0, 0);
    let (mut queue_rows, mut cache_hits) = (0, 0);
    for column in &columns {
        let answers: Vec<u64> = Outcome::ALL
            .iter()
            .map(|o| column.count(&format!("data-{}", o.key())))
            .collect();
        assert_eq!(
            answers.iter().sum::<u64>(),
            column.count("data-sent"),
            "a column's answers are not the applications sent in it: {column:?}"
        );
        for (sum, n) in sums.iter_mut().zip(&answers) {
            *sum += n;
        }
        sent += column.count("data-sent");
        refused += column.count("data-refused");
        bulkhead_full += column.count("data-bulkhead-full");
        no_worker += column.count("data-no-worker");
        bureau_hits += column.count("data-bureau-hits");
        queue_rows += column.count("data-queue-rows");
        cache_hits += column.count("data-cache-hits");
        most_busy = most_busy.max(column.count("data-most-busy"));
        most_held = most_held.max(column.count("data-most-held"));
    }
    assert_eq!(
        sent, report.requests,
        "the columns hold every application sent"
    );
    // The bureau's requests, counted per second by the bureau itself, are every request it
    // received.
    assert_eq!(
        bureau_hits, report.bureau_hits,
        "the columns hold every request the bureau received"
    );
    // The queue's rows and the cache's hits, as the parts themselves counted them per second,
    // are the 202 and the cached answers.
    assert_eq!(
        queue_rows, report.queued,
        "the rows queued drawn from the queue are the 202 answers"
    );
    assert_eq!(
        cache_hits, report.cached,
        "the cache hits drawn from the cache are the cached answers"
    );
    for key in ["queue-rows", "cache-hits"] {
        assert!(
            doc.iter().any(|e| e.attr("data-cause") == Some(key)),
            "no {key} line"
        );
    }
    let counted = [
        report.bureau_answers,
        report.cached,
        report.queued,
        report.client_errors,
        report.unavailable,
        report.crashed,
    ];
    for ((outcome, drawn), counted) in Outcome::ALL.iter().zip(sums).zip(counted) {
        assert_eq!(drawn, counted, "{} drawn and counted", outcome.label());
    }
    // The refusals line counts the fallbacks of refused calls, and the breaker's event stream
    // tells one NotPermitted per refused call (a refusal is never retried); the same for the
    // bulkhead's CALL_REJECTED, except that with a retry a refused attempt may be retried, so
    // between the fallbacks and the fallbacks plus the retries are told.
    assert_eq!(
        refused,
        told.breaker_refusals.load(Ordering::SeqCst),
        "refusals drawn and told"
    );
    let retries = report.retry.as_ref().map_or(0, |r| r.retries);
    let bulkhead_told = told.bulkhead_refusals.load(Ordering::SeqCst);
    assert!(
        bulkhead_full <= bulkhead_told && bulkhead_told <= bulkhead_full + retries,
        "bulkhead refusals drawn ({bulkhead_full}) and told ({bulkhead_told}), {retries} retries"
    );
    assert_eq!(
        no_worker, report.workers_exhausted,
        "no free worker, drawn and counted"
    );
    // The workers panel: the most busy and the most held, sampled as applications arrived, are
    // never more than the run's own maxima; the bulkhead's limit is marked if there was one.
    assert!(most_busy <= report.max_busy_workers as u64);
    assert!(most_held <= report.max_bureau_held as u64);
    for key in ["busy", "held"] {
        assert!(
            doc.iter().any(|e| e.attr("data-workers") == Some(key)),
            "no {key} line"
        );
    }
    assert_eq!(
        doc.iter()
            .any(|e| e.name == "text" && e.text.starts_with("bulkhead max-concurrent-calls")),
        report.bulkhead.is_some(),
        "the bulkhead's limit is marked exactly when there is one"
    );
    // The p50 and p99 lines are drawn.
    for key in ["p50", "p99"] {
        assert!(
            doc.iter().any(|e| e.attr("data-percentile") == Some(key)),
            "no {key} line"
        );
    }

    // The timeline behind it is bounded (one bucket per second of the script, and the ones a
    // call can outlast it by) and adds up the same way, bucket by bucket.
    let buckets = report.timeline.buckets();
    let script: Duration = report.phases.iter().map(|(_, length)| *length).sum();
    let per_second = (script.as_secs_f64() / report.timeline.width().as_secs_f64()).round();
    assert!((buckets.len() as f64) < per_second + per_second / 10.0 + 2.0);
    for bucket in buckets {
        assert_eq!(
            bucket.answers.iter().map(|&n| u64::from(n)).sum::<u64>(),
            u64::from(bucket.sent)
        );
        assert_eq!(
            bucket.latency.count(),
            u64::from(bucket.sent - bucket.answers[Outcome::Crashed as usize])
        );
    }
}

/// A breaker name made of XML's special characters still gives a well-formed file, with the
/// name in the title as it is.
fn check_escaping(report: &Report) {
    let mut hostile = report.clone();
    hostile.breaker_name = "cb\"<&>'</svg>]]>\u{1}".to_owned();
    let doc = parse_xml(&game::picture::html(&hostile))
        .unwrap_or_else(|e| panic!("a hostile breaker name broke the picture: {e}"));
    let title = doc
        .iter()
        .find(|e| e.attr("id") == Some("picture-title"))
        .expect("a title");
    assert!(
        title.text.contains("cb\"<&>'</svg>]]>\u{fffd}"),
        "{}",
        title.text
    );
    assert_eq!(doc.iter().filter(|e| e.name == "svg").count(), 1);
}

/// Runs the compressed game day with `options` on the global registry, the breaker reset first,
/// and counts what the breaker's and the bulkhead's event streams tell meanwhile.
async fn run_day(options: &game::Options) -> (Report, Arc<Told>) {
    let breaker = Registry::global().breaker("credit_bureau_cb");
    breaker.reset();
    let told = Arc::new(Told::default());
    let _breaker_events = {
        let told = told.clone();
        breaker.subscribe(move |event| match event.kind() {
            EventKind::NotPermitted => {
                told.breaker_refusals.fetch_add(1, Ordering::SeqCst);
            }
            EventKind::Error { .. } => {
                told.breaker_failures.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        })
    };
    let _bulkhead_events = {
        let told = told.clone();
        Registry::global()
            .bulkhead("credit_bureau_cb")
            .subscribe(move |event| {
                if event.kind() == BulkheadEventKind::CallRejected {
                    told.bulkhead_refusals.fetch_add(1, Ordering::SeqCst);
                }
            })
    };
    // About 3 s of script on Tokio's paused clock; the bound only guards against a run that
    // never ends.
    let report = tokio::time::timeout(Duration::from_secs(50), game::run(options))
        .await
        .expect("the game day ends within 50 s of its clock")
        .expect("the game day runs");
    println!("{report}");
    // Every duration was the run's own: the paused clock never moved with a request on its way.
    assert_eq!(report.wire_gave_up, 0, "{report}");
    (report, told)
}

/// What every game day with the pool of 200 must show, with a bulkhead or without: nothing
/// lost, the brownout seen and cancelled, the breaker opened by it (not by the 4xx) and closed
/// through its trials, no socket while OPEN; and its picture holds up.
fn check_day(report: &Report, told: &Told, label: &str) {
    // Zero applications lost. Every application's handler is joined and counted once, so
    // `report.lost()` is exactly `crashed + unavailable`: a handler that panicked, or a 503
    // because the queue could not be written. Those two are what can go wrong.
    assert!(report.requests > 0);
    assert_eq!(report.crashed, 0, "handlers crashed");
    assert_eq!(report.unavailable, 0, "queue writes failed");
    // ... and the queue file holds exactly the ones answered 202.
    assert!(report.queued > 0, "the brownout queued nothing: {report}");
    assert_eq!(report.queue_rows as u64, report.queued);
    assert!(report.queue_matches, "queue differs from the 202 answers");
    // The queue's own count by status is the 202 answers, and so are its rows per second; the
    // cache's hits read back from it are the cached answers, and no cache operation failed.
    assert_eq!(
        report.queue_counts,
        std::collections::BTreeMap::from([(QUEUED.to_owned(), report.queued)]),
        "{report}"
    );
    assert_eq!(
        report.queue_rows_per_bucket.iter().sum::<u64>(),
        report.queued,
        "the queue's rows per second are not the 202 answers"
    );
    assert_eq!(
        report.cache_hits_per_bucket.iter().sum::<u64>(),
        report.cached,
        "the cache's hits per second are not the cached answers"
    );
    assert_eq!(report.cache_errors, 0, "cache operations failed: {report}");
    assert!(report.cached > 0, "the cache fallback never answered");

    // The brownout was seen: calls timed out, the breaker recorded them as slow calls (a
    // timed-out call took at least the 25 ms timeout, over the 20 ms threshold), and it first
    // opened while the brownout lasted. (The pool of 200 cannot run out here: compressed, about
    // 6 calls are in flight at once, docs/GAME_DAY.md; the scaled run exhausts its pool.)
    // With a retry, a timed-out attempt is retried and its call may end in the OPEN breaker's
    // refusal: there the timeouts show as slow calls and retries, not as fallbacks.
    let timed_out = report.fallback(FallbackCause::TimedOut);
    let retries = report.retry.as_ref().map_or(0, |r| r.retries);
    assert!(
        timed_out > 0 || report.retry.is_some(),
        "no call timed out: {report}"
    );
    assert!(report.slow_calls > 0, "no slow call recorded: {report}");
    let brownout = report
        .phases
        .iter()
        .find(|(name, _)| name.starts_with("brownout"))
        .map(|(_, length)| *length)
        .expect("the script has a brownout");
    let first_open = report.first_open().expect("the breaker opened");
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
        report.bureau_abandoned <= timed_out + report.fallback(FallbackCause::Failed) + retries,
        "more hang-ups than calls that timed out or failed, and retries: {report}"
    );

    // The breaker opened, and while OPEN no call reached for a socket. Each refusal the
    // breaker told is one fallback of a refused call.
    let refused = report.fallback(FallbackCause::Refused);
    assert!(refused > 0, "no call was refused");
    assert_eq!(refused, told.breaker_refusals.load(Ordering::SeqCst));
    // Every call that timed out, failed or was refused by the bulkhead is a failure the breaker
    // recorded: the bulkhead's refusals too, as `record-exceptions` names them. With a retry,
    // so is every attempt that was retried: a retry follows exactly one recorded failure, and
    // the last attempt's failure is the one the fallback answers.
    assert_eq!(
        told.breaker_failures.load(Ordering::SeqCst),
        timed_out
            + report.fallback(FallbackCause::Failed)
            + report.fallback(FallbackCause::BulkheadFull)
            + retries,
        "failures recorded and fallbacks for them: {report}"
    );
    assert_eq!(report.sockets_while_open, 0, "sockets opened while OPEN");

    // 4xx never open the breaker: the burst of bad tax ids came and went with it CLOSED, and
    // the breaker saw them as ignored errors.
    assert!(report.client_errors > 0);
    assert!(report.ignored_errors > 0);
    assert!(
        !report.opened_before_brownout(),
        "opened before the brownout"
    );

    // Without retries each application is at most one request, and the brownout's hangs and
    // the breaker keep the bureau's rate under the rate offered (the storm's baseline,
    // docs/GAME_DAY.md).
    let storm = report.brownout_rates();
    assert!(storm.seconds > 0 && storm.offered_mean > 0.0, "{storm:?}");
    assert!(
        storm.bureau_mean < storm.offered_mean,
        "the bureau saw more requests than applications offered: {storm:?}"
    );

    // Recovery through the half-open trials.
    assert!(
        report.recovered_through_half_open(),
        "no HALF_OPEN -> CLOSED"
    );
    assert_eq!(report.final_state, State::Closed);

    // The run as a picture. (The assertions above saw the breaker first open during the
    // brownout.)
    check_picture(report, told, label, true);
}

#[tokio::test(start_paused = true)]
async fn compressed_game_day_loses_no_application_and_recovers() {
    // The attribute uses the global registry: this is the only test in this binary that uses
    // it, so it is installed exactly once, from the example's own TOML file, on a manual clock
    // that follows Tokio's paused one.
    let clock = ManualClock::new();
    let registry = game::load_registry(
        Path::new(game::CONFIG_PATH),
        game::COMPRESSED_SCALE,
        clock.clone(),
    )
    .unwrap_or_else(|e| panic!("examples/credit_bureau.toml: {e}"));
    Registry::install_global(registry).expect("nothing used the global registry before");
    let _clock = follow_tokio(clock);

    // The day with the bulkhead, as the example runs it: its 120 places scaled like time, to
    // 2, so that the brownout fills it as it fills the 120 in real time. On a PostgreSQL and a
    // Redis of the test's own.
    let postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let options = game::Options {
        scale: game::COMPRESSED_SCALE,
        rate: 220,
        workers: 200,
        bulkhead: true,
        retry: RetryMode::None,
        stores: StoreConfig {
            postgres_url: Some(postgres.url()),
            redis_url: Some(redis.url()),
            queue_path: None,
            timeout: Duration::from_secs(5),
        },
        paused_clock: true,
    };
    let (report, told) = run_day(&options).await;
    check_day(&report, &told, "bulkhead_picture");
    check_real_parts(&report, &postgres, &redis).await;
    let limit = report
        .bulkhead
        .as_ref()
        .expect("the run went through the bulkhead")
        .max_concurrent_calls;
    assert_eq!(limit, 2, "120 places x 0.01, rounded up");
    // The bureau never held more workers than the bulkhead's places, and it did fill them:
    // the bulkhead refused calls, each answered by the fallback and counted as its own cause
    // (one fallback per CALL_REJECTED the bulkhead told), never as a breaker refusal.
    assert!(
        report.max_bureau_held <= limit as usize,
        "the bureau held {} workers, the bulkhead allows {limit}: {report}",
        report.max_bureau_held
    );
    let bulkhead_full = report.fallback(FallbackCause::BulkheadFull);
    assert!(bulkhead_full > 0, "the bulkhead refused nothing: {report}");
    assert_eq!(bulkhead_full, told.bulkhead_refusals.load(Ordering::SeqCst));
    // No application found every worker busy.
    assert_eq!(report.workers_exhausted, 0, "no free worker: {report}");
    check_escaping(&report);

    // The same day without the bulkhead: the breaker alone, on the embedded defaults.
    let unbounded_queue = temp_queue("run");
    let unbounded = game::Options {
        bulkhead: false,
        stores: file_stores(&unbounded_queue),
        ..options.clone()
    };
    let (report, told) = run_day(&unbounded).await;
    check_day(&report, &told, "picture");
    assert!(report.bulkhead.is_none());
    assert_eq!(report.fallback(FallbackCause::BulkheadFull), 0);
    assert_eq!(told.bulkhead_refusals.load(Ordering::SeqCst), 0);

    // The same day without the bulkhead and with the worker pool scaled like time (200 -> 2),
    // so that the pool runs out at the start of the brownout as the real-time run's does
    // (220/s x 2.5 s timeouts is about 550 calls in flight against 200 workers). Applications
    // that find no free worker take the fallback at once: each is answered (cached or queued),
    // none crashed, and the queue file still holds exactly the 202s.
    let scaled_queue = temp_queue("scaled");
    let scaled = game::Options {
        workers: 2,
        stores: file_stores(&scaled_queue),
        ..unbounded
    };
    let (report, told) = run_day(&scaled).await;
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
    // Its picture draws the applications that found no free worker. (With 2 workers the
    // brownout holds both, the breaker sees few calls, and when it opens is not asserted.)
    check_picture(&report, &told, "scaled_picture", false);

    // The retry storm (docs/GAME_DAY.md): the day with the bulkhead, its calls retried as the
    // contract's option A would (three retries, no budget), then within the retry budget.
    let option_a_queue = temp_queue("option_a");
    let (option_a, told) = run_day(&game::Options {
        retry: RetryMode::OptionA,
        stores: file_stores(&option_a_queue),
        ..options.clone()
    })
    .await;
    check_day(&option_a, &told, "option_a_picture");
    let budget_queue = temp_queue("budget");
    let (budgeted, told) = run_day(&game::Options {
        retry: RetryMode::Budget,
        stores: file_stores(&budget_queue),
        ..options.clone()
    })
    .await;
    check_day(&budgeted, &told, "budget_picture");
    check_storm(&option_a, &budgeted);
}

/// Holds a day on PostgreSQL and Redis to what the servers themselves hold, read by the test
/// with its own clients: the rows with the queued status are the 202 answers and their ids the
/// 202'd ids, the table holds nothing else, and the hit counters in Redis add up to the cached
/// answers.
async fn check_real_parts(report: &Report, postgres: &PostgresServer, redis: &RedisServer) {
    assert!(
        report.queue_place.starts_with("PostgreSQL at 127.0.0.1:"),
        "{}",
        report.queue_place
    );
    assert!(
        report.cache_place.starts_with("Redis at 127.0.0.1:"),
        "{}",
        report.cache_place
    );
    let (client, connection) = tokio_postgres::connect(&postgres.url(), tokio_postgres::NoTls)
        .await
        .expect("the test connects to PostgreSQL");
    let connection = tokio::spawn(connection);
    let queued: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {QUEUE_TABLE} WHERE status = $1"),
            &[&QUEUED],
        )
        .await
        .expect("SELECT count(*)")
        .get(0);
    let all: i64 = client
        .query_one(&format!("SELECT count(*) FROM {QUEUE_TABLE}"), &[])
        .await
        .expect("SELECT count(*)")
        .get(0);
    let ids: BTreeSet<String> = client
        .query(&format!("SELECT application_id FROM {QUEUE_TABLE}"), &[])
        .await
        .expect("SELECT application_id")
        .iter()
        .map(|row| row.get(0))
        .collect();
    drop(client);
    let _ = connection.await;
    println!(
        "PostgreSQL: {queued} rows {QUEUED} of {all}; 202 answers: {}",
        report.queued
    );
    assert_eq!(
        u64::try_from(queued).unwrap(),
        report.queued,
        "SELECT count(*) WHERE status = '{QUEUED}' is not the 202 answers"
    );
    assert_eq!(all, queued, "rows with another status");
    assert_eq!(
        ids, report.queued_ids,
        "the queued ids are not the 202'd ids"
    );

    // The hit counters, one key per bucket of this run, read straight from Redis.
    let Reply::Array(keys) = redis.cmd(&["KEYS", "credit_bureau:hits:*"]) else {
        panic!("KEYS credit_bureau:hits:*");
    };
    let mut hits = 0u64;
    for key in keys {
        let Reply::Bulk(key) = key else {
            panic!("a key: {key:?}");
        };
        let value = redis
            .get(std::str::from_utf8(&key).expect("a UTF-8 key"))
            .expect("the counter is there");
        hits += value.parse::<u64>().expect("a count");
    }
    println!(
        "Redis: {hits} hits counted; cached answers: {}",
        report.cached
    );
    assert_eq!(
        hits, report.cached,
        "Redis's hits are not the cached answers"
    );
    // The returning applicants' scores are in Redis, one key each.
    assert!(redis.get("credit_bureau:score:ret-000").is_some());
}

/// Holds the retried days to what they can show: option A retried without a budget, the
/// budgeted run's retries stayed within what the budget allows over the run and the budget
/// refused some, the bureau received no request that was not a first attempt or a retry, and
/// its mean rate in the brownout stayed within the budget's ratio and floor over the rate
/// offered. With the breaker and the bulkhead in place, option A does not raise the bureau's
/// rate above the rate offered either (`check_day` holds every run under it): the bulkhead caps
/// the requests a hanging bureau holds, and the retried failures open the breaker sooner, whose
/// refusals are never retried (docs/GAME_DAY.md, "The retry storm").
fn check_storm(option_a: &Report, budgeted: &Report) {
    let a = option_a.retry.as_ref().expect("option A retried");
    let b = budgeted.retry.as_ref().expect("the budget run retried");
    assert_eq!(a.budget, None, "option A runs without a budget");
    assert_eq!(a.refused_by_budget, 0);
    assert!(a.retries > 0, "option A retried nothing: {option_a}");
    let (ratio, window, floor) = b.budget.expect("the budget is on");
    // The budget allows, in any `window`, retries up to `ratio` x the calls in it plus `floor`
    // a second. Cut the run into windows: the sliding window at each one's last retry covers
    // all its retries and only calls from it and the window before, so over the run the
    // retries are at most 2 x ratio x the calls, plus the floor's share in every window. (The
    // calls are at most the applications sent.)
    let windows = (budgeted.ended.as_secs_f64() / window.as_secs_f64()).ceil();
    let bound =
        2.0 * ratio * budgeted.requests as f64 + windows * f64::from(floor) * window.as_secs_f64();
    assert!(
        (b.retries as f64) <= bound,
        "the budget allowed {} retries, more than {bound:.0}: {budgeted}",
        b.retries
    );
    // Option A's retries come in a burst at the start of the brownout, more than one window's
    // allowance: with the budget some are refused.
    assert!(
        b.refused_by_budget > 0,
        "the budget refused no retry: {budgeted}"
    );
    for report in [option_a, budgeted] {
        let retries = report.retry.as_ref().map_or(0, |r| r.retries);
        assert!(report.bureau_hits <= report.requests + retries, "{report}");
    }
    let storm = budgeted.brownout_rates();
    assert!(
        storm.bureau_mean <= storm.offered_mean * (1.0 + ratio) + f64::from(floor),
        "the bureau's rate in the brownout beyond the budget's: {storm:?}"
    );
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
    let check = embedded_check(addr, &queue).await;
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
    let nowhere = embedded_check(gone_addr, &queue).await;
    match nowhere.get_report(&get("tx-1")).await {
        Err(BureauError::Connect(message)) => assert!(!message.is_empty()),
        other => panic!("expected a connection error, got {other:?}"),
    }
}
