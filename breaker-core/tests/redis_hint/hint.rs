//! The Redis advisory hint (its rules: docs/REDIS_HINT.md) against a real `redis-server`:
//! publishing, fast-opening a fresh replica (two registries, and two OS processes), the
//! regression of a recovered breaker re-opened by its own stale hint, malformed hints, unknown
//! names, shutdown.
//!
//! Each test starts its own `redis-server` on a free 127.0.0.1 port and kills it at the end.
//! Without `redis-server` on PATH they fail, saying which Debian package to install.

#![cfg(feature = "redis-hint")]

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use breaker_core::hint::{encode_key, HintError, HintHandle, RedisHint};
use breaker_core::{
    CircuitBreaker, Config, EventKind, ManualClock, Registry, State, TransitionCause,
};
use support::redis_server::{RedisServer, Reply};
use support::{logs, manual_registry};

const WAIT: Duration = Duration::from_secs(5);
/// Long enough that only `check_now` reads hints after the first check at start.
const NEVER: Duration = Duration::from_secs(3600);

fn config() -> Config {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(WAIT)
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap()
}

fn hint(server: &RedisServer, registry: &Registry, origin: &str, every: Duration) -> HintHandle {
    RedisHint::builder(server.url())
        .origin(origin)
        .check_interval(every)
        .command_timeout(Duration::from_millis(500))
        .start(registry)
        .expect("start the hint")
}

/// Calls the breaker with a downstream that counts its calls; `Some(ok)` if it ran.
fn call(b: &CircuitBreaker, downstream: &AtomicUsize, ok: bool) -> Option<bool> {
    match b.call_sync(|| {
        downstream.fetch_add(1, Ordering::SeqCst);
        if ok {
            Ok(())
        } else {
            Err("downstream failed")
        }
    }) {
        Ok(()) => Some(true),
        Err(e) if e.is_rejected() => None,
        Err(_) => Some(false),
    }
}

fn fail_until_open(b: &CircuitBreaker) {
    let downstream = AtomicUsize::new(0);
    for _ in 0..4 {
        call(b, &downstream, false);
    }
    assert_eq!(b.state(), State::Open);
}

type Transitions = Arc<Mutex<Vec<(State, State, TransitionCause)>>>;

fn record_transitions(registry: &Registry) -> Transitions {
    let seen: Transitions = Arc::default();
    let sink = seen.clone();
    registry
        .subscribe(move |e| {
            if let EventKind::StateTransition { from, to } = e.kind() {
                sink.lock().unwrap().push((from, to, e.cause().unwrap()));
            }
        })
        .forever();
    seen
}

