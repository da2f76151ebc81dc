//! The rows of the table, one function per group: the hardware floor, breaker beside each peer
//! in the states they share, two threads on one breaker, the attribute beside the same call by
//! hand, a retry whose first attempt succeeds beside the breaker's call, and the memory a
//! breaker takes.
//!
//! breaker runs on Resilience4j's defaults (a 100-call window, slow-call detection at 60 s)
//! unless a group needs otherwise, and each peer on its own.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use breaker::retry::{Retry, RetryConfig};
use breaker::{Config, Registry, SlidingWindowType};
use failsafe::FailurePolicy;

use crate::harness::{
    allocations_per_call, block_on, live, measure, measure_rows, median, row, rss_bytes,
    two_thread_sample, Plan, Row, Table,
};
use crate::peers::{self, SyncPeers, TowerBreaker, CBR, FAILSAFE, RECLOSER, TOWER};

/// The cost of a call, an atomic add and a clock read, with nothing around them.
pub(crate) fn floors(plan: &Plan, t: &mut Table) {
    let counter = AtomicU64::new(0);
    t.add(
        "floor",
        "bare call",
        measure(plan, || {
            let _ = black_box(black_box(|| Ok::<u64, ()>(1))());
        }),
    );
    t.add(
        "floor",
        "AtomicU64::fetch_add",
        measure(plan, || {
            black_box(counter.fetch_add(1, Ordering::Relaxed));
        }),
    );
    t.add(
        "floor",
        "Instant::now()",
        measure(plan, || {
            black_box(Instant::now());
        }),
    );
    let clock = breaker::Clock::system();
    t.add(
        "floor",
        "breaker Clock::now()",
        measure(plan, || {
            black_box(clock.now());
        }),
    );
}

/// A registry whose breakers take Resilience4j's defaults.
pub(crate) fn registry_on_defaults() -> Registry {
    Registry::builder()
        .default_config(Config::default())
        .build()
}

