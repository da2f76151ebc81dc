//! Time, injected.
//!
//! Every decision the breaker makes that depends on time (how long a call took, when an OPEN
//! state may let a trial through, which second of a time-based window a call belongs to, when a
//! timer is due) reads a [`Clock`]. Production code uses [`Clock::system`]; tests use a
//! [`ManualClock`], which only moves when told to and fires the registry's timers as it passes
//! their due time, so no behaviour needs a real sleep to be tested.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use once_cell::sync::Lazy;

use crate::scheduler::SchedulerQueue;

/// A point in time: nanoseconds since the Unix epoch, read from a [`Clock`].
///
/// Timestamps of the system clock are monotonic: they are anchored to the wall clock once per
/// process and then advanced by [`Instant`], so a wall-clock step never makes a call look
/// negative or a wait look over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The timestamp `nanos` nanoseconds after the Unix epoch.
    pub const fn from_unix_nanos(nanos: u64) -> Timestamp {
        Timestamp(nanos)
    }

    /// The timestamp `millis` milliseconds after the Unix epoch.
    pub const fn from_unix_millis(millis: u64) -> Timestamp {
        Timestamp(millis.saturating_mul(1_000_000))
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn unix_nanos(self) -> u64 {
        self.0
    }

    /// Whole seconds since the Unix epoch (the bucket of a time-based window).
    pub const fn unix_seconds(self) -> u64 {
        self.0 / 1_000_000_000
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at the end of time.
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(duration_nanos(d)))
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (about 584 years).
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The source of time for breakers, registries and their scheduler.
///
/// Cloning is cheap. Three kinds exist:
/// - [`Clock::system`], the default: the time as of the last millisecond tick, one atomic load
///   per reading. A call's duration is measured to within about a millisecond, which is all a
///   slow-call threshold (default 60 s; seed 003's 2,000 ms) can use, and costs a tenth of
///   reading the hardware clock, which a protected call does twice.
/// - [`Clock::precise`]: every reading asks the hardware (the time stamp counter where the
///   kernel trusts it, else `Instant`), for slow-call thresholds of a few milliseconds or less.
/// - [`ManualClock`], for tests and for anything else that drives time itself.
#[derive(Clone, Default)]
pub struct Clock(Kind);

#[derive(Clone, Default)]
enum Kind {
    #[default]
    System,
    Precise,
    Manual(ManualClock),
}

/// The system clock: the wall clock read once, then advanced by a monotonic source.
struct Anchor {
    wall: u64,
    instant: Instant,
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    tsc: tsc::Calibration,
}

static ANCHOR: Lazy<Anchor> = Lazy::new(|| Anchor {
    wall: SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_nanos)
        .unwrap_or(0),
    instant: Instant::now(),
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    tsc: tsc::Calibration::start(),
});

impl Anchor {
    /// Nanoseconds since the Unix epoch by `Instant` (a vDSO `clock_gettime`, about 20-30 ns).
    fn precise(&self) -> u64 {
        self.wall
            .saturating_add(duration_nanos(self.instant.elapsed()))
    }

    #[inline]
    fn now(&self) -> u64 {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            if let Some(now) = self.tsc.now() {
                return now;
            }
            let precise = self.precise();
            self.tsc.maybe_finish(self.wall, self.instant);
            precise
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        self.precise()
    }
}

/// The millisecond clock behind [`Clock::system`].
///
/// One thread keeps `RECENT` at the precise time, refreshed every millisecond. Readers load it
/// (and, once per tick at most, note that they did); after `IDLE_TICKS` ticks without a reader
/// the thread parks, and the next reader takes a precise reading itself and wakes it.
mod recent {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::thread::{self, Thread};
    use std::time::Duration;

    use once_cell::sync::OnceCell;

    use super::ANCHOR;

    const TICK: Duration = Duration::from_millis(1);
    const IDLE_TICKS: u32 = 200;

    static RECENT: AtomicU64 = AtomicU64::new(0);
    static ACTIVE: AtomicBool = AtomicBool::new(false);
    static READ: AtomicBool = AtomicBool::new(false);
    static TICKER: OnceCell<Option<Thread>> = OnceCell::new();

