//! The bulkhead's places: a count of free places in one atomic word, and the queue of calls
//! waiting for one.
//!
//! # The word
//!
//! One `u64` holds the free places (signed: a lowered limit leaves a debt that the next
//! releases pay), a WAITERS bit (the queue is not empty) and an UNFAIR bit (fair call handling
//! is off). Every decision reads them together, in one load:
//!
//! - A call that arrives takes a place with one compare-and-swap when a place is free and, in
//!   fair mode, nobody waits; it is refused after one load otherwise. No lock, no allocation.
//! - A finished call gives its place back with one `fetch_add`. If the word it replaced had the
//!   WAITERS bit and the place is now free, it takes the queue's lock and dispatches.
//! - A call that must wait takes the lock and sets WAITERS with a compare-and-swap that also
//!   checks no place is free, so a release either sees the bit (and dispatches after the
//!   waiter is in the queue, since dispatching takes the same lock) or happened before the
//!   swap (which then fails, and the waiter takes the free place instead).
//!
//! The free count is stored with a bias of 2^31, so a `fetch_add(1)` or a limit change never
//! carries into the bits above it: the limit is at most 1,000,000 (the configuration checks
//! it), so the count stays within ±2^31 by far.
//!
//! # Dispatching
//!
//! Under the queue's lock, with places free and calls waiting:
//! - fair: the place goes straight to the head waiter (FIFO): the count is decremented for it
//!   and it is marked granted, then woken. A call arriving meanwhile sees WAITERS and queues
//!   behind (or is refused), so nobody overtakes a waiting call.
//! - unfair: the first waiters, as many as places are free, are woken to take a place
//!   themselves, as a new call would: a call that arrives before they run may take the place
//!   first (Resilience4j's non-fair semaphore does the same), and a woken waiter that finds
//!   none free waits again, keeping its turn.
//!
//! Waiters are woken after the lock is released.
//!
//! # Waiters
//!
//! A waiter is a slot in a slab (reused, so the queue allocates only when it grows past its
//! largest size so far) and its index in a FIFO of slot indices. It is named by a token (the
//! slot's index and generation), which its timer carries: a timer that fires for a slot reused
//! since finds another generation and does nothing. A waiter leaves the queue when it is
//! granted, when its timer fires, or when it is dropped; a waiter dropped after it was granted
//! gives the place back as a finished call does, so the next waiter gets it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::task::Waker;

use crate::sync::thread::Thread;
use crate::sync::{AtomicU32, AtomicU64, Mutex, MutexGuard};

/// The semaphore's word: free places (biased), WAITERS, UNFAIR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Word(u64);

const COUNT_MASK: u64 = 0xFFFF_FFFF;
const BIAS: i64 = 1 << 31;
const WAITERS: u64 = 1 << 32;
const UNFAIR: u64 = 1 << 33;

impl Word {
    fn new(available: u32, fair: bool) -> Word {
        Word(0).with_available(i64::from(available)).with_fair(fair)
    }

    /// Free places; negative while a lowered limit's debt is unpaid.
    #[inline(always)]
    fn available(self) -> i64 {
        (self.0 & COUNT_MASK) as i64 - BIAS
    }

    #[inline(always)]
    fn with_available(self, available: i64) -> Word {
        Word(self.0 & !COUNT_MASK | (available + BIAS) as u64 & COUNT_MASK)
    }

    /// Whether calls wait in the queue.
    #[inline(always)]
    fn has_waiters(self) -> bool {
        self.0 & WAITERS != 0
    }

    #[inline(always)]
    fn is_fair(self) -> bool {
        self.0 & UNFAIR == 0
    }

    fn with_fair(self, fair: bool) -> Word {
        if fair {
            Word(self.0 & !UNFAIR)
        } else {
            Word(self.0 | UNFAIR)
        }
    }

    /// Whether a call that arrives now may take a place without queueing: one is free, and in
    /// fair mode nobody waits for it.
    #[inline(always)]
    fn admits_newcomer(self) -> bool {
        self.available() > 0 && !(self.is_fair() && self.has_waiters())
    }
}

/// How to wake a waiter: its task's waker, or its parked thread.
pub(crate) enum Wake {
    /// An async waiter.
    Task(Waker),
    /// A thread parked in a blocking acquire.
    Thread(Thread),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Task(waker) => waker.wake(),
            Wake::Thread(thread) => thread.unpark(),
        }
    }
}

/// Where a waiter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WaiterState {
    /// The slot holds no waiter.
    Free,
    /// In the queue, waiting.
    Waiting,
    /// In the queue, woken to take a place itself (unfair mode).
    Notified,
    /// Out of the queue: a place was handed to it.
    Granted,
    /// Out of the queue: its timer fired first.
    Expired,
}

