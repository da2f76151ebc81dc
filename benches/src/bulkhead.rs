//! What a bulkhead's place costs, beside the semaphores and tower layers a Rust service would
//! use instead, in one run: a place taken and given back on one thread and on two, and a
//! refusal when every place is taken; with an OPEN breaker's rejection as the reference a
//! refusal is held to, and the allocations each row makes.
//!
//! ```text
//! cargo bench -p breaker-bench --bench bulkhead                      # full run
//! BREAKER_BENCH_QUICK=1 cargo bench -p breaker-bench --bench bulkhead  # quick run
//! ```
//!
//! The rows, in each group:
//! - ours, `Bulkhead::try_acquire` and the permit dropped, against `tokio::sync::Semaphore`'s
//!   `try_acquire` and the permit dropped: the primitive beside the primitive;
//! - ours as a tower layer (`BulkheadLayer`), tower's `ConcurrencyLimit` and
//!   tower-resilience-bulkhead's layer (`reject_when_full`), each a request over the same
//!   trivial service: `poll_ready`, `call`, the response future polled to completion with a
//!   noop waker, no runtime in the loop except where a peer needs one (below).
//!
//! Every bulkhead lets 25 calls in (Resilience4j's default) and none waits: ours with
//! `max-wait-duration` 0, tower-resilience with `reject_when_full()` (its `max_wait_duration`
//! of zero). The refusal rows hold every place with permits taken before the run.
//!
//! What the peers do differently, which the rows show as they are:
//! - tower's `ConcurrencyLimit` never refuses: when full, its `poll_ready` answers `Pending`
//!   and the caller waits for a place. Its "refusal" row is that `poll_ready` (the cost of
//!   being told to wait, not an answer).
//! - tower-resilience-bulkhead waits for a place under `tokio::time::timeout`, even with a
//!   zero wait: it needs a Tokio runtime with its time driver, and a full bulkhead answers
//!   only when that timer fires, at the time driver's next tick (a millisecond). Its rows run
//!   with a multi-thread runtime of one worker entered, whose parked worker drives the
//!   timers; its refusal row is the wall time until the answer, over fewer calls.
//!
//! The machines this runs on are shared and noisy: only the ratios within one run mean
//! anything.

mod echo;
// The overhead bench's harness: this bench uses part of it.
#[allow(dead_code)]
mod harness;

use std::convert::Infallible;
use std::future::{pending, Future, Pending};
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker::tower::{BulkheadLayer, CircuitBreakerLayer};
use breaker::{Bulkhead, BulkheadConfig, CircuitBreaker, Config, Registry, State};
use tower_layer::Layer;
use tower_service::Service;

use echo::{request, through, Echo};
use harness::{
    allocations_per_call, measure_rows, median, row, stop_counting, two_thread_sample, Plan, Row,
};

/// Places in every bulkhead and semaphore of the run.
const PLACES: u32 = 25;

const OURS: &str = "breaker Bulkhead::try_acquire";
const TOKIO: &str = "tokio Semaphore::try_acquire";
const OURS_LAYER: &str = "breaker BulkheadLayer";
const CONCURRENCY_LIMIT: &str = "tower ConcurrencyLimit";
const TOWER_RESILIENCE: &str = "tower-resilience-bulkhead 0.14.0";
const OPEN_BREAKER: &str = "OPEN CircuitBreaker::try_acquire";
const OPEN_LAYER: &str = "OPEN CircuitBreakerLayer";

const UNCONTENDED: &str = "acquire + release";
const TWO_THREADS: &str = "2 threads acquire + release";
const FULL: &str = "full: refusal";

/// Requests per row for the allocation counts.
const ALLOC_CALLS: u64 = 10_000;

fn ours() -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(PLACES)
        .max_wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    Bulkhead::new("bench-bulkhead", config)
}

/// A service whose requests never finish: each holds its place for as long as its response
/// future lives.
#[derive(Clone, Copy, Debug)]
struct Hang;

