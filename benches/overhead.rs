//! The protected call's overhead, side by side with the Rust peers and the hardware floor, in
//! one run; and the memory a breaker takes.
//!
//! ```text
//! cargo bench --bench overhead                      # full run
//! BREAKER_BENCH_QUICK=1 cargo bench --bench overhead  # quick run, well under 2 minutes
//! ```
//!
//! Every figure is the median of many samples of a tight loop. The machines this runs on are
//! shared and noisy, so only the ratios within one run mean anything.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use breaker::{Config, Registry, SlidingWindowType};

/// Counts live heap bytes, for the memory figures.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

struct Plan {
    iters: u64,
    samples: usize,
}

/// Median nanoseconds per call of `f`.
fn measure(plan: &Plan, mut f: impl FnMut()) -> f64 {
    batch(plan, &mut f);
    let mut per_call: Vec<f64> = (0..plan.samples).map(|_| batch(plan, &mut f)).collect();
    median(&mut per_call)
}

/// Nanoseconds per call of `f` over one batch of `plan.iters` calls.
fn batch(plan: &Plan, f: &mut impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..plan.iters {
        f();
    }
    start.elapsed().as_nanos() as f64 / plan.iters as f64
}

/// One row of a comparison: a closure that times one batch of `plan.iters` calls of `f`. The
/// call inside the batch is static; only the batch is called through the box.
type Row<'a> = Box<dyn FnMut() -> f64 + 'a>;

fn row<'a>(plan: &'a Plan, mut f: impl FnMut() + 'a) -> Row<'a> {
    Box::new(move || batch(plan, &mut f))
}

/// Median nanoseconds per call of each row, timed in alternating batches, so that a slow spell
/// of this shared machine hits every row of a comparison alike.
fn measure_rows<const N: usize>(plan: &Plan, mut rows: [Row<'_>; N]) -> [f64; N] {
    for row in &mut rows {
        row();
    }
    let mut times: [Vec<f64>; N] = std::array::from_fn(|_| Vec::new());
    for _ in 0..plan.samples {
        for (row, times) in rows.iter_mut().zip(&mut times) {
            times.push(row());
        }
    }
    times.map(|mut t| median(&mut t))
}

/// Nanoseconds per call of the closure `make` gives each thread, with two threads calling at
/// once: one sample.
///
/// Both threads start with a spin on a shared counter rather than a blocking barrier, so that
/// neither runs alone while the other is still being woken (a tight `fetch_add` loop finishes
/// in well under a millisecond, less than a thread's wake-up can take on a busy machine). The
/// sample is the slower thread's time.
fn two_thread_sample<G: FnMut()>(plan: &Plan, make: &(impl Fn() -> G + Sync)) -> f64 {
    let ready = AtomicU64::new(0);
    let times: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut f = make();
                    ready.fetch_add(1, Ordering::AcqRel);
                    while ready.load(Ordering::Acquire) < 2 {
                        std::hint::spin_loop();
                    }
                    let start = Instant::now();
                    for _ in 0..plan.iters {
                        f();
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let slowest = times.into_iter().max().unwrap();
    slowest.as_nanos() as f64 / plan.iters as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Polls a future that is ready at once (no runtime, so none of its cost is measured).
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

struct Table {
    rows: Vec<(&'static str, &'static str, f64)>,
}

impl Table {
    fn add(&mut self, group: &'static str, name: &'static str, ns: f64) {
        println!("  {group:<28} {name:<34} {ns:>9.1} ns");
        self.rows.push((group, name, ns));
    }

    fn get(&self, group: &str, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(g, n, _)| *g == group && *n == name)
            .map(|r| r.2)
    }

    fn print_ratios(&self) {
        println!("\nRatios in this run (breaker's time / the other's; below 1.00 is faster):");
        let groups: Vec<&str> = {
            let mut g: Vec<&str> = self.rows.iter().map(|r| r.0).collect();
            g.dedup();
            g
        };
        for group in groups {
            let Some(ours) = self.get(group, "breaker") else {
                continue;
            };
            let others: Vec<String> = self
                .rows
                .iter()
                .filter(|(g, n, _)| *g == group && *n != "breaker")
                .map(|(_, n, ns)| format!("{n} {:.2}", ours / ns))
                .collect();
            println!("  {group:<28} {}", others.join(", "));
        }
    }
}

// The same call through the attribute and by hand (both on the global registry's defaults).
#[breaker::circuit_breaker(name = "bench-attribute")]
fn through_attribute(x: u64) -> Result<u64, std::io::Error> {
    Ok(black_box(x))
}

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

const RECLOSER: &str = "recloser 1.4";
const FAILSAFE: &str = "failsafe 1.3";
const CBR: &str = "circuitbreaker-rs 0.1";
const TOWER: &str = "tower-resilience 0.14";

/// circuitbreaker-rs wants an error type that implements `Error`.
#[derive(Debug, Clone, Copy)]
struct PeerError;

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("peer error")
    }
}

