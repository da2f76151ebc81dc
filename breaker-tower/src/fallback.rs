//! What a [`CircuitBreakerService`](crate::CircuitBreakerService) does with a request
//! its breaker rejects: fail it ([`NoFallback`]) or hand it to another service
//! ([`FallbackService`]).

use std::fmt;
use std::future::{Future, Pending};
use std::task::{Context, Poll};

use tower_service::Service;

use breaker_core::CallNotPermitted;

/// The answer to a rejected request. Implemented by [`NoFallback`] and [`FallbackService`].
pub trait Fallback<Request, T, E> {
    /// The fallback's response future.
    type Future: Future<Output = Result<T, E>>;

    /// Whether the fallback can take a request; polled with the inner service's readiness, so
    /// that a rejected request always finds it ready.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), E>>;

    /// Answers `request`, which the breaker rejected with `rejected`; `Err(rejected)` fails
    /// the request with [`CallError::Rejected`](breaker_core::CallError::Rejected).
    fn call(
        &mut self,
        request: Request,
        rejected: CallNotPermitted,
    ) -> Result<Self::Future, CallNotPermitted>;
}

/// No fallback: a rejected request fails with
/// [`CallError::Rejected`](breaker_core::CallError::Rejected).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFallback;

impl<Request, T, E> Fallback<Request, T, E> for NoFallback {
    // Never made: `call` always declines.
    type Future = Pending<Result<T, E>>;

    #[inline]
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), E>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(
        &mut self,
        _: Request,
        rejected: CallNotPermitted,
    ) -> Result<Self::Future, CallNotPermitted> {
        Err(rejected)
    }
}

/// A service that answers the requests the breaker rejects (a cached answer, a degraded
/// response), set with
/// [`CircuitBreakerLayer::fallback`](crate::CircuitBreakerLayer::fallback).
///
/// It answers with the inner service's response and error types; its errors reach the caller
/// as [`CallError::Inner`](breaker_core::CallError::Inner) and are not recorded (the
/// breaker records what the protected service did, and it did nothing). Its readiness is part
/// of the protected service's: `poll_ready` is ready when both are.
#[derive(Clone)]
pub struct FallbackService<S> {
    service: S,
}

impl<S> FallbackService<S> {
    pub(crate) fn new(service: S) -> Self {
        FallbackService { service }
    }

    /// The fallback service.
    pub fn get_ref(&self) -> &S {
        &self.service
    }
}

impl<Request, S: Service<Request>> Fallback<Request, S::Response, S::Error> for FallbackService<S> {
    type Future = S::Future;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.service.poll_ready(cx)
    }

    #[inline]
    fn call(
        &mut self,
        request: Request,
        _: CallNotPermitted,
    ) -> Result<S::Future, CallNotPermitted> {
        Ok(self.service.call(request))
    }
}

impl<S: fmt::Debug> fmt::Debug for FallbackService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FallbackService")
            .field(&self.service)
            .finish()
    }
}
