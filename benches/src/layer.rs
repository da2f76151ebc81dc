//! The tower layer's cost per request, beside the same inner service with no layer, our own
//! async call around the same inner future, and two peers' tower layers, CLOSED and OPEN, in
//! one run; with the allocations each request makes.
//!
//! ```text
//! cargo bench -p breaker-bench --bench layer                      # full run
//! BREAKER_BENCH_QUICK=1 cargo bench -p breaker-bench --bench layer  # quick run
//! ```
//!
//! A request is `poll_ready`, `call`, and the response future polled to completion with a noop
//! waker: no runtime in the loop, so the figure is the layer's own cost. The inner service is
//! always ready and answers with `std::future::Ready`.
//!
//! Every breaker has the same policy: a count-based window of 100 calls, evaluated from 100
//! calls on, opening at a 50% failure rate; 10 trial calls in HALF_OPEN; a 60 s wait in OPEN
//! for the CLOSED rows, an hour for the OPEN rows (each forced OPEN by hand, so it stays OPEN
//! for the whole run). `tower_resilience` and `breaker_peer` below say what each peer's
//! configuration sets.
//!
//! The allocations are counted by the harness's global allocator, in a pass of their own; the
//! rows are timed with the counting off, so an allocation costs what the system allocator takes.
//!
//! The machines this runs on are shared and noisy: only the ratios within one run mean anything.

mod echo;
// The overhead bench's harness: this bench uses part of it.
#[allow(dead_code)]
mod harness;

use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker::{Config, Registry, SlidingWindowType, State};
use tower_layer::Layer;
use tower_service::Service;

use echo::{request, through, Echo};
use harness::{allocations_per_call, block_on, measure_rows, row, stop_counting, Plan};

/// The version of each peer measured; they follow the dependencies in benches/Cargo.toml.
const TOWER_RESILIENCE: &str = "tower-resilience 0.14.0 layer";
const BREAKER_PEER: &str = "breaker 2.0.2 BreakerLayer";

const NO_LAYER: &str = "no layer (inner service alone)";
const OURS_LAYER: &str = "breaker layer";
const OURS_CALL: &str = "breaker call (async)";

/// Requests per row for the allocation counts.
const ALLOC_CALLS: u64 = 10_000;

/// A row's work: our async call around the inner service's future, after the same
/// `poll_ready` and `call` on the inner service as the layer makes.
fn our_call(ours: &breaker::CircuitBreaker) -> impl FnMut() + '_ {
    let mut inner = Echo;
    move || {
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(Ok(())) = inner.poll_ready(&mut cx) else {
            unreachable!("Echo is always ready")
        };
        black_box(block_on(ours.call(inner.call(black_box(1))))).ok();
    }
}

/// Our breaker with the shared policy, waiting `wait` in OPEN.
fn ours(wait: Duration) -> breaker::CircuitBreaker {
    let config = Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 100, 100)
        .failure_rate_threshold(50.0)
        .permitted_number_of_calls_in_half_open_state(10)
        .wait_duration_in_open_state(wait)
        .build()
        .unwrap();
    Registry::builder()
        .default_config(config)
        .build()
        .breaker("bench-layer")
}

type TowerResilience = tower_resilience_circuitbreaker::CircuitBreaker<
    Echo,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;
type BreakerPeer = breaker_peer::tower::BreakerService<Echo>;

/// tower-resilience's layer around [`Echo`], with the shared policy, waiting `wait` in OPEN:
/// `failure_rate_threshold(0.5)`, `sliding_window_type(CountBased)`, `sliding_window_size(100)`,
/// `minimum_number_of_calls(100)`, `permitted_calls_in_half_open(10)`,
/// `wait_duration_in_open(wait)`; no slow-call threshold and no backpressure (its defaults: an
/// OPEN circuit rejects at once, it does not make the caller wait).
fn tower_resilience(wait: Duration) -> TowerResilience {
    tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
        .name("bench-layer")
        .failure_rate_threshold(0.5)
        .sliding_window_type(tower_resilience_circuitbreaker::SlidingWindowType::CountBased)
        .sliding_window_size(100)
        .minimum_number_of_calls(100)
        .permitted_calls_in_half_open(10)
        .wait_duration_in_open(wait)
        .build()
        .unwrap()
        .layer(Echo)
}

/// The `breaker` crate's breaker (2.0.2), with the shared policy, waiting `wait` in OPEN:
/// `failure_rate_threshold(0.5)`, `sliding_window_size(100)`, `minimum_calls(100)`,
/// `consecutive_failures(u32::MAX)` (its streak rule off: ours has none),
/// `half_open_max_calls(10)`, `wait_duration(wait)`. Its window is count-based only.
fn breaker_peer(wait: Duration) -> breaker_peer::CircuitBreaker {
    breaker_peer::CircuitBreaker::builder(
        breaker_peer::CircuitBreakerConfig::builder()
            .failure_rate_threshold(0.5)
            .sliding_window_size(100)
            .minimum_calls(100)
            .consecutive_failures(u32::MAX)
            .half_open_max_calls(10)
            .wait_duration(wait)
            .build(),
    )
    .name("bench-layer")
    .build()
}