impl Service<u64> for Hang {
    type Response = u64;
    type Error = Infallible;
    type Future = Pending<Result<u64, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: u64) -> Self::Future {
        pending()
    }
}

/// tower-resilience's bulkhead layer: 25 calls, `reject_when_full()`; every service it wraps
/// shares its semaphore.
fn tower_resilience() -> tower_resilience_bulkhead::BulkheadLayer {
    let (layer, _handle) = tower_resilience_bulkhead::BulkheadLayer::builder()
        .name("bench-bulkhead")
        .max_concurrent_calls(PLACES as usize)
        .reject_when_full()
        .build_with_handle()
        .unwrap();
    layer
}

/// tower's `ConcurrencyLimit` around [`Echo`], 25 permits.
fn concurrency_limit() -> tower::limit::ConcurrencyLimit<Echo> {
    tower::limit::ConcurrencyLimit::new(Echo, PLACES as usize)
}

/// The runtime tower-resilience's rows need: one worker, which drives the timers while it is
/// parked.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap()
}

/// A row of a group: its allocations per call of `f`, counted now over `calls` calls, and its
/// timing, in batches of `plan`.
fn counted<'a>(plan: &'a Plan, calls: u64, mut f: impl FnMut() + 'a) -> (f64, Row<'a>) {
    (allocations_per_call(calls, &mut f), row(plan, f))
}

/// The rows of the run, printed as they are added, with allocations per call; kept for the
/// ratios.
#[derive(Default)]
struct Rows {
    rows: Vec<(&'static str, &'static str, f64)>,
}

impl Rows {
    fn add(&mut self, group: &'static str, name: &'static str, ns: f64, allocs: Option<f64>) {
        let allocs = allocs.map_or(String::from("      -"), |a| format!("{a:>7.2}"));
        println!("  {group:<28} {name:<34} {ns:>11.1} ns {allocs} allocs");
        self.rows.push((group, name, ns));
    }

