//! One timer queue per registry, ordered by due time.
//!
//! Timers sit in a priority queue ordered by due time; one worker thread looks at the head,
//! blocks for exactly the time left until it is due (it does not spin), wakes, runs it, and
//! looks at the next.
//! With a [`ManualClock`](crate::ManualClock) there is no thread: the clock runs due timers as
//! it is advanced.
//!
//! The queue knows nothing of what its timers are for. A timer names its target weakly,
//! through the small [`TimerTarget`] trait, and carries a token the target chose when it set
//! the timer; when the timer falls due the target gets that token back and decides what it
//! means. A breaker's token is the id of the state that set the timer (the state tells which
//! of its timers it is); a keyed group's sweep and the metrics export's refresh have one timer
//! each and ignore theirs. A new kind of timer is a new target, not a change to this file.
//!
//! A target that no longer wants a timer removes it from the queue ([`Scheduler::cancel`]):
//! a breaker does so when it leaves the state that set it, so the queue holds only timers of
//! current states, at most one per breaker. (Should a timer fire in the instant its state is
//! being left, the token it carries names a state that is gone, and the breaker does nothing.)
//! A timer whose target is gone fires into nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread;

use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::time::clock::Clock;
use crate::time::manual::DueTimers;
use crate::time::timestamp::Timestamp;

/// What a timer acts on: a breaker, a keyed group, an exporter, or any later pattern's part
/// that needs to be woken at a time.
pub(crate) trait TimerTarget: Send + Sync {
    /// The timer that was set with `token` fell due. The token is the target's own: the
    /// scheduler only stores it and gives it back.
    fn on_timer(&self, token: u64);
}

/// Where a timer sits in its queue: its due time, then the order it was scheduled in.
pub(crate) type TimerKey = (Timestamp, u64);

/// One timer: whom it wakes, and with what. No allocation beyond the queue's own node.
struct Entry {
    target: Weak<dyn TimerTarget>,
    token: u64,
}

impl Entry {
    fn fire(self) {
        if let Some(target) = self.target.upgrade() {
            target.on_timer(self.token);
        }
    }
}

/// Orders timers scheduled on different queues (and so on different registries) of one clock.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// The queue itself, shared by the registry's scheduler, its worker thread and (for a manual
/// clock) the clock.
pub(crate) struct SchedulerQueue {
    timers: Mutex<BTreeMap<TimerKey, Entry>>,
    wake: Condvar,
    shutdown: AtomicBool,
}

impl SchedulerQueue {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<TimerKey, Entry>> {
        self.timers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of timers waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The first timer, removed from the queue, if it is due at `now`.
    fn pop_due(timers: &mut BTreeMap<TimerKey, Entry>, now: Timestamp) -> Option<Entry> {
        let entry = timers.first_entry()?;
        (entry.key().0 <= now).then(|| entry.remove())
    }

    fn worker(self: Arc<Self>, clock: Clock) {
        loop {
            let entry = {
                let mut timers = self.lock();
                loop {
                    if self.shutdown.load(Ordering::Acquire) {
                        return;
                    }
                    let now = clock.now();
                    if let Some(entry) = Self::pop_due(&mut timers, now) {
                        break Some(entry);
                    }
                    let wait = timers
                        .first_key_value()
                        .map(|((due, _), _)| due.saturating_duration_since(now));
                    timers = match wait {
                        None => self.wake.wait(timers).unwrap_or_else(|e| e.into_inner()),
                        Some(left) => {
                            self.wake
                                .wait_timeout(timers, left)
                                .unwrap_or_else(|e| e.into_inner())
                                .0
                        }
                    };
                }
            };
            if let Some(entry) = entry {
                entry.fire();
            }
        }
    }
}

impl DueTimers for SchedulerQueue {
    /// Due time and order of the next timer, if any.
    fn peek_key(&self) -> Option<(Timestamp, u64)> {
        self.lock().first_key_value().map(|(key, _)| *key)
    }