/// Its `BreakerLayer` around [`Echo`].
fn breaker_peer_layer(peer: &breaker_peer::CircuitBreaker) -> BreakerPeer {
    breaker_peer::tower::BreakerLayer::new(peer.clone()).layer(Echo)
}

/// The rows of one group, printed as the other benches print theirs, with allocations per
/// request beside the time; kept for the ratios.
#[derive(Default)]
struct Rows {
    rows: Vec<(&'static str, &'static str, f64, f64)>,
}

impl Rows {
    fn add(&mut self, group: &'static str, name: &'static str, ns: f64, allocs: f64) {
        println!("  {group:<28} {name:<34} {ns:>9.1} ns {allocs:>7.2} allocs");
        self.rows.push((group, name, ns, allocs));
    }

    fn ns(&self, group: &str, name: &str) -> f64 {
        self.rows
            .iter()
            .find(|r| r.0 == group && r.1 == name)
            .map(|r| r.2)
            .unwrap()
    }

    /// The faster of the two peers' layers in `group`: its name and time.
    fn best_peer(&self, group: &str) -> (&'static str, f64) {
        let tower = self.ns(group, TOWER_RESILIENCE);
        let peer = self.ns(group, BREAKER_PEER);
        if tower <= peer {
            (TOWER_RESILIENCE, tower)
        } else {
            (BREAKER_PEER, peer)
        }
    }
}

const CLOSED: &str = "layer CLOSED success";
const OPEN: &str = "layer OPEN rejection";

/// CLOSED, every request succeeding: no layer, our layer, our call, the two peers' layers.
fn closed(plan: &Plan, t: &mut Rows) {
    let wait = Duration::from_secs(60);
    let breaker = ours(wait);
    let tower = tower_resilience(wait);
    let peer_breaker = breaker_peer(wait);
    let peer = breaker_peer_layer(&peer_breaker);
    let ours_layer = breaker::tower::CircuitBreakerLayer::new(breaker.clone()).layer(Echo);

    // Each answers with the request, CLOSED.
    assert_eq!(request(&mut Echo, 7).ok(), Some(7));
    assert_eq!(request(&mut ours_layer.clone(), 7).ok(), Some(7));
    assert_eq!(block_on(breaker.call(Echo.call(7))).ok(), Some(7));
    assert_eq!(request(&mut tower.clone(), 7).ok(), Some(7));
    assert_eq!(request(&mut peer.clone(), 7).ok(), Some(7));

    let mut bare = through(Echo);
    let mut layer = through(ours_layer);
    let mut call = our_call(&breaker);
    let mut tower_row = through(tower.clone());
    let mut peer_row = through(peer);
    let allocs = [
        allocations_per_call(ALLOC_CALLS, &mut bare),
        allocations_per_call(ALLOC_CALLS, &mut layer),
        allocations_per_call(ALLOC_CALLS, &mut call),
        allocations_per_call(ALLOC_CALLS, &mut tower_row),
        allocations_per_call(ALLOC_CALLS, &mut peer_row),
    ];
    let times = measure_rows(
        plan,
        [
            row(plan, bare),
            row(plan, layer),
            row(plan, call),
            row(plan, tower_row),
            row(plan, peer_row),
        ],
    );
    let names = [
        NO_LAYER,
        OURS_LAYER,
        OURS_CALL,
        TOWER_RESILIENCE,
        BREAKER_PEER,
    ];
    for ((name, ns), allocs) in names.into_iter().zip(times).zip(allocs) {
        t.add(CLOSED, name, ns, allocs);
    }

    // Still CLOSED: every request was a success.
    assert_eq!(breaker.state(), State::Closed);
    assert!(!tower.is_open());
    assert!(peer_breaker.is_closed());
}

