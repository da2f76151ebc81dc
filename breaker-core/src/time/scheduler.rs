//! One timer queue per registry, ordered by due time.
//!
//! Timers sit in a priority queue ordered by due time; one worker thread looks at the head,
//! blocks for exactly the time left until it is due (it does not spin), wakes, runs it, and
//! looks at the next.
//! With a [`ManualClock`](crate::ManualClock) there is no thread: the clock runs due timers as
//! it is advanced.
//!
//! A timer names its target (weakly: a breaker, through [`TimerTarget`], so the queue does not
//! know the breaker's type) and the state it was set for. Leaving a state cancels its timer:
//! the breaker removes it from the queue at once ([`Scheduler::cancel`]), so the queue holds
//! only timers of current states, at most one per breaker. (Should a timer fire in the instant
//! its state is being left, the state id it carries no longer matches and it does nothing.)

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread;

use crate::sync::{Condvar, Mutex, MutexGuard};
use crate::time::clock::Clock;
use crate::time::manual::DueTimers;
use crate::time::timestamp::Timestamp;

/// What a timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerAction {
    /// OPEN -> HALF_OPEN after `wait-duration-in-open-state`.
    OpenToHalfOpen,
    /// HALF_OPEN -> the configured state after `max-wait-duration-in-half-open-state`.
    HalfOpenMaxWait,
    /// A keyed group's sweep for idle breakers (its target is the group, not a breaker).
    Sweep,
    /// The metrics export's refresh of every breaker's gauges (its target is the export).
    #[cfg(feature = "metrics")]
    MetricsRefresh,
}

/// What a timer acts on: a breaker, told which of its states set the timer.
pub(crate) trait TimerTarget: Send + Sync {
    /// The timer set by state `state_id` for `action` fell due.
    fn on_timer(&self, state_id: u64, action: TimerAction);
}

/// Where a timer sits in its queue: its due time, then the order it was scheduled in.
pub(crate) type TimerKey = (Timestamp, u64);

struct Entry {
    target: Weak<dyn TimerTarget>,
    state_id: u64,
    action: TimerAction,
}

impl Entry {
    fn fire(self) {
        if let Some(target) = self.target.upgrade() {
            target.on_timer(self.state_id, self.action);
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

    /// Sets a timer for `target`'s state `state_id`, due at `due`; the key cancels it.
    pub(crate) fn schedule(
        &self,
        due: Timestamp,
        target: Weak<dyn TimerTarget>,
        state_id: u64,
        action: TimerAction,
    ) -> TimerKey {
        let key = (due, NEXT_SEQ.fetch_add(1, Ordering::Relaxed));
        let entry = Entry {
            target,
            state_id,
            action,
        };
        self.queue.lock().insert(key, entry);
        self.queue.wake.notify_one();
        if self.clock.as_manual().is_none() && !self.worker_started.swap(true, Ordering::AcqRel) {
            let queue = Arc::clone(&self.queue);
            let clock = self.clock.clone();
            let spawned = thread::Builder::new()
                .name("breaker-scheduler".into())
                .spawn(move || queue.worker(clock));
            if let Err(err) = spawned {
                // Without a thread the timers fall back to what a lazy breaker does: the first
                // call after the wait moves OPEN to HALF_OPEN. Say so, and try again next time.
                self.worker_started.store(false, Ordering::Release);
                tracing::error!(error = %err, "breaker: could not start the scheduler thread");
            }
        }
        key
    }

    /// Removes a timer that has not fired yet (its state was left).
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
