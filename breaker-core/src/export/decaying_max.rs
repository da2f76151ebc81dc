//! The decaying maximum behind `resilience4j_circuitbreaker_calls_seconds_max`: Micrometer's
//! `TimeWindowMax`, as its Prometheus registry configures it, in one atomic word per buffer.
//!
//! # What Micrometer does
//!
//! `TimeWindowMax` keeps a ring of `bufferLength` maxima. A sample raises every one of them; every
//! `expiry` the ring rotates (the current maximum is cleared and the next one becomes current);
//! a poll reads the current one. `PrometheusMeterRegistry` sets `expiry` to its `step`, one minute
//! unless configured, and keeps `DistributionStatisticConfig.DEFAULT`'s `bufferLength` of 3. The
//! current maximum at rotation `r` was last cleared when rotation `r - 2` began, so a poll reports
//! the largest sample of rotations `r - 2 ..= r`: a call's duration is reported for 2 to 3 minutes
//! after it ended, depending on where in its minute it ended. Rotations count from the moment the
//! meter was made.
//!
//! # How it is done here
//!
//! The ring is not rotated but indexed: rotation `r` (whole [`ROTATION`]s since the window was
//! made, by the registry's clock) owns buffer `r % 3`, and each buffer is one `AtomicU64` that
//! holds the number of the rotation it belongs to (low [`TAG_BITS`] bits) beside that rotation's
//! maximum (the high bits, in microseconds: up to about 12.7 days; longer calls saturate). So
//! recording a call is one load, plus one compare-and-swap when the call raises its rotation's
//! maximum or is the first of its rotation in that buffer; nobody rotates and nothing is locked.
//! A poll at rotation `r` is the largest maximum among the buffers that belong to rotations
//! `r - 2 ..= r`, which is what Micrometer's current buffer holds at that moment.
//!
//! A call that ends in a rotation whose buffer already belongs to a later rotation (its event was
//! published late, after three rotations) is three rotations old and out of every later poll's
//! window, so it is dropped, as Micrometer's cleared buffers would have dropped it. Rotation
//! numbers are kept modulo 2^24, so a buffer could be taken for a current one only after
//! 3 x 2^24 rotations without a call (96 years at a minute each).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::time::timestamp::{duration_nanos, Timestamp};

/// How often the ring rotates: `PrometheusMeterRegistry`'s default `step`.
pub(crate) const ROTATION: Duration = Duration::from_secs(60);
/// Buffers in the ring: `DistributionStatisticConfig.DEFAULT`'s `bufferLength`.
pub(crate) const BUFFERS: usize = 3;

/// Bits of a buffer word that hold its rotation number.
const TAG_BITS: u32 = 24;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// The largest maximum a buffer word holds, in microseconds.
const MAX_MICROS: u64 = u64::MAX >> TAG_BITS;

/// A maximum of call durations over the last 2 to 3 rotations (see the module docs).
pub(crate) struct DecayingMax {
    /// Unix nanoseconds at which rotation 0 began.
    origin: u64,
    /// [`ROTATION`] in nanoseconds.
    rotation: u64,
    buffers: [AtomicU64; BUFFERS],
}

impl DecayingMax {
    /// A window whose rotation 0 begins at `origin`.
    pub(crate) fn new(origin: Timestamp) -> DecayingMax {
        DecayingMax::with_rotation(origin, ROTATION)
    }

    fn with_rotation(origin: Timestamp, rotation: Duration) -> DecayingMax {
        DecayingMax {
            origin: origin.unix_nanos(),
            rotation: duration_nanos(rotation).max(1),
            buffers: Default::default(),
        }
    }

    fn rotation_at(&self, at: Timestamp) -> u64 {
        at.unix_nanos().saturating_sub(self.origin) / self.rotation
    }

    /// Records a call of `elapsed` that ended at `at`; returns whether the window's maximum may
    /// have risen (the caller then polls and writes its gauge).
    pub(crate) fn record(&self, at: Timestamp, elapsed: Duration) -> bool {
        let rotation = self.rotation_at(at);
        let tag = rotation & TAG_MASK;
        let micros = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .min(MAX_MICROS);
        let index = usize::try_from(rotation % BUFFERS as u64).unwrap_or(0);
        let buffer = &self.buffers[index];
        let mut word = buffer.load(Ordering::Relaxed);
        loop {
            let held = word & TAG_MASK;
            if held == tag {
                if word >> TAG_BITS >= micros {
                    return false;
                }
            } else if ahead(held, tag) && word >> TAG_BITS != 0 {
                // Three rotations old: out of every window from now on. (A maximum of 0 holds
                // nothing to keep, such as a buffer no call has used yet.)
                return false;
            }
            let next = (micros << TAG_BITS) | tag;
            match buffer.compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(current) => word = current,
            }
        }
    }

    /// The maximum at `at`, in seconds: the longest call of the rotation `at` falls in and of
    /// the two before it; 0 if there was none.
    pub(crate) fn seconds_at(&self, at: Timestamp) -> f64 {
        let now = self.rotation_at(at) & TAG_MASK;
        let micros = self
            .buffers
            .iter()
            .map(|buffer| buffer.load(Ordering::Relaxed))
            .filter(|word| in_window(word & TAG_MASK, now))
            .map(|word| word >> TAG_BITS)
            .max()
            .unwrap_or(0);
        // Exact for any whole number of microseconds below 2^53.
        micros as f64 / 1e6
    }
}

