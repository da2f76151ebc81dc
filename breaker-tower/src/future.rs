//! [`ResponseFuture`]: the response of a [`CircuitBreakerService`](crate::CircuitBreakerService).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use breaker_core::CallNotPermitted;
use breaker_core::Classify;
use breaker_core::{CallError, CallTimeout, OwnedPermit};

use crate::inner_error::{InnerError, Wrap};

pin_project! {
    /// The response of a [`CircuitBreakerService`](crate::CircuitBreakerService): the
    /// inner service's future `F`, polled in place under the request's permit (and the
    /// breaker's `timeout-duration`, if it has one), the fallback's future `G`, or a rejection.
    ///
    /// When the inner future finishes, its result is classified and recorded. Dropped before
    /// that, it gives the permit back and records nothing. `W` says how the inner service's
    /// errors become the service's ([`Wrap`] or [`Flatten`](crate::Flatten)).
    pub struct ResponseFuture<F, C, G, W = Wrap> {
        #[pin]
        kind: Kind<F, G>,
        classify: C,
        errors: PhantomData<fn() -> W>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, G> {
        Called {
            // Fields drop in this order: the inner future first, so that a cancelled request
            // holds its permit until everything the inner future owns is gone (as the core's
            // call future does).
            #[pin]
            fut: F,
            // Boxed: only a breaker with `timeout-duration` has one, and held in place it would
            // make every response future (and every move of one) several times larger.
            timer: Option<Pin<Box<CallTimeout>>>,
            // `None` once the result is recorded.
            permit: Option<OwnedPermit>,
        },
        Fallback {
            #[pin]
            fut: G,
        },
        Rejected {
            // `None` once returned.
            error: Option<CallNotPermitted>,
        },
    }
}

impl<F, C, G, W> ResponseFuture<F, C, G, W> {
    #[inline(always)]
    pub(crate) fn called(fut: F, permit: OwnedPermit, classify: C) -> Self {
        let timer = match permit.config().timeout_duration() {
            Some(_) => boxed_timer(&permit),
            None => None,
        };
        ResponseFuture {
            kind: Kind::Called {
                fut,
                timer,
                permit: Some(permit),
            },
            classify,
            errors: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn fallback(fut: G, classify: C) -> Self {
        ResponseFuture {
            kind: Kind::Fallback { fut },
            classify,
            errors: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn rejected(error: CallNotPermitted, classify: C) -> Self {
        ResponseFuture {
            kind: Kind::Rejected { error: Some(error) },
            classify,
            errors: PhantomData,
        }
    }
}

/// Whether the request's timeout has fired; if it has, the request is cancelled: the inner
/// future is not polled again, and is dropped with the response future. A failure that took at
/// least the timeout.
#[cold]
#[inline(never)]
fn poll_timer<T, E>(
    timer: &mut Pin<Box<CallTimeout>>,
    permit: &mut Option<OwnedPermit>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, CallError<E>>> {
    let Poll::Ready(limit) = timer.as_mut().poll_expired(cx) else {
        return Poll::Pending;
    };
    let permit = permit
        .take()
        .expect("a breaker's response future was polled after it completed");
    Poll::Ready(Err(CallError::TimedOut(permit.timed_out(limit))))
}

/// The request's timer, boxed (see `Kind::Called`); out of line, so the common case (no
/// timeout) stays small.
#[cold]
#[inline(never)]
fn boxed_timer(permit: &OwnedPermit) -> Option<Pin<Box<CallTimeout>>> {
    permit.start_timeout().map(Box::pin)
}

impl<F, C, G, W, T, E> Future for ResponseFuture<F, C, G, W>
where
    F: Future<Output = Result<T, E>>,
    G: Future<Output = Result<T, E>>,
    W: InnerError<E>,
    C: Classify<T, W::Inner>,
{
    type Output = Result<T, CallError<W::Inner>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.kind.project() {
            KindProj::Rejected { error } => {
                let error = error
                    .take()
                    .expect("a breaker's response future was polled after it completed");
                Poll::Ready(Err(CallError::Rejected(error)))
            }
            KindProj::Fallback { fut } => fut.poll(cx).map_err(W::convert),
            KindProj::Called { fut, timer, permit } => {
                let polled = match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
                    Ok(polled) => polled,
                    Err(panic) => {
                        // A panic of the inner future is a failure, and goes on.
                        if let Some(permit) = permit.take() {
                            permit.failure();
                        }
                        resume_unwind(panic)
                    }
                };
                if let Poll::Ready(result) = polled {
                    return Poll::Ready(match permit.take() {
                        Some(permit) => W::finish(permit, this.classify, result),
                        None => result.map_err(W::convert),
                    });
                }
                match timer {
                    Some(timer) => poll_timer(timer, permit, cx),
                    None => Poll::Pending,
                }
            }
        }
    }
}

impl<F, C, G, W> fmt::Debug for ResponseFuture<F, C, G, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ResponseFuture");
        match &self.kind {
            Kind::Called { permit, .. } => d.field("permit", permit),
            Kind::Fallback { .. } => d.field("fallback", &true),
            Kind::Rejected { error } => d.field("rejected", error),
        };
        d.finish_non_exhaustive()
    }
}
