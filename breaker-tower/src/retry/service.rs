//! [`RetryService`]: the service the retry's layer wraps around another.

use std::fmt;
use std::future::poll_fn;
use std::marker::PhantomData;
use std::task::{Context, Poll};

use tower_service::Service;

use super::classify::RetryClassifier;
use super::future::RetryFuture;
use crate::inner_error::{Flatten, InnerError, Wrap};
use breaker_core::{Always, CallError, Classifier, Classify, Predicate, Retry};

/// A [`Service`] that sends a failed request again, as its [`Retry`] says; see the
/// [crate docs](crate#retries). Usually built by a [`RetryLayer`](crate::RetryLayer).
///
/// `C` classifies each attempt's `Result<S::Response, CallError<E>>` (a failure is retried),
/// under the rule of [`RetryClassifier`] for a breaker's rejections; `P` says which requests
/// may be sent more than once ([`Always`], [`IdempotentMethod`](crate::IdempotentMethod), or
/// any `Fn(&Request) -> bool`); `W` says how the inner service's errors become the service's
/// ([`Wrap`]: `CallError<S::Error>`; [`Flatten`], for an inner service that answers with a
/// `CallError<E>`: the same `CallError<E>`).
///
/// `S: Clone` and `Request: Clone`: a replayed request is cloned once when it is called, and
/// each attempt after the first calls a clone of the inner service, made ready first.
///
/// Cloning it clones the inner service and the retry's handle: the clones share the retry's
/// metrics and budget.
#[derive(Clone)]
pub struct RetryService<S, C = Classifier, P = Always, W = Wrap> {
    inner: S,
    retry: Retry,
    classify: RetryClassifier<C>,
    replayable: P,
    errors: PhantomData<fn() -> W>,
}

impl<S> RetryService<S> {
    /// Retries `inner`'s failed requests with `retry`, every request replayable and every
    /// error a failure (under the retry's configured error kinds).
    pub fn new(inner: S, retry: Retry) -> Self {
        let classify = RetryClassifier::new(Classifier::new(), retry.config());
        RetryService::with_parts(inner, retry, classify, Always)
    }
}

impl<S, C, P, W> RetryService<S, C, P, W> {
    pub(crate) fn with_parts(
        inner: S,
        retry: Retry,
        classify: RetryClassifier<C>,
        replayable: P,
    ) -> Self {
        RetryService {
            inner,
            retry,
            classify,
            replayable,
            errors: PhantomData,
        }
    }

    /// The same service, classifying each attempt with `classify` (for example
    /// [`HttpStatus`](crate::HttpStatus): a 5xx response and an error are retried, a 4xx is
    /// not).
    pub fn classify<D>(self, classify: D) -> RetryService<S, D, P, W> {
        let classify = RetryClassifier::new(classify, self.retry.config());
        RetryService::with_parts(self.inner, self.retry, classify, self.replayable)
    }

    /// The same service, replaying only the requests `replayable` accepts; the others are
    /// sent once and never retried.
    pub fn replay_if<Q>(self, replayable: Q) -> RetryService<S, C, Q, W> {
        RetryService::with_parts(self.inner, self.retry, self.classify, replayable)
    }

    /// The same service over an inner service that answers with `CallError<E>` (a
    /// [`CircuitBreakerService`](crate::CircuitBreakerService) with
    /// [`flatten_errors`](crate::CircuitBreakerService::flatten_errors)): it answers with the
    /// same `CallError<E>`; see [`Flatten`].
    pub fn flatten_errors(self) -> RetryService<S, C, P, Flatten> {
        RetryService::with_parts(self.inner, self.retry, self.classify, self.replayable)
    }

    /// The retry the requests go through.
    pub fn retry(&self) -> &Retry {
        &self.retry
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

impl<S, C, P, W, Request> Service<Request> for RetryService<S, C, P, W>
where
    S: Service<Request> + Clone + Send + 'static,
    S::Response: Send + 'static,
    S::Future: Send + 'static,
    W: InnerError<S::Error> + 'static,
    W::Inner: Send + 'static,
    C: Classify<S::Response, CallError<W::Inner>> + Clone + Send + Sync + 'static,
    P: Predicate<Request>,
    Request: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = CallError<W::Inner>;
    type Future = RetryFuture<S::Future, S::Response, W::Inner, W>;

    /// Ready when the inner service is. Each attempt after the first waits for a clone of the
    /// inner service to be ready before it calls it.
    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(W::convert)
    }

    /// Sends a request that cannot be replayed once; a replayable one through the retry, its
    /// first attempt on the inner service `poll_ready` made ready.
    fn call(&mut self, request: Request) -> Self::Future {
        if !self.replayable.test(&request) {
            return RetryFuture::once(self.inner.call(request));
        }
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let attempts =
            attempts::<S, C, W, Request>(self.retry.clone(), self.classify.clone(), ready, request);
        RetryFuture::attempts(Box::pin(attempts))
    }
}

/// The retry's call over `request`: the first attempt on `ready`, each later one on a clone of
/// it, made ready first; each with its own clone of the request.
async fn attempts<S, C, W, Request>(
    retry: Retry,
    classify: RetryClassifier<C>,
    ready: S,
    request: Request,
) -> Result<S::Response, CallError<W::Inner>>
where
    S: Service<Request> + Clone,
    W: InnerError<S::Error>,
    W::Inner: 'static,
    C: Classify<S::Response, CallError<W::Inner>>,
    Request: Clone,
{
    let template = ready.clone();
    let mut ready = Some(ready);
    // Owns what it clones from, so that the call's future needs `S: Send`, not `S: Sync`.
    let make = move || {
        let service = ready.take().ok_or_else(|| template.clone());
        attempt::<S, W, Request>(service, request.clone())
    };
    retry
        .call_with(&classify, make)
        .await
        .map_err(CallError::flatten)
}

/// One attempt: `service` (`Ok`: made ready already; `Err`: to be made ready first) called with
/// `request`.
async fn attempt<S, W, Request>(
    service: Result<S, S>,
    request: Request,
) -> Result<S::Response, CallError<W::Inner>>
where
    S: Service<Request>,
    W: InnerError<S::Error>,
{
    let mut service = match service {
        Ok(ready) => ready,
        Err(mut service) => {
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(W::convert)?;
            service
        }
    };
    service.call(request).await.map_err(W::convert)
}

impl<S: fmt::Debug, C, P, W> fmt::Debug for RetryService<S, C, P, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryService")
            .field("inner", &self.inner)
            .field("retry", &self.retry.name())
            .finish_non_exhaustive()
    }
}
