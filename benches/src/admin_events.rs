//! What `GET /actuator/circuitbreakerevents` costs with 10,000 breakers that keep 100 events
//! each (a million records stored, the endpoint's cap 10,000): the way Resilience4j's endpoint
//! works (every event copied out, all sorted by time, then cut to the cap) against the way the
//! admin now works (each ring read back from its newest record, a heap of one candidate per
//! breaker picking the newest 10,000), on the same store, in one run.
//!
//! ```text
//! cargo bench -p breaker-bench --bench admin_events                        # full run
//! BREAKER_BENCH_QUICK=1 cargo bench -p breaker-bench --bench admin_events  # quick run
//! ```
//!
//! The store: one registry on the system clock, an `Admin` attached, 10,000 breakers
//! (`svc-00000` to `svc-09999`, defaults: `event-consumer-buffer-size` 100) each called 100
//! times in rounds (one call on every breaker, then the next round), so every ring is full and
//! the newest events are spread over every breaker. Nothing calls while the bench measures.
//!
//! Each way builds the endpoint's whole body (its JSON bytes) through
//! `breaker_admin::bench_internals`, the same code the route runs; the two bodies are checked
//! to be the same bytes. Per request: wall time (median and largest of the requests, after one
//! to warm up; the two ways alternate), and the heap it needs at its peak (the most bytes live
//! at once above what was live before the request, from a counting global allocator),
//! with what is still live after it (nothing: the body is dropped before the count is read).
//! Then the same for the selection alone (which events, without the JSON that both ways then
//! build alike), and the endpoint over HTTP: sequential GETs through reqwest on loopback against the
//! router served by axum, from send to the body's last byte.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use breaker::admin::Admin;
use breaker::Registry;
use breaker_admin::bench_internals;

const BREAKERS: usize = 10_000;
const CALLS_EACH: usize = 100;
const PATH: &str = "/actuator/circuitbreakerevents";

/// Counts live heap bytes and the most live at once.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed) + layout.size() as i64;
        PEAK.fetch_max(live, Ordering::Relaxed);
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

/// One way of answering, by name: the body (`Vec<u8>`) or the selection alone.
type Way<'a, T> = (&'static str, &'a dyn Fn() -> T);

/// What one request of one way cost.
struct Sample {
    time: Duration,
    peak: i64,
    left: i64,
}

