//! Timing and counting: batches of a tight loop, rows timed in alternation, medians, the table
//! the run prints, and a global allocator that counts live heap bytes and allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Counts live heap bytes, for the memory figures, and allocations, for the per-call counts.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Whether the allocator counts: on unless a bench turns it off (see [`stop_counting`]).
static COUNTING: AtomicBool = AtomicBool::new(true);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes allocated and not yet freed, by the whole process.
pub(crate) fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// Allocations made so far by the whole process (a `realloc` counts as one: the default
/// `realloc` allocates anew through `alloc`).
pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Turns the counting off for good, so that rows which allocate are timed on the system
/// allocator alone, not made dearer by three atomic adds per allocation and free; only
/// [`allocations_per_call`] counts after that, for its own calls. [`live`] means nothing after
/// this (a block counted when allocated may be freed uncounted).
// The layer bench's, as the next one; the overhead bench, which includes this module too,
// counts bytes only.
#[allow(dead_code)]
pub(crate) fn stop_counting() {
    COUNTING.store(false, Ordering::Relaxed);
}

/// Allocations per call of `f`, over `calls` calls after one call to warm up (run on one thread,
/// nothing else allocating meanwhile), counting for these calls even after [`stop_counting`].
#[allow(dead_code)]
pub(crate) fn allocations_per_call(calls: u64, mut f: impl FnMut()) -> f64 {
    f();
    let was = COUNTING.swap(true, Ordering::Relaxed);
    let before = allocations();
    for _ in 0..calls {
        f();
    }
    let made = allocations() - before;
    COUNTING.store(was, Ordering::Relaxed);
    made as f64 / calls as f64
}

/// The process's resident set, from `/proc/self/statm` (`None` where there is no `/proc`).
pub(crate) fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// How long to time each row: `samples` batches of `iters` calls.
#[derive(Clone, Copy)]
pub(crate) struct Plan {
    quick: bool,
    iters: u64,
    pub(crate) samples: usize,
}

impl Plan {
    /// The full plan, or the quick one when `BREAKER_BENCH_QUICK` is set.
    pub(crate) fn from_env() -> Self {
        if std::env::var_os("BREAKER_BENCH_QUICK").is_some() {
            Plan {
                quick: true,
                iters: 200_000,
                samples: 15,
            }
        } else {
            Plan {
                quick: false,
                iters: 1_000_000,
                samples: 41,
            }
        }
    }

    /// The same number of samples, of batches `divisor` times shorter.
    pub(crate) fn fewer_calls(self, divisor: u64) -> Self {
        Plan {
            iters: (self.iters / divisor).max(1),
            ..self
        }
    }

    /// The run's first line: the mode and the plan.
    pub(crate) fn print_header(&self) {
        println!(
            "breaker overhead bench ({} mode: {} samples of {} calls, median ns per call)\n",
            if self.quick { "quick" } else { "full" },
            self.samples,
            self.iters
        );
    }
}

/// Median nanoseconds per call of `f`.
pub(crate) fn measure(plan: &Plan, mut f: impl FnMut()) -> f64 {
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
pub(crate) type Row<'a> = Box<dyn FnMut() -> f64 + 'a>;

/// The row that times `f`.
pub(crate) fn row<'a>(plan: &'a Plan, mut f: impl FnMut() + 'a) -> Row<'a> {
    Box::new(move || batch(plan, &mut f))
}

/// Median nanoseconds per call of each row, timed in alternating batches, so that a slow spell
/// of this shared machine hits every row of a comparison alike.
pub(crate) fn measure_rows<const N: usize>(plan: &Plan, mut rows: [Row<'_>; N]) -> [f64; N] {
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
pub(crate) fn two_thread_sample<G: FnMut()>(plan: &Plan, make: &(impl Fn() -> G + Sync)) -> f64 {
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

/// The median of `v` (the upper one of an even count), sorting `v` in place.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Polls a future that is ready at once (no runtime, so none of its cost is measured).
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// The figures of the run, grouped by comparison: each row is printed as it is added, and the
/// ratios to breaker's row of each group at the end.
#[derive(Default)]
pub(crate) struct Table {
    rows: Vec<(&'static str, &'static str, f64)>,
}

impl Table {
    /// Prints and keeps one row of `group`.
    pub(crate) fn add(&mut self, group: &'static str, name: &'static str, ns: f64) {
        println!("  {group:<28} {name:<34} {ns:>9.1} ns");
        self.rows.push((group, name, ns));
    }

    /// Prints and keeps the rows of `group`, `names[i]` with `ns[i]`, in order.
    pub(crate) fn add_all<const N: usize>(
        &mut self,
        group: &'static str,
        names: [&'static str; N],
        ns: [f64; N],
    ) {
        for (name, ns) in names.into_iter().zip(ns) {
            self.add(group, name, ns);
        }
    }

    fn get(&self, group: &str, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(g, n, _)| *g == group && *n == name)
            .map(|r| r.2)
    }

    /// Prints breaker's time over every other row's, for each group that has a breaker row.
    pub(crate) fn print_ratios(&self) {
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
