//! A point in time as the breaker reads it: nanoseconds since the Unix epoch.

use std::time::Duration;

/// A point in time: nanoseconds since the Unix epoch, read from a [`Clock`](crate::Clock).
///
/// Timestamps of the system clock are monotonic: they are anchored to the wall clock once per
/// process and then advanced by the monotonic clock, so a wall-clock step never makes a call
/// look negative or a wait look over.
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
