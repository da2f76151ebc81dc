//! The retry budget: retries allowed only while they stay within a fraction of the calls over
//! a recent window, plus a floor per second (breaker's own; Resilience4j has none).
//!
//! # The rule
//!
//! A retry is allowed when, counting the retry itself,
//!
//! ```text
//! retries in the window + 1  <=  budget-ratio x calls in the window
//!                               + budget-min-retries-per-second x window seconds
//! ```
//!
//! and refused otherwise. "The window" is the bucket the clock is in now and the buckets
//! before it, `budget-window` in all (see below). A retry counts in the bucket where it was
//! allowed.
//!
//! A call counts once: at its first retry decision (the call asking counts), or when it ends
//! if it never asked. The budget does not count calls itself: it reads the retry's counters
//! (the four kinds of ended calls, and the calls between their retries), so a call that
//! succeeds at once costs the budget nothing. The window's calls are that total now minus the
//! total marked in the window's oldest bucket, taken when the bucket was first used: when the
//! retry was made, or at the first retry decision in the bucket's second. Calls that ended in
//! a second before its first decision are therefore not counted: the budget errs on the side
//! of refusing, and after a quiet window only the floor allows retries until the buckets
//! fill again.
//!
//! # The buckets
//!
//! A ring of buckets one second wide, `budget-window` rounded up to whole seconds of them
//! (at most [`MAX_BUCKETS`]: a longer window gets wider buckets). Each bucket is two atomic
//! words: its epoch (which bucket-width of the clock it holds, from 1) with its retries, packed
//! in one word so that a bucket is reused and counted in one compare-and-swap, and its mark.
//! A bucket of an epoch that left the window reads as empty and is taken over by the next
//! epoch that maps to it. No lock: a decision loads every bucket once and ends in one
//! compare-and-swap on the current one (repeated if another thread changed it first).
//! Two threads deciding at once may each see the other's retry not yet counted in another
//! bucket only when the clock crosses into a new bucket between their loads; the budget may
//! then allow one retry more than the rule, never fewer.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::sync::AtomicU64;
use crate::time::timestamp::{duration_nanos, Timestamp};

/// The most buckets a budget keeps: a window up to this many seconds is counted per second.
pub(crate) const MAX_BUCKETS: u64 = 300;

const RETRIES_MASK: u64 = u32::MAX as u64;

/// A retry budget: `budget-ratio`, `budget-window` and `budget-min-retries-per-second`.
pub(super) struct Budget {
    ratio: f64,
    /// `budget-min-retries-per-second` x the window in seconds.
    floor: f64,
    /// One bucket's width, in nanoseconds.
    width: u64,
    buckets: Box<[Bucket]>,
}

struct Bucket {
    /// The epoch in the top 32 bits (0: never used), the retries allowed in it below.
    word: AtomicU64,
    /// The calls total when the bucket's epoch began to be counted.
    mark: AtomicU64,
}

/// The epoch and retries of a bucket's word.
fn unpack(word: u64) -> (u32, u64) {
    ((word >> 32) as u32, word & RETRIES_MASK)
}

fn pack(epoch: u32, retries: u64) -> u64 {
    u64::from(epoch) << 32 | retries.min(RETRIES_MASK)
}

impl Budget {
    /// A budget made at `now`, when no call has been counted: the bucket of `now` is marked
    /// at 0, so calls from the start count.
    pub(super) fn new(ratio: f64, window: Duration, min_per_second: u32, now: Timestamp) -> Budget {
        let window_nanos = duration_nanos(window).max(1);
        let seconds = window_nanos.div_ceil(1_000_000_000).max(1);
        let count = seconds.min(MAX_BUCKETS);
        let width = window_nanos.div_ceil(count);
        let budget = Budget {
            ratio,
            floor: f64::from(min_per_second) * window.as_secs_f64(),
            width,
            buckets: (0..count)
                .map(|_| Bucket {
                    word: AtomicU64::new(0),
                    mark: AtomicU64::new(0),
                })
                .collect(),
        };
        let epoch = budget.epoch(now);
        budget
            .bucket(epoch)
            .word
            .store(pack(epoch, 0), Ordering::Relaxed);
        budget
    }

    /// The epoch of `now`: which bucket-width of the clock it falls in, from 1 (0 marks an
    /// unused bucket).
    fn epoch(&self, now: Timestamp) -> u32 {
        ((now.unix_nanos() / self.width) % u64::from(u32::MAX)) as u32 + 1
    }

    fn bucket(&self, epoch: u32) -> &Bucket {
        &self.buckets[epoch as usize % self.buckets.len()]
    }