    #[inline]
    pub(super) fn now() -> u64 {
        if ACTIVE.load(Ordering::Acquire) {
            if !READ.load(Ordering::Relaxed) {
                READ.store(true, Ordering::Relaxed);
            }
            return RECENT.load(Ordering::Acquire);
        }
        wake()
    }

    #[cold]
    fn wake() -> u64 {
        let now = ANCHOR.now();
        let now = RECENT.fetch_max(now, Ordering::AcqRel).max(now);
        READ.store(true, Ordering::Relaxed);
        let ticker = TICKER.get_or_init(|| {
            thread::Builder::new()
                .name("breaker-clock".into())
                .spawn(tick)
                .map(|handle| handle.thread().clone())
                .map_err(|err| {
                    tracing::error!(error = %err, "breaker: no clock thread; reading the precise clock instead");
                })
                .ok()
        });
        if let Some(thread) = ticker {
            ACTIVE.store(true, Ordering::Release);
            thread.unpark();
        }
        now
    }

    fn tick() {
        let mut idle = 0;
        loop {
            RECENT.fetch_max(ANCHOR.now(), Ordering::AcqRel);
            if READ.swap(false, Ordering::Relaxed) {
                idle = 0;
            } else {
                idle += 1;
            }
            if idle >= IDLE_TICKS {
                ACTIVE.store(false, Ordering::Release);
                // A reader that sees ACTIVE false reads the precise clock and unparks us; an
                // unpark that comes before this park makes it return at once.
                thread::park();
                idle = 0;
                continue;
            }
            thread::sleep(TICK);
        }
    }
}

/// The time stamp counter as a clock: about a third of the cost of `Instant::now()` here.
///
/// Used only where the kernel itself keeps time with the TSC (its clocksource is `tsc`, which it
/// picks only for an invariant counter, synchronised across cores). The counter is calibrated
/// against `Instant` over the first 50 ms after the anchor; until then, and everywhere the TSC is
/// not trusted, the clock reads `Instant`. Readings continue where `Instant` left off, so a
/// duration that spans the switch is still right to within the calibration error (parts per
/// million), far below what a slow-call threshold can tell apart. (Miri cannot read the counter:
/// under Miri the clock always reads `Instant`.)
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod tsc {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use once_cell::sync::OnceCell;

    use super::duration_nanos;

    /// How long to count ticks before trusting the rate.
    const CALIBRATION: Duration = Duration::from_millis(50);

    pub(super) struct Calibration {
        start_ticks: u64,
        done: AtomicBool,
        fitted: OnceCell<Fit>,
    }

    struct Fit {
        ticks0: u64,
        nanos0: u64,
        /// Nanoseconds per tick as a 32.32 fixed-point number.
        mult: u64,
    }

    #[inline]
    fn ticks() -> u64 {
        // SAFETY: `rdtsc` reads a register; it has no preconditions on x86_64 and no effect on
        // memory. (It is `unsafe` only because it is an intrinsic.)
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    impl Calibration {
        pub(super) fn start() -> Calibration {
            let trusted = std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .map(|s| s.trim() == "tsc")
            .unwrap_or(false);
            Calibration {
                start_ticks: if trusted { ticks() } else { 0 },
                done: AtomicBool::new(!trusted),
                fitted: OnceCell::new(),
            }
        }

        #[inline]
        pub(super) fn now(&self) -> Option<u64> {
            let fit = self.fitted.get()?;
            let elapsed = ticks().wrapping_sub(fit.ticks0);
            let nanos = fit
                .nanos0
                .saturating_add(((u128::from(elapsed) * u128::from(fit.mult)) >> 32) as u64);
            Some(nanos)
        }

        #[cold]
        pub(super) fn maybe_finish(&self, wall: u64, instant: Instant) {
            if self.done.load(Ordering::Relaxed) {
                return;
            }
            let since = instant.elapsed();
            if since < CALIBRATION {
                return;
            }
            if self.done.swap(true, Ordering::AcqRel) {
                return;
            }
            let t1 = ticks();
            let since = instant.elapsed();
            let ticks = t1.wrapping_sub(self.start_ticks);
            if ticks == 0 {
                return;
            }
            let mult = ((u128::from(duration_nanos(since)) << 32) / u128::from(ticks)) as u64;
            let nanos0 = wall.saturating_add(duration_nanos(since));
            let _ = self.fitted.set(Fit {
                ticks0: t1,
                nanos0,
                mult,
            });
        }
    }
}

impl Clock {
    /// The system clock at millisecond resolution (monotonic, anchored to the wall clock once
    /// per process). A background thread ticks it every millisecond while it is being read and
    /// sleeps after 200 ms without a reading.
    pub fn system() -> Clock {
        Clock(Kind::System)
    }

    /// The system clock at the hardware's resolution: each reading costs about as much as
    /// `Instant::now()` (less where the time stamp counter can be used).
    pub fn precise() -> Clock {
        Clock(Kind::Precise)
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            Kind::System => Timestamp(recent::now()),
            Kind::Precise => Timestamp(ANCHOR.now()),
            Kind::Manual(manual) => manual.now(),
        }
    }

    /// The manual clock behind this clock, if it is one.
    pub fn as_manual(&self) -> Option<&ManualClock> {
        match &self.0 {
            Kind::System | Kind::Precise => None,
            Kind::Manual(manual) => Some(manual),
        }
    }
}

