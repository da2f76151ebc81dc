//! [`RetryLayer`]: wraps services in a [`RetryService`].

use std::fmt;
use std::marker::PhantomData;

use tower_layer::Layer;

use super::classify::RetryClassifier;
use super::service::RetryService;
use crate::inner_error::{Flatten, Wrap};
use breaker_core::{Always, Classifier, Registry, Retry};

/// A [`Layer`] that sends failed requests again through a [`Retry`]; see the
/// [crate docs](crate#retries).
///
/// Every service the layer wraps (and every clone of one) shares the layer's retry: its
/// metrics, events and budget.
#[derive(Clone)]
pub struct RetryLayer<C = Classifier, P = Always, W = Wrap> {
    retry: Retry,
    classify: C,
    replayable: P,
    errors: PhantomData<fn() -> W>,
}

impl RetryLayer {
    /// A layer around `retry`: every request replayable (`Request: Clone`), every error a
    /// failure to retry (under the retry's configured error kinds), a breaker's rejection never
    /// retried unless configured (see [`RetryClassifier`]).
    pub fn new(retry: Retry) -> Self {
        RetryLayer {
            retry,
            classify: Classifier::new(),
            replayable: Always,
            errors: PhantomData,
        }
    }

    /// A layer around `registry`'s retry `name` (created with the configuration of that
    /// name, else the retry `default`, if it does not exist yet).
    pub fn from_registry(registry: &Registry, name: &str) -> Self {
        RetryLayer::new(registry.retry(name))
    }
}

impl<C, P, W> RetryLayer<C, P, W> {
    /// The same layer, classifying each attempt's `Result<Response, CallError<E>>` with
    /// `classify`: for HTTP, [`HttpStatus`](crate::HttpStatus) retries a 5xx response and an
    /// error (no response at all), and not a 4xx.
    pub fn classify<D>(self, classify: D) -> RetryLayer<D, P, W> {
        RetryLayer {
            retry: self.retry,
            classify,
            replayable: self.replayable,
            errors: PhantomData,
        }
    }

    /// The same layer, replaying only the requests `replayable` accepts (for HTTP,
    /// [`IdempotentMethod`](crate::IdempotentMethod); or any `Fn(&Request) -> bool`): the
    /// others are sent once and never retried.
    pub fn replay_if<Q>(self, replayable: Q) -> RetryLayer<C, Q, W> {
        RetryLayer {
            retry: self.retry,
            classify: self.classify,
            replayable,
            errors: PhantomData,
        }
    }

    /// The same layer, for an inner service that answers with `CallError<E>` (the breaker's
    /// layer with [`flatten_errors`](crate::CircuitBreakerLayer::flatten_errors), in Spring's
    /// order): the layer's services answer with the same `CallError<E>`, not
    /// `CallError<CallError<E>>`, and classify it as it is (see [`Flatten`]).
    pub fn flatten_errors(self) -> RetryLayer<C, P, Flatten> {
        RetryLayer {
            retry: self.retry,
            classify: self.classify,
            replayable: self.replayable,
            errors: PhantomData,
        }
    }

    /// The retry the layer's services share.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }
}

impl<S, C: Clone, P: Clone, W> Layer<S> for RetryLayer<C, P, W> {
    type Service = RetryService<S, C, P, W>;

    fn layer(&self, inner: S) -> Self::Service {
        let classify = RetryClassifier::new(self.classify.clone(), self.retry.config());
        RetryService::with_parts(inner, self.retry.clone(), classify, self.replayable.clone())
    }
}

impl<C, P, W> fmt::Debug for RetryLayer<C, P, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("retry", &self.retry.name())
            .finish_non_exhaustive()
    }
}
