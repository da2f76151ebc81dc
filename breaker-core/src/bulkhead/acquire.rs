//! Waiting for a place: the futures [`Acquire`] and [`AcquireOwned`], and the blocking wait.
//!
//! Both ways are the same three steps: take a free place if there is one (no lock); else, when
//! `max-wait-duration` is above zero, join the queue and set a timer on the bulkhead's
//! scheduler for the end of the wait; then wait to be granted a place or for the timer. The
//! future is woken by its waker and the blocking call's thread is unparked; no thread is held
//! by an async wait, and the timer is the registry's scheduler's (a `ManualClock`'s `advance`
//! fires it).
//!
//! Dropping a waiting future takes it out of the queue and cancels its timer; a place handed
//! to it in the meantime goes to the next waiter.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::bulkhead::core::{Bulkhead, BulkheadCore};
use crate::bulkhead::permit::{BulkheadPermit, OwnedBulkheadPermit};
use crate::bulkhead::semaphore::{Enqueued, WaitPoll, Wake};
use crate::error::BulkheadFull;
use crate::sync::thread;
use crate::time::scheduler::{TimerKey, TimerTarget};

/// Where a wait stands.
#[derive(Debug)]
enum Stage {
    /// Not polled yet.
    Start,
    /// In the queue, with its timer.
    Waiting { token: u64, timer: TimerKey },
    /// Granted or refused: the result was returned.
    Done,
}

/// One call's wait for a place, shared by both futures.
#[derive(Debug)]
struct Wait {
    stage: Stage,
}

impl Wait {
    fn new() -> Wait {
        Wait {
            stage: Stage::Start,
        }
    }

    /// `Ok` once the call has a place (taken from the count for it), `Err` if refused.
    fn poll(
        &mut self,
        core: &Arc<BulkheadCore>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), BulkheadFull>> {
        let granted = match self.stage {
            Stage::Start => match core.begin_wait(Wake::Task(cx.waker().clone())) {
                Begun::Granted => true,
                Begun::Refused => false,
                Begun::Waiting { token, timer } => {
                    self.stage = Stage::Waiting { token, timer };
                    return Poll::Pending;
                }
            },
            Stage::Waiting { token, timer } => {
                match core
                    .semaphore()
                    .poll_waiter(token, Wake::Task(cx.waker().clone()))
                {
                    WaitPoll::Pending => return Poll::Pending,
                    WaitPoll::Granted => {
                        core.env().scheduler().cancel(timer);
                        true
                    }
                    WaitPoll::Expired => false,
                }
            }
            Stage::Done => panic!("a bulkhead's acquire future was polled after it completed"),
        };
        self.stage = Stage::Done;
        Poll::Ready(core.conclude(granted))
    }

    /// Leaves the queue if still in it (the future is dropped).
    fn cancel(&mut self, core: &BulkheadCore) {
        if let Stage::Waiting { token, timer } = std::mem::replace(&mut self.stage, Stage::Done) {
            core.semaphore().cancel(token);
            core.env().scheduler().cancel(timer);
        }
    }
}

/// How the first step of a wait ended.
pub(crate) enum Begun {
    /// A place was free.
    Granted,
    /// None was, and `max-wait-duration` is 0.
    Refused,
    /// In the queue, with a timer for the end of the wait.
    Waiting { token: u64, timer: TimerKey },
}

