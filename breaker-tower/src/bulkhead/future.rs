//! [`BulkheadFuture`]: the response of a [`BulkheadService`](crate::BulkheadService).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll, Waker};

use pin_project_lite::pin_project;
use tower_service::Service;

use breaker_core::bulkhead::AcquireOwned;
use breaker_core::{Bulkhead, BulkheadFull, CallError, OwnedBulkheadPermit};

pin_project! {
    /// The response of a [`BulkheadService`](crate::BulkheadService): the inner service's
    /// future, polled in place while the request holds a place of the bulkhead; the wait for a
    /// place (a bulkhead with a `max-wait-duration`); or a refusal.
    ///
    /// The place is given back when the inner future finishes, or when this future is dropped
    /// (after the inner future: a cancelled request holds its place until everything the inner
    /// future owns is gone). Dropped while it waits, the request leaves the bulkhead's queue
    /// and the inner service is never called.
    pub struct BulkheadFuture<S, Request>
    where
        S: Service<Request>,
    {
        #[pin]
        state: State<S, Request>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S, Request>
    where
        S: Service<Request>,
    {
        Called {
            // Dropped before the permit (fields drop in order).
            #[pin]
            fut: S::Future,
            // `None` once the inner future has finished and the place is given back.
            permit: Option<OwnedBulkheadPermit>,
        },
        // Boxed: only a request that finds the bulkhead full and may wait has one, and it
        // holds the request and the inner service, which would make every response future as
        // large.
        Waiting {
            wait: Box<Wait<S, Request>>,
        },
        Refused {
            // `None` once returned.
            error: Option<BulkheadFull>,
        },
    }
}

/// A place or a refusal now, or, when the bulkhead has none free and a `max-wait-duration`, the
/// wait of a request that joined its queue.
#[inline(always)]
fn acquire_now(
    bulkhead: &Bulkhead,
) -> Result<Result<OwnedBulkheadPermit, BulkheadFull>, AcquireOwned> {
    // Without a wait, the answer is now: `try_acquire_owned` is the cheapest way to it (no
    // handle on the bulkhead beyond the permit's).
    if bulkhead.max_wait_duration().is_zero() {
        return Ok(bulkhead.try_acquire_owned());
    }
    // With one, the wait is polled once here, with no waker: a free place is taken at once,
    // and only a request that joined the queue goes on waiting, its wait polled with the
    // caller's waker from then on (a place handed to it meanwhile is found at that poll).
    let mut acquire = bulkhead.acquire_owned();
    match Pin::new(&mut acquire).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(acquired) => Ok(acquired),
        Poll::Pending => Err(acquire),
    }
}

/// A request waiting for a place: the bulkhead's wait, the inner service made ready for the
/// request, and the request.
struct Wait<S, Request> {
    acquire: AcquireOwned,
    service: S,
    // `None` once the inner service is called.
    request: Option<Request>,
}

impl<S: Clone, Request> Wait<S, Request> {
    /// The wait of `request`: it takes the ready `inner` along and leaves a clone in its stead.
    #[cold]
    #[inline(never)]
    fn new(acquire: AcquireOwned, inner: &mut S, request: Request) -> Box<Self> {
        let clone = inner.clone();
        Box::new(Wait {
            acquire,
            service: std::mem::replace(inner, clone),
            request: Some(request),
        })
    }
}

impl<S, Request> BulkheadFuture<S, Request>
where
    S: Service<Request>,
{
    /// `request`'s way through `bulkhead` to `inner` (made ready by the caller): called at
    /// once under a place, refused at once, or waiting for a place.
    #[inline]
    pub(crate) fn start(bulkhead: &Bulkhead, inner: &mut S, request: Request) -> Self
    where
        S: Clone,
    {
        let state = match acquire_now(bulkhead) {
            Ok(Ok(permit)) => State::Called {
                fut: inner.call(request),
                permit: Some(permit),
            },
            Ok(Err(full)) => State::Refused { error: Some(full) },
            Err(acquire) => State::Waiting {
                wait: Wait::new(acquire, inner, request),
            },
        };
        BulkheadFuture { state }
    }
}

impl<S, Request> Future for BulkheadFuture<S, Request>
where
    S: Service<Request>,
{
    type Output = Result<S::Response, CallError<S::Error>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Called { fut, permit } => {
                    let output = ready!(fut.poll(cx));
                    // The place is free as soon as the inner call is over.
                    drop(permit.take());
                    return Poll::Ready(output.map_err(CallError::Inner));
                }
                StateProj::Refused { error } => {
                    let full = error
                        .take()
                        .expect("a bulkhead's response future was polled after it completed");
                    return Poll::Ready(Err(CallError::BulkheadFull(full)));
                }
                StateProj::Waiting { wait } => {
                    let next = match ready!(Pin::new(&mut wait.acquire).poll(cx)) {
                        Ok(permit) => {
                            let request = wait.request.take().expect(
                                "a bulkhead's response future was polled after it completed",
                            );
                            State::Called {
                                fut: wait.service.call(request),
                                permit: Some(permit),
                            }
                        }
                        Err(full) => State::Refused { error: Some(full) },
                    };
                    state.set(next);
                }
            }
        }
    }
}

impl<S, Request> fmt::Debug for BulkheadFuture<S, Request>
where
    S: Service<Request>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Called {
                permit: Some(_), ..
            } => "called",
            State::Called { permit: None, .. } => "finished",
            State::Waiting { .. } => "waiting",
            State::Refused { .. } => "refused",
        };
        f.debug_struct("BulkheadFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