    /// Runs the head timer if it is due at `now`.
    fn run_next_due(&self, now: Timestamp) {
        let entry = Self::pop_due(&mut self.lock(), now);
        if let Some(entry) = entry {
            entry.fire();
        }
    }
}

/// A registry's scheduler: the queue, and (for the system clock) the worker thread, started
/// when the first timer is set and stopped when the registry and all its breakers are gone.
pub(crate) struct Scheduler {
    queue: Arc<SchedulerQueue>,
    clock: Clock,
    worker_started: AtomicBool,
}

impl Scheduler {
    pub(crate) fn new(clock: Clock) -> Scheduler {
        let queue = Arc::new(SchedulerQueue {
            timers: Mutex::new(BTreeMap::new()),
            wake: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        if let Some(manual) = clock.as_manual() {
            let timers: Arc<dyn DueTimers> = queue.clone();
            manual.attach(Arc::downgrade(&timers));
        }
        Scheduler {
            queue,
            clock,
            worker_started: AtomicBool::new(false),
        }
    }

    /// Sets a timer due at `due` that gives `token` back to `target`
    /// ([`TimerTarget::on_timer`]); the key it returns cancels it.
    pub(crate) fn schedule(
        &self,
        due: Timestamp,
        target: Weak<dyn TimerTarget>,
        token: u64,
    ) -> TimerKey {
        let key = (due, NEXT_SEQ.fetch_add(1, Ordering::Relaxed));
        let entry = Entry { target, token };
        self.queue.lock().insert(key, entry);
        self.queue.wake.notify_one();
        if self.clock.as_manual().is_none() && !self.worker_started.swap(true, Ordering::AcqRel) {
            let queue = Arc::clone(&self.queue);
            let clock = self.clock.clone();
            let spawned = thread::Builder::new()
                .name("breaker-scheduler".into())
                .spawn(move || queue.worker(clock));
            if let Err(err) = spawned {
                // Without a thread no timer fires until a later `schedule` starts one (a breaker
                // still leaves OPEN on the first call after its wait). Say so, and try again
                // next time.
                self.worker_started.store(false, Ordering::Release);
                tracing::error!(error = %err, "breaker: could not start the scheduler thread");
            }
        }
        key
    }

    /// Removes a timer that has not fired yet (for a breaker: its state was left).
    pub(crate) fn cancel(&self, key: TimerKey) {
        self.queue.lock().remove(&key);
    }

    pub(crate) fn pending(&self) -> usize {
        self.queue.len()
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.queue.shutdown.store(true, Ordering::Release);
        // Take the lock so the worker is either waiting (and gets the signal) or will see the
        // flag before it waits again.
        drop(self.queue.lock());
        self.queue.wake.notify_all();
    }
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("pending", &self.pending())
            .field("clock", &self.clock)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::time::manual::ManualClock;

    /// A target that is not a breaker: it notes the tokens it is given back.
    #[derive(Default)]
    struct Notes(Mutex<Vec<u64>>);

    impl TimerTarget for Notes {
        fn on_timer(&self, token: u64) {
            self.0.lock().unwrap().push(token);
        }
    }

    /// `notes` as a timer target.
    fn target_of(notes: &Arc<Notes>) -> Weak<dyn TimerTarget> {
        let weak: Weak<Notes> = Arc::downgrade(notes);
        weak
    }

    #[test]
    fn a_target_gets_its_own_tokens_back_in_due_order_and_cancelled_ones_never() {
        let clock = ManualClock::new();
        let scheduler = Scheduler::new(Clock::from(clock.clone()));
        let notes = Arc::new(Notes::default());
        let target = || target_of(&notes);
        let at = |ms| clock.now().saturating_add(Duration::from_millis(ms));
        scheduler.schedule(at(30), target(), 7);
        scheduler.schedule(at(10), target(), u64::MAX);
        let cancelled = scheduler.schedule(at(20), target(), 3);
        scheduler.schedule(at(10), target(), 0);
        scheduler.cancel(cancelled);
        assert_eq!(scheduler.pending(), 3);

        clock.advance(Duration::from_millis(10));
        // Ties go in the order they were set.
        assert_eq!(*notes.0.lock().unwrap(), [u64::MAX, 0]);
        clock.advance(Duration::from_millis(100));
        assert_eq!(*notes.0.lock().unwrap(), [u64::MAX, 0, 7]);
        assert_eq!(scheduler.pending(), 0);
    }

    /// On the system clock one thread runs all of a scheduler's timers (each worker holds the
    /// queue, so the queue's holders count them), and it ends with the scheduler even while it
    /// waits for a timer an hour away; on a manual clock `advance` runs the timers and no
    /// thread starts.
    #[test]
    fn one_worker_thread_per_scheduler_and_it_ends_with_it() {
        let notes = Arc::new(Notes::default());
        let target = || target_of(&notes);
        let manual = ManualClock::new();
        let on_manual = Scheduler::new(Clock::from(manual.clone()));
        on_manual.schedule(
            manual.now().saturating_add(Duration::from_secs(60)),
            target(),
            1,
        );
        assert_eq!(
            Arc::strong_count(&on_manual.queue),
            1,
            "a thread for a manual clock"
        );

        let clock = Clock::system();
        let scheduler = Scheduler::new(clock.clone());
        let later = clock.now().saturating_add(Duration::from_secs(3600));
        for token in 0..3 {
            scheduler.schedule(later, target(), token);
        }
        assert_eq!(
            Arc::strong_count(&scheduler.queue),
            2,
            "not one worker for three timers"
        );
        let queue = Arc::downgrade(&scheduler.queue);
        drop(scheduler);
        // A real thread's end, waited for with a bound: a worker that never ends fails the
        // test rather than hanging it.
        let begun = std::time::Instant::now();
        while queue.upgrade().is_some() {
            assert!(
                begun.elapsed() < Duration::from_secs(10),
                "the worker outlived its scheduler"
            );
            thread::yield_now();
        }
        assert!(notes.0.lock().unwrap().is_empty(), "no timer was due");
    }

    #[test]
    fn a_timer_whose_target_is_gone_fires_into_nothing() {
        let clock = ManualClock::new();
        let scheduler = Scheduler::new(Clock::from(clock.clone()));
        let notes = Arc::new(Notes::default());
        let weak: Weak<Notes> = Arc::downgrade(&notes);
        scheduler.schedule(
            clock.now().saturating_add(Duration::from_millis(5)),
            weak,
            1,
        );
        drop(notes);
        clock.advance(Duration::from_millis(5));
        assert_eq!(scheduler.pending(), 0);
    }
}