/// One request of `way`: its time, the most heap it held at once, what it left live.
fn request<T>(way: &dyn Fn() -> T) -> Sample {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let body = black_box(way());
    let time = start.elapsed();
    drop(body);
    Sample {
        time,
        peak: PEAK.load(Ordering::Relaxed) - before,
        left: LIVE.load(Ordering::Relaxed) - before,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: i64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let quick = std::env::var_os("BREAKER_BENCH_QUICK").is_some();
    let requests = if quick { 5 } else { 30 };
    println!(
        "breaker admin events bench ({} mode: {requests} requests each way, alternating, after one to warm up)\n",
        if quick { "quick" } else { "full" },
    );

    let started = Instant::now();
    let before = LIVE.load(Ordering::Relaxed);
    let registry = Registry::new();
    let admin = Admin::new(&registry);
    let breakers: Vec<_> = (0..BREAKERS)
        .map(|i| registry.breaker(&format!("svc-{i:05}")))
        .collect();
    for _ in 0..CALLS_EACH {
        for breaker in &breakers {
            let _ = breaker.call_sync(|| Ok::<_, ()>(()));
        }
    }
    println!(
        "Store: {BREAKERS} breakers x {CALLS_EACH} events ({} records) with an Admin, built in {:.0} ms, {:.1} MiB of heap",
        BREAKERS * CALLS_EACH,
        ms(started.elapsed()),
        mib(LIVE.load(Ordering::Relaxed) - before),
    );

    let new = || bench_internals::circuit_breaker_events(&admin);
    let old = || bench_internals::circuit_breaker_events_by_full_sort(&admin);
    let (new_body, old_body) = (new(), old());
    let events = serde_json_events(&new_body);
    println!(
        "Bodies: {} bytes, {events} events; the two ways' bodies are {}\n",
        new_body.len(),
        if new_body == old_body {
            "the same bytes"
        } else {
            "DIFFERENT"
        }
    );
    assert_eq!(new_body, old_body, "the two ways must answer the same body");
    drop((new_body, old_body));

    let ways: [Way<'_, Vec<u8>>; 2] = [
        ("old: every event copied, sorted, cut", &old),
        ("new: newest 10,000 by a heap", &new),
    ];
    println!("The body of GET {PATH}, built in process (the route's own code), per request:");
    compare(&ways, requests);
    let (heap, sort) = (
        || bench_internals::select_by_heap(&admin),
        || bench_internals::select_by_full_sort(&admin),
    );
    assert_eq!(heap(), sort(), "the two selections pick the same events");
    let ways: [Way<'_, (usize, u64)>; 2] = [
        ("old: every event copied, sorted, cut", &sort),
        ("new: newest 10,000 by a heap", &heap),
    ];
    println!("The selection alone (the same 10,000 events), without the JSON both then build:");
    compare(&ways, requests);

    over_http(&admin, requests);
}

/// Times `requests` requests of each way, alternating, and prints a row per way and their
/// ratio.
fn compare<T>(ways: &[Way<'_, T>; 2], requests: usize) {
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..requests {
        for (i, (_, way)) in ways.iter().enumerate() {
            samples[i].push(request(*way));
        }
    }
    println!(
        "  {:<40} {:>8} {:>10} {:>10} {:>14} {:>10}",
        "way", "requests", "median", "max", "peak heap", "left live"
    );
    let mut medians = Vec::new();
    let mut peaks = Vec::new();
    for ((name, _), samples) in ways.iter().zip(&samples) {
        let times: Vec<Duration> = samples.iter().map(|s| s.time).collect();
        let max = times.iter().max().copied().unwrap_or_default();
        let peak = samples.iter().map(|s| s.peak).max().unwrap_or(0);
        let left = samples.iter().map(|s| s.left).max().unwrap_or(0);
        let median = median(times);
        println!(
            "  {name:<40} {:>8} {:>7.2} ms {:>7.2} ms {:>10.2} MiB {:>8} B",
            samples.len(),
            ms(median),
            ms(max),
            mib(peak),
            left
        );
        medians.push(median);
        peaks.push(peak);
    }
    println!(
        "  old / new: time {:.1}x, peak heap {:.1}x\n",
        medians[0].as_secs_f64() / medians[1].as_secs_f64(),
        peaks[0] as f64 / peaks[1].max(1) as f64
    );
}

/// How many events a body lists.
fn serde_json_events(body: &[u8]) -> usize {
    // The body is `{"circuitBreakerEvents":[{...},...]}`: every event is one object in the list.
    let text = std::str::from_utf8(body).unwrap_or("");
    text.matches("\"circuitBreakerName\"").count()
}

/// Sequential GETs of the endpoint over loopback.
fn over_http(admin: &Admin, requests: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let router = admin.router();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, router).await });
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client");
        let url = format!("http://{address}{PATH}");
        let mut times = Vec::new();
        let mut bytes = 0;
        for i in 0..=requests {
            let start = Instant::now();
            let response = client.get(&url).send().await.expect("an answer");
            assert_eq!(response.status().as_u16(), 200);
            bytes = response.bytes().await.expect("the body").len();
            if i > 0 {
                times.push(start.elapsed());
            }
        }
        let max = times.iter().max().copied().unwrap_or_default();
        println!("GET {PATH} over loopback (reqwest, one kept-alive connection), the new way:");
        println!(
            "  {} GETs  median {:.2} ms  max {:.2} ms  body {bytes} bytes  HTTP 200",
            times.len(),
            ms(median(times)),
            ms(max)
        );
    });
}