/// Polls `cond` every 5 ms for at most 10 s.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The scripted life of one breaker: opens, rejects, fails a trial, recovers. Returns what the
/// callers saw and every transition, in order.
async fn script(
    clock: &ManualClock,
    registry: &Registry,
    hint: Option<&HintHandle>,
) -> (Vec<Option<bool>>, Vec<(State, State, TransitionCause)>) {
    let seen = record_transitions(registry);
    let b = registry.breaker("productService");
    let downstream = AtomicUsize::new(0);
    let mut outcomes = Vec::new();
    let step =
        |ok: bool, outcomes: &mut Vec<Option<bool>>| outcomes.push(call(&b, &downstream, ok));
    for ok in [true, false, false, false] {
        step(ok, &mut outcomes); // 3 of 4 failed: OPEN
    }
    for _ in 0..50 {
        step(true, &mut outcomes); // rejected: never touch the downstream, never publish
    }
    if let Some(h) = hint {
        h.check_now().await.unwrap();
    }
    clock.advance(WAIT + Duration::from_millis(1));
    step(false, &mut outcomes); // HALF_OPEN trial fails ...
    step(false, &mut outcomes); // ... twice: OPEN again
    if let Some(h) = hint {
        h.check_now().await.unwrap();
    }
    clock.advance(WAIT + Duration::from_millis(1));
    step(true, &mut outcomes);
    step(true, &mut outcomes); // CLOSED again
    for ok in [true, true, false, true] {
        step(ok, &mut outcomes);
    }
    if let Some(h) = hint {
        h.check_now().await.unwrap();
        h.check_now().await.unwrap();
    }
    let transitions = seen.lock().unwrap().clone();
    (outcomes, transitions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_replica_behaves_as_without_the_hint_and_publishes_once_per_open() {
    let server = RedisServer::start();
    let (clock, plain) = manual_registry(config());
    let without = script(&clock, &plain, None).await;

    let (clock, registry) = manual_registry(config());
    let h = hint(&server, &registry, "solo", NEVER);
    let with = script(&clock, &registry, Some(&h)).await;

    assert_eq!(with, without, "the hint changed what callers saw");
    use State::*;
    use TransitionCause::*;
    assert_eq!(
        with.1,
        vec![
            (Closed, Open, Evaluation),
            (Open, HalfOpen, WaitElapsed),
            (HalfOpen, Open, Evaluation),
            (Open, HalfOpen, WaitElapsed),
            (HalfOpen, Closed, Evaluation),
        ]
    );
    // Two OPENs from local evidence: two writes, whatever the 50 rejected calls did.
    assert_eq!(h.stats().published, 2);
    assert_eq!(server.command_calls("set"), 2);
    assert_eq!(h.stats().fast_opened, 0);
    let key = "cb:hint:productService";
    assert_eq!(server.get(key).as_deref(), Some("open solo"));
    let ttl = server.pttl(key);
    assert!(ttl > 0 && ttl <= 30_000, "PTTL {ttl}");
    assert_eq!(registry.breaker("productService").state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_replica_fast_opens_within_one_check_interval_without_calling() {
    let server = RedisServer::start();
    let (_clock_a, a) = manual_registry(config());
    let hint_a = hint(&server, &a, "replica-a", NEVER);
    let (clock_b, b) = manual_registry(config());
    let b_svc = b.breaker("svc"); // exists, never called
    let every = Duration::from_millis(100);
    let hint_b = Arc::new(hint(&server, &b, "replica-b", every));
    let seen_b = record_transitions(&b);
    // The number of B's completed checks when the hint opened B's breaker.
    let checks_at_open: Arc<OnceLock<u64>> = Arc::default();
    {
        let (h, at) = (Arc::clone(&hint_b), Arc::clone(&checks_at_open));
        b.subscribe(move |e| {
            if e.cause() == Some(TransitionCause::Hint) {
                let _ = at.set(h.stats().checks);
            }
        })
        .forever();
    }
    eventually("B's first check", || hint_b.stats().checks >= 1).await;

    fail_until_open(&a.breaker("svc"));
    hint_a.check_now().await.unwrap();
    assert_eq!(server.get("cb:hint:svc").as_deref(), Some("open replica-a"));
    let checks_when_published = hint_b.stats().checks;

    eventually("B fast-opens", || b_svc.state() == State::Open).await;
    // At most the check in flight when the hint landed, then the next one: one interval.
    let at = *checks_at_open.get().expect("a hint transition");
    assert!(
        at <= checks_when_published + 1,
        "opened after {} checks past the publish",
        at - checks_when_published
    );
    assert_eq!(
        *seen_b.lock().unwrap(),
        vec![(State::Closed, State::Open, TransitionCause::Hint)]
    );
    assert_eq!(hint_b.stats().fast_opened, 1);
    // B rejects without touching its downstream.
    let downstream = AtomicUsize::new(0);
    assert_eq!(call(&b_svc, &downstream, true), None);
    assert_eq!(downstream.load(Ordering::SeqCst), 0);
    // A hint-caused OPEN is never published (B wrote nothing).
    assert_eq!(hint_b.stats().published, 0);
    assert_eq!(server.command_calls("set"), 1);

    // The hint never moves B on: not out of OPEN, not out of HALF_OPEN, and once B has
    // recovered on its own evidence, never back to OPEN.
    for _ in 0..3 {
        hint_b.check_now().await.unwrap();
    }
    assert_eq!(b_svc.state(), State::Open);
    clock_b.advance(WAIT + Duration::from_millis(1));
    let trial = b_svc.try_acquire().expect("a trial permit");
    assert_eq!(b_svc.state(), State::HalfOpen);
    hint_b.check_now().await.unwrap();
    assert_eq!(b_svc.state(), State::HalfOpen);
    trial.record(breaker_core::Outcome::Success, Duration::ZERO);
    assert_eq!(call(&b_svc, &downstream, true), Some(true));
    assert_eq!(b_svc.state(), State::Closed);
    assert!(server.pttl("cb:hint:svc") > 0, "A's hint is still alive");
    for _ in 0..3 {
        hint_b.check_now().await.unwrap();
    }
    assert_eq!(b_svc.state(), State::Closed);
    assert_eq!(hint_b.stats().fast_opened, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addendum_regression_own_stale_hint_never_reopens_a_recovered_breaker() {
    let server = RedisServer::start();
    let (clock, registry) = manual_registry(config());
    let h = hint(&server, &registry, "replica-a", NEVER);
    let seen = record_transitions(&registry);
    let b = registry.breaker("svc");
    fail_until_open(&b);
    h.check_now().await.unwrap();
    assert_eq!(server.get("cb:hint:svc").as_deref(), Some("open replica-a"));

    // The local wait (5 s) is much shorter than the hint's TTL (30 s): recover locally.
    clock.advance(WAIT + Duration::from_millis(1));
    let downstream = AtomicUsize::new(0);
    assert_eq!(call(&b, &downstream, true), Some(true));
    assert_eq!(call(&b, &downstream, true), Some(true));
    assert_eq!(b.state(), State::Closed);
    // The fresh CLOSED window is empty: "no call in the window" alone cannot tell this breaker
    // from a fresh one, which is exactly how a stale hint re-opened it (docs/REDIS_HINT.md).
    assert_eq!(b.metrics().buffered_calls, 0);
    assert!(server.pttl("cb:hint:svc") > 0, "the stale hint is alive");

    for _ in 0..3 {
        h.check_now().await.unwrap();
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(call(&b, &downstream, true), Some(true));
    assert_eq!(h.stats().fast_opened, 0);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|&(_, _, cause)| cause != TransitionCause::Hint));

    // Same for a hint written by another replica, and for a manual close or a reset: local
    // decisions win over any hint.
    server.cmd(&["SET", "cb:hint:svc", "open replica-c", "PX", "30000"]);
    let manual = registry.breaker("manual");
    manual.transition_to(State::Open).unwrap();
    manual.transition_to(State::Closed).unwrap();
    let reset = registry.breaker("reset");
    reset.reset();
    server.cmd(&["SET", "cb:hint:manual", "open replica-c", "PX", "30000"]);
    server.cmd(&["SET", "cb:hint:reset", "open replica-c", "PX", "30000"]);
    h.check_now().await.unwrap();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(manual.state(), State::Closed);
    assert_eq!(reset.state(), State::Closed);
    // A manual OPEN was not published (only the one OPEN from evidence was).
    assert_eq!(h.stats().published, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_aged_out_of_a_time_window_are_still_local_history() {
    let server = RedisServer::start();
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .sliding_window(breaker_core::SlidingWindowType::TimeBased, 2, 2)
            .build()
            .unwrap(),
    );
    let h = hint(&server, &registry, "replica-b", NEVER);
    let b = registry.breaker("svc");
    let downstream = AtomicUsize::new(0);
    assert_eq!(call(&b, &downstream, true), Some(true));
    clock.advance(Duration::from_secs(5));
    assert_eq!(b.metrics().buffered_calls, 0, "the call aged out");
    server.cmd(&["SET", "cb:hint:svc", "open replica-a", "PX", "30000"]);
    h.check_now().await.unwrap();
    assert_eq!(b.state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_for_unknown_names_create_nothing_and_later_breakers_fast_open() {
    let server = RedisServer::start();
    for i in 0..200 {
        let key = format!("cb:hint:unused-{i}");
        server.cmd(&["SET", &key, "open replica-a", "PX", "30000"]);
    }
    server.cmd(&["SET", "cb:hint:svc", "open replica-a", "PX", "30000"]);
    let (_clock, registry) = manual_registry(config());
    let h = hint(&server, &registry, "replica-b", NEVER);
    h.check_now().await.unwrap();
    assert!(registry.breakers().is_empty(), "a hint created a breaker");

    // Created after the hint landed: opened at the next check.
    let svc = registry.breaker("svc");
    assert_eq!(svc.state(), State::Closed);
    h.check_now().await.unwrap();
    assert_eq!(svc.state(), State::Open);

    // Keyed breakers (`name[key]`), published by one replica, read by another.
    let (_clock_a, a) = manual_registry(config());
    let hint_a = hint(&server, &a, "replica-a", NEVER);
    let model = "openai/gpt-4 {turbo}".to_owned();
    fail_until_open(&a.keyed("llm").get(&model));
    hint_a.check_now().await.unwrap();
    let key = encode_key("cb:hint:", "llm[openai/gpt-4 {turbo}]");
    assert_eq!(key, "cb:hint:llm%5Bopenai%2Fgpt-4%20%7Bturbo%7D%5D");
    assert_eq!(server.get(&key).as_deref(), Some("open replica-a"));
    let keyed_b = registry.keyed("llm");
    let other = keyed_b.get("anthropic/claude");
    let gpt = keyed_b.get(&model);
    h.check_now().await.unwrap();
    assert_eq!(gpt.state(), State::Open);
    assert_eq!(other.state(), State::Closed);
    assert_eq!(registry.breakers().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_hints_are_ignored_with_a_log_line() {
    logs::capture();
    let server = RedisServer::start();
    let prefix = "garbage:";
    server.cmd(&["RPUSH", "garbage:list", "open", "x"]);
    server.cmd(&["HSET", "garbage:hash", "open", "x"]);
    let huge = vec![b'o'; 4 << 20]; // 4 MiB, never transferred whole
    server.cmd_bytes(&[b"SET", b"garbage:huge", &huge]);
    server.cmd(&["SET", "garbage:word", "banana"]);
    server.cmd(&["SET", "garbage:good", "open replica-a", "PX", "30000"]);
    let (_clock, registry) = manual_registry(config());
    let names = ["list", "hash", "huge", "word", "good"];
    let breakers: Vec<_> = names.iter().map(|n| registry.breaker(n)).collect();
    let h = RedisHint::builder(server.url())
        .prefix(prefix)
        .check_interval(NEVER)
        .start(&registry)
        .unwrap();
    h.check_now().await.unwrap();
    let states: Vec<State> = breakers.iter().map(|b| b.state()).collect();
    use State::*;
    assert_eq!(states, [Closed, Closed, Closed, Closed, Open]);
    // One check, or the check at start and this one: each ignores the same four keys.
    let ignored = h.stats().ignored_values;
    assert!(ignored == 4 || ignored == 8, "{ignored}");
    for key in [
        "garbage:list",
        "garbage:hash",
        "garbage:huge",
        "garbage:word",
    ] {
        let lines = logs::lines_with(&["breaker::hint", "malformed", &format!("key={key}")]);
        assert_eq!(lines.len(), 1, "log lines for {key}: {lines:?}");
    }
    assert!(logs::lines_with(&["key=garbage:list", "WRONGTYPE"]).len() == 1);
    assert!(logs::lines_with(&["key=garbage:huge", "longer than 256"]).len() == 1);
    // Still ignored at every check, but logged at most once per 10 s per key.
    h.check_now().await.unwrap();
    assert_eq!(h.stats().ignored_values, ignored + 4);
    assert_eq!(
        logs::lines_with(&["malformed", "key=garbage:word"]).len(),
        1
    );
    assert_eq!(
        server.cmd(&["TYPE", "garbage:list"]),
        Reply::Status("list".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_ends_the_task_and_closes_its_connection() {
    let server = RedisServer::start();
    let clients = || match server.cmd(&["INFO", "clients"]) {
        Reply::Bulk(info) => String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| {
                l.strip_prefix("connected_clients:")
                    .map(|n| n.trim().parse::<u64>().unwrap())
            })
            .unwrap(),
        other => panic!("INFO clients: {other:?}"),
    };
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let (_clock, registry) = manual_registry(config());
    let h = hint(&server, &registry, "replica-a", Duration::from_millis(20));
    registry.breaker("svc");
    h.check_now().await.unwrap();
    assert!(h.is_running());
    assert!(metrics.num_alive_tasks() > baseline);
    assert_eq!(clients(), 2, "the hint's connection and this INFO");
    drop(h);
    eventually("the hint's tasks end", || {
        metrics.num_alive_tasks() == baseline
    })
    .await;
    eventually("the connection closes", || clients() == 1).await;
    // The registry and its breakers go on as before.
    fail_until_open(&registry.breaker("svc"));

    // Detached: runs without its handle, and ends with the registry.
    let h = hint(&server, &registry, "replica-a", Duration::from_millis(20));
    h.check_now().await.unwrap();
    h.detach();
    fail_until_open(&registry.breaker("other"));
    eventually("the detached hint publishes", || {
        server.get("cb:hint:other").is_some()
    })
    .await;
    assert!(metrics.num_alive_tasks() > baseline);
    drop(registry);
    eventually("the detached hint ends with its registry", || {
        metrics.num_alive_tasks() == baseline
    })
    .await;
    eventually("its connection closes", || clients() == 1).await;

    // shutdown() waits for the end.
    let (_clock, registry) = manual_registry(config());
    let h = hint(&server, &registry, "replica-a", NEVER);
    h.check_now().await.unwrap();
    h.shutdown().await;
    eventually("tasks end after shutdown", || {
        metrics.num_alive_tasks() == baseline
    })
    .await;
}

#[test]
fn start_needs_a_runtime_and_a_good_url() {
    let registry = Registry::new();
    let err = RedisHint::builder("redis://127.0.0.1:6379")
        .start(&registry)
        .unwrap_err();
    assert_eq!(err, HintError::NoRuntime);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let err = RedisHint::builder("redis://:hunter2@127.0.0.1:63x79/0")
            .start(&registry)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, HintError::InvalidUrl { part: "port", .. }),
            "{msg}"
        );
        assert!(msg.contains("port") && msg.contains("63x79"), "{msg}");
        assert!(!msg.contains("hunter2"), "{msg}");
        let err = RedisHint::builder("http://127.0.0.1")
            .start(&registry)
            .unwrap_err();
        assert!(err.to_string().contains("scheme"), "{err}");
    });
}

/// The environment variable that selects the replica-B role of
/// [`two_os_processes_replica_b_fast_opens`] in a child process.
const ROLE: &str = "BREAKER_HINT_TEST_ROLE";

/// Replica B, run by `two_os_processes_replica_b_fast_opens` in a child process (this test
/// binary, re-executed with `--ignored` and `ROLE` set). Not a test of its own: ignored in a
/// normal run, and run by hand without `ROLE` it fails, rather than pass having checked nothing.
#[test]
#[ignore = "replica B of two_os_processes_replica_b_fast_opens, which runs it in a child process"]
fn replica_b_process() {
    assert_eq!(
        std::env::var(ROLE).as_deref(),
        Ok("replica-b"),
        "run by two_os_processes_replica_b_fast_opens, with {ROLE}=replica-b"
    );
    let url = std::env::var("BREAKER_HINT_TEST_URL").expect("the URL of the parent's Redis");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_clock, registry) = manual_registry(config());
        let svc = registry.breaker("svc");
        let seen = record_transitions(&registry);
        let h = RedisHint::builder(url)
            .origin("replica-b")
            .check_interval(Duration::from_millis(100))
            .start(&registry)
            .unwrap();
        eventually("B's first check", || h.stats().checks >= 1).await;
        println!("READY");
        eventually("B fast-opens", || svc.state() == State::Open).await;
        let downstream = AtomicUsize::new(0);
        assert_eq!(call(&svc, &downstream, true), None);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![(State::Closed, State::Open, TransitionCause::Hint)]
        );
        println!(
            "FAST-OPENED cause=Hint downstream_calls={}",
            downstream.load(Ordering::SeqCst)
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_os_processes_replica_b_fast_opens() {
    let server = RedisServer::start();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "hint::replica_b_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "replica-b")
        .env("BREAKER_HINT_TEST_URL", server.url())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("re-run this test binary as replica B");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut output = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut wait_for = |prefix: &str, output: &mut Vec<String>| loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(prefix);
                output.push(line);
                if found {
                    return;
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("replica B never printed {prefix}; its output: {output:#?}");
            }
        }
    };
    wait_for("READY", &mut output);

    // Replica A, in this process, opens on its own evidence and publishes.
    let (_clock, a) = manual_registry(config());
    let hint_a = hint(&server, &a, "replica-a", NEVER);
    fail_until_open(&a.breaker("svc"));
    hint_a.check_now().await.unwrap();
    wait_for("FAST-OPENED", &mut output);
    // The child ran replica B's test, and it passed: its assertions held.
    wait_for("test result: ok. 1 passed", &mut output);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("replica B did not exit");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(status.success(), "replica B failed: {output:#?}");
    assert!(
        output
            .iter()
            .any(|l| l.ends_with("FAST-OPENED cause=Hint downstream_calls=0")),
        "{output:#?}"
    );
}