/// One successful sync call through breaker and through each sync peer, in whatever state
/// each is in.
fn sync_success_rows<'a>(
    plan: &'a Plan,
    ours: &'a breaker::CircuitBreaker,
    peers: &'a SyncPeers<impl FailurePolicy>,
) -> [Row<'a>; 4] {
    use failsafe::CircuitBreaker as _;
    [
        row(plan, || {
            black_box(ours.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(peers.recloser.call(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(peers.failsafe.call(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(peers.cbr.call(|| Ok::<u64, peers::PeerError>(black_box(1)))).ok();
        }),
    ]
}

/// `call`, told to fail on every other call (each row alternates on its own).
fn every_other(mut call: impl FnMut(bool)) -> impl FnMut() {
    let mut fail = false;
    move || {
        fail = !fail;
        call(fail);
    }
}

/// sync CLOSED, every call succeeding, on `ours` and `peers` (all CLOSED on defaults).
pub(crate) fn sync_closed_success(
    plan: &Plan,
    t: &mut Table,
    ours: &breaker::CircuitBreaker,
    peers: &SyncPeers<impl FailurePolicy>,
) {
    let times = measure_rows(plan, sync_success_rows(plan, ours, peers));
    t.add_all(
        "sync CLOSED success",
        ["breaker", RECLOSER, FAILSAFE, CBR],
        times,
    );
}

/// sync CLOSED, half the calls failing (thresholds set so nothing opens).
pub(crate) fn sync_closed_half_failing(plan: &Plan, t: &mut Table) {
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .failure_rate_threshold(100.0)
                .build()
                .unwrap(),
        )
        .build();
    let ours = registry.breaker("bench-half");
    let peers = peers::never_opening();
    let times = measure_rows(
        plan,
        [
            row(
                plan,
                every_other(|fail| {
                    black_box(ours.call_sync(|| if fail { Err(1u32) } else { Ok(1u64) })).ok();
                }),
            ),
            row(
                plan,
                every_other(|fail| {
                    black_box(
                        peers
                            .recloser
                            .call(|| if fail { Err(1u32) } else { Ok(1u64) }),
                    )
                    .ok();
                }),
            ),
            row(
                plan,
                every_other(|fail| {
                    use failsafe::CircuitBreaker as _;
                    black_box(
                        peers
                            .failsafe
                            .call(|| if fail { Err(1u32) } else { Ok(1u64) }),
                    )
                    .ok();
                }),
            ),
            row(
                plan,
                every_other(|fail| {
                    black_box(peers.cbr.call(|| {
                        if fail {
                            Err(peers::PeerError)
                        } else {
                            Ok(1u64)
                        }
                    }))
                    .ok();
                }),
            ),
        ],
    );
    t.add_all(
        "sync CLOSED 50% failures",
        ["breaker", RECLOSER, FAILSAFE, CBR],
        times,
    );
}

/// A call to an OPEN breaker, rejected: breaker and every peer opened by one failure, waiting
/// an hour.
pub(crate) fn open_rejection(plan: &Plan, t: &mut Table) {
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .sliding_window_size(1)
                .minimum_number_of_calls(1)
                .wait_duration_in_open_state(Duration::from_secs(3600))
                .build()
                .unwrap(),
        )
        .build();
    let ours = registry.breaker("bench-open");
    let _ = ours.call_sync(|| Err::<(), _>(()));
    assert_eq!(ours.state(), breaker::State::Open);
    let peers = peers::open();
    let tower = peers::tower_open();
    let mut tower_svc = tower.clone();
    let [ours_row, recloser_row, failsafe_row, cbr_row] = sync_success_rows(plan, &ours, &peers);
    let times = measure_rows(
        plan,
        [
            ours_row,
            recloser_row,
            failsafe_row,
            cbr_row,
            row(plan, || {
                black_box(block_on(peers::tower_call(&mut tower_svc, Ok(1)))).ok();
            }),
        ],
    );
    t.add_all(
        "OPEN rejection",
        ["breaker", RECLOSER, FAILSAFE, CBR, TOWER],
        times,
    );
}

/// async CLOSED success (futures ready at once, polled without a runtime). circuitbreaker-rs's
/// async call goes through the same breaker as its sync one, `peers.cbr`.
pub(crate) fn async_closed_success(
    plan: &Plan,
    t: &mut Table,
    ours: &breaker::CircuitBreaker,
    peers: &SyncPeers<impl FailurePolicy>,
    tower: &TowerBreaker,
) {
    let recloser = peers::async_recloser();
    let failsafe = peers::failsafe_closed();
    let mut tower_svc = tower.clone();
    let times = measure_rows(
        plan,
        [
            row(plan, || {
                black_box(block_on(ours.call(async { Ok::<u64, ()>(black_box(1)) }))).ok();
            }),
            row(plan, || {
                black_box(block_on(
                    recloser.call(async { Ok::<u64, ()>(black_box(1)) }),
                ))
                .ok();
            }),
            row(plan, || {
                use failsafe::futures::CircuitBreaker as _;
                black_box(block_on(
                    failsafe.call(async { Ok::<u64, ()>(black_box(1)) }),
                ))
                .ok();
            }),
            row(plan, || {
                black_box(block_on(peers.cbr.call_async(|| async {
                    Ok::<u64, peers::PeerError>(black_box(1))
                })))
                .ok();
            }),
            row(plan, || {
                black_box(block_on(peers::tower_call(&mut tower_svc, Ok(1)))).ok();
            }),
        ],
    );
    t.add_all(
        "async CLOSED success",
        ["breaker", RECLOSER, FAILSAFE, CBR, TOWER],
        times,
    );
}

/// Two threads on one breaker, CLOSED success, per thread; the rows alternate by sample.
///
/// tower-resilience takes a tokio mutex per call, which two threads polling without a runtime
/// turn into a spin: its row runs a hundredth of the calls.
pub(crate) fn two_threads(
    plan: &Plan,
    t: &mut Table,
    ours: &breaker::CircuitBreaker,
    peers: &SyncPeers<impl FailurePolicy + Send>,
    tower: &TowerBreaker,
) {
    let shared = AtomicU64::new(0);
    let fetch_add = || {
        black_box(shared.fetch_add(1, Ordering::Relaxed));
    };
    let breaker = || {
        black_box(ours.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let recloser = || {
        black_box(peers.recloser.call(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let failsafe = || {
        use failsafe::CircuitBreaker as _;
        black_box(peers.failsafe.call(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let cbr = || {
        black_box(peers.cbr.call(|| Ok::<u64, peers::PeerError>(black_box(1)))).ok();
    };
    // A tower service is cloned per task, not per call: each thread makes its own clone.
    let tower = || {
        let mut svc = tower.clone();
        move || {
            black_box(block_on(peers::tower_call(&mut svc, Ok(1)))).ok();
        }
    };
    let few = plan.fewer_calls(100);
    let mut rows: [Vec<f64>; 6] = Default::default();
    for _ in 0..plan.samples.div_ceil(3) {
        rows[0].push(two_thread_sample(plan, &|| fetch_add));
        rows[1].push(two_thread_sample(plan, &|| breaker));
        rows[2].push(two_thread_sample(plan, &|| recloser));
        rows[3].push(two_thread_sample(plan, &|| failsafe));
        rows[4].push(two_thread_sample(plan, &|| cbr));
        rows[5].push(two_thread_sample(&few, &tower));
    }
    t.add_all(
        "2 threads CLOSED (per thread)",
        [
            "AtomicU64::fetch_add",
            "breaker",
            RECLOSER,
            FAILSAFE,
            CBR,
            TOWER,
        ],
        rows.map(|mut samples| median(&mut samples)),
    );
}

// The same call through the attribute and by hand (both on the global registry's defaults).
#[breaker::circuit_breaker(name = "bench-attribute")]
fn through_attribute(x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x))
}

// The same attribute with a run-time key: a lookup of a key that has its breaker (formatted
// on the stack, no allocation) and a handle clone, per call.
#[breaker::circuit_breaker(name = "bench-attribute-keyed", key = tenant)]
fn through_attribute_keyed(tenant: &str, x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x))
}

// The keyed attribute with keys taken in turn from many: a name of its own, so that its
// 1,000 keys stay within a group's default maximum (`KeyedLimits::DEFAULT_MAX_BREAKERS`) and
// no call of the row creates or evicts a breaker.
#[breaker::circuit_breaker(name = "bench-attribute-keyed-many", key = tenant)]
fn through_attribute_keyed_many(tenant: &str, x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x))
}

/// How many keys the cycling keyed row takes in turn.
const CYCLED_KEYS: usize = 1_000;

static BY_HAND: breaker::CallSite = breaker::CallSite::new("bench-by-hand");

fn by_hand(x: u64) -> Result<u64, std::io::Error> {
    BY_HAND
        .breaker()
        .call_sync(|| Ok(black_box(x)))
        .map_err(breaker::CallError::into_error)
}

#[breaker::circuit_breaker(name = "bench-attribute-async")]
async fn through_attribute_async(x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x))
}

static BY_HAND_ASYNC: breaker::CallSite = breaker::CallSite::new("bench-by-hand-async");

async fn by_hand_async(x: u64) -> Result<u64, std::io::Error> {
    BY_HAND_ASYNC
        .breaker()
        .call(async { Ok(black_box(x)) })
        .await
        .map_err(breaker::CallError::into_error)
}

/// The attribute against the same call written by hand, sync and async ("breaker" is the
/// attribute here), and the keyed attribute beside them: one key every call, and 1,000 keys
/// in turn.
pub(crate) fn attribute_vs_by_hand(plan: &Plan, t: &mut Table) {
    let tenants: Vec<String> = (0..CYCLED_KEYS).map(|i| format!("tenant-{i}")).collect();
    let mut next = 0;
    let times = measure_rows(
        plan,
        [
            row(plan, || {
                black_box(through_attribute(1)).ok();
            }),
            row(plan, || {
                black_box(by_hand(1)).ok();
            }),
            row(plan, || {
                black_box(through_attribute_keyed(black_box("tenant-42"), 1)).ok();
            }),
            row(plan, || {
                next = (next + 1) % CYCLED_KEYS;
                black_box(through_attribute_keyed_many(&tenants[next], 1)).ok();
            }),
        ],
    );
    t.add_all(
        "attribute vs by hand, sync",
        [
            "breaker",
            "by hand",
            "breaker, key = tenant",
            "breaker, 1,000 keys in turn",
        ],
        times,
    );
    let times = measure_rows(
        plan,
        [
            row(plan, || {
                black_box(block_on(through_attribute_async(1))).ok();
            }),
            row(plan, || {
                black_box(block_on(by_hand_async(1))).ok();
            }),
        ],
    );
    t.add_all("attribute vs by hand, async", ["breaker", "by hand"], times);
}

/// A retry on its defaults (3 attempts, the budget on) whose first attempt succeeds, beside
/// the bare call and the breaker's call on defaults, sync and async, in one group; with the
/// allocations per call of each retry row (0: no allocation on this path).
pub(crate) fn retry_first_success(plan: &Plan, t: &mut Table, ours: &breaker::CircuitBreaker) {
    let retry = Retry::new("bench-retry", RetryConfig::default());
    let sync_retry = || {
        black_box(retry.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let async_retry = || {
        black_box(block_on(
            retry.call(|| async { Ok::<u64, ()>(black_box(1)) }),
        ))
        .ok();
    };
    let times = measure_rows(
        plan,
        [
            row(plan, || {
                let _ = black_box(black_box(|| Ok::<u64, ()>(1))());
            }),
            row(plan, || {
                black_box(ours.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
            }),
            row(plan, sync_retry),
            row(plan, || {
                black_box(block_on(ours.call(async { Ok::<u64, ()>(black_box(1)) }))).ok();
            }),
            row(plan, async_retry),
        ],
    );
    t.add_all(
        "retry, first attempt succeeds",
        [
            "bare call",
            "breaker",
            "Retry::call_sync",
            "breaker async",
            "Retry::call (async)",
        ],
        times,
    );
    println!(
        "  allocations per call: Retry::call_sync {:.2}, Retry::call (async) {:.2}",
        allocations_per_call(10_000, sync_retry),
        allocations_per_call(10_000, async_retry),
    );
}

/// The heap a breaker takes, with either window, new and after many calls; an async call's
/// future; and many keyed breakers.
pub(crate) fn memory() {
    println!("\nMemory (heap bytes, counted by a global allocator):");
    let count_cfg = Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 100, 100)
        .build()
        .unwrap();
    let time_cfg = Config::builder()
        .sliding_window(SlidingWindowType::TimeBased, 60, 100)
        .build()
        .unwrap();
    let before = live();
    let count = breaker::CircuitBreaker::new("count-100", count_cfg);
    let after_count = live();
    let time = breaker::CircuitBreaker::new("time-60s", time_cfg);
    let after_time = live();
    println!(
        "  one breaker, COUNT_BASED(100):  {} bytes",
        after_count - before
    );
    println!(
        "  one breaker, TIME_BASED(60 s):  {} bytes",
        after_time - after_count
    );
    for _ in 0..100_000 {
        let _ = count.call_sync(|| Ok::<(), ()>(()));
        let _ = time.call_sync(|| Err::<(), ()>(()));
    }
    println!(
        "  the same two after 100,000 calls each: {} bytes (no growth: {})",
        live() - before,
        live() - before == after_time - before
    );
    // A future is moved (copied whole) each time it is awaited in another async fn or handed
    // to an executor, so its size is part of an async call's cost. Never polled here.
    let recloser = peers::async_recloser();
    println!(
        "  an async call's future (stack, not heap): breaker {} bytes, recloser {} bytes",
        std::mem::size_of_val(&count.call(async { Ok::<u64, ()>(1) })),
        std::mem::size_of_val(&recloser.call(async { Ok::<u64, ()>(1) })),
    );
    // No eviction here: this row measures what a breaker costs, so every key keeps its own.
    let registry = Registry::builder()
        .keyed_limits(breaker::KeyedLimits::unbounded())
        .build();
    let keyed = registry.keyed("per-key");
    let rss0 = rss_bytes();
    let live0 = live();
    for key in 0..100_000u64 {
        black_box(keyed.get(&key));
    }
    let heap = live() - live0;
    println!(
        "  100,000 keyed breakers (default COUNT_BASED(100)): {} bytes on the heap, {} bytes each",
        heap,
        heap / 100_000
    );
    if let (Some(a), Some(b)) = (rss0, rss_bytes()) {
        println!(
            "  resident set growth for them: {} bytes",
            b.saturating_sub(a)
        );
    }
}
