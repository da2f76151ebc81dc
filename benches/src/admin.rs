//! The operations surface under load: how long `GET /actuator/circuitbreakers` takes for 10,000
//! breakers, and what a protected call costs (p50, p99, p99.9, max) with the admin's listener on
//! its breaker, with 0, 1 and 100 server-sent event clients connected and while that endpoint is
//! scraped in a loop, beside the same calls on a registry with no admin at all and with a no-op
//! listener, in one run.
//!
//! ```text
//! cargo bench -p breaker-bench --bench admin                      # full run, about three minutes
//! BREAKER_BENCH_QUICK=1 cargo bench -p breaker-bench --bench admin  # quick run, about 30 s
//! ```
//!
//! Two registries of 10,000 breakers each (`svc-00000` to `svc-09999`, on defaults with
//! `register-health-indicator` on): every tenth breaker with 150 calls recorded (one in ten
//! failing), ten of them OPEN. One registry has an [`Admin`] (attached before the breakers are
//! made, so it follows each one with its listener), whose router is served by axum on
//! `127.0.0.1:0` on a tokio runtime with one worker thread; the other has none.
//!
//! Scrape time: sequential GETs through reqwest (`no_proxy()`, one kept-alive connection),
//! each timed from `send` to the last byte of the body, with no calls being made.
//!
//! Call latency: one caller thread makes `call_sync` calls (CLOSED, trivial work, always a
//! success) on one breaker, `svc-04242`, timed with the CPU's time-stamp counter, each read
//! between two `lfence`s (on x86_64; `Instant::now()` elsewhere), whose rate is measured against
//! `Instant` over a second. The virtual machines this runs on step both clocks by about 10 ns,
//! which cannot tell +10 ns from +0 in one call: a read lands anywhere in a step, so a single
//! call's time is right only on average. So each phase takes turns of 1024 calls each timed
//! alone (their p50, p99, p99.9 and max: the tails, in 10 ns steps) and 32 batches of 32 calls
//! timed together (`p50/32`, the batches' median time per call: the typical cost, to a few
//! tenths of a ns, the figure the rows are compared by). Times go into fixed-bucket
//! histograms of counter ticks (1-tick buckets up to 16384 ticks, then 64 buckets per power of
//! two) and are printed in ns. Each round runs six phases of the same length, in an order
//! rotated from round to round:
//!
//! - "no admin": calls on the registry without an admin;
//! - "no admin, no-op listener": calls on another breaker of that registry, `svc-04243`, with
//!   one listener that does nothing (what publishing each call's event costs by itself);
//! - "admin, 0 clients": calls on the admin's registry, no stream client, nobody scraping;
//! - "admin, 0 clients, scraped": the same, while a tokio task on the server's runtime GETs
//!   `/actuator/circuitbreakers` in a loop (it starts before the phase and has finished its last
//!   GET before the next phase starts);
//! - "admin, 1 client" and "admin, 100 clients": the same with that many clients of
//!   `/actuator/streamcircuitbreakerevents` connected, each a reqwest request on the server's
//!   runtime reading the body as it comes (connected before the phase starts, dropped after it,
//!   with a few calls made for the server to see them gone when it next writes).
//!
//! After a phase with a scraper or clients, the next one starts once the process's other
//! threads are idle again (under 5% of a core over two 100 ms intervals in a row).
//!
//! So the machine's two cores are one for the caller and one for the server, its scraper and
//! its stream clients. Beside each phase: the caller thread's CPU time over the phase's wall
//! time and its involuntary context switches (`getrusage(RUSAGE_THREAD)`), to show a round in
//! which other work on the machine took its core. The figures printed are per round and pooled
//! over the rounds, then each row against "no admin" (ratio and ns at p50/32 and p99); the
//! noise is the spread of each row's own figures from round to round. The machines this runs on are
//! shared and noisy: only comparisons within one run mean anything.