struct Slot {
    generation: u32,
    state: WaiterState,
    wake: Option<Wake>,
}

/// The waiters: a slab of slots and their FIFO order.
#[derive(Default)]
struct Queue {
    slots: Vec<Slot>,
    free: Vec<u32>,
    order: VecDeque<u32>,
}

impl Queue {
    fn insert(&mut self, wake: Wake) -> u64 {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    state: WaiterState::Free,
                    wake: None,
                });
                // At most one slot per waiting call, and the limit bounds nothing here, but
                // 2^32 calls waiting at once cannot fit in memory anyway.
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.state = WaiterState::Waiting;
        slot.wake = Some(wake);
        self.order.push_back(index);
        token(index, slot.generation)
    }

    /// The slot a token names, if it still holds that waiter.
    fn slot(&mut self, token: u64) -> Option<(u32, &mut Slot)> {
        let (index, generation) = split(token);
        let slot = self.slots.get_mut(index as usize)?;
        (slot.generation == generation && slot.state != WaiterState::Free).then_some((index, slot))
    }

    fn leave_order(&mut self, index: u32) {
        if let Some(at) = self.order.iter().position(|&i| i == index) {
            self.order.remove(at);
        }
    }

    fn release_slot(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.state = WaiterState::Free;
        slot.wake = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
    }
}

fn token(index: u32, generation: u32) -> u64 {
    u64::from(generation) << 32 | u64::from(index)
}

fn split(token: u64) -> (u32, u32) {
    (token as u32, (token >> 32) as u32)
}

/// Waiters to wake once the lock is released; a dispatch that fills it wakes them and goes on.
struct WakeList {
    wakes: [Option<Wake>; 16],
    len: usize,
}

impl WakeList {
    fn new() -> WakeList {
        WakeList {
            wakes: Default::default(),
            len: 0,
        }
    }

    fn is_full(&self) -> bool {
        self.len == self.wakes.len()
    }

    fn push(&mut self, wake: Option<Wake>) {
        if let Some(wake) = wake {
            self.wakes[self.len] = Some(wake);
            self.len += 1;
        }
    }

    fn wake_all(self) {
        for wake in self.wakes.into_iter().flatten() {
            wake.wake();
        }
    }
}

/// The result of [`Semaphore::enqueue`].
pub(crate) enum Enqueued {
    /// A place came free while the call took the lock: it has it.
    Acquired,
    /// The call waits; its token names it to [`Semaphore::poll_waiter`], to
    /// [`Semaphore::cancel`] and to its timer ([`Semaphore::expire`]).
    Waiting(u64),
}

/// The result of [`Semaphore::poll_waiter`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WaitPoll {
    /// The waiter has a place; its slot is freed.
    Granted,
    /// Its timer fired first; its slot is freed.
    Expired,
    /// Still waiting; it will be woken through the `Wake` it gave.
    Pending,
}

/// The places of one bulkhead and its waiting calls.
pub(crate) struct Semaphore {
    word: AtomicU64,
    queue: Mutex<Queue>,
    /// The limit; written under the queue's lock.
    limit: AtomicU32,
    /// The queue's length, for metrics without the lock; written under it.
    waiting: AtomicU32,
}

