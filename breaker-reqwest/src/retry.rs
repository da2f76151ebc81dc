//! [`RetryMiddleware`]: failed requests sent again, through a [`Retry`].

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use ::reqwest::{Method, Request, Response};
use http::Extensions;
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::classify::StatusClassifier;
use crate::error::rejected;
use breaker_core::{CallError, Classify, Outcome, Registry, Retry, RetryConfig};

/// The methods replayed by default: the idempotent ones (RFC 9110, section 9.2.2).
const IDEMPOTENT: [Method; 6] = [
    Method::GET,
    Method::HEAD,
    Method::OPTIONS,
    Method::PUT,
    Method::DELETE,
    Method::TRACE,
];

/// A reqwest-middleware [`Middleware`] that sends a failed request again, as its [`Retry`]
/// says (`max-attempts`, the waits between attempts, the budget); see the
/// [crate docs](crate#retries).
///
/// Cloning it gives another middleware on the same retry (its metrics, events and budget).
#[derive(Clone)]
pub struct RetryMiddleware<C = StatusClassifier> {
    retry: Retry,
    classify: C,
    methods: Arc<[Method]>,
}

impl RetryMiddleware {
    /// Retries with `retry`: requests with an idempotent method (GET, HEAD, OPTIONS, PUT,
    /// DELETE, TRACE) and a body that can be copied, on a 5xx response or an error, as
    /// [`StatusClassifier`] classifies them.
    pub fn new(retry: Retry) -> Self {
        RetryMiddleware {
            retry,
            classify: StatusClassifier,
            methods: Arc::new(IDEMPOTENT),
        }
    }

    /// Retries with `registry`'s retry `name` (created with the configuration of that name,
    /// else the retry `default`, if it does not exist yet); see [`new`](RetryMiddleware::new).
    pub fn from_registry(registry: &Registry, name: &str) -> Self {
        RetryMiddleware::new(registry.retry(name))
    }
}

impl<C> RetryMiddleware<C> {
    /// The same middleware, classifying each attempt's result with `classify` (a `Failure` is
    /// retried, an `Ignored` error ends the request, a `Success` ends it), under the retry's
    /// configured `retry-exceptions` and `ignore-exceptions`.
    pub fn classify<D>(self, classify: D) -> RetryMiddleware<D>
    where
        D: Classify<Response, Error>,
    {
        RetryMiddleware {
            retry: self.retry,
            classify,
            methods: self.methods,
        }
    }

    /// The same middleware, replaying requests with one of `methods` only (in place of the
    /// idempotent six): a request with any other method is sent once and never retried.
    pub fn methods<I>(self, methods: I) -> Self
    where
        I: IntoIterator<Item = Method>,
    {
        RetryMiddleware {
            methods: methods.into_iter().collect(),
            ..self
        }
    }

    /// The retry the requests go through.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }

    /// Whether `request` goes through the retry: its method is one the middleware replays and
    /// its body can be copied (none, or one given as bytes; a streaming body cannot).
    pub fn replays(&self, request: &Request) -> bool {
        self.replays_method(request.method())
            && request.body().is_none_or(|body| body.as_bytes().is_some())
    }

    fn replays_method(&self, method: &Method) -> bool {
        self.methods.iter().any(|replayed| replayed == method)
    }
}

/// How the middleware classifies an attempt: its classifier `code`, under the retry's
/// configured kinds, which see a breaker middleware's rejection (further down the chain) as
/// the [`CallNotPermitted`](breaker_core::CallNotPermitted) it holds and any other error as
/// the request's own.
struct Attempts<'a, C> {
    code: &'a C,
    config: &'a RetryConfig,
}

impl<C: Classify<Response, Error>> Classify<Response, Error> for Attempts<'_, C> {
    fn classify(&self, result: &std::result::Result<Response, Error>) -> Outcome {
        let code = self.code.classify(result);
        let Err(error) = result else {
            return code;
        };
        match rejected(error) {
            // Never retried unless `retry-exceptions` names it: the breaker is OPEN, and
            // asking again at once only adds the load it was opened to keep away.
            Some(_) if self.config.retry_exceptions().is_empty() => Outcome::Ignored,
            Some(rejected) => self.config.classify_error(rejected, Outcome::Failure),
            None => self.config.classify_error(error, code),
        }
    }

    /// The kinds were applied above, to the rejection inside the error where there is one.
    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        true
    }
}

#[async_trait::async_trait]
impl<C> Middleware for RetryMiddleware<C>
where
    C: Classify<Response, Error> + Send + Sync + 'static,
{
    /// Sends a request the middleware replays (see [`replays`](RetryMiddleware::replays))
    /// down the chain through the retry: each attempt with a copy of the request (made by
    /// [`Request::try_clone`]) and the same extensions. Any other request goes down the chain
    /// once. Attempts used up end with the last attempt's error, or its response (a 5xx, given
    /// back as a response); with `fail-after-max-attempts`, a retried response ends as
    /// [`Error::Middleware`] holding a [`MaxRetriesExceeded`](breaker_core::MaxRetriesExceeded).
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        let spare = match self.replays_method(request.method()) {
            true => request.try_clone(),
            false => None,
        };
        let Some(spare) = spare else {
            return next.run(request, extensions).await;
        };
        // Each attempt takes the extensions for as long as it runs and puts them back, so that
        // what the chain adds to them reaches the caller.
        let slot = Mutex::new(std::mem::take(extensions));
        let mut first = Some(request);
        let make = || {
            let request = first.take().or_else(|| spare.try_clone());
            let next = next.clone();
            let slot = &slot;
            async move {
                let Some(request) = request else {
                    return Err(Error::middleware(std::io::Error::other(
                        "the request's body could not be copied for another attempt",
                    )));
                };
                let mut extensions = std::mem::take(&mut *lock(slot));
                let result = next.run(request, &mut extensions).await;
                *lock(slot) = extensions;
                result
            }
        };
        let classify = Attempts {
            code: &self.classify,
            config: self.retry.config(),
        };
        let result = self.retry.call_with(&classify, make).await;
        *extensions = slot.into_inner().unwrap_or_else(PoisonError::into_inner);
        match result {
            Ok(response) => Ok(response),
            Err(CallError::Inner(error)) => Err(error),
            Err(CallError::RetriesExhausted(exhausted)) => Err(Error::middleware(exhausted)),
            // A way of ending that a later breaker-core adds: passed on whole.
            Err(other) => Err(Error::middleware(other)),
        }
    }
}

fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<C> fmt::Debug for RetryMiddleware<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryMiddleware")
            .field("retry", &self.retry.name())
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}
