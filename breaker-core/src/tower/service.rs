//! [`CircuitBreakerService`]: the service the layer wraps around another.

use std::fmt;
use std::task::{Context, Poll};

use tower_service::Service;

use crate::breaker::CircuitBreaker;
use crate::classify::{Classifier, Classify};
use crate::tower::error::BreakerError;
use crate::tower::future::ResponseFuture;

/// A [`Service`] that protects `S` with a [`CircuitBreaker`]; see the [module docs](crate::tower).
///
/// Cloning it clones the inner service and the breaker's handle: the clones share the breaker.
#[derive(Clone)]
pub struct CircuitBreakerService<S, C = Classifier> {
    inner: S,
    breaker: CircuitBreaker,
    classify: C,
}

impl<S> CircuitBreakerService<S> {
    /// Protects `inner` with `breaker`, counting every error as a failure (under the breaker's
    /// configured error kinds).
    pub fn new(inner: S, breaker: CircuitBreaker) -> Self {
        CircuitBreakerService {
            inner,
            breaker,
            classify: Classifier::new(),
        }
    }
}

impl<S, C> CircuitBreakerService<S, C> {
    /// The same service, classifying results with `classify` (under the breaker's configured
    /// error kinds).
    pub fn classify<D>(self, classify: D) -> CircuitBreakerService<S, D> {
        CircuitBreakerService {
            inner: self.inner,
            breaker: self.breaker,
            classify,
        }
    }

    /// The breaker that protects the service.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
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

impl<S, C, Request> Service<Request> for CircuitBreakerService<S, C>
where
    S: Service<Request>,
    S::Error: 'static,
    C: Classify<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BreakerError<S::Error>;
    type Future = ResponseFuture<S::Future, C>;

    /// Asks the inner service only: no permit is taken or held here (see the
    /// [module docs](crate::tower)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(BreakerError::Inner)
    }

    /// Asks the breaker for a permit: if granted, calls the inner service under it; if not,
    /// returns a future that fails at once with [`BreakerError::Rejected`].
    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match self.breaker.shared.acquire_owned() {
            Ok(permit) => {
                ResponseFuture::called(self.inner.call(request), permit, self.classify.clone())
            }
            Err(rejected) => ResponseFuture::rejected(rejected, self.classify.clone()),
        }
    }
}

impl<S: fmt::Debug, C> fmt::Debug for CircuitBreakerService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerService")
            .field("inner", &self.inner)
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}