// The overhead bench's harness: this bench uses part of it (and its counting allocator, which it
// turns off at once).
#[allow(dead_code)]
mod harness;

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use breaker::admin::Admin;
use breaker::{CircuitBreaker, Config, Registry, State};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use harness::{allocations_per_call, median, rss_bytes, stop_counting};

const BREAKERS: usize = 10_000;
/// Every this many breakers has calls recorded ...
const WITH_CALLS_EVERY: usize = 10;
/// ... this many of them, one in ten failing.
const CALLS_RECORDED: usize = 150;
/// Breakers `OPEN_OFFSET`, `OPEN_OFFSET + OPEN_EVERY`, ... are forced OPEN.
const OPEN_EVERY: usize = 1000;
const OPEN_OFFSET: usize = 500;
/// The breaker the caller thread calls: CLOSED, no calls recorded before the bench's.
const CALLED: &str = "svc-04242";
/// The breaker called with a no-op listener, in the registry without an admin.
const NOOP_CALLED: &str = "svc-04243";

const ALL_BREAKERS: &str = "/actuator/circuitbreakers";
const STREAM: &str = "/actuator/streamcircuitbreakerevents";
const DASHBOARD: &str = "/dashboard/api/breakers?limit=60";
const HEALTH: &str = "/actuator/health";

/// How long each run takes, by mode.
struct Plan {
    quick: bool,
    scrapes: usize,
    rounds: usize,
    phase: Duration,
}

impl Plan {
    /// The full plan, or the quick one when `BREAKER_BENCH_QUICK` is set (as the harness's).
    fn from_env() -> Plan {
        if std::env::var_os("BREAKER_BENCH_QUICK").is_some() {
            Plan {
                quick: true,
                scrapes: 10,
                rounds: 3,
                phase: Duration::from_millis(500),
            }
        } else {
            Plan {
                quick: false,
                scrapes: 50,
                rounds: 6,
                phase: Duration::from_secs(2),
            }
        }
    }
}

fn name(i: usize) -> String {
    format!("svc-{i:05}")
}

/// The shared config: Resilience4j's defaults, with a health indicator for every breaker.
fn config() -> Config {
    Config::builder()
        .register_health_indicator(true)
        .build()
        .unwrap()
}

/// Makes the 10,000 breakers: calls recorded on every tenth, ten forced OPEN. Returns how many
/// have calls and how many are OPEN.
fn populate(registry: &Registry) -> (usize, usize) {
    let (mut with_calls, mut open) = (0, 0);
    for i in 0..BREAKERS {
        let breaker = registry.breaker(&name(i));
        if i % WITH_CALLS_EVERY == 0 {
            for c in 0..CALLS_RECORDED {
                let _ = breaker.call_sync(|| if c % 10 == 0 { Err(()) } else { Ok(()) });
            }
            with_calls += 1;
        }
        if i % OPEN_EVERY == OPEN_OFFSET {
            breaker.transition_to(State::Open).unwrap();
            open += 1;
        }
    }
    for called in [CALLED, NOOP_CALLED] {
        let called = registry.breaker(called);
        assert_eq!(called.state(), State::Closed);
        assert_eq!(called.metrics().buffered_calls, 0);
    }
    (with_calls, open)
}

/// The protected call measured: trivial work, always a success.
#[inline(always)]
fn call(breaker: &CircuitBreaker) {
    black_box(breaker.call_sync(|| Ok::<u64, ()>(black_box(1)))).ok();
}

/// Latencies in ticks of [`stamp`], in fixed buckets: 1 tick wide below [`LINEAR`] (wide enough
/// for a [`BATCH`] of calls), then [`SUB`] buckets per power of two, up to 2^[`MAX_EXP`]+1 ticks
/// (longer ones land in the last bucket).
struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