impl std::error::Error for PeerError {}

type CbrBreaker = circuitbreaker_rs::CircuitBreaker<circuitbreaker_rs::DefaultPolicy, PeerError>;

/// The service tower-resilience wraps: answers with the request's result at once.
#[derive(Clone, Copy)]
struct Answer;

impl tower_service::Service<Result<u64, PeerError>> for Answer {
    type Response = u64;
    type Error = PeerError;
    type Future = std::future::Ready<Result<u64, PeerError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), PeerError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Result<u64, PeerError>) -> Self::Future {
        std::future::ready(req.map(black_box))
    }
}

type TowerBreaker = tower_resilience_circuitbreaker::CircuitBreaker<
    Answer,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;

fn tower_breaker(
    config: tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
        tower_resilience_circuitbreaker::DefaultClassifier,
    >,
) -> TowerBreaker {
    config.build().unwrap().layer_fn(Answer)
}

/// One call through a tower service: `poll_ready`, then `call`.
async fn tower_call(
    svc: &mut TowerBreaker,
    req: Result<u64, PeerError>,
) -> Result<u64, impl std::fmt::Debug> {
    use tower_service::Service as _;
    std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}

/// `call`, told to fail on every other call (each row alternates on its own).
fn every_other(mut call: impl FnMut(bool)) -> impl FnMut() {
    let mut fail = false;
    move || {
        fail = !fail;
        call(fail);
    }
}