impl BulkheadCore {
    /// The first step of a wait: a free place, a refusal, or a place in the queue with a
    /// timer.
    pub(crate) fn begin_wait(self: &Arc<Self>, wake: Wake) -> Begun {
        if self.semaphore().try_acquire() {
            return Begun::Granted;
        }
        let max_wait = self.max_wait();
        if max_wait == Duration::ZERO {
            return Begun::Refused;
        }
        // The wait is measured from the call's arrival, read before it joins the queue.
        let due = self.env().clock().now().saturating_add(max_wait);
        match self.semaphore().enqueue(wake) {
            Enqueued::Acquired => Begun::Granted,
            Enqueued::Waiting(token) => {
                let target: Weak<dyn TimerTarget> = Arc::downgrade(self) as Weak<BulkheadCore>;
                let timer = self.env().scheduler().schedule(due, target, token);
                // The clock may have passed the end while the timer was being set (a manual
                // clock advanced by another thread, which then runs no timer set after it):
                // the wait ends now, as the timer would have ended it.
                if self.env().clock().now() >= due {
                    self.env().scheduler().cancel(timer);
                    self.semaphore().expire(token);
                }
                Begun::Waiting { token, timer }
            }
        }
    }

    /// Waits on this thread (parked) for a place, up to `max-wait-duration`.
    pub(crate) fn acquire_blocking(self: &Arc<Self>) -> Result<(), BulkheadFull> {
        let granted = match self.begin_wait(Wake::Thread(thread::current())) {
            Begun::Granted => true,
            Begun::Refused => false,
            Begun::Waiting { token, timer } => loop {
                match self
                    .semaphore()
                    .poll_waiter(token, Wake::Thread(thread::current()))
                {
                    // Woken by a grant, a dispatch, the timer, or spuriously: asked again.
                    WaitPoll::Pending => thread::park(),
                    WaitPoll::Granted => {
                        self.env().scheduler().cancel(timer);
                        break true;
                    }
                    WaitPoll::Expired => break false,
                }
            },
        };
        self.conclude(granted)
    }
}

impl TimerTarget for BulkheadCore {
    /// The end of a waiter's `max-wait-duration`; the token names the waiter.
    fn on_timer(&self, token: u64) {
        self.semaphore().expire(token);
    }
}

/// The future of [`Bulkhead::acquire`]: a place, or [`BulkheadFull`] if none came free within
/// `max-wait-duration`.
///
/// Dropping it while it waits takes it out of the queue (a place handed to it meanwhile goes
/// to the next waiter). It panics if polled again after it completed.
#[must_use = "futures do nothing unless polled"]
pub struct Acquire<'a> {
    bulkhead: &'a Bulkhead,
    wait: Wait,
}

impl<'a> Acquire<'a> {
    pub(crate) fn new(bulkhead: &'a Bulkhead) -> Acquire<'a> {
        Acquire {
            bulkhead,
            wait: Wait::new(),
        }
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<BulkheadPermit<'a>, BulkheadFull>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let core = &this.bulkhead.core;
        this.wait
            .poll(core, cx)
            .map_ok(|()| BulkheadPermit::new(core))
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        self.wait.cancel(&self.bulkhead.core);
    }
}

impl fmt::Debug for Acquire<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("bulkhead", &self.bulkhead.core.name())
            .field("stage", &self.wait.stage)
            .finish()
    }
}

/// The future of [`Bulkhead::acquire_owned`]: [`Acquire`], holding its own handle on the
/// bulkhead, so it is `'static` and `Send`.
#[must_use = "futures do nothing unless polled"]
pub struct AcquireOwned {
    bulkhead: Bulkhead,
    wait: Wait,
}

impl AcquireOwned {
    pub(crate) fn new(bulkhead: Bulkhead) -> AcquireOwned {
        AcquireOwned {
            bulkhead,
            wait: Wait::new(),
        }
    }
}

impl Future for AcquireOwned {
    type Output = Result<OwnedBulkheadPermit, BulkheadFull>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let core = &this.bulkhead.core;
        this.wait
            .poll(core, cx)
            .map_ok(|()| OwnedBulkheadPermit::new(Arc::clone(core)))
    }
}

impl Drop for AcquireOwned {
    fn drop(&mut self) {
        self.wait.cancel(&self.bulkhead.core);
    }
}

impl fmt::Debug for AcquireOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireOwned")
            .field("bulkhead", &self.bulkhead.core.name())
            .field("stage", &self.wait.stage)
            .finish()
    }
}