    /// Times `rows` in alternating batches and adds them to `group`, `names[i]` with
    /// `rows[i]`'s time and allocations.
    fn add_timed<const N: usize>(
        &mut self,
        plan: &Plan,
        group: &'static str,
        names: [&'static str; N],
        rows: [(f64, Row<'_>); N],
    ) {
        let allocs = rows.each_ref().map(|r| r.0);
        let times = measure_rows(plan, rows.map(|r| r.1));
        for ((name, ns), allocs) in names.into_iter().zip(times).zip(allocs) {
            self.add(group, name, ns, Some(allocs));
        }
    }

    fn ns(&self, group: &str, name: &str) -> f64 {
        self.rows
            .iter()
            .find(|r| r.0 == group && r.1 == name)
            .map(|r| r.2)
            .unwrap()
    }
}

/// One place taken and given back, on one thread, the bulkheads empty.
fn uncontended(plan: &Plan, t: &mut Rows) {
    let bulkhead = ours();
    let semaphore = tokio::sync::Semaphore::new(PLACES as usize);
    let layer = BulkheadLayer::new(bulkhead.clone()).layer(Echo);
    let limit = concurrency_limit();
    let rt = runtime();
    let _entered = rt.enter();
    let resilience = tower_resilience().layer(Echo);

    assert_eq!(request(&mut layer.clone(), 7).ok(), Some(7));
    assert_eq!(request(&mut limit.clone(), 7).ok(), Some(7));
    assert_eq!(request(&mut resilience.clone(), 7).ok(), Some(7));

    let rows = [
        counted(plan, ALLOC_CALLS, || {
            drop(black_box(bulkhead.try_acquire().unwrap()));
        }),
        counted(plan, ALLOC_CALLS, || {
            drop(black_box(semaphore.try_acquire().unwrap()));
        }),
        counted(plan, ALLOC_CALLS, through(layer)),
        counted(plan, ALLOC_CALLS, through(limit)),
        counted(plan, ALLOC_CALLS, through(resilience)),
    ];
    let names = [OURS, TOKIO, OURS_LAYER, CONCURRENCY_LIMIT, TOWER_RESILIENCE];
    t.add_timed(plan, UNCONTENDED, names, rows);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), PLACES);
    assert_eq!(semaphore.available_permits(), PLACES as usize);
}

/// One place taken and given back by each of two threads at once, on one bulkhead (each
/// thread with its own clone of a layer's service); the rows alternate by sample.
fn two_threads(plan: &Plan, t: &mut Rows) {
    let bulkhead = ours();
    let semaphore = tokio::sync::Semaphore::new(PLACES as usize);
    let layer = BulkheadLayer::new(bulkhead.clone()).layer(Echo);
    let limit = concurrency_limit();
    let rt = runtime();
    let resilience = tower_resilience().layer(Echo);

    let ours_row = || || drop(black_box(bulkhead.try_acquire().unwrap()));
    let tokio_row = || || drop(black_box(semaphore.try_acquire().unwrap()));
    let layer_row = || through(layer.clone());
    let limit_row = || through(limit.clone());
    // The runtime is entered on each thread, for as long as its closure lives.
    let resilience_row = || {
        let entered = rt.enter();
        let mut requests = through(resilience.clone());
        move || {
            let _ = &entered;
            requests();
        }
    };
    let mut rows: [Vec<f64>; 5] = Default::default();
    for _ in 0..plan.samples.div_ceil(3) {
        rows[0].push(two_thread_sample(plan, &ours_row));
        rows[1].push(two_thread_sample(plan, &tokio_row));
        rows[2].push(two_thread_sample(plan, &layer_row));
        rows[3].push(two_thread_sample(plan, &limit_row));
        rows[4].push(two_thread_sample(plan, &resilience_row));
    }
    let names = [OURS, TOKIO, OURS_LAYER, CONCURRENCY_LIMIT, TOWER_RESILIENCE];
    for (name, mut samples) in names.into_iter().zip(rows) {
        t.add(TWO_THREADS, name, median(&mut samples), None);
    }
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), PLACES);
    assert_eq!(semaphore.available_permits(), PLACES as usize);
}

/// Every place taken: a refusal by each, and an OPEN breaker's rejection beside them.
fn full(plan: &Plan, t: &mut Rows) {
    let bulkhead = ours();
    let semaphore = tokio::sync::Semaphore::new(PLACES as usize);
    let mut layer = BulkheadLayer::new(bulkhead.clone()).layer(Echo);
    let mut limit = concurrency_limit();
    let rt = runtime();
    let _entered = rt.enter();
    let resilience_layer = tower_resilience();
    let mut resilience = resilience_layer.layer(Echo);
    let breaker = open_breaker();
    let mut open_layer = CircuitBreakerLayer::new(breaker.clone()).layer(Echo);

    // Every place held for the whole group: ours (which our layer shares) and tokio's by
    // permits; ConcurrencyLimit's by response futures called and not polled (each holds the
    // permit its `poll_ready` took); tower-resilience's by requests that never finish.
    let _held: Vec<_> = (0..PLACES)
        .map(|_| bulkhead.try_acquire().unwrap())
        .collect();
    let _held_semaphore = semaphore.try_acquire_many(PLACES).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let _held_limit: Vec<_> = (0..PLACES)
        .map(|_| {
            let mut clone = limit.clone();
            assert!(clone.poll_ready(&mut cx).is_ready());
            (clone.call(1), clone)
        })
        .collect();
    let _held_resilience: Vec<_> = (0..PLACES)
        .map(|_| {
            let mut hang = resilience_layer.layer(Hang);
            assert!(hang.poll_ready(&mut cx).is_ready());
            let mut held = hang.call(1);
            // Polled once: the peer takes its place in the response future.
            assert!(std::pin::Pin::new(&mut held).poll(&mut cx).is_pending());
            held
        })
        .collect();

    // Each refuses (or, for ConcurrencyLimit, is not ready).
    assert!(bulkhead.try_acquire().is_err());
    assert!(semaphore.try_acquire().is_err());
    assert!(request(&mut layer, 7).unwrap_err().is_bulkhead_full());
    assert!(limit.poll_ready(&mut cx).is_pending());
    assert!(request(&mut resilience, 7).is_err());
    assert!(breaker.try_acquire().is_err());
    assert!(request(&mut open_layer, 7).unwrap_err().is_rejected());

    // A refusal by tower-resilience takes a tick of the time driver (a millisecond): its row
    // runs fewer calls.
    let few = plan.fewer_calls(10_000);
    let rows = [
        counted(plan, ALLOC_CALLS, || {
            black_box(bulkhead.try_acquire().unwrap_err());
        }),
        counted(plan, ALLOC_CALLS, || {
            black_box(semaphore.try_acquire().unwrap_err());
        }),
        counted(plan, ALLOC_CALLS, through(layer)),
        counted(plan, ALLOC_CALLS, || {
            let mut cx = Context::from_waker(Waker::noop());
            assert!(black_box(limit.poll_ready(&mut cx)).is_pending());
        }),
        counted(&few, ALLOC_CALLS / 100, through(resilience)),
        counted(plan, ALLOC_CALLS, || {
            black_box(breaker.try_acquire().unwrap_err());
        }),
        counted(plan, ALLOC_CALLS, through(open_layer)),
    ];
    let names = [
        OURS,
        TOKIO,
        OURS_LAYER,
        CONCURRENCY_LIMIT,
        TOWER_RESILIENCE,
        OPEN_BREAKER,
        OPEN_LAYER,
    ];
    t.add_timed(plan, FULL, names, rows);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    assert_eq!(breaker.state(), State::Open);
}