/// OPEN, every request rejected: our layer, our call, the two peers' layers, each breaker
/// forced OPEN with an hour's wait.
fn open(plan: &Plan, t: &mut Rows) {
    let wait = Duration::from_secs(3600);
    let breaker = ours(wait);
    breaker.transition_to(State::Open).unwrap();
    assert_eq!(breaker.state(), State::Open);
    let ours_layer = breaker::tower::CircuitBreakerLayer::new(breaker.clone()).layer(Echo);

    let tower = tower_resilience(wait);
    block_on(tower.force_open());
    assert!(tower.is_open());
    let peer_breaker = breaker_peer(wait);
    peer_breaker.trip();
    assert!(peer_breaker.is_open());
    let peer = breaker_peer_layer(&peer_breaker);

    // Each rejects (with its rejection, which does not call the inner service).
    assert!(request(&mut ours_layer.clone(), 7)
        .unwrap_err()
        .is_rejected());
    assert!(block_on(breaker.call(Echo.call(7)))
        .unwrap_err()
        .is_rejected());
    assert!(request(&mut tower.clone(), 7)
        .unwrap_err()
        .is_circuit_open());
    assert!(matches!(
        request(&mut peer.clone(), 7),
        Err(breaker_peer::CircuitBreakerError::CircuitOpen)
    ));

    let mut layer = through(ours_layer);
    let mut call = our_call(&breaker);
    let mut tower_row = through(tower.clone());
    let mut peer_row = through(peer);
    let allocs = [
        allocations_per_call(ALLOC_CALLS, &mut layer),
        allocations_per_call(ALLOC_CALLS, &mut call),
        allocations_per_call(ALLOC_CALLS, &mut tower_row),
        allocations_per_call(ALLOC_CALLS, &mut peer_row),
    ];
    let times = measure_rows(
        plan,
        [
            row(plan, layer),
            row(plan, call),
            row(plan, tower_row),
            row(plan, peer_row),
        ],
    );
    let names = [OURS_LAYER, OURS_CALL, TOWER_RESILIENCE, BREAKER_PEER];
    for ((name, ns), allocs) in names.into_iter().zip(times).zip(allocs) {
        t.add(OPEN, name, ns, allocs);
    }

    // Still OPEN after the run.
    assert_eq!(breaker.state(), State::Open);
    assert!(tower.is_open());
    assert!(peer_breaker.is_open());
}

/// The size of `S`'s response future.
fn future_size<S: Service<u64>>(_: &S) -> usize {
    std::mem::size_of::<S::Future>()
}

/// The response futures' sizes: a future is moved (copied whole) each time it is awaited in
/// another async fn or handed to an executor. The peers box theirs (one allocation each).
fn print_future_sizes() {
    let wait = Duration::from_secs(60);
    let breaker = ours(wait);
    let layer = breaker::tower::CircuitBreakerLayer::new(breaker.clone()).layer(Echo);
    println!(
        "\nResponse futures (stack bytes): {OURS_LAYER} {}, {OURS_CALL} {}, \
         {TOWER_RESILIENCE} {} (boxed), {BREAKER_PEER} {} (boxed)",
        future_size(&layer),
        // Never polled: the breaker is not asked.
        std::mem::size_of_val(&breaker.call(Echo.call(1))),
        future_size(&tower_resilience(wait)),
        future_size(&breaker_peer_layer(&breaker_peer(wait))),
    );
}

/// `ratio` with the target it is held to.
fn verdict(ratio: f64, target: f64) -> String {
    let met = if ratio <= target { "met" } else { "NOT met" };
    format!("{ratio:>5.2}  (target <= {target:.2}: {met})")
}

fn print_ratios(t: &Rows) {
    println!("\nRatios in this run (breaker's time / the other's; below 1.00 is faster):");
    let bare = t.ns(CLOSED, NO_LAYER);
    let layer = t.ns(CLOSED, OURS_LAYER);
    let call = t.ns(CLOSED, OURS_CALL);
    let (best, best_ns) = t.best_peer(CLOSED);
    println!(
        "  CLOSED  breaker layer / best peer layer ({best}): {}",
        verdict(layer / best_ns, 0.5)
    );
    println!(
        "          the same, less the inner service alone ({bare:.1} ns) on both sides: {:.2}",
        (layer - bare) / (best_ns - bare)
    );
    println!(
        "  CLOSED  breaker layer / breaker call: {}",
        verdict(layer / call, 2.0)
    );
    println!(
        "          the same, less the inner service alone on both sides: {:.2}",
        (layer - bare) / (call - bare)
    );
    let layer = t.ns(OPEN, OURS_LAYER);
    let call = t.ns(OPEN, OURS_CALL);
    let (best, best_ns) = t.best_peer(OPEN);
    println!(
        "  OPEN    breaker layer / best peer layer ({best}): {}",
        verdict(layer / best_ns, 0.5)
    );
    println!(
        "  OPEN    breaker layer / breaker call: {:.2}",
        layer / call
    );
}

fn main() {
    // The peers' rows allocate: time them on the system allocator, without the counting's
    // atomic adds (`allocations_per_call` counts its own calls).
    stop_counting();
    let plan = Plan::from_env();
    plan.print_header();
    println!(
        "The tower layer, per request: poll_ready + call + the response polled to completion \
         (noop waker, no runtime); allocations per request over {ALLOC_CALLS} requests\n"
    );
    let mut t = Rows::default();
    closed(&plan, &mut t);
    open(&plan, &mut t);
    print_ratios(&t);
    print_future_sizes();
}
