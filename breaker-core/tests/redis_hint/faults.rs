//! The Redis advisory hint when Redis fails: down at start, killed mid-run under load and
//! restarted, stalled past the command timeout. Callers must see exactly what they see without
//! Redis, and the hint must come back on its own.

#![cfg(feature = "redis-hint")]

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use breaker_core::hint::{HintError, HintHandle, RedisHint};
use breaker_core::{CircuitBreaker, Config, ManualClock, Registry, State};
use support::redis_server::RedisServer;
use support::{logs, manual_registry};

const NEVER: Duration = Duration::from_secs(3600);

fn config() -> Config {
    Config::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_millis(20))
        .permitted_number_of_calls_in_half_open_state(3)
        .build()
        .unwrap()
}

fn start(url: &str, registry: &Registry, every: Duration) -> HintHandle {
    RedisHint::builder(url)
        .check_interval(every)
        .command_timeout(Duration::from_millis(200))
        .start(registry)
        .expect("start the hint")
}

fn fail_until_open(b: &CircuitBreaker) {
    for _ in 0..10 {
        let _ = b.call_sync(|| Err::<(), _>("down"));
    }
    assert_eq!(b.state(), State::Open);
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `check_now` until it succeeds (Redis reconnects at checks), for at most 10 s.
async fn until_ok(h: &HintHandle) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match h.check_now().await {
            Ok(()) => return,
            Err(e) => assert!(Instant::now() < deadline, "the hint never came back: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_at_start_then_up_publishes_and_logs_rate_limited() {
    logs::capture();
    let port = RedisServer::unused_port();
    let url = format!("redis://127.0.0.1:{port}");
    let (_clock, registry) = manual_registry(config());
    let h = start(&url, &registry, Duration::from_millis(10));
    let b = registry.breaker("svc");
    fail_until_open(&b); // exactly as without Redis
    for _ in 0..5 {
        let err = h.check_now().await.unwrap_err();
        assert!(matches!(err, HintError::Redis(_)), "{err}");
    }
    assert!(h.stats().redis_errors >= 5);
    assert!(!h.stats().connected);
    // Many failures, one warning per 10 s.
    let warned = logs::lines_with(&["WARN breaker::hint", "breakers go on with local state only"]);
    assert_eq!(warned.len(), 1, "{warned:#?}");

    let server = RedisServer::start_on(port);
    until_ok(&h).await;
    assert!(h.stats().connected);
    // The OPEN that happened while Redis was down is published now (it is still OPEN).
    assert_eq!(
        server
            .get("cb:hint:svc")
            .as_deref()
            .map(|v| v.starts_with("open")),
        Some(true)
    );
    assert!(server.pttl("cb:hint:svc") <= 30_000);
    assert_eq!(h.stats().published, 1);
    assert_eq!(
        logs::lines_with(&["INFO breaker::hint", "reconnected"]).len(),
        1
    );
}

/// What a caller saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Ok,
    Failed,
    Rejected,
}

const WORKERS: usize = 4;
const CALLS: usize = 6000;

/// Worker `w`'s downstream at call `i`: bursts of failures, so its breaker opens, rejects,
/// half-opens, re-opens and closes many times.
fn downstream_ok(w: usize, i: usize) -> bool {
    !(i / 40 + w).is_multiple_of(3) || i.is_multiple_of(7)
}

/// Runs the workload: one registry, clock and breaker per worker thread (so each worker's
/// outcomes depend on its own calls only), 1 ms of breaker time per call. `at_third` runs once
/// a third of all calls are done, while the workers keep calling; the workers wait (bounded)
/// at two thirds until it has run, so calls happen before, during and after it.
fn workload(registries: &[(ManualClock, Registry)], at_third: impl FnOnce()) -> Vec<Vec<Seen>> {
    let progress = AtomicUsize::new(0);
    let done_hook = AtomicBool::new(false);
    let total = WORKERS * CALLS;
    std::thread::scope(|s| {
        let workers: Vec<_> = registries
            .iter()
            .enumerate()
            .map(|(w, (clock, registry))| {
                let (progress, done_hook) = (&progress, &done_hook);
                s.spawn(move || {
                    let b = registry.breaker(&format!("worker-{w}:svc"));
                    let mut seen = Vec::with_capacity(CALLS);
                    for i in 0..CALLS {
                        if i == 2 * CALLS / 3 {
                            let deadline = Instant::now() + Duration::from_secs(10);
                            while !done_hook.load(Ordering::SeqCst) && Instant::now() < deadline {
                                std::thread::yield_now();
                            }
                        }
                        clock.advance(Duration::from_millis(1));
                        let r = b.call_sync(|| if downstream_ok(w, i) { Ok(()) } else { Err(()) });
                        seen.push(match r {
                            Ok(()) => Seen::Ok,
                            Err(e) if e.is_rejected() => Seen::Rejected,
                            Err(_) => Seen::Failed,
                        });
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    seen
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        while progress.load(Ordering::Relaxed) < total / 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        at_third();
        done_hook.store(true, Ordering::SeqCst);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

#[test]
fn redis_killed_mid_run_under_load_changes_no_outcome_and_the_hint_comes_back() {
    let baseline = workload(
        &(0..WORKERS)
            .map(|_| manual_registry(config()))
            .collect::<Vec<_>>(),
        || {},
    );
    for seen in &baseline {
        assert!(seen.contains(&Seen::Rejected) && seen.contains(&Seen::Failed));
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut server = RedisServer::start();
    let url = server.url();
    let registries: Vec<_> = (0..WORKERS).map(|_| manual_registry(config())).collect();
    let hints: Vec<HintHandle> = rt.block_on(async {
        registries
            .iter()
            .map(|(_, r)| start(&url, r, Duration::from_millis(5)))
            .collect()
    });
    rt.block_on(async {
        for h in &hints {
            until_ok(h).await;
        }
    });
    let with = workload(&registries, || {
        // Mid-run, with the workers calling: once a hint is out, Redis dies.
        let deadline = Instant::now() + Duration::from_secs(10);
        while hints.iter().map(|h| h.stats().published).sum::<u64>() == 0
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        server.kill();
    });
    assert_eq!(with, baseline, "Redis dying changed what callers saw");
    let published_before = hints.iter().map(|h| h.stats().published).sum::<u64>();
    assert!(
        published_before > 0,
        "nothing was published before the kill"
    );
    rt.block_on(async {
        for h in &hints {
            assert!(h.check_now().await.is_err());
        }
    });
    assert!(hints.iter().all(|h| h.stats().redis_errors > 0));

    // Restarted (empty): the hint comes back on its own, and publishes again.
    server.restart();
    rt.block_on(async {
        for h in &hints {
            until_ok(h).await;
        }
        let b = registries[0].1.breaker("after-restart");
        fail_until_open(&b);
        hints[0].check_now().await.unwrap();
    });
    assert!(server.get("cb:hint:after-restart").is_some());

    // A fresh replica still fast-opens from the restarted server.
    rt.block_on(async {
        let (_clock, fresh) = manual_registry(config());
        let b = fresh.breaker("after-restart");
        let h = start(&url, &fresh, NEVER);
        h.check_now().await.unwrap();
        assert_eq!(b.state(), State::Open);
    });
    drop(hints);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_redis_blocks_no_call_and_the_hint_resumes() {
    let server = RedisServer::start();
    let (_clock, registry) = manual_registry(config());
    let h = Arc::new(start(&server.url(), &registry, Duration::from_millis(20)));
    until_ok(&h).await;

    server.pause(); // accepts connections, answers nothing
    let b = registry.breaker("svc");
    let downstream = AtomicUsize::new(0);
    // Calls while the task is stuck on Redis: same outcomes as ever.
    let mut rejected = 0;
    for i in 0..200 {
        let r = b.call_sync(|| {
            downstream.fetch_add(1, Ordering::SeqCst);
            if i < 10 {
                Err("down")
            } else {
                Ok(())
            }
        });
        if matches!(&r, Err(e) if e.is_rejected()) {
            rejected += 1;
        }
    }
    assert_eq!(b.state(), State::Open);
    assert_eq!((downstream.load(Ordering::SeqCst), rejected), (10, 190));
    // check_now gives up after the command timeout rather than hanging.
    let answer = tokio::time::timeout(Duration::from_secs(5), h.check_now())
        .await
        .expect("check_now is bounded by the command timeout");
    assert!(matches!(answer, Err(HintError::Redis(_))), "{answer:?}");

    server.resume();
    until_ok(&h).await;
    eventually("the OPEN from the stall is published", || {
        server.get("cb:hint:svc").is_some()
    })
    .await;
    assert_eq!(h.stats().published, 1);
}

/// `rediss://` builds a TLS client (installing a rustls crypto provider if the app has none)
/// without panicking; against a server that does not speak TLS it fails like any outage.
#[cfg(feature = "redis-hint-tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_against_a_plain_server_is_an_outage_not_a_panic() {
    let server = RedisServer::start();
    let (_clock, registry) = manual_registry(config());
    let url = format!("rediss://127.0.0.1:{}", server.port());
    let h = start(&url, &registry, NEVER);
    let err = h.check_now().await.unwrap_err();
    assert!(matches!(err, HintError::Redis(_)), "{err}");
    assert!(h.is_running());
    fail_until_open(&registry.breaker("svc"));
}
