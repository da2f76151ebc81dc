//! [`CircuitBreakerService`]: the service the layer wraps around another.

use std::fmt;
use std::marker::PhantomData;
use std::task::{ready, Context, Poll};

use tower_service::Service;

use crate::fallback::{Fallback, FallbackService, NoFallback};
use crate::future::ResponseFuture;
use crate::inner_error::{Flatten, InnerError, Wrap};
use crate::select::Breakers;
use breaker_core::CircuitBreaker;
use breaker_core::{CallError, Classifier, Classify};

/// A [`Service`] that protects `S` with a circuit breaker; see the [module docs](crate).
///
/// `B` picks the breaker for each request ([`CircuitBreaker`]: one for all, or
/// [`PerKey`](crate::PerKey)), `C` classifies results, `F` answers rejected requests
/// ([`NoFallback`] or a [`FallbackService`]), `W` says how the inner service's errors become
/// the service's ([`Wrap`]: `CallError<S::Error>`; [`Flatten`], for an inner service that
/// answers with a `CallError<E>`: the same `CallError<E>`). Usually built by a
/// [`CircuitBreakerLayer`](crate::CircuitBreakerLayer).
///
/// Cloning it clones the inner service and the breakers' handles: the clones share the
/// breakers.
#[derive(Clone)]
pub struct CircuitBreakerService<S, C = Classifier, B = CircuitBreaker, F = NoFallback, W = Wrap> {
    inner: S,
    breakers: B,
    classify: C,
    fallback: F,
    errors: PhantomData<fn() -> W>,
}

impl<S> CircuitBreakerService<S> {
    /// Protects `inner` with `breaker`, counting every error as a failure (under the breaker's
    /// configured error kinds).
    pub fn new(inner: S, breaker: CircuitBreaker) -> Self {
        CircuitBreakerService::with_parts(inner, breaker, Classifier::new(), NoFallback)
    }
}

impl<S, C, B, F, W> CircuitBreakerService<S, C, B, F, W> {
    pub(crate) fn with_parts(inner: S, breakers: B, classify: C, fallback: F) -> Self {
        CircuitBreakerService {
            inner,
            breakers,
            classify,
            fallback,
            errors: PhantomData,
        }
    }

    /// The same service, classifying results with `classify` (under the breaker's configured
    /// error kinds).
    pub fn classify<D>(self, classify: D) -> CircuitBreakerService<S, D, B, F, W> {
        CircuitBreakerService::with_parts(self.inner, self.breakers, classify, self.fallback)
    }

    /// The same service, answering rejected requests with `fallback` (see
    /// [`FallbackService`]).
    pub fn fallback<G>(self, fallback: G) -> CircuitBreakerService<S, C, B, FallbackService<G>, W> {
        let fallback = FallbackService::new(fallback);
        CircuitBreakerService::with_parts(self.inner, self.breakers, self.classify, fallback)
    }

    /// The same service over an inner service that answers with `CallError<E>` (a
    /// [`BulkheadService`](crate::BulkheadService)): it answers with the same `CallError<E>`
    /// and records the inner service's refusals as failures; see [`Flatten`].
    pub fn flatten_errors(self) -> CircuitBreakerService<S, C, B, F, Flatten> {
        CircuitBreakerService::with_parts(self.inner, self.breakers, self.classify, self.fallback)
    }

    /// What picks the breaker for each request: the [`CircuitBreaker`], or the
    /// [`PerKey`](crate::PerKey) group.
    pub fn breakers(&self) -> &B {
        &self.breakers
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

impl<S, C, F, W> CircuitBreakerService<S, C, CircuitBreaker, F, W> {
    /// The breaker that protects the service.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breakers
    }
}

impl<S, C, B, F, W, Request> Service<Request> for CircuitBreakerService<S, C, B, F, W>
where
    S: Service<Request>,
    W: InnerError<S::Error>,
    C: Classify<S::Response, W::Inner> + Clone,
    B: Breakers<Request>,
    F: Fallback<Request, S::Response, S::Error>,
{
    type Response = S::Response;
    type Error = CallError<W::Inner>;
    type Future = ResponseFuture<S::Future, C, F::Future, W>;

    /// Ready when the inner service is (and the fallback, if there is one): no permit is taken
    /// or held here (see the [module docs](crate)).
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        ready!(self.inner.poll_ready(cx)).map_err(W::convert)?;
        self.fallback.poll_ready(cx).map_err(W::convert)
    }

    /// Asks the request's breaker for a permit: if granted, calls the inner service under it;
    /// if not, hands the request to the fallback, or returns a future that fails at once with
    /// [`CallError::Rejected`].
    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        let acquired = self
            .breakers
            .with_breaker(&request, |breaker| breaker.try_acquire_owned());
        match acquired {
            Ok(permit) => {
                ResponseFuture::called(self.inner.call(request), permit, self.classify.clone())
            }
            Err(rejected) => match self.fallback.call(request, rejected) {
                Ok(fut) => ResponseFuture::fallback(fut, self.classify.clone()),
                Err(rejected) => ResponseFuture::rejected(rejected, self.classify.clone()),
            },
        }
    }
}

impl<S: fmt::Debug, C, B: fmt::Debug, F, W> fmt::Debug for CircuitBreakerService<S, C, B, F, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerService")
            .field("inner", &self.inner)
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}