const LINEAR: u64 = 16384;
const LINEAR_EXP: u32 = 14;
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
const MAX_EXP: u32 = 40;
const BUCKETS: usize = LINEAR as usize + (MAX_EXP - LINEAR_EXP + 1) as usize * SUB;

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            total: 0,
            max: 0,
        }
    }

    fn index(ns: u64) -> usize {
        if ns < LINEAR {
            return ns as usize;
        }
        let ns = ns.min((1 << (MAX_EXP + 1)) - 1);
        let exp = 63 - ns.leading_zeros();
        let sub = (ns >> (exp - SUB_BITS)) as usize & (SUB - 1);
        LINEAR as usize + (exp - LINEAR_EXP) as usize * SUB + sub
    }

    /// The smallest value of bucket `i`.
    fn lower_bound(i: usize) -> u64 {
        if i < LINEAR as usize {
            return i as u64;
        }
        let j = i - LINEAR as usize;
        let exp = LINEAR_EXP + (j / SUB) as u32;
        ((SUB + j % SUB) as u64) << (exp - SUB_BITS)
    }

    #[inline(always)]
    fn record(&mut self, ns: u64) {
        self.counts[Self::index(ns)] += 1;
        self.total += 1;
        self.max = self.max.max(ns);
    }

    fn add(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// The `q` quantile (0 < q < 1): the bucket of the ceil(q * total)-th smallest time.
    fn quantile(&self, q: f64) -> u64 {
        let rank = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::lower_bound(i);
            }
        }
        self.max
    }

    /// The quantiles, in ns, at `per_ns` ticks per ns.
    fn summary(&self, per_ns: f64) -> Summary {
        let ns = |ticks: u64| ticks as f64 / per_ns;
        Summary {
            calls: self.total,
            typical: 0.0,
            p50: ns(self.quantile(0.50)),
            p99: ns(self.quantile(0.99)),
            p999: ns(self.quantile(0.999)),
            max: ns(self.max),
        }
    }
}

/// Calls timed one by one, and in batches of [`BATCH`].
struct Timed {
    calls: Histogram,
    batches: Histogram,
}

/// How many calls a batch times together: the clock steps by about 10 ns on the virtual
/// machines this runs on (its reads are spread over that step at random, so a single call's
/// time is right only on average), so single calls give the tails and batches the typical cost,
/// to a few tenths of a ns.
const BATCH: u64 = 32;

impl Timed {
    fn new() -> Timed {
        Timed {
            calls: Histogram::new(),
            batches: Histogram::new(),
        }
    }

    fn add(&mut self, other: &Timed) {
        self.calls.add(&other.calls);
        self.batches.add(&other.batches);
    }

    /// The single calls' quantiles, with the batches' median per call as `typical`.
    fn summary(&self, per_ns: f64) -> Summary {
        Summary {
            calls: self.calls.total + self.batches.total * BATCH,
            typical: self.batches.quantile(0.50) as f64 / BATCH as f64 / per_ns,
            ..self.calls.summary(per_ns)
        }
    }
}