/// Whether rotation `held` is later than `tag` (modulo 2^24).
fn ahead(held: u64, tag: u64) -> bool {
    let distance = held.wrapping_sub(tag) & TAG_MASK;
    distance != 0 && distance < TAG_MASK / 2
}

/// Whether a buffer of rotation `held` counts in a poll at rotation `now`: it is one of the
/// three last rotations, or a later one (a call that ended after the poll read its clock).
fn in_window(held: u64, now: u64) -> bool {
    let behind = now.wrapping_sub(held) & TAG_MASK;
    let before = held.wrapping_sub(now) & TAG_MASK;
    behind < BUFFERS as u64 || before < BUFFERS as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);

    fn at(seconds: f64) -> Timestamp {
        T0.saturating_add(Duration::from_secs_f64(seconds))
    }

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn a_call_is_the_maximum_for_two_to_three_rotations() {
        let max = DecayingMax::new(T0);
        assert_eq!(max.seconds_at(T0), 0.0);
        // Early in rotation 0: reported through rotation 2, gone when rotation 3 begins.
        assert!(max.record(at(5.0), ms(250)));
        assert_eq!(max.seconds_at(at(5.0)), 0.25);
        assert_eq!(max.seconds_at(at(179.999)), 0.25);
        assert_eq!(max.seconds_at(at(180.0)), 0.0);
        // Late in rotation 3: reported for just over 2 rotations.
        assert!(max.record(at(239.0), ms(1_500)));
        assert_eq!(max.seconds_at(at(359.999)), 1.5);
        assert_eq!(max.seconds_at(at(360.0)), 0.0);
    }

    #[test]
    fn the_largest_call_of_the_last_three_rotations_wins() {
        let max = DecayingMax::new(T0);
        assert!(max.record(at(1.0), ms(900)));
        assert!(!max.record(at(2.0), ms(100)), "not a new maximum");
        assert!(max.record(at(61.0), ms(400)));
        assert!(max.record(at(121.0), ms(200)));
        assert_eq!(max.seconds_at(at(121.0)), 0.9);
        assert_eq!(max.seconds_at(at(180.0)), 0.4, "rotation 0 left the window");
        assert_eq!(max.seconds_at(at(240.0)), 0.2);
        assert_eq!(max.seconds_at(at(300.0)), 0.0);
    }

    #[test]
    fn a_rotation_reuses_its_buffer_from_zero() {
        let max = DecayingMax::new(T0);
        assert!(max.record(at(1.0), ms(900)));
        // Rotation 3 owns rotation 0's buffer: its smaller maximum replaces the old one.
        assert!(max.record(at(181.0), ms(10)));
        assert_eq!(max.seconds_at(at(181.0)), 0.01);
    }

    #[test]
    fn a_call_published_three_rotations_late_is_dropped() {
        let max = DecayingMax::new(T0);
        assert!(max.record(at(181.0), ms(10)));
        assert!(
            !max.record(at(1.0), ms(900)),
            "rotation 0's buffer belongs to rotation 3"
        );
        assert_eq!(max.seconds_at(at(181.0)), 0.01);
        // A call of a rotation still in the window, published late, counts.
        assert!(max.record(at(130.0), ms(50)));
        assert_eq!(max.seconds_at(at(181.0)), 0.05);
    }

    #[test]
    fn a_poll_counts_calls_that_ended_after_its_clock_reading() {
        let max = DecayingMax::new(T0);
        assert!(max.record(at(61.0), ms(300)));
        assert_eq!(max.seconds_at(at(59.0)), 0.3);
    }

    #[test]
    fn long_calls_saturate_and_times_before_the_origin_count_as_rotation_0() {
        let max = DecayingMax::new(T0);
        assert!(max.record(T0, Duration::from_secs(100 * 86_400)));
        assert_eq!(max.seconds_at(T0), MAX_MICROS as f64 / 1e6);
        let early = DecayingMax::new(at(10.0));
        assert!(early.record(T0, ms(5)));
        assert_eq!(early.seconds_at(at(10.0)), 0.005);
    }

    #[test]
    fn rotation_numbers_wrap() {
        let rotation = Duration::from_nanos(1);
        let max = DecayingMax::with_rotation(Timestamp::from_unix_nanos(0), rotation);
        let wrap = Timestamp::from_unix_nanos(TAG_MASK); // the last tag before 0 again
        assert!(max.record(wrap, ms(7)));
        let next = Timestamp::from_unix_nanos(TAG_MASK + 1);
        assert_eq!(
            max.seconds_at(next),
            0.007,
            "one rotation later, across the wrap"
        );
        assert!(max.record(next, ms(3)));
        assert_eq!(max.seconds_at(next), 0.007);
        let gone = Timestamp::from_unix_nanos(TAG_MASK + 3);
        assert_eq!(max.seconds_at(gone), 0.003);
    }

    #[test]
    fn concurrent_calls_leave_the_largest() {
        let max = std::sync::Arc::new(DecayingMax::new(T0));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let max = max.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000u64 {
                        max.record(at(1.0), Duration::from_micros(i * 4 + t));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(max.seconds_at(at(1.0)), 39_999.0 / 1e6);
    }
}
