//! [`ResponseFuture`]: the response of a [`CircuitBreakerService`](crate::tower::CircuitBreakerService).

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use crate::call::permit::OwnedPermit;
use crate::classify::Classify;
use crate::error::CallNotPermitted;
use crate::tower::error::BreakerError;

pin_project! {
    /// The response of a [`CircuitBreakerService`](crate::tower::CircuitBreakerService): the
    /// inner service's future, polled in place under the request's permit, or a rejection.
    ///
    /// When the inner future finishes, its result is classified and recorded. Dropped before
    /// that, it gives the permit back and records nothing.
    pub struct ResponseFuture<F, C> {
        #[pin]
        kind: Kind<F>,
        classify: C,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Called {
            // Fields drop in this order: the inner future first, so that a cancelled request
            // holds its permit until everything the inner future owns is gone (as the core's
            // call future does).
            #[pin]
            fut: F,
            // `None` once the result is recorded.
            permit: Option<OwnedPermit>,
        },
        Rejected {
            // `None` once returned.
            error: Option<CallNotPermitted>,
        },
    }
}

impl<F, C> ResponseFuture<F, C> {
    #[inline]
    pub(crate) fn called(fut: F, permit: OwnedPermit, classify: C) -> Self {
        ResponseFuture {
            kind: Kind::Called {
                fut,
                permit: Some(permit),
            },
            classify,
        }
    }

    #[inline]
    pub(crate) fn rejected(error: CallNotPermitted, classify: C) -> Self {
        ResponseFuture {
            kind: Kind::Rejected { error: Some(error) },
            classify,
        }
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    C: Classify<T, E>,
    E: 'static,
{
    type Output = Result<T, BreakerError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.kind.project() {
            KindProj::Rejected { error } => {
                let error = error
                    .take()
                    .expect("a breaker's response future was polled after it completed");
                Poll::Ready(Err(BreakerError::Rejected(error)))
            }
            KindProj::Called { fut, permit } => {
                let polled = match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
                    Ok(polled) => polled,
                    Err(panic) => match permit.take() {
                        Some(permit) => permit.panicked(panic),
                        None => resume_unwind(panic),
                    },
                };
                let result = ready!(polled);
                if let Some(permit) = permit.take() {
                    let outcome = permit.config().classify(this.classify, &result);
                    permit.finish(outcome);
                }
                Poll::Ready(result.map_err(BreakerError::Inner))
            }
        }
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ResponseFuture");
        match &self.kind {
            Kind::Called { permit, .. } => d.field("permit", permit),
            Kind::Rejected { error } => d.field("rejected", error),
        };
        d.finish_non_exhaustive()
    }
}