impl Semaphore {
    pub(crate) fn new(limit: u32, fair: bool) -> Semaphore {
        Semaphore {
            word: AtomicU64::new(Word::new(limit, fair).0),
            queue: Mutex::new(Queue::default()),
            limit: AtomicU32::new(limit),
            waiting: AtomicU32::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // No code that can panic runs under this lock, but a poisoned queue is still whole.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[inline(always)]
    fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    /// Takes a free place as a call that arrives now: refused (one load) when none is free,
    /// or in fair mode when others wait.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        self.take_if(Word::admits_newcomer)
    }

    /// Takes a free place whoever waits (for the waiter a dispatch picked).
    fn take_free(&self) -> bool {
        self.take_if(|word| word.available() > 0)
    }

    /// Takes a place with one compare-and-swap (retried if the word changed) while `allowed`
    /// says the word lets one be taken.
    #[inline(always)]
    fn take_if(&self, allowed: impl Fn(Word) -> bool) -> bool {
        let mut word = self.load();
        while allowed(word) {
            let taken = word.with_available(word.available() - 1);
            // AcqRel/Acquire: the call that gave the place back (Release) happens before the
            // one that takes it.
            match self.word.compare_exchange_weak(
                word.0,
                taken.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => word = Word(now),
            }
        }
        false
    }

    /// Gives a place back: one `fetch_add`, and a dispatch under the lock when calls wait and
    /// the place is free (not paying a lowered limit's debt).
    #[inline]
    pub(crate) fn release(&self) {
        let before = Word(self.word.fetch_add(1, Ordering::AcqRel));
        if before.has_waiters() && before.available() >= 0 {
            self.dispatch(self.lock());
        }
    }

    /// Puts a call that found no place in the queue, unless one came free meanwhile.
    pub(crate) fn enqueue(&self, wake: Wake) -> Enqueued {
        let mut queue = self.lock();
        let mut word = self.load();
        loop {
            let (next, takes) = if word.admits_newcomer() {
                (word.with_available(word.available() - 1), true)
            } else if word.has_waiters() {
                // The bit is set and only cleared under the lock we hold: a release that frees
                // a place now dispatches after this waiter is in the queue.
                break;
            } else {
                (Word(word.0 | WAITERS), false)
            };
            match self.word.compare_exchange_weak(
                word.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if takes => return Enqueued::Acquired,
                Ok(_) => break,
                Err(now) => word = Word(now),
            }
        }
        let token = queue.insert(wake);
        self.count_waiters(&queue);
        Enqueued::Waiting(token)
    }

    /// Where the waiter `token` stands; if it still waits, `wake` is how to wake it. A
    /// waiter woken in unfair mode tries to take a place here.
    pub(crate) fn poll_waiter(&self, token: u64, wake: Wake) -> WaitPoll {
        let mut queue = self.lock();
        let Some((index, slot)) = queue.slot(token) else {
            // The waiter owns its slot until it sees Granted or Expired: not reached.
            return WaitPoll::Expired;
        };
        match slot.state {
            WaiterState::Granted => {
                queue.release_slot(index);
                WaitPoll::Granted
            }
            WaiterState::Expired | WaiterState::Free => {
                queue.release_slot(index);
                WaitPoll::Expired
            }
            WaiterState::Waiting => {
                slot.wake = Some(wake);
                WaitPoll::Pending
            }
            WaiterState::Notified => {
                if self.take_free() {
                    queue.leave_order(index);
                    queue.release_slot(index);
                    self.count_waiters(&queue);
                    // More places may be free than waiters were woken for.
                    self.dispatch(queue);
                    WaitPoll::Granted
                } else {
                    // Another call took the place first: wait again, keeping the turn.
                    slot.state = WaiterState::Waiting;
                    slot.wake = Some(wake);
                    WaitPoll::Pending
                }
            }
        }
    }

    /// The waiter `token` gives up (its future was dropped): it leaves the queue, and a place
    /// handed to it meanwhile, or a wake-up meant for it, goes to the next.
    pub(crate) fn cancel(&self, token: u64) {
        let mut queue = self.lock();
        let Some((index, slot)) = queue.slot(token) else {
            return;
        };
        let state = slot.state;
        queue.leave_order(index);
        queue.release_slot(index);
        self.count_waiters(&queue);
        match state {
            WaiterState::Granted => {
                drop(queue);
                self.release();
            }
            WaiterState::Notified => self.dispatch(queue),
            WaiterState::Waiting | WaiterState::Expired | WaiterState::Free => {}
        }
    }

    /// The timer of waiter `token` fired: if it still waits, it leaves the queue refused and
    /// is woken to see it.
    pub(crate) fn expire(&self, token: u64) {
        let mut queue = self.lock();
        let Some((index, slot)) = queue.slot(token) else {
            return;
        };
        let state = slot.state;
        if !matches!(state, WaiterState::Waiting | WaiterState::Notified) {
            return;
        }
        slot.state = WaiterState::Expired;
        let wake = slot.wake.take();
        queue.leave_order(index);
        self.count_waiters(&queue);
        if state == WaiterState::Notified {
            // The wake-up it did not use goes to the next waiter.
            self.dispatch(queue);
        } else {
            drop(queue);
        }
        if let Some(wake) = wake {
            wake.wake();
        }
    }

    /// A new limit and fairness. A lower limit becomes a debt that releases pay before any
    /// place is free again; a higher one frees places, which go to the waiters first.
    pub(crate) fn reconfigure(&self, limit: u32, fair: bool) {
        let mut queue = self.lock();
        let old = self.limit.swap(limit, Ordering::Relaxed);
        if limit > old {
            self.word
                .fetch_add(u64::from(limit - old), Ordering::AcqRel);
        } else {
            self.word
                .fetch_sub(u64::from(old - limit), Ordering::AcqRel);
        }
        if fair {
            let was_unfair = !Word(self.word.fetch_and(!UNFAIR, Ordering::AcqRel)).is_fair();
            if was_unfair {
                // Waiters woken to compete wait for their turn again: a fair dispatch hands
                // places out in order.
                let Queue { slots, order, .. } = &mut *queue;
                for &index in order.iter() {
                    let slot = &mut slots[index as usize];
                    if slot.state == WaiterState::Notified {
                        slot.state = WaiterState::Waiting;
                    }
                }
            }
        } else {
            self.word.fetch_or(UNFAIR, Ordering::AcqRel);
        }
        self.dispatch(queue);
    }

    /// Hands free places to waiters (fair) or wakes waiters to take them (unfair), then wakes
    /// them once the lock is released.
    fn dispatch<'a>(&'a self, mut queue: MutexGuard<'a, Queue>) {
        loop {
            let mut wakes = WakeList::new();
            let more = if self.load().is_fair() {
                self.grant_in_order(&mut queue, &mut wakes)
            } else {
                Self::notify(&mut queue, self.load().available(), &mut wakes)
            };
            self.count_waiters(&queue);
            drop(queue);
            wakes.wake_all();
            if !more {
                return;
            }
            queue = self.lock();
        }
    }

