//! The source of time: the system's monotonic clock, anchored to the wall clock, or a manual one.
//!
//! Every decision the breaker makes that depends on time (how long a call took, when an OPEN
//! state may let a trial through, which second of a time-based window a call belongs to, when a
//! timer is due) reads a [`Clock`]. Production code uses [`Clock::system`]; tests use a
//! [`ManualClock`], which only moves when told to and fires the registry's timers as it passes
//! their due time, so no behaviour needs a real sleep to be tested.
//!
//! Reading the system clock costs no thread and no background work: it is one `clock_gettime`
//! through the vDSO, a few nanoseconds, and nothing at all while no call is made.

use std::fmt;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use once_cell::sync::Lazy;

use crate::time::manual::ManualClock;
use crate::time::timestamp::{duration_nanos, Timestamp};

/// The source of time for breakers, registries and their scheduler.
///
/// Cloning is cheap. Three kinds exist:
/// - [`Clock::system`], the default: the kernel's coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`
///   on Linux), which advances once per scheduler tick (1 to 4 ms) and costs a few nanoseconds
///   to read. That resolution is all a slow-call threshold (default 60 s) can use.
/// - [`Clock::precise`]: the monotonic clock at the hardware's resolution (what
///   [`Instant`] reads), for slow-call thresholds of a few milliseconds or less.
/// - [`ManualClock`], for tests and for anything else that drives time itself.
///
/// Both system clocks give Unix-epoch timestamps: the wall clock is read once per process and
/// the monotonic clock counts from there. The kernel slews the monotonic clock with the same
/// NTP frequency corrections as the wall clock, so event timestamps follow wall time; only a
/// step of the wall clock (set by hand, or a large NTP correction) is not followed, which is
/// what keeps a call from ever looking negative or a wait from ending early.
#[derive(Clone, Default)]
pub struct Clock(Kind);

#[derive(Clone, Default)]
enum Kind {
    #[default]
    System,
    Precise,
    Manual(ManualClock),
}

/// The wall-clock time at which the process first read a system clock, with the monotonic
/// readings taken at that moment.
struct Anchor {
    wall: u64,
    instant: Instant,
    coarse: u64,
}

static ANCHOR: Lazy<Anchor> = Lazy::new(|| Anchor {
    coarse: coarse::nanos(),
    instant: Instant::now(),
    wall: SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_nanos)
        .unwrap_or(0),
});

impl Anchor {
    #[inline]
    fn coarse(&self) -> u64 {
        self.wall
            .saturating_add(coarse::nanos().saturating_sub(self.coarse))
    }

    #[inline]
    fn precise(&self) -> u64 {
        self.wall
            .saturating_add(duration_nanos(self.instant.elapsed()))
    }
}

/// The coarse monotonic clock, in nanoseconds since an arbitrary start.
#[cfg(all(target_os = "linux", not(miri)))]
mod coarse {
    #[inline]
    pub(super) fn nanos() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable `timespec`, and `CLOCK_MONOTONIC_COARSE` exists on
        // every Linux since 2.6.32; the call writes `ts` and nothing else.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC_COARSE) failed");
        // A monotonic clock never reads negative.
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
        secs.saturating_mul(1_000_000_000).saturating_add(nanos)
    }
}

/// Elsewhere (and under Miri), the standard library's monotonic clock.
#[cfg(not(all(target_os = "linux", not(miri))))]
mod coarse {
    use std::time::Instant;

    use once_cell::sync::Lazy;

    static START: Lazy<Instant> = Lazy::new(Instant::now);

    #[inline]
    pub(super) fn nanos() -> u64 {
        super::duration_nanos(START.elapsed())
    }
}

impl Clock {
    /// The system clock at the kernel's tick resolution (1 to 4 ms): monotonic, anchored to the
    /// wall clock once per process, a few nanoseconds a reading.
    pub fn system() -> Clock {
        Clock(Kind::System)
    }

    /// The system clock at the hardware's resolution: each reading costs what
    /// [`Instant::now`] costs.
    pub fn precise() -> Clock {
        Clock(Kind::Precise)
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Timestamp {
        match &self.0 {
            Kind::System => Timestamp::from_unix_nanos(ANCHOR.coarse()),
            Kind::Precise => Timestamp::from_unix_nanos(ANCHOR.precise()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn wall_nanos() -> u64 {
        duration_nanos(SystemTime::now().duration_since(UNIX_EPOCH).unwrap())
    }

    #[test]
    fn system_clocks_read_wall_time_and_never_go_back() {
        for clock in [Clock::system(), Clock::precise()] {
            let before = wall_nanos();
            let mut last = clock.now();
            // Within one coarse tick plus scheduling slack of the wall clock: timestamps in
            // events are wall time, not an uptime that drifts away from it.
            let skew = last.unix_nanos().abs_diff(before);
            assert!(
                skew < 50_000_000,
                "{clock:?} is {skew} ns off the wall clock"
            );
            for _ in 0..100_000 {
                let now = clock.now();
                assert!(now >= last, "{clock:?} went back from {last:?} to {now:?}");
                last = now;
            }
        }
    }

    #[test]
    fn the_coarse_clock_moves() {
        let clock = Clock::system();
        let start = clock.now();
        let begun = Instant::now();
        // Spin (no sleep: this is the clock under test) until a tick passes, for at most 1 s.
        while clock.now() == start && begun.elapsed().as_secs() < 1 {
            std::hint::spin_loop();
        }
        assert!(clock.now() > start, "the system clock did not move in 1 s");
    }
}
