//! [`CircuitBreakerLayer`]: wraps services in a [`CircuitBreakerService`].

use std::fmt;
use std::marker::PhantomData;

use tower_layer::Layer;

use crate::fallback::{FallbackService, NoFallback};
use crate::inner_error::{Flatten, Wrap};
use crate::select::PerKey;
use crate::service::CircuitBreakerService;
use breaker_core::CircuitBreaker;
use breaker_core::Classifier;
use breaker_core::Registry;

/// A [`Layer`] that protects a service with a circuit breaker, or a breaker per request key;
/// see the [module docs](crate).
///
/// Every service the layer wraps shares the layer's breakers.
#[derive(Clone)]
pub struct CircuitBreakerLayer<C = Classifier, B = CircuitBreaker, F = NoFallback, W = Wrap> {
    breakers: B,
    classify: C,
    fallback: F,
    errors: PhantomData<fn() -> W>,
}

impl CircuitBreakerLayer {
    /// A layer around `breaker`, counting every error as a failure (under the breaker's
    /// configured error kinds).
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breakers: breaker,
            classify: Classifier::new(),
            fallback: NoFallback,
            errors: PhantomData,
        }
    }

    /// A layer around `registry`'s breaker `name` (created with the configuration of that
    /// name, else `default`, if it does not exist yet).
    pub fn from_registry(registry: &Registry, name: &str) -> Self {
        CircuitBreakerLayer::new(registry.breaker(name))
    }
}

impl<K> CircuitBreakerLayer<Classifier, PerKey<K>> {
    /// A layer with a breaker per request key: `key` (a
    /// [`RequestKey`](crate::RequestKey), such as [`HostKey`](crate::HostKey),
    /// [`HeaderKey`](crate::HeaderKey) or a closure) picks the breaker from `registry`'s
    /// keyed group `name`, the same breakers as the attribute's `key = ...` under that name.
    /// See [`PerKey`] for how many breakers keys can make.
    pub fn per_key(registry: &Registry, name: &str, key: K) -> Self {
        CircuitBreakerLayer {
            breakers: PerKey::new(registry.keyed(name), key),
            classify: Classifier::new(),
            fallback: NoFallback,
            errors: PhantomData,
        }
    }
}

impl<C, B, F, W> CircuitBreakerLayer<C, B, F, W> {
    /// The same layer, classifying results with `classify` (for example
    /// [`HttpStatus`](crate::HttpStatus), or a [`Classifier`] with predicates), under the
    /// breaker's configured error kinds.
    pub fn classify<D>(self, classify: D) -> CircuitBreakerLayer<D, B, F, W> {
        CircuitBreakerLayer {
            breakers: self.breakers,
            classify,
            fallback: self.fallback,
            errors: PhantomData,
        }
    }

    /// The same layer, answering rejected requests with `fallback`, a service with the inner
    /// service's request, response and error types (see [`FallbackService`]).
    pub fn fallback<G>(self, fallback: G) -> CircuitBreakerLayer<C, B, FallbackService<G>, W> {
        CircuitBreakerLayer {
            breakers: self.breakers,
            classify: self.classify,
            fallback: FallbackService::new(fallback),
            errors: PhantomData,
        }
    }

    /// The same layer, for an inner service that answers with `CallError<E>` (a
    /// [`BulkheadLayer`](crate::BulkheadLayer)'s service, stacked inside this one): the
    /// layer's services answer with the same `CallError<E>`, not `CallError<CallError<E>>`,
    /// classify the inner `Result<T, E>` with the layer's classifier, and record a
    /// [`BulkheadFull`](breaker_core::BulkheadFull) as a failure (see [`Flatten`], and the
    /// [crate docs](crate#bulkheads)).
    pub fn flatten_errors(self) -> CircuitBreakerLayer<C, B, F, Flatten> {
        CircuitBreakerLayer {
            breakers: self.breakers,
            classify: self.classify,
            fallback: self.fallback,
            errors: PhantomData,
        }
    }

    /// What picks the breaker for each request: the [`CircuitBreaker`], or the [`PerKey`]
    /// group.
    pub fn breakers(&self) -> &B {
        &self.breakers
    }
}

impl<C, F, W> CircuitBreakerLayer<C, CircuitBreaker, F, W> {
    /// The breaker the layer's services share.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breakers
    }
}

impl<S, C: Clone, B: Clone, F: Clone, W> Layer<S> for CircuitBreakerLayer<C, B, F, W> {
    type Service = CircuitBreakerService<S, C, B, F, W>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService::with_parts(
            inner,
            self.breakers.clone(),
            self.classify.clone(),
            self.fallback.clone(),
        )
    }
}

impl<C, B: fmt::Debug, F, W> fmt::Debug for CircuitBreakerLayer<C, B, F, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}
