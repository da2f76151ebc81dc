//! [`CircuitBreakerLayer`]: wraps services in a [`CircuitBreakerService`].

use std::fmt;

use tower_layer::Layer;

use crate::fallback::{FallbackService, NoFallback};
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
pub struct CircuitBreakerLayer<C = Classifier, B = CircuitBreaker, F = NoFallback> {
    breakers: B,
    classify: C,
    fallback: F,
}

impl CircuitBreakerLayer {
    /// A layer around `breaker`, counting every error as a failure (under the breaker's
    /// configured error kinds).
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breakers: breaker,
            classify: Classifier::new(),
            fallback: NoFallback,
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
        }
    }
}

impl<C, B, F> CircuitBreakerLayer<C, B, F> {
    /// The same layer, classifying results with `classify` (for example
    /// [`HttpStatus`](crate::HttpStatus), or a [`Classifier`] with predicates), under the
    /// breaker's configured error kinds.
    pub fn classify<D>(self, classify: D) -> CircuitBreakerLayer<D, B, F> {
        CircuitBreakerLayer {
            breakers: self.breakers,
            classify,
            fallback: self.fallback,
        }
    }

    /// The same layer, answering rejected requests with `fallback`, a service with the inner
    /// service's request, response and error types (see [`FallbackService`]).
    pub fn fallback<G>(self, fallback: G) -> CircuitBreakerLayer<C, B, FallbackService<G>> {
        CircuitBreakerLayer {
            breakers: self.breakers,
            classify: self.classify,
            fallback: FallbackService::new(fallback),
        }
    }

    /// What picks the breaker for each request: the [`CircuitBreaker`], or the [`PerKey`]
    /// group.
    pub fn breakers(&self) -> &B {
        &self.breakers
    }
}

impl<C, F> CircuitBreakerLayer<C, CircuitBreaker, F> {
    /// The breaker the layer's services share.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breakers
    }
}

impl<S, C: Clone, B: Clone, F: Clone> Layer<S> for CircuitBreakerLayer<C, B, F> {
    type Service = CircuitBreakerService<S, C, B, F>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService::with_parts(
            inner,
            self.breakers.clone(),
            self.classify.clone(),
            self.fallback.clone(),
        )
    }
}

impl<C, B: fmt::Debug, F> fmt::Debug for CircuitBreakerLayer<C, B, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}
