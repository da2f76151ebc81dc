//! Soak: many tasks on a multi-thread runtime against one breaker while the downstream flips
//! between healthy and failing. Every call ends in exactly one of success / failure / ignored /
//! rejected, the breaker's own events account for every one of them, and the breaker ends
//! CLOSED once the downstream is healthy.
//!
//! Bounded to about two seconds by default; `BREAKER_SOAK_SECS=60` runs longer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use breaker_core::{CallError, Classifier, Config, EventKind, Registry, State};

#[derive(Debug)]
enum Downstream {
    Unavailable,
    BadRequest,
}

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    failed: AtomicU64,
    ignored: AtomicU64,
    rejected: AtomicU64,
}

impl Tally {
    fn total(&self) -> u64 {
        self.ok.load(Ordering::SeqCst)
            + self.failed.load(Ordering::SeqCst)
            + self.ignored.load(Ordering::SeqCst)
            + self.rejected.load(Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flipping_downstream_accounts_for_every_call_and_ends_closed() {
    let secs: u64 = std::env::var("BREAKER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .sliding_window_size(20)
                .minimum_number_of_calls(10)
                .wait_duration_in_open_state(Duration::from_millis(30))
                .automatic_transition_from_open_to_half_open_enabled(true)
                .permitted_number_of_calls_in_half_open_state(5)
                .build()
                .unwrap(),
        )
        .build();
    let breaker = registry.breaker("soak");

    // What the breaker itself says happened.
    let seen = Arc::new(Tally::default());
    let transitions = Arc::new(AtomicU64::new(0));
    let (s, t) = (seen.clone(), transitions.clone());
    let _sub = registry.subscribe(move |e| {
        let counter = match e.kind() {
            EventKind::Success { .. } => &s.ok,
            EventKind::Error { .. } => &s.failed,
            EventKind::IgnoredError { .. } => &s.ignored,
            EventKind::NotPermitted => &s.rejected,
            EventKind::StateTransition { .. } => &t,
            _ => return,
        };
        counter.fetch_add(1, Ordering::SeqCst);
    });

    let healthy = Arc::new(AtomicBool::new(true));
    let stop = Arc::new(AtomicBool::new(false));
    let observed = Arc::new(Tally::default());
    let classify =
        Arc::new(Classifier::new().ignore(|e: &Downstream| matches!(e, Downstream::BadRequest)));
    let mut tasks = Vec::new();
    for task in 0..64u64 {
        let (b, healthy, stop, observed, classify) = (
            breaker.clone(),
            healthy.clone(),
            stop.clone(),
            observed.clone(),
            classify.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let up = healthy.load(Ordering::Relaxed);
                let bad_request = (i + task).is_multiple_of(17);
                let out = b
                    .call_with(&*classify, async {
                        tokio::task::yield_now().await;
                        if bad_request {
                            Err(Downstream::BadRequest)
                        } else if up {
                            Ok(i)
                        } else {
                            Err(Downstream::Unavailable)
                        }
                    })
                    .await;
                let counter = match out {
                    Ok(_) => &observed.ok,
                    Err(CallError::Inner(Downstream::BadRequest)) => &observed.ignored,
                    Err(CallError::Inner(Downstream::Unavailable)) => &observed.failed,
                    Err(CallError::Rejected(_)) => &observed.rejected,
                    Err(other) => unreachable!("no timeout configured: {other:?}"),
                };
                counter.fetch_add(1, Ordering::Relaxed);
                if i.is_multiple_of(8) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }));
    }

    let start = Instant::now();
    let flip_until = Duration::from_secs(secs) * 3 / 4;
    while start.elapsed() < flip_until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        healthy.fetch_xor(true, Ordering::Relaxed);
    }
    healthy.store(true, Ordering::Relaxed);
    // Healthy from here on: the breaker must find its way back to CLOSED by its own trials.
    let deadline = start + Duration::from_secs(secs) + Duration::from_secs(10);
    while breaker.state() != State::Closed && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }

    assert_eq!(
        breaker.state(),
        State::Closed,
        "CLOSED once the downstream is healthy"
    );
    let calls = observed.total();
    assert!(calls > 1_000, "the soak made {calls} calls");
    for (name, ours, theirs) in [
        ("successes", &observed.ok, &seen.ok),
        ("failures", &observed.failed, &seen.failed),
        ("ignored", &observed.ignored, &seen.ignored),
        ("rejections", &observed.rejected, &seen.rejected),
    ] {
        assert_eq!(
            ours.load(Ordering::SeqCst),
            theirs.load(Ordering::SeqCst),
            "{name}: what callers saw and what the breaker published"
        );
    }
    assert!(
        observed.rejected.load(Ordering::SeqCst) > 0,
        "the breaker opened at some point"
    );
    assert!(
        transitions.load(Ordering::SeqCst) >= 3,
        "it opened and closed again"
    );
    let m = breaker.metrics();
    assert!(m.buffered_calls <= 20 && m.failed_calls <= m.buffered_calls);
}