    /// Whether `epoch` is still in the window that ends at `current`.
    fn in_window(&self, epoch: u32, current: u32) -> bool {
        epoch != 0 && (current.wrapping_sub(epoch) as usize) < self.buckets.len()
    }

    /// Asks for one retry at `now`, with `calls` the calls counted so far: allowed (and
    /// counted) or refused, by the rule in the module's doc.
    pub(super) fn try_withdraw(&self, now: Timestamp, calls: u64) -> bool {
        let current = self.epoch(now);
        let slot = self.bucket(current);
        loop {
            let word = slot.word.load(Ordering::Acquire);
            let (epoch, retries) = unpack(word);
            if epoch != current {
                // The bucket held an epoch that left the window: start it afresh, marked
                // with the total now.
                if slot
                    .word
                    .compare_exchange(word, pack(current, 0), Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    slot.mark.store(calls, Ordering::Release);
                }
                continue;
            }
            let (others, oldest_mark) = self.others(current, slot);
            let mark = oldest_mark.unwrap_or_else(|| slot.mark.load(Ordering::Acquire));
            let window_calls = calls.saturating_sub(mark);
            let allowed =
                (others + retries + 1) as f64 <= self.ratio * window_calls as f64 + self.floor;
            if !allowed {
                return false;
            }
            if slot
                .word
                .compare_exchange(
                    word,
                    pack(current, retries + 1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return true;
            }
        }
    }

    /// The retries in the window's buckets other than `slot`, and the mark of the oldest of
    /// them, if any is in the window.
    fn others(&self, current: u32, slot: &Bucket) -> (u64, Option<u64>) {
        let mut retries = 0;
        let mut oldest: Option<(u32, u64)> = None;
        for bucket in self.buckets.iter() {
            if std::ptr::eq(bucket, slot) {
                continue;
            }
            let (epoch, r) = unpack(bucket.word.load(Ordering::Acquire));
            if !self.in_window(epoch, current) {
                continue;
            }
            retries += r;
            let age = current.wrapping_sub(epoch);
            if oldest.is_none_or(|(a, _)| age > a) {
                oldest = Some((age, bucket.mark.load(Ordering::Acquire)));
            }
        }
        (retries, oldest.map(|(_, mark)| mark))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn at(seconds: u64) -> Timestamp {
        Timestamp::from_unix_nanos(1_000_000_000_000 + seconds * 1_000_000_000)
    }

    #[test]
    fn retries_stay_within_the_ratio_of_the_calls_plus_the_floor() {
        // 10 s window, one retry per two calls, no floor.
        let budget = Budget::new(0.5, 10 * SECOND, 0, at(0));
        assert!(!budget.try_withdraw(at(0), 1), "one call: 0.5 retries");
        assert!(budget.try_withdraw(at(0), 2));
        assert!(
            !budget.try_withdraw(at(1), 3),
            "3 calls: 1.5 retries, 1 taken"
        );
        assert!(budget.try_withdraw(at(1), 4));
        // The floor adds 1/s x 10 s.
        let floored = Budget::new(0.5, 10 * SECOND, 1, at(0));
        for _ in 0..10 {
            assert!(floored.try_withdraw(at(3), 0));
        }
        assert!(!floored.try_withdraw(at(3), 0));
    }

    #[test]
    fn retries_and_calls_leave_the_window_with_their_bucket() {
        let budget = Budget::new(1.0, 3 * SECOND, 0, at(0));
        assert!(budget.try_withdraw(at(0), 1));
        assert!(!budget.try_withdraw(at(2), 1));
        // At 3 s the bucket of 0 s left the window: its retry no longer counts, and nor do
        // its calls, so only calls counted after the mark at 3 s do.
        assert!(!budget.try_withdraw(at(3), 1));
        assert!(budget.try_withdraw(at(3), 2));
        assert!(!budget.try_withdraw(at(4), 2));
    }

    #[test]
    fn threads_asking_at_once_get_exactly_what_the_budget_allows() {
        // 100 retries a second over 1 s, no calls: four threads ask 100 times each.
        let budget = Budget::new(0.2, SECOND, 100, at(0));
        let allowed = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        if budget.try_withdraw(at(0), 0) {
                            allowed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(allowed.into_inner(), 100);
    }

    #[test]
    fn a_long_window_keeps_a_bounded_ring() {
        let budget = Budget::new(0.2, Duration::from_secs(86_400), 1, at(0));
        assert_eq!(budget.buckets.len() as u64, MAX_BUCKETS);
        assert_eq!(budget.width, 288 * 1_000_000_000);
    }
}
