//! The async protected call: one named future behind `call`, `call_with` and the attribute.

use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::breaker::CircuitBreaker;
use crate::call::permit::Permit;
use crate::call::timeout::CallTimeout;
use crate::classify::Classify;
use crate::error::BulkheadFull;
use crate::error::CallError;

pin_project! {
    /// An async protected call.
    ///
    /// Written out rather than as an `async fn`, so that every way in is this one type and
    /// awaiting it moves no future into another: `fut` stays where the call was pinned, and the
    /// timer for `timeout-duration` is built in place on the first poll. `map` turns `fut`'s
    /// output into the `Result` that is classified (`Ok` of it, or the attribute's
    /// conversion), or into the refusal of a bulkhead inside the breaker (`fut` is then that
    /// bulkhead's call), which the breaker records as it records an error.
    pub(crate) struct Call<'a, F, C: ?Sized, M> {
        // Fields drop in this order: the wrapped future first, so that a cancelled call holds
        // its permit (in `stage`) until everything the call's own code owns is gone; a trial
        // permit given back any earlier could let another trial start while this one's
        // clean-up still runs.
        #[pin]
        fut: F,
        // Set once, on the first poll, if a timeout applies.
        #[pin]
        timer: Option<CallTimeout>,
        stage: Stage<'a>,
        breaker: &'a CircuitBreaker,
        classify: &'a C,
        map: M,
    }
}

/// Where a [`Call`] is: not yet asked, running under a permit, or finished.
enum Stage<'a> {
    Start,
    Running(Permit<'a>),
    Done,
}

impl<'a, F, C: ?Sized, M> Call<'a, F, C, M> {
    #[inline]
    pub(crate) fn new(breaker: &'a CircuitBreaker, classify: &'a C, map: M, fut: F) -> Self {
        Call {
            breaker,
            classify,
            map,
            stage: Stage::Start,
            fut,
            timer: None,
        }
    }
}

impl<F, C, M, T, E> Future for Call<'_, F, C, M>
where
    F: Future,
    M: Fn(F::Output) -> Result<Result<T, E>, BulkheadFull>,
    C: Classify<T, E> + ?Sized,
    E: 'static,
{
    type Output = Result<T, CallError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        match this.stage {
            Stage::Running(_) => {}
            Stage::Start => match this.breaker.try_acquire() {
                Ok(permit) => {
                    if let Some(timer) = permit.start_timeout() {
                        this.timer.set(Some(timer));
                    }
                    *this.stage = Stage::Running(permit);
                }
                Err(rejected) => {
                    *this.stage = Stage::Done;
                    return Poll::Ready(Err(CallError::Rejected(rejected)));
                }
            },
            Stage::Done => panic!("a breaker's call future was polled after it completed"),
        }
        let fut = this.fut;
        let polled = match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(polled) => polled,
            Err(panic) => match std::mem::replace(this.stage, Stage::Done) {
                Stage::Running(permit) => permit.panicked(panic),
                Stage::Start | Stage::Done => resume_unwind(panic),
            },
        };
        if let Poll::Ready(output) = polled {
            let stage = std::mem::replace(this.stage, Stage::Done);
            return Poll::Ready(match (this.map)(output) {
                Ok(result) => {
                    if let Stage::Running(permit) = stage {
                        permit.finish_with(*this.classify, &result);
                    }
                    result.map_err(CallError::Inner)
                }
                Err(full) => Err(CallError::BulkheadFull(match stage {
                    Stage::Running(permit) => permit.refused(full),
                    Stage::Start | Stage::Done => full,
                })),
            });
        }
        if let Some(timer) = this.timer.as_mut().as_pin_mut() {
            if let Poll::Ready(limit) = timer.poll_expired(cx) {
                // The call is cancelled: `fut` is not polled again, and is dropped with this
                // future. It counts as a failure that took at least the timeout.
                if let Stage::Running(permit) = std::mem::replace(this.stage, Stage::Done) {
                    return Poll::Ready(Err(CallError::TimedOut(permit.timed_out(limit))));
                }
            }
        }
        Poll::Pending
    }
}
