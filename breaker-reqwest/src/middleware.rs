//! [`CircuitBreakerMiddleware`]: the middleware, and how it finds a request's breaker.

use std::fmt;
use std::sync::Arc;

use ::reqwest::{Request, Response};
use http::Extensions;
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::classify::StatusClassifier;
use crate::key::PerHost;
use breaker_core::CallError;
use breaker_core::CircuitBreaker;
use breaker_core::Classify;
use breaker_core::DescribeError;
use breaker_core::Keyed;
use breaker_core::Outcome;
use breaker_core::Registry;
use breaker_core::RequestKey;

/// A reqwest-middleware [`Middleware`] that sends each request through a circuit breaker; see
/// the [module docs](crate).
///
/// Cloning it gives another middleware on the same breakers.
#[derive(Clone)]
pub struct CircuitBreakerMiddleware<C = StatusClassifier> {
    target: Target,
    classify: C,
}

/// Which breaker a request goes through.
#[derive(Clone)]
enum Target {
    /// Every request, this one.
    One(CircuitBreaker),
    /// The breaker of the request's key in the group.
    Keyed { keyed: Keyed, key: Arc<dyn LookUp> },
}

/// A [`RequestKey`] with its key type erased, so that the middleware's type names only its
/// classifier.
trait LookUp: Send + Sync {
    fn breaker(&self, keyed: &Keyed, request: &Request) -> CircuitBreaker;
}

impl<K> LookUp for K
where
    K: RequestKey<Request> + Send + Sync,
{
    #[inline]
    fn breaker(&self, keyed: &Keyed, request: &Request) -> CircuitBreaker {
        keyed.get(&self.key(request))
    }
}

impl CircuitBreakerMiddleware {
    /// One breaker per `host:port` the client talks to (see [`PerHost`]): the keyed breakers
    /// `name[host:port]` of `registry`, configured by `name` (or by an instance entry
    /// `name[host:port]`), and evicted when idle as the registry's
    /// [`KeyedLimits`](breaker_core::KeyedLimits) say.
    ///
    /// Results are classified by [`StatusClassifier`] (5xx and errors are failures, 4xx
    /// ignored) until [`classify`](CircuitBreakerMiddleware::classify) says otherwise.
    pub fn per_host(registry: &Registry, name: &str) -> Self {
        CircuitBreakerMiddleware::keyed_by(registry, name, PerHost)
    }

    /// One breaker per key that `key` picks for a request: the keyed breakers `name[key]` of
    /// `registry`, configured by `name` (or by an instance entry `name[key]`).
    ///
    /// `key` is a [`RequestKey`], for example a closure `Fn(&reqwest::Request) -> K` with `K:
    /// Display`.
    pub fn keyed_by<K>(registry: &Registry, name: &str, key: K) -> Self
    where
        K: RequestKey<Request> + Send + Sync + 'static,
    {
        CircuitBreakerMiddleware {
            target: Target::Keyed {
                keyed: registry.keyed(name),
                key: Arc::new(key),
            },
            classify: StatusClassifier,
        }
    }

    /// One breaker, `breaker`, for every request, whatever its host.
    pub fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerMiddleware {
            target: Target::One(breaker),
            classify: StatusClassifier,
        }
    }
}

impl<C> CircuitBreakerMiddleware<C> {
    /// The same middleware, classifying each request's result with `classify`, under the
    /// breaker's configured `record-exceptions` and `ignore-exceptions`.
    ///
    /// `classify` is a [`Classify`] of `Result<reqwest::Response, reqwest_middleware::Error>`:
    /// for example a closure that decides a few cases and leaves the rest to
    /// [`StatusClassifier`].
    pub fn classify<D>(self, classify: D) -> CircuitBreakerMiddleware<D>
    where
        D: Classify<Response, Error>,
    {
        CircuitBreakerMiddleware {
            target: self.target,
            classify,
        }
    }

    /// The breaker `request` goes through: for a keyed middleware, its key's breaker, created
    /// if it has none yet (a lookup as a request's own, which keeps the breaker from being
    /// evicted as idle).
    pub fn breaker_for(&self, request: &Request) -> CircuitBreaker {
        match &self.target {
            Target::One(breaker) => breaker.clone(),
            Target::Keyed { keyed, key } => key.breaker(keyed, request),
        }
    }

    /// The group of keyed breakers, for a middleware made by
    /// [`per_host`](CircuitBreakerMiddleware::per_host) or
    /// [`keyed_by`](CircuitBreakerMiddleware::keyed_by).
    pub fn keyed(&self) -> Option<&Keyed> {
        match &self.target {
            Target::Keyed { keyed, .. } => Some(keyed),
            Target::One(_) => None,
        }
    }

    /// The one breaker, for a middleware made by [`new`](CircuitBreakerMiddleware::new).
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        match &self.target {
            Target::One(breaker) => Some(breaker),
            Target::Keyed { .. } => None,
        }
    }
}

#[async_trait::async_trait]
impl<C> Middleware for CircuitBreakerMiddleware<C>
where
    C: Classify<Response, Error> + Send + Sync + 'static,
{
    /// Sends the request down the chain if its breaker permits, under the breaker's async call
    /// (its `timeout-duration`, slow-call threshold, panic and cancellation handling), and
    /// records the result as classified. A rejected request is not sent: it fails with
    /// [`Error::Middleware`] holding a [`CallNotPermitted`](breaker_core::CallNotPermitted); a
    /// timed-out one with [`Error::Middleware`] holding a
    /// [`CallTimedOut`](breaker_core::CallTimedOut).
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        let breaker = self.breaker_for(&request);
        // The rest of the chain is started inside the call, so a rejected request builds none
        // of it.
        let sent = async move { next.run(request, extensions).await };
        match breaker
            .call_with(&WithErrorText(&self.classify), sent)
            .await
        {
            Ok(response) => Ok(response),
            Err(CallError::Inner(error)) => Err(error),
            Err(CallError::Rejected(rejected)) => Err(Error::middleware(rejected)),
            Err(CallError::TimedOut(timed_out)) => Err(Error::middleware(timed_out)),
            // A way of ending that a later breaker-core adds: passed on whole.
            Err(other) => Err(Error::middleware(other)),
        }
    }
}

/// The middleware's classification, describing a failed request's error by its `Display`
/// (`reqwest_middleware::Error`'s, which names the reqwest error) for the breaker's listeners
/// that asked for error texts, such as the operations surface's `errorMessage`.
struct WithErrorText<'a, C>(&'a C);

impl<C: Classify<Response, Error>> Classify<Response, Error> for WithErrorText<'_, C> {
    #[inline]
    fn classify(&self, result: &std::result::Result<Response, Error>) -> Outcome {
        self.0.classify(result)
    }

    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        self.0.applies_kinds()
    }

    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<Error>> {
        Some(<Error as fmt::Display>::fmt)
    }
}

impl<C> fmt::Debug for CircuitBreakerMiddleware<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("CircuitBreakerMiddleware");
        match &self.target {
            Target::One(breaker) => d.field("breaker", &breaker.name()),
            Target::Keyed { keyed, .. } => d.field("keyed", &keyed.name()),
        };
        d.finish_non_exhaustive()
    }
}