impl From<ManualClock> for Clock {
    fn from(manual: ManualClock) -> Clock {
        Clock(Kind::Manual(manual))
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::System => f.write_str("Clock::System"),
            Kind::Precise => f.write_str("Clock::Precise"),
            Kind::Manual(manual) => f.debug_tuple("Clock::Manual").field(&manual.now()).finish(),
        }
    }
}

/// A clock that moves only when told to, for tests.
///
/// It starts at Unix millisecond `1_700_000_000_000` (a whole second, so that time-based
/// windows bucket scenario time exactly) unless built with [`ManualClock::starting_at`].
/// [`ManualClock::advance`] fires the timers of every registry built on this clock whose due
/// time it passes, in due order, each with the clock set to exactly its due time.
#[derive(Clone)]
pub struct ManualClock(Arc<ManualInner>);

struct ManualInner {
    now: AtomicU64,
    queues: Mutex<Vec<Weak<SchedulerQueue>>>,
    advancing: Mutex<()>,
}

impl ManualClock {
    /// Unix milliseconds at which [`ManualClock::new`] starts.
    pub const DEFAULT_ORIGIN_MILLIS: u64 = 1_700_000_000_000;

    /// A manual clock at Unix millisecond 1,700,000,000,000.
    pub fn new() -> ManualClock {
        ManualClock::starting_at(Timestamp::from_unix_millis(Self::DEFAULT_ORIGIN_MILLIS))
    }

    /// A manual clock at `start`.
    pub fn starting_at(start: Timestamp) -> ManualClock {
        ManualClock(Arc::new(ManualInner {
            now: AtomicU64::new(start.unix_nanos()),
            queues: Mutex::new(Vec::new()),
            advancing: Mutex::new(()),
        }))
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Timestamp {
        Timestamp(self.0.now.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by`, running every timer that falls due on the way.
    ///
    /// Timers run one at a time in order of due time (ties: the one scheduled first), each with
    /// the clock set to its due time; a timer that schedules another timer due before the target
    /// sees it run too. Afterwards the clock reads `now + by`. Concurrent calls are serialised.
    pub fn advance(&self, by: Duration) {
        let _serial = self.0.advancing.lock().unwrap_or_else(|e| e.into_inner());
        let target = self.now().saturating_add(by);
        loop {
            let queues: Vec<Arc<SchedulerQueue>> = {
                let mut list = self.0.queues.lock().unwrap_or_else(|e| e.into_inner());
                list.retain(|q| q.strong_count() > 0);
                list.iter().filter_map(Weak::upgrade).collect()
            };
            let next = queues
                .iter()
                .filter_map(|q| q.peek_key().map(|key| (key, q)))
                .min_by_key(|(key, _)| *key);
            match next {
                Some(((due, _), queue)) if due <= target => {
                    if due > self.now() {
                        self.0.now.store(due.unix_nanos(), Ordering::Release);
                    }
                    queue.run_next_due(due);
                }
                _ => break,
            }
        }
        if target > self.now() {
            self.0.now.store(target.unix_nanos(), Ordering::Release);
        }
    }

    pub(crate) fn attach(&self, queue: &Arc<SchedulerQueue>) {
        self.0
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(queue));
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}
