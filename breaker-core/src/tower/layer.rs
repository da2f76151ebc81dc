//! [`CircuitBreakerLayer`]: wraps services in a [`CircuitBreakerService`].

use std::fmt;

use tower_layer::Layer;

use crate::breaker::CircuitBreaker;
use crate::classify::Classifier;
use crate::registry::Registry;
use crate::tower::service::CircuitBreakerService;

/// A [`Layer`] that protects a service with a [`CircuitBreaker`]; see the
/// [module docs](crate::tower).
///
/// Every service the layer wraps shares the one breaker.
#[derive(Clone)]
pub struct CircuitBreakerLayer<C = Classifier> {
    breaker: CircuitBreaker,
    classify: C,
}

impl CircuitBreakerLayer {
    /// A layer around `breaker`, counting every error as a failure (under the breaker's
    /// configured error kinds).
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breaker,
            classify: Classifier::new(),
        }
    }

    /// A layer around `registry`'s breaker `name` (created with the configuration of that
    /// name, else `default`, if it does not exist yet).
    pub fn from_registry(registry: &Registry, name: &str) -> Self {
        CircuitBreakerLayer::new(registry.breaker(name))
    }
}

impl<C> CircuitBreakerLayer<C> {
    /// The same layer, classifying results with `classify` (for example
    /// [`HttpStatus`](crate::tower::HttpStatus), or a [`Classifier`] with predicates), under the
    /// breaker's configured error kinds.
    pub fn classify<D>(self, classify: D) -> CircuitBreakerLayer<D> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classify,
        }
    }

    /// The breaker the layer's services share.
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

impl<S, C: Clone> Layer<S> for CircuitBreakerLayer<C> {
    type Service = CircuitBreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService::new(inner, self.breaker.clone()).classify(self.classify.clone())
    }
}

impl<C> fmt::Debug for CircuitBreakerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}