/// One successful sync call through breaker and through each sync peer, in whatever state
/// each is in.
fn sync_success_rows<'a>(
    plan: &'a Plan,
    ours: &'a breaker::CircuitBreaker,
    recloser: &'a recloser::Recloser,
    failsafe: &'a impl failsafe::CircuitBreaker,
    cbr: &'a CbrBreaker,
) -> [Row<'a>; 4] {
    [
        row(plan, || {
            black_box(ours.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(recloser.call(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(failsafe.call(|| Ok::<u64, ()>(black_box(1)))).ok();
        }),
        row(plan, || {
            black_box(cbr.call(|| Ok::<u64, PeerError>(black_box(1)))).ok();
        }),
    ]
}

fn breaker_config() -> Config {
    // Resilience4j's defaults: a 100-call window, slow-call detection at 60 s.
    Config::default()
}

fn main() {
    let quick = std::env::var_os("BREAKER_BENCH_QUICK").is_some();
    let plan = if quick {
        Plan {
            iters: 200_000,
            samples: 15,
        }
    } else {
        Plan {
            iters: 1_000_000,
            samples: 41,
        }
    };
    println!(
        "breaker overhead bench ({} mode: {} samples of {} calls, median ns per call)\n",
        if quick { "quick" } else { "full" },
        plan.samples,
        plan.iters
    );
    let mut t = Table { rows: Vec::new() };
    let counter = AtomicU64::new(0);

    // Floors.
    t.add(
        "floor",
        "bare call",
        measure(&plan, || {
            let _ = black_box(black_box(|| Ok::<u64, ()>(1))());
        }),
    );
    t.add(
        "floor",
        "AtomicU64::fetch_add",
        measure(&plan, || {
            black_box(counter.fetch_add(1, Ordering::Relaxed));
        }),
    );
    t.add(
        "floor",
        "Instant::now()",
        measure(&plan, || {
            black_box(Instant::now());
        }),
    );
    let clock = breaker::Clock::system();
    t.add(
        "floor",
        "breaker Clock::now()",
        measure(&plan, || {
            black_box(clock.now());
        }),
    );

    // sync CLOSED success.
    let registry = Registry::builder().default_config(breaker_config()).build();
    let ours = registry.breaker("bench");
    let recloser = recloser::Recloser::custom().build();
    let failsafe = failsafe::Config::new().build();
    let cbr = CbrBreaker::builder().build();
    let g = "sync CLOSED success";
    let [a, b, c, d] = measure_rows(
        &plan,
        sync_success_rows(&plan, &ours, &recloser, &failsafe, &cbr),
    );
    t.add(g, "breaker", a);
    t.add(g, RECLOSER, b);
    t.add(g, FAILSAFE, c);
    t.add(g, CBR, d);

    // sync CLOSED, half the calls failing (thresholds set so nothing opens).
    let half_registry = Registry::builder()
        .default_config(
            Config::builder()
                .failure_rate_threshold(100.0)
                .build()
                .unwrap(),
        )
        .build();
    let ours_half = half_registry.breaker("bench-half");
    let recloser_half = recloser::Recloser::custom().error_rate(0.99).build();
    let failsafe_half = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::success_rate_over_time_window(
            0.01,
            0,
            Duration::from_secs(30),
            failsafe::backoff::constant(Duration::from_secs(3600)),
        ))
        .build();
    // A failure rate above 1 never trips; nor do 1,000 failures in a row, which never happen.
    let cbr_half = CbrBreaker::builder()
        .failure_threshold(1.01)
        .consecutive_failures(1_000)
        .build();
    let g = "sync CLOSED 50% failures";
    let [a, b, c, d] = measure_rows(
        &plan,
        [
            row(
                &plan,
                every_other(|fail| {
                    black_box(ours_half.call_sync(|| if fail { Err(1u32) } else { Ok(1u64) })).ok();
                }),
            ),
            row(
                &plan,
                every_other(|fail| {
                    black_box(recloser_half.call(|| if fail { Err(1u32) } else { Ok(1u64) })).ok();
                }),
            ),
            row(
                &plan,
                every_other(|fail| {
                    use failsafe::CircuitBreaker as _;
                    black_box(failsafe_half.call(|| if fail { Err(1u32) } else { Ok(1u64) })).ok();
                }),
            ),
            row(
                &plan,
                every_other(|fail| {
                    black_box(cbr_half.call(|| if fail { Err(PeerError) } else { Ok(1u64) })).ok();
                }),
            ),
        ],
    );
    t.add(g, "breaker", a);
    t.add(g, RECLOSER, b);
    t.add(g, FAILSAFE, c);
    t.add(g, CBR, d);

    // OPEN rejection.
    let open_registry = Registry::builder()
        .default_config(
            Config::builder()
                .sliding_window_size(1)
                .minimum_number_of_calls(1)
                .wait_duration_in_open_state(Duration::from_secs(3600))
                .build()
                .unwrap(),
        )
        .build();
    let ours_open = open_registry.breaker("bench-open");
    let _ = ours_open.call_sync(|| Err::<(), _>(()));
    assert_eq!(ours_open.state(), breaker::State::Open);
    let recloser_open = recloser::Recloser::custom()
        .closed_len(1)
        .open_wait(Duration::from_secs(3600))
        .build();
    let _ = recloser_open.call(|| Err::<(), _>(()));
    let failsafe_open = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(
            1,
            failsafe::backoff::constant(Duration::from_secs(3600)),
        ))
        .build();
    {
        use failsafe::CircuitBreaker as _;
        let _ = failsafe_open.call(|| Err::<(), _>(()));
        assert!(!failsafe_open.is_call_permitted());
    }
    let cbr_open = CbrBreaker::builder()
        .consecutive_failures(1)
        .cooldown(Duration::from_secs(3600))
        .build();
    let _ = cbr_open.call(|| Err::<(), _>(PeerError));
    assert_eq!(cbr_open.current_state(), circuitbreaker_rs::State::Open);
    let tower_open = tower_breaker(
        tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
            .sliding_window_size(1)
            .minimum_number_of_calls(1)
            .wait_duration_in_open(Duration::from_secs(3600)),
    );
    {
        let mut svc = tower_open.clone();
        let _ = block_on(tower_call(&mut svc, Err(PeerError)));
        assert!(tower_open.is_open());
    }
    let g = "OPEN rejection";
    let mut tower_open_svc = tower_open.clone();
    let [ours_row, recloser_row, failsafe_row, cbr_row] =
        sync_success_rows(&plan, &ours_open, &recloser_open, &failsafe_open, &cbr_open);
    let [a, b, c, d, e] = measure_rows(
        &plan,
        [
            ours_row,
            recloser_row,
            failsafe_row,
            cbr_row,
            row(&plan, || {
                black_box(block_on(tower_call(&mut tower_open_svc, Ok(1)))).ok();
            }),
        ],
    );
    t.add(g, "breaker", a);
    t.add(g, RECLOSER, b);
    t.add(g, FAILSAFE, c);
    t.add(g, CBR, d);
    t.add(g, TOWER, e);

    // async CLOSED success (futures ready at once, polled without a runtime).
    let async_recloser = recloser::AsyncRecloser::from(recloser::Recloser::custom().build());
    let failsafe_async = failsafe::Config::new().build();
    let tower = tower_breaker(tower_resilience_circuitbreaker::CircuitBreakerLayer::builder());
    let mut tower_svc = tower.clone();
    let g = "async CLOSED success";
    let [a, b, c, d, e] = measure_rows(
        &plan,
        [
            row(&plan, || {
                black_box(block_on(ours.call(async { Ok::<u64, ()>(black_box(1)) }))).ok();
            }),
            row(&plan, || {
                black_box(block_on(
                    async_recloser.call(async { Ok::<u64, ()>(black_box(1)) }),
                ))
                .ok();
            }),
            row(&plan, || {
                use failsafe::futures::CircuitBreaker as _;
                black_box(block_on(
                    failsafe_async.call(async { Ok::<u64, ()>(black_box(1)) }),
                ))
                .ok();
            }),
            row(&plan, || {
                black_box(block_on(
                    cbr.call_async(|| async { Ok::<u64, PeerError>(black_box(1)) }),
                ))
                .ok();
            }),
            row(&plan, || {
                black_box(block_on(tower_call(&mut tower_svc, Ok(1)))).ok();
            }),
        ],
    );
    t.add(g, "breaker", a);
    t.add(g, RECLOSER, b);
    t.add(g, FAILSAFE, c);
    t.add(g, CBR, d);
    t.add(g, TOWER, e);

    // Two threads on one breaker, CLOSED success, per thread; the rows alternate by sample.
    // tower-resilience takes a tokio mutex per call, which two threads polling without a
    // runtime turn into a spin: its row runs a hundredth of the calls.
    let g = "2 threads CLOSED (per thread)";
    let shared = AtomicU64::new(0);
    let fetch_add = || {
        black_box(shared.fetch_add(1, Ordering::Relaxed));
    };
    let breaker = || {
        black_box(ours.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let recloser_two = || {
        black_box(recloser.call(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let failsafe_two = || {
        use failsafe::CircuitBreaker as _;
        black_box(failsafe.call(|| Ok::<u64, ()>(black_box(1)))).ok();
    };
    let cbr_two = || {
        black_box(cbr.call(|| Ok::<u64, PeerError>(black_box(1)))).ok();
    };
    // A tower service is cloned per task, not per call: each thread makes its own clone.
    let tower_two = || {
        let mut svc = tower.clone();
        move || {
            black_box(block_on(tower_call(&mut svc, Ok(1)))).ok();
        }
    };
    let few = Plan {
        iters: (plan.iters / 100).max(1),
        samples: plan.samples,
    };
    let mut rows: [Vec<f64>; 6] = Default::default();
    for _ in 0..plan.samples.div_ceil(3) {
        rows[0].push(two_thread_sample(&plan, &|| fetch_add));
        rows[1].push(two_thread_sample(&plan, &|| breaker));
        rows[2].push(two_thread_sample(&plan, &|| recloser_two));
        rows[3].push(two_thread_sample(&plan, &|| failsafe_two));
        rows[4].push(two_thread_sample(&plan, &|| cbr_two));
        rows[5].push(two_thread_sample(&few, &tower_two));
    }
    let names = [
        "AtomicU64::fetch_add",
        "breaker",
        RECLOSER,
        FAILSAFE,
        CBR,
        TOWER,
    ];
    for (name, mut samples) in names.into_iter().zip(rows) {
        t.add(g, name, median(&mut samples));
    }

    // The attribute against the same call written by hand ("breaker" is the attribute here).
    let g = "attribute vs by hand, sync";
    let [a, b] = measure_rows(
        &plan,
        [
            row(&plan, || {
                black_box(through_attribute(1)).ok();
            }),
            row(&plan, || {
                black_box(by_hand(1)).ok();
            }),
        ],
    );
    t.add(g, "breaker", a);
    t.add(g, "by hand", b);
    let g = "attribute vs by hand, async";
    let [a, b] = measure_rows(
        &plan,
        [
            row(&plan, || {
                black_box(block_on(through_attribute_async(1))).ok();
            }),
            row(&plan, || {
                black_box(block_on(by_hand_async(1))).ok();
            }),
        ],
    );
    t.add(g, "breaker", a);
    t.add(g, "by hand", b);

    t.print_ratios();
    memory();
}

fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn memory() {
    println!("\nMemory (heap bytes, counted by a global allocator):");
    let registry = Registry::builder().build();
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
    let recloser = recloser::AsyncRecloser::from(recloser::Recloser::custom().build());
    println!(
        "  an async call's future (stack, not heap): breaker {} bytes, recloser {} bytes",
        std::mem::size_of_val(&count.call(async { Ok::<u64, ()>(1) })),
        std::mem::size_of_val(&recloser.call(async { Ok::<u64, ()>(1) })),
    );
    let keyed = registry.keyed::<u64>("per-key");
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
