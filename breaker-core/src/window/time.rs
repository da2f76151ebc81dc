//! The time-based window: the calls of the last N whole epoch seconds, a bucket each.

use crate::time::timestamp::Timestamp;
use crate::window::totals::Totals;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bucket {
    second: u64,
    totals: Totals,
}

/// The calls of the last N whole epoch seconds: the current second and the N-1 before it.
#[derive(Debug)]
pub(crate) struct TimeWindow {
    pub(crate) buckets: Box<[Bucket]>,
    head: usize,
    pub(crate) totals: Totals,
}

impl TimeWindow {
    pub(crate) fn new(seconds: u32, now: Timestamp) -> TimeWindow {
        let start = now.unix_seconds();
        let buckets = (0..u64::from(seconds))
            .map(|i| Bucket {
                second: start + i,
                totals: Totals::default(),
            })
            .collect();
        TimeWindow {
            buckets,
            head: 0,
            totals: Totals::default(),
        }
    }

    /// Moves the head to the current second, emptying the buckets that fall out of the window.
    pub(crate) fn advance_to(&mut self, now: Timestamp) {
        let current = now.unix_seconds();
        let latest = self.buckets[self.head].second;
        if current <= latest {
            return;
        }
        let len = self.buckets.len() as u64;
        let mut steps = (current - latest).min(len);
        while steps > 0 {
            steps -= 1;
            self.head = (self.head + 1) % self.buckets.len();
            let bucket = &mut self.buckets[self.head];
            self.totals.remove(&bucket.totals);
            *bucket = Bucket {
                second: current - steps,
                totals: Totals::default(),
            };
        }
    }

    pub(crate) fn record(&mut self, outcome: u8, now: Timestamp) {
        self.advance_to(now);
        self.buckets[self.head].totals.add(outcome);
        self.totals.add(outcome);
    }
}
