//! [`BreakerError`]: the error of a [`CircuitBreakerService`](crate::CircuitBreakerService).

use std::error::Error;
use std::fmt;

use breaker_core::{CallNotPermitted, CallTimedOut};

/// The error of a [`CircuitBreakerService`](crate::CircuitBreakerService): the breaker
/// rejected the request, the request ran into the breaker's `timeout-duration`, or the inner
/// service failed.
///
/// Display and [`source`](Error::source) are the rejection's, the timeout's or the inner
/// error's own, so that wrapping a service in the layer does not change how its errors read.
/// For HTTP, [`http_response`](BreakerError::http_response) answers a rejection with 503
/// Service Unavailable (and `Retry-After` when the breaker knows its wait) and a timeout with
/// 504 Gateway Timeout.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerError<E> {
    /// The breaker did not permit the request; the inner service was not called.
    Rejected(CallNotPermitted),
    /// The request ran longer than the breaker's `timeout-duration`: its future was dropped
    /// and the call recorded as a failure.
    TimedOut(CallTimedOut),
    /// The inner service's own error (recorded as the classification says), or the fallback
    /// service's.
    Inner(E),
}

impl<E> BreakerError<E> {
    /// Whether the breaker rejected the request.
    pub fn is_rejected(&self) -> bool {
        matches!(self, BreakerError::Rejected(_))
    }

    /// Whether the request ran into the breaker's `timeout-duration`.
    pub fn is_timed_out(&self) -> bool {
        matches!(self, BreakerError::TimedOut(_))
    }

    /// The rejection, if the breaker rejected the request.
    pub fn rejected(&self) -> Option<&CallNotPermitted> {
        match self {
            BreakerError::Rejected(rejected) => Some(rejected),
            _ => None,
        }
    }

    /// The timeout, if the request ran into it.
    pub fn timed_out(&self) -> Option<&CallTimedOut> {
        match self {
            BreakerError::TimedOut(timed_out) => Some(timed_out),
            _ => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn inner(&self) -> Option<&E> {
        match self {
            BreakerError::Inner(error) => Some(error),
            _ => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            BreakerError::Inner(error) => Some(error),
            _ => None,
        }
    }

    /// The HTTP answer to a rejection or a timeout; `None` for the inner service's own error,
    /// which only the service knows how to answer.
    ///
    /// A rejection is 503 Service Unavailable, with `Retry-After` (whole seconds, rounded up)
    /// when the breaker is OPEN and so knows when it lets trial calls through again; a timeout
    /// is 504 Gateway Timeout. The body is the error's Display, as `text/plain`.
    ///
    /// ```
    /// use breaker_tower::BreakerError;
    /// use breaker_core::{Config, Outcome, Registry};
    /// use std::time::Duration;
    ///
    /// let registry = Registry::builder()
    ///     .default_config(Config::builder().wait_duration_in_open_state(Duration::from_secs(30)).build()?)
    ///     .build();
    /// let breaker = registry.breaker("inventory");
    /// breaker.transition_to(breaker_core::State::Open)?;
    /// let rejected = breaker.try_acquire().unwrap_err();
    ///
    /// let response: http::Response<String> =
    ///     BreakerError::<std::io::Error>::Rejected(rejected).http_response().unwrap();
    /// assert_eq!(response.status(), 503);
    /// assert_eq!(response.headers()["retry-after"], "30");
    /// # let _ = Outcome::Success;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn http_response<B: From<String>>(&self) -> Option<http::Response<B>> {
        let (status, retry_after, text) = match self {
            BreakerError::Rejected(rejected) => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                rejected.retry_after(),
                rejected.to_string(),
            ),
            BreakerError::TimedOut(timed_out) => (
                http::StatusCode::GATEWAY_TIMEOUT,
                None,
                timed_out.to_string(),
            ),
            BreakerError::Inner(_) => return None,
        };
        let mut response = http::Response::new(B::from(text));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        if let Some(wait) = retry_after {
            // Whole seconds, rounded up: a client that waits what it is told finds the wait
            // over (and never reads 0 while the breaker is still OPEN).
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        Some(response)
    }
}

impl<E> From<CallNotPermitted> for BreakerError<E> {
    fn from(rejected: CallNotPermitted) -> Self {
        BreakerError::Rejected(rejected)
    }
}

impl<E> From<CallTimedOut> for BreakerError<E> {
    fn from(timed_out: CallTimedOut) -> Self {
        BreakerError::TimedOut(timed_out)
    }
}

impl<E: fmt::Display> fmt::Display for BreakerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::Rejected(rejected) => rejected.fmt(f),
            BreakerError::TimedOut(timed_out) => timed_out.fmt(f),
            BreakerError::Inner(error) => error.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for BreakerError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BreakerError::Rejected(rejected) => rejected.source(),
            BreakerError::TimedOut(timed_out) => timed_out.source(),
            BreakerError::Inner(error) => error.source(),
        }
    }
}
