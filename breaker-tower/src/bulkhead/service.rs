//! [`BulkheadService`]: the service the bulkhead's layer wraps around another.

use std::fmt;
use std::task::{Context, Poll};

use tower_service::Service;

use super::future::BulkheadFuture;
use breaker_core::{Bulkhead, CallError};

/// A [`Service`] that lets at most the bulkhead's `max-concurrent-calls` requests run in `S` at
/// once; see the [crate docs](crate#bulkheads). Usually built by a
/// [`BulkheadLayer`](crate::BulkheadLayer).
///
/// A request takes a place when the service is called and holds it in its
/// [`BulkheadFuture`] until the inner service's future finishes or is dropped. The inner
/// service is called only once the request holds a place: a refused request never reaches it.
///
/// `S: Clone`: a request that waits for a place (a bulkhead with a `max-wait-duration`) takes
/// the inner service that `poll_ready` made ready along with it, to call it once a place is
/// free, and leaves a clone in this service for the next request.
///
/// Cloning it clones the inner service and the bulkhead's handle: the clones share the
/// bulkhead's places.
#[derive(Clone)]
pub struct BulkheadService<S> {
    inner: S,
    bulkhead: Bulkhead,
}

impl<S> BulkheadService<S> {
    /// Limits the requests that run in `inner` at once with `bulkhead`.
    pub fn new(inner: S, bulkhead: Bulkhead) -> Self {
        BulkheadService { inner, bulkhead }
    }

    /// The bulkhead whose places the requests take.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for BulkheadService<S>
where
    S: Service<Request> + Clone,
{
    type Response = S::Response;
    type Error = CallError<S::Error>;
    type Future = BulkheadFuture<S, Request>;

    /// Ready when the inner service is: no place is taken or waited for here, so a full
    /// bulkhead never makes a caller wait in `poll_ready` (see the
    /// [crate docs](crate#readiness-of-the-bulkheads-service)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(CallError::Inner)
    }

    /// Takes a place for `request`: with one, calls the inner service; with none and no
    /// `max-wait-duration`, returns a future that fails at once with
    /// [`CallError::BulkheadFull`]; with a wait, returns a future that waits for a place up to
    /// that long, then calls the inner service or fails.
    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        BulkheadFuture::start(&self.bulkhead, &mut self.inner, request)
    }
}

impl<S: fmt::Debug> fmt::Debug for BulkheadService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadService")
            .field("inner", &self.inner)
            .field("bulkhead", &self.bulkhead.name())
            .finish()
    }
}