    /// Fair: free places to the head waiters. True if it stopped with `wakes` full.
    fn grant_in_order(&self, queue: &mut Queue, wakes: &mut WakeList) -> bool {
        while let Some(&index) = queue.order.front() {
            if wakes.is_full() {
                return true;
            }
            if !self.take_free() {
                break;
            }
            queue.order.pop_front();
            let slot = &mut queue.slots[index as usize];
            slot.state = WaiterState::Granted;
            wakes.push(slot.wake.take());
        }
        false
    }

    /// Unfair: as many waiters woken as places are free. True if it stopped with `wakes` full.
    fn notify(queue: &mut Queue, available: i64, wakes: &mut WakeList) -> bool {
        let Queue { slots, order, .. } = queue;
        // Every waiter in front of the last one woken is woken too (or was already).
        for (notified, &index) in order.iter().enumerate() {
            if notified as i64 >= available {
                break;
            }
            let slot = &mut slots[index as usize];
            if slot.state == WaiterState::Waiting {
                if wakes.is_full() {
                    return true;
                }
                slot.state = WaiterState::Notified;
                wakes.push(slot.wake.take());
            }
        }
        false
    }

    /// Keeps the waiting count and the WAITERS bit in step with the queue (under its lock).
    fn count_waiters(&self, queue: &Queue) {
        self.waiting
            .store(queue.order.len() as u32, Ordering::Relaxed);
        if queue.order.is_empty() {
            self.word.fetch_and(!WAITERS, Ordering::AcqRel);
        }
    }

    /// Free places (0 while a lowered limit's debt is unpaid).
    pub(crate) fn available(&self) -> u32 {
        self.load().available().clamp(0, i64::from(u32::MAX)) as u32
    }

    /// The limit.
    pub(crate) fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Calls waiting in the queue.
    pub(crate) fn waiting(&self) -> u32 {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_word_keeps_its_count_apart_from_its_bits() {
        for available in [-1_000_000, -1, 0, 1, 25, 1_000_000] {
            for fair in [true, false] {
                let word = Word::new(0, fair).with_available(available);
                assert_eq!(word.available(), available);
                assert_eq!(word.is_fair(), fair);
                assert!(!word.has_waiters());
                let waiting = Word(word.0 | WAITERS);
                assert_eq!(waiting.available(), available);
                assert!(waiting.has_waiters());
                // A release is a plain add on the word: it never reaches the bits.
                let released = Word(waiting.0 + 1);
                assert_eq!(released.available(), available + 1);
                assert!(released.has_waiters() && released.is_fair() == fair);
            }
        }
        assert!(Word::new(1, false).admits_newcomer());
        assert!(Word(Word::new(1, false).0 | WAITERS).admits_newcomer());
        assert!(!Word(Word::new(1, true).0 | WAITERS).admits_newcomer());
        assert!(!Word::new(0, true).admits_newcomer());
    }

    fn thread() -> Wake {
        Wake::Thread(std::thread::current())
    }

    #[test]
    fn a_slot_reused_has_a_new_token() {
        let semaphore = Semaphore::new(1, true);
        assert!(semaphore.try_acquire());
        let Enqueued::Waiting(first) = semaphore.enqueue(thread()) else {
            panic!("no place is free")
        };
        semaphore.cancel(first);
        let Enqueued::Waiting(second) = semaphore.enqueue(thread()) else {
            panic!("no place is free")
        };
        assert_ne!(first, second);
        // The first waiter's timer, firing late, finds another waiter in its slot.
        semaphore.expire(first);
        assert_eq!(semaphore.poll_waiter(second, thread()), WaitPoll::Pending);
        semaphore.release();
        assert_eq!(semaphore.poll_waiter(second, thread()), WaitPoll::Granted);
        assert_eq!((semaphore.available(), semaphore.waiting()), (0, 0));
    }
}
