//! A clock for tests: it moves only when told to, and runs the timers it passes.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::time::timestamp::Timestamp;

/// Timers a [`ManualClock`] runs as it advances: a registry's scheduler queue. The clock knows
/// only this, not what a timer does.
pub(crate) trait DueTimers: Send + Sync {
    /// Due time and order of the next timer, if any.
    fn peek_key(&self) -> Option<(Timestamp, u64)>;
    /// Runs the head timer if it is due at `now`.
    fn run_next_due(&self, now: Timestamp);
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
    queues: Mutex<Vec<Weak<dyn DueTimers>>>,
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
        Timestamp::from_unix_nanos(self.0.now.load(Ordering::Acquire))
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
            let queues: Vec<Arc<dyn DueTimers>> = {
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

    /// Runs `timers` as the clock passes their due times, for as long as they exist.
    pub(crate) fn attach(&self, timers: Weak<dyn DueTimers>) {
        self.0
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(timers);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Timers that are never due.
    struct NoTimers;

    impl DueTimers for NoTimers {
        fn peek_key(&self) -> Option<(Timestamp, u64)> {
            None
        }
        fn run_next_due(&self, _now: Timestamp) {}
    }

    /// A registry dropped on a long-lived clock leaves nothing behind in it: the clock lets go
    /// of the timers of a registry that is gone at its next advance, so a test suite that makes
    /// a registry per test on one clock does not grow the clock's list.
    #[test]
    fn timers_that_are_gone_are_let_go_on_the_next_advance() {
        let clock = ManualClock::new();
        let kept: Arc<dyn DueTimers> = Arc::new(NoTimers);
        clock.attach(Arc::downgrade(&kept));
        for _ in 0..3 {
            let dropped: Arc<dyn DueTimers> = Arc::new(NoTimers);
            clock.attach(Arc::downgrade(&dropped));
        }
        clock.advance(Duration::from_secs(1));
        let queues = clock.0.queues.lock().unwrap();
        assert_eq!(queues.len(), 1, "the three dropped ones are let go");
        assert!(Weak::ptr_eq(&queues[0], &Arc::downgrade(&kept)));
    }
}
