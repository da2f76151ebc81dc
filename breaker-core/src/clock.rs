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
/// Cloning is cheap. Two kinds exist: the system clock, and a [`ManualClock`] for tests (and
/// for anything else that wants to drive time itself, such as the conformance runner).
#[derive(Clone, Default)]
pub struct Clock(Kind);

#[derive(Clone, Default)]
enum Kind {
    #[default]
    System,
    Manual(ManualClock),
}

struct Anchor {
    wall: u64,
    instant: Instant,
}

static ANCHOR: Lazy<Anchor> = Lazy::new(|| Anchor {
    wall: SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_nanos)
        .unwrap_or(0),
    instant: Instant::now(),
});

impl Clock {
    /// The system clock (monotonic, anchored to the wall clock once per process).
    pub fn system() -> Clock {
        Clock(Kind::System)
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            Kind::System => {
                let anchor = &*ANCHOR;
                Timestamp(
                    anchor
                        .wall
                        .saturating_add(duration_nanos(anchor.instant.elapsed())),
                )
            }
            Kind::Manual(manual) => manual.now(),
        }
    }

    /// The manual clock behind this clock, if it is one.
    pub fn as_manual(&self) -> Option<&ManualClock> {
        match &self.0 {
            Kind::System => None,
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