/// A breaker forced OPEN, with an hour's wait so it stays OPEN for the run.
fn open_breaker() -> CircuitBreaker {
    let config = Config::builder()
        .wait_duration_in_open_state(Duration::from_secs(3600))
        .build()
        .unwrap();
    let breaker = Registry::builder()
        .default_config(config)
        .build()
        .breaker("bench-open");
    breaker.transition_to(State::Open).unwrap();
    breaker
}

fn print_ratios(t: &Rows) {
    println!("\nRatios in this run (breaker's time / the other's; below 1.00 is faster):");
    for group in [UNCONTENDED, TWO_THREADS, FULL] {
        let ours = t.ns(group, OURS);
        let layer = t.ns(group, OURS_LAYER);
        println!(
            "  {group:<28} {OURS} / {TOKIO}: {:.2}",
            ours / t.ns(group, TOKIO)
        );
        for peer in [CONCURRENCY_LIMIT, TOWER_RESILIENCE] {
            println!(
                "  {group:<28} {OURS_LAYER} / {peer}: {:.2}",
                layer / t.ns(group, peer)
            );
        }
    }
    println!(
        "  {FULL:<28} {OURS} / {OPEN_BREAKER}: {:.2}",
        t.ns(FULL, OURS) / t.ns(FULL, OPEN_BREAKER)
    );
    println!(
        "  {FULL:<28} {OURS_LAYER} / {OPEN_LAYER}: {:.2}",
        t.ns(FULL, OURS_LAYER) / t.ns(FULL, OPEN_LAYER)
    );
}

fn main() {
    // The peers' rows allocate: time them on the system allocator, without the counting's
    // atomic adds (`allocations_per_call` counts its own calls).
    stop_counting();
    let plan = Plan::from_env();
    plan.print_header();
    println!(
        "A bulkhead's place: taken and given back, and refused when every one of its {PLACES} \
         places is taken; a layer's row is a request (poll_ready + call + the response polled \
         to completion, noop waker); allocations per call over {ALLOC_CALLS} calls\n"
    );
    let mut t = Rows::default();
    uncontended(&plan, &mut t);
    two_threads(&plan, &mut t);
    full(&plan, &mut t);
    print_ratios(&t);
}
