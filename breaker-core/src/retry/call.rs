//! Running a call's attempts: the async call, whose waits are timers on the retry's scheduler,
//! and the blocking call, whose waits park the thread until such a timer fires.
//!
//! Both are the same loop around [`RetryCore::after_attempt`]: make an attempt, classify it,
//! and end, or wait and go again. A wait is a timer on the registry's scheduler that sets a
//! flag in a small [`WaitSlot`] and wakes the task or thread stored there, so a
//! [`ManualClock`](crate::ManualClock)'s `advance` ends it (from any thread) and no runtime's
//! timer is needed. A wait of zero sets no timer.
//!
//! Dropping the async call's future drops the attempt in flight or the wait: the wait's timer
//! is taken out of the queue, and no attempt starts after the drop.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::classify::Classify;
use crate::error::CallError;
use crate::retry::core::{InRetry, RetryCore, Step};
use crate::sync::{thread, AtomicBool, Mutex};
use crate::time::scheduler::{TimerKey, TimerTarget};

/// Runs attempts of `make` until one ends the call, waiting between them on timers.
pub(super) async fn run<T, E, F, Fut, C>(
    core: &RetryCore,
    classify: &C,
    mut make: F,
) -> Result<T, CallError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: 'static,
    C: Classify<T, E> + ?Sized,
{
    let mut in_retry = InRetry::new(core);
    let mut attempt = 1;
    loop {
        // The attempt's result ends in this block: a wait holds nothing of it (so the future
        // is `Send` whatever the result's type, and a failed attempt's value is freed first).
        let wait = {
            let result = make().await;
            match core.after_attempt(attempt, core.classify(classify, &result), &mut in_retry) {
                Step::Retry(wait) => wait,
                step => return core.end(step, attempt, result),
            }
        };
        Sleep::new(core, wait).await;
        attempt += 1;
    }
}

/// Runs attempts of `f` until one ends the call, the thread parked between them.
pub(super) fn run_sync<T, E, F, C>(
    core: &RetryCore,
    classify: &C,
    mut f: F,
) -> Result<T, CallError<E>>
where
    F: FnMut() -> Result<T, E>,
    E: 'static,
    C: Classify<T, E> + ?Sized,
{
    let mut in_retry = InRetry::new(core);
    let mut attempt = 1;
    loop {
        let result = f();
        match core.after_attempt(attempt, core.classify(classify, &result), &mut in_retry) {
            Step::Retry(wait) => sleep_blocking(core, wait),
            step => return core.end(step, attempt, result),
        }
        attempt += 1;
    }
}

/// Who a wait's timer wakes.
enum Wake {
    Task(Waker),
    Thread(thread::Thread),
}

/// One wait's end: set by its timer, read by the waiting task or thread.
struct WaitSlot {
    fired: AtomicBool,
    wake: Mutex<Option<Wake>>,
}

impl WaitSlot {
    fn new(wake: Option<Wake>) -> Arc<WaitSlot> {
        Arc::new(WaitSlot {
            fired: AtomicBool::new(false),
            wake: Mutex::new(wake),
        })
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    fn set_wake(&self, wake: Wake) {
        *self.wake.lock().unwrap_or_else(|e| e.into_inner()) = Some(wake);
    }

    /// Sets a timer for the end of `wait` on `core`'s scheduler.
    fn schedule(self: &Arc<Self>, core: &RetryCore, wait: Duration) -> TimerKey {
        let env = core.env();
        let due = env.clock().now().saturating_add(wait);
        let target: Weak<dyn TimerTarget> = Arc::downgrade(self) as Weak<WaitSlot>;
        env.scheduler().schedule(due, target, 0)
    }
}

impl TimerTarget for WaitSlot {
    /// The wait is over: the flag first, then the wake, so that whoever is woken sees it.
    fn on_timer(&self, _token: u64) {
        self.fired.store(true, Ordering::Release);
        let wake = self.wake.lock().unwrap_or_else(|e| e.into_inner()).take();
        match wake {
            Some(Wake::Task(waker)) => waker.wake(),
            Some(Wake::Thread(thread)) => thread.unpark(),
            None => {}
        }
    }
}

/// A wait between two attempts of an async call. Dropped before its end, it takes its timer
/// out of the queue.
struct Sleep<'a> {
    core: &'a RetryCore,
    /// The slot and its timer, while the wait is on (none for a wait of zero).
    pending: Option<(Arc<WaitSlot>, TimerKey)>,
}

impl<'a> Sleep<'a> {
    fn new(core: &'a RetryCore, wait: Duration) -> Sleep<'a> {
        let pending = (wait > Duration::ZERO).then(|| {
            let slot = WaitSlot::new(None);
            let timer = slot.schedule(core, wait);
            (slot, timer)
        });
        Sleep { core, pending }
    }
}

impl Future for Sleep<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some((slot, _)) = &this.pending else {
            return Poll::Ready(());
        };
        if !slot.fired() {
            slot.set_wake(Wake::Task(cx.waker().clone()));
            // The timer may have fired between the first look and storing the waker.
            if !slot.fired() {
                return Poll::Pending;
            }
        }
        this.pending = None;
        Poll::Ready(())
    }
}

impl Drop for Sleep<'_> {
    fn drop(&mut self) {
        if let Some((_, timer)) = self.pending.take() {
            self.core.env().scheduler().cancel(timer);
        }
    }
}

/// Parks this thread for `wait`, until the timer set on the retry's scheduler fires.
fn sleep_blocking(core: &RetryCore, wait: Duration) {
    if wait == Duration::ZERO {
        return;
    }
    let slot = WaitSlot::new(Some(Wake::Thread(thread::current())));
    slot.schedule(core, wait);
    // Woken by the timer or spuriously: asked again.
    while !slot.fired() {
        thread::park();
    }
}