/// A phase's figures, in ns: `typical` is the median of the batches' time per call; the
/// quantiles are of single calls, each timed alone.
#[derive(Clone, Copy)]
struct Summary {
    calls: u64,
    typical: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

/// The clock the calls are timed with: the time-stamp counter on x86_64, read between two
/// `lfence`s so that the timed call's instructions stay between the two reads (the counter
/// ticks at a constant rate on the machines this runs on: `constant_tsc`, `nonstop_tsc`);
/// `Instant` (in ns) elsewhere.
#[inline(always)]
fn stamp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: `lfence` and `rdtsc` read nothing of the program's and have no
        // preconditions on x86_64 (SSE2 is part of its baseline).
        unsafe {
            _mm_lfence();
            let ticks = _rdtsc();
            _mm_lfence();
            ticks
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Ticks of [`stamp`] per ns, measured against `Instant` over `over`.
fn ticks_per_ns(over: Duration) -> f64 {
    let (t0, s0) = (Instant::now(), stamp());
    std::thread::sleep(over);
    let (t1, s1) = (Instant::now(), stamp());
    (s1 - s0) as f64 / (t1 - t0).as_nanos() as f64
}

/// The calling thread's CPU time (user and system) and involuntary context switches so far.
fn thread_usage() -> (Duration, u64) {
    // SAFETY: `getrusage` writes the `rusage` it is given and nothing else; a zeroed `rusage`
    // is a valid value of that plain C struct.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_nivcsw as u64,
    )
}

/// What the caller thread got of its core during a phase.
#[derive(Clone, Copy, Default)]
struct Share {
    /// The thread's CPU time over the phase's wall time, in percent.
    cpu: f64,
    /// Times the thread was preempted (involuntary context switches).
    preempted: u64,
}

/// Calls `f` for `length` of wall time, in turns of 1024 calls each timed alone and 32 batches
/// of [`BATCH`] calls timed together, into `into`; returns the share of its core the thread got
/// meanwhile.
fn timed_phase(length: Duration, into: &mut Timed, mut f: impl FnMut()) -> Share {
    let (cpu0, switches0) = thread_usage();
    let begin = Instant::now();
    let end = begin + length;
    loop {
        for _ in 0..1024 {
            let start = stamp();
            f();
            let stop = stamp();
            into.calls.record(stop - start);
        }
        for _ in 0..32 {
            let start = stamp();
            for _ in 0..BATCH {
                f();
            }
            let stop = stamp();
            into.batches.record(stop - start);
        }
        let last = Instant::now();
        if last >= end {
            let (cpu1, switches1) = thread_usage();
            return Share {
                cpu: 100.0 * (cpu1 - cpu0).as_secs_f64() / (last - begin).as_secs_f64(),
                preempted: switches1 - switches0,
            };
        }
    }
}

/// One GET through `client`, timed from `send` to the body's last byte: the time, the status
/// and the body's size.
async fn get(client: &reqwest::Client, url: &str) -> (Duration, u16, usize) {
    let start = Instant::now();
    let response = client.get(url).send().await.expect("the admin answers");
    let status = response.status().as_u16();
    let body = response.bytes().await.expect("the whole body");
    (start.elapsed(), status, body.len())
}

/// One GET of `url`, untimed: the status and the body, for the checks.
async fn get_text(client: &reqwest::Client, url: &str) -> (u16, String) {
    let response = client.get(url).send().await.expect("the admin answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("the whole body"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `scrapes` sequential GETs of `path`: prints the row, returns the first body.
fn scrape_row(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    base: &str,
    path: &str,
    scrapes: usize,
) -> String {
    let url = format!("{base}{path}");
    rt.block_on(async {
        // One GET first, kept for the checks: the connection, the server's first allocations.
        let (status, first) = get_text(client, &url).await;
        let mut times = Vec::with_capacity(scrapes);
        let mut size = first.len();
        for _ in 0..scrapes {
            let (time, again, bytes) = get(client, &url).await;
            assert_eq!(again, status);
            size = bytes;
            times.push(ms(time));
        }
        let mut sorted = times;
        let med = median(&mut sorted);
        // The p99 of `scrapes` times: the ceil(0.99 n)-th smallest (the largest for n <= 100).
        let p99 = sorted[((0.99 * scrapes as f64).ceil() as usize).clamp(1, scrapes) - 1];
        let max = sorted[scrapes - 1];
        println!(
            "  GET {path:<36} {scrapes:>3} GETs  median {med:>7.2} ms  p99 {p99:>7.2} ms  \
             max {max:>7.2} ms  body {size:>9} bytes  HTTP {status}"
        );
        first
    })
}

/// The scraper's state, shared with the caller thread.
struct Scraper {
    /// Set while a phase B runs; the scraper GETs in a loop while it is.
    on: watch::Sender<bool>,
    /// Whether the scraper is in its loop (set before its first GET, cleared after its last).
    busy: AtomicBool,
    scrapes: AtomicU64,
    nanos: AtomicU64,
}

impl Scraper {
    /// Starts scraping and returns once the first GET is under way.
    fn start(&self) {
        self.on.send_replace(true);
        while !self.busy.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Stops scraping and returns once the last GET has finished.
    fn stop(&self) {
        self.on.send_replace(false);
        while self.busy.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// The GETs made so far and their total time.
    fn done(&self) -> (u64, Duration) {
        (
            self.scrapes.load(Ordering::Relaxed),
            Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
        )
    }
}

/// The scraping task: waits for `on`, then GETs `url` in a loop until `on` is cleared.
async fn scrape_loop(scraper: Arc<Scraper>, client: reqwest::Client, url: String) {
    let mut on = scraper.on.subscribe();
    loop {
        loop {
            let now_on = *on.borrow_and_update();
            if now_on {
                break;
            }
            if on.changed().await.is_err() {
                return;
            }
        }
        scraper.busy.store(true, Ordering::Release);
        loop {
            let now_on = *on.borrow();
            if !now_on {
                break;
            }
            let (time, status, _) = get(&client, &url).await;
            assert_eq!(status, 200);
            scraper.scrapes.fetch_add(1, Ordering::Relaxed);
            scraper
                .nanos
                .fetch_add(time.as_nanos() as u64, Ordering::Relaxed);
        }
        scraper.busy.store(false, Ordering::Release);
    }
}

/// The phases of a round, by index.
const PHASES: [&str; 6] = [
    "no admin",
    "no admin, no-op listener",
    "admin, 0 clients",
    "admin, 0 clients, scraped",
    "admin, 1 client",
    "admin, 100 clients",
];
const NO_ADMIN: usize = 0;
const NOOP: usize = 1;
const IDLE: usize = 2;
const SCRAPED: usize = 3;
const ONE_CLIENT: usize = 4;
const HUNDRED_CLIENTS: usize = 5;

/// Stream clients connected during a phase: each a reqwest request on the server's runtime,
/// reading the body as it comes.
struct Clients {
    tasks: Vec<JoinHandle<()>>,
    bytes: Arc<AtomicU64>,
}

impl Clients {
    /// Connects `n` clients to `url` and returns once the server has answered each (so each is
    /// counted as connected, and the listener writes the stream's ring).
    fn connect(
        rt: &tokio::runtime::Runtime,
        client: &reqwest::Client,
        url: &str,
        n: usize,
    ) -> Clients {
        let bytes = Arc::new(AtomicU64::new(0));
        let (ready, mut answered) = tokio::sync::mpsc::channel(n.max(1));
        let tasks = (0..n)
            .map(|_| {
                let (client, url, bytes, ready) = (
                    client.clone(),
                    url.to_owned(),
                    Arc::clone(&bytes),
                    ready.clone(),
                );
                rt.spawn(async move {
                    let mut response = client.get(&url).send().await.expect("the stream answers");
                    assert_eq!(response.status().as_u16(), 200);
                    ready.send(()).await.ok();
                    while let Ok(Some(chunk)) = response.chunk().await {
                        bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        rt.block_on(async {
            for _ in 0..n {
                answered.recv().await.expect("every client connects");
            }
        });
        Clients { tasks, bytes }
    }

    /// Drops the clients' connections, publishes a few events on `breaker` (a closed
    /// connection shows when the server next writes to it) and waits for the server to be idle
    /// again ([`settle`]). Returns the bytes they read.
    fn disconnect(self, breaker: &CircuitBreaker) -> u64 {
        for task in &self.tasks {
            task.abort();
        }
        for _ in 0..4 {
            for _ in 0..100 {
                call(breaker);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        settle();
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Waits (up to 10 s) until the process's other threads (the server's runtime, its clients)
/// used under 5% of a core over two 100 ms intervals in a row, so that what a phase left
/// running does not run into the next one.
fn settle() {
    let others = || {
        // SAFETY: as in `thread_usage`: `getrusage` writes the zeroed struct it is given.
        let process = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        let (mine, _) = thread_usage();
        (tv(process.ru_utime) + tv(process.ru_stime)).saturating_sub(mine)
    };
    let interval = Duration::from_millis(100);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut quiet = 0;
    while quiet < 2 && Instant::now() < deadline {
        let before = others();
        std::thread::sleep(interval);
        let used = others().saturating_sub(before);
        quiet = if used < interval / 20 { quiet + 1 } else { 0 };
    }
}

fn print_row(label: &str, round: &str, s: Summary, share: Option<Share>, extra: &str) {
    let (cpu, preempted) = match share {
        Some(share) => (format!("{:.0}%", share.cpu), share.preempted.to_string()),
        None => ("-".to_owned(), "-".to_owned()),
    };
    println!(
        "  {label:<26} {round:>5} {:>10} {:>7.1} {:>6.1} {:>6.1} {:>6.1} {:>10.0} {cpu:>5} \
         {preempted:>7}  {extra}",
        s.calls, s.typical, s.p50, s.p99, s.p999, s.max
    );
}

fn print_table_header() {
    println!(
        "  {:<26} {:>5} {:>10} {:>7} {:>6} {:>6} {:>6} {:>10} {:>5} {:>7}",
        "phase", "round", "calls", "p50/32", "p50", "p99", "p99.9", "max", "cpu", "preempt"
    );
}

fn main() {
    // The server allocates: time everything on the system allocator, without the counting's
    // atomic adds (`allocations_per_call` counts its own calls).
    stop_counting();
    let plan = Plan::from_env();
    println!(
        "breaker admin bench ({} mode: {} GETs per endpoint; {} rounds of {} call phases of \
         {:?} each; 1 caller thread, the server on a tokio runtime with 1 worker; {} CPUs, \
         shared)\n",
        if plan.quick { "quick" } else { "full" },
        plan.scrapes,
        plan.rounds,
        PHASES.len(),
        plan.phase,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );

    let rss_before = rss_bytes().unwrap_or(0);
    let made = Instant::now();
    let with_admin = Registry::builder().default_config(config()).build();
    // Built first: it follows each breaker as the registry makes it. Health with every
    // breaker's details, the largest body it can write.
    let admin = Admin::new(&with_admin).health_details(true);
    let (with_calls, open) = populate(&with_admin);
    let admin_setup = made.elapsed();
    let rss_admin = rss_bytes().unwrap_or(0);
    let made = Instant::now();
    let without_admin = Registry::builder().default_config(config()).build();
    populate(&without_admin);
    let plain_setup = made.elapsed();
    let rss_plain = rss_bytes().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "Two registries of {BREAKERS} breakers (svc-00000..svc-09999; {with_calls} with \
         {CALLS_RECORDED} calls recorded, {open} OPEN): with an Admin {:.0} ms, +{:.1} MiB RSS; \
         without {:.0} ms, +{:.1} MiB RSS",
        ms(admin_setup),
        mib(rss_admin.saturating_sub(rss_before)),
        ms(plain_setup),
        mib(rss_plain.saturating_sub(rss_admin)),
    );

    let called = with_admin.breaker(CALLED);
    let plain = without_admin.breaker(CALLED);
    // Another breaker of the registry without an admin, with one listener that does nothing:
    // what publishing each call's event costs, before the admin's listener does any work.
    let noop = without_admin.breaker(NOOP_CALLED);
    let _noop_listener = noop.subscribe(|event| {
        black_box(event);
    });
    println!(
        "Allocations per call over 10000 calls: {CALLED} with the admin's listener {:.2}, \
         {CALLED} without an admin {:.2}, {NOOP_CALLED} without an admin, with a no-op \
         listener {:.2}\n",
        allocations_per_call(10_000, || call(&called)),
        allocations_per_call(10_000, || call(&plain)),
        allocations_per_call(10_000, || call(&noop)),
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(SocketAddr::from((
            [127, 0, 0, 1],
            0,
        ))))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = admin.router();
    rt.spawn(async move { axum::serve(listener, router).await.unwrap() });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    println!(
        "Scrape time: sequential GETs through reqwest over loopback, each from send to the last \
         byte, nothing else running (after one GET to warm up)"
    );
    let all = scrape_row(&rt, &client, &base, ALL_BREAKERS, plan.scrapes);
    let text = &all;
    assert!(text.starts_with("{\"circuitBreakers\":{\"svc-00000\":"));
    assert!(text.contains(&format!("\"{}\":", name(BREAKERS - 1))));
    assert_eq!(text.matches("\"state\":\"OPEN\"").count(), open);
    assert_eq!(text.matches("\"state\":").count(), BREAKERS);
    let dashboard = scrape_row(&rt, &client, &base, DASHBOARD, plan.scrapes);
    assert!(dashboard.contains(&format!("\"total\":{BREAKERS}")));
    let health = scrape_row(&rt, &client, &base, HEALTH, plan.scrapes);
    // Ten OPEN without allow-to-fail are CIRCUIT_OPEN, outside Spring's order: UP overall. The
    // top-level `status` is first or last, as serde_json orders the keys.
    assert!(health.starts_with("{\"status\":\"UP\"") || health.ends_with(",\"status\":\"UP\"}"));

    let scraper = Arc::new(Scraper {
        on: watch::channel(false).0,
        busy: AtomicBool::new(false),
        scrapes: AtomicU64::new(0),
        nanos: AtomicU64::new(0),
    });
    rt.spawn(scrape_loop(
        Arc::clone(&scraper),
        client.clone(),
        format!("{base}{ALL_BREAKERS}"),
    ));

    let per_ns = ticks_per_ns(Duration::from_secs(1));
    println!(
        "\nThe protected call: call_sync on {CALLED} (CLOSED, trivial work) on 1 caller thread, \
         timed with {} ({per_ns:.3} ticks per ns), in turns of 1024 calls each timed alone (p50 to \
         max) and 32 batches of {BATCH} calls timed together (p50/32: the batches' median per \
         call); ns",
        if cfg!(target_arch = "x86_64") {
            "the time-stamp counter, each read between two lfences"
        } else {
            "Instant::now()"
        },
    );
    print_table_header();

    // The clock's own floor: the same two reads around nothing.
    let mut floor = Timed::new();
    let share = timed_phase(plan.phase / 4, &mut floor, || {
        black_box(());
    });
    print_row(
        "clock floor (no call)",
        "-",
        floor.summary(per_ns),
        Some(share),
        "two reads of the clock around nothing",
    );

    let (plan_rounds, phase) = (plan.rounds, plan.phase);
    let caller_scraper = Arc::clone(&scraper);
    let stream_url = format!("{base}{STREAM}");
    // Each round's histogram and core share of each phase, and what happened beside it.
    type Round = ([(Timed, Share); PHASES.len()], [String; PHASES.len()]);
    let rounds: Vec<Round> = std::thread::scope(|s| {
        s.spawn(|| {
            let scraper = caller_scraper;
            // Warm up the breakers' paths and the caller's caches.
            let mut warm = Timed::new();
            for b in [&plain, &noop, &called] {
                timed_phase(phase / 4, &mut warm, || call(b));
            }
            let mut rounds = Vec::with_capacity(plan_rounds);
            for round in 0..plan_rounds {
                let mut h: [(Timed, Share); PHASES.len()] =
                    std::array::from_fn(|_| (Timed::new(), Share::default()));
                let mut beside: [String; PHASES.len()] = Default::default();
                for k in 0..PHASES.len() {
                    let which = (round + k) % PHASES.len();
                    let (hist, share) = &mut h[which];
                    *share = match which {
                        NO_ADMIN => timed_phase(phase, hist, || call(&plain)),
                        NOOP => timed_phase(phase, hist, || call(&noop)),
                        IDLE => timed_phase(phase, hist, || call(&called)),
                        SCRAPED => {
                            let (n0, t0) = scraper.done();
                            scraper.start();
                            let share = timed_phase(phase, hist, || call(&called));
                            scraper.stop();
                            settle();
                            let (n1, t1) = scraper.done();
                            let n = n1 - n0;
                            beside[which] = format!(
                                "{n} GETs of {ALL_BREAKERS} meanwhile, {:.2} ms each",
                                ms((t1 - t0) / n.max(1) as u32)
                            );
                            share
                        }
                        ONE_CLIENT | HUNDRED_CLIENTS => {
                            let n = if which == ONE_CLIENT { 1 } else { 100 };
                            let clients = Clients::connect(&rt, &client, &stream_url, n);
                            let share = timed_phase(phase, hist, || call(&called));
                            let bytes = clients.disconnect(&called);
                            beside[which] = format!(
                                "{n} stream clients read {:.1} MB meanwhile",
                                bytes as f64 / 1e6
                            );
                            share
                        }
                        _ => unreachable!("a phase of PHASES"),
                    };
                }
                rounds.push((h, beside));
            }
            rounds
        })
        .join()
        .unwrap()
    });

    let summaries: Vec<[Summary; PHASES.len()]> = rounds
        .iter()
        .map(|(h, _)| std::array::from_fn(|which| h[which].0.summary(per_ns)))
        .collect();
    for (which, label) in PHASES.iter().enumerate() {
        for (r, ((h, beside), s)) in rounds.iter().zip(&summaries).enumerate() {
            print_row(
                label,
                &(r + 1).to_string(),
                s[which],
                Some(h[which].1),
                &beside[which],
            );
        }
    }
    let pooled: [Summary; PHASES.len()] = std::array::from_fn(|which| {
        let mut all = Timed::new();
        for (h, _) in &rounds {
            all.add(&h[which].0);
        }
        all.summary(per_ns)
    });
    println!();
    for (which, label) in PHASES.iter().enumerate() {
        print_row(label, "all", pooled[which], None, "pooled over the rounds");
    }

    print_verdict(&summaries, &pooled);
    drop(rt);
}

/// Each row against "no admin" (and the scraped phase against the unscraped one), pooled over
/// the rounds, with each row's own spread from round to round.
fn print_verdict(rounds: &[[Summary; PHASES.len()]], pooled: &[Summary; PHASES.len()]) {
    let spread = |which: usize, f: fn(&Summary) -> f64| -> (f64, f64) {
        let v = rounds.iter().map(|r| f(&r[which]));
        (
            v.clone().fold(f64::INFINITY, f64::min),
            v.fold(f64::NEG_INFINITY, f64::max),
        )
    };
    println!("\nEach row against \"no admin\" (pooled over the rounds; ns):");
    println!(
        "  {:<26} {:>8} {:>10} {:>8} {:>9}   {:>16} {:>15}",
        "phase", "p50/32 x", "p50/32 +ns", "p99 x", "p99 +ns", "p50/32 per round", "p99 per round"
    );
    let base = pooled[NO_ADMIN];
    for (which, label) in PHASES.iter().enumerate() {
        let s = pooled[which];
        let (typical_lo, typical_hi) = spread(which, |s| s.typical);
        let (p99_lo, p99_hi) = spread(which, |s| s.p99);
        println!(
            "  {label:<26} {:>8.2} {:>+10.1} {:>8.2} {:>+9.1}   {:>7.1}..{:<7.1} {:>6.1}..{:<7.1}",
            s.typical / base.typical,
            s.typical - base.typical,
            s.p99 / base.p99,
            s.p99 - base.p99,
            typical_lo,
            typical_hi,
            p99_lo,
            p99_hi,
        );
    }
    let (idle, scraped) = (pooled[IDLE], pooled[SCRAPED]);
    let (a99_lo, a99_hi) = spread(IDLE, |s| s.p99);
    let rise = scraped.p99 - idle.p99;
    let noise = a99_hi - a99_lo;
    println!(
        "  the call's p99 while scraped: {rise:+.1} ns over the unscraped phase's (pooled), whose \
         own p99 spread {noise:.1} ns between rounds: {}",
        if rise <= noise {
            "within the noise"
        } else {
            "NOT within the noise"
        },
    );
}
