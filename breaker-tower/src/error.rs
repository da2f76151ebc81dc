//! The errors of a [`CircuitBreakerService`](crate::CircuitBreakerService): the core's
//! [`CallError`], and [`ErrorResponse`], its HTTP answer.

use breaker_core::CallError;

/// The HTTP answer to a breaker's error, for a service behind the layer: implemented for the
/// service's error, [`CallError`].
///
/// A rejection ([`CallError::Rejected`]) is 503 Service Unavailable, with `Retry-After` (whole
/// seconds, rounded up) when the breaker is OPEN and so knows when it lets trial calls through
/// again; a bulkhead's refusal ([`CallError::BulkheadFull`]) is 503 too, without
/// `Retry-After`; a timeout ([`CallError::TimedOut`]) is 504 Gateway Timeout; retries used up
/// on responses the retry counts as failures ([`CallError::RetriesExhausted`], with
/// `fail-after-max-attempts`) are 502 Bad Gateway: the upstream answered every attempt, and
/// every answer was bad, which says nothing about this service's own load (503 would tell
/// clients to back off from it). The body is the error's
/// Display, as `text/plain`. The inner service's own error ([`CallError::Inner`]) has no
/// answer here (`None`): only the service knows how to answer it.
///
/// ```
/// use breaker_core::{CallError, Config, Registry, State};
/// use breaker_tower::ErrorResponse;
/// use std::time::Duration;
///
/// let registry = Registry::builder()
///     .default_config(Config::builder().wait_duration_in_open_state(Duration::from_secs(30)).build()?)
///     .build();
/// let breaker = registry.breaker("inventory");
/// breaker.transition_to(State::Open)?;
/// let rejected = breaker.try_acquire().unwrap_err();
///
/// let response: http::Response<String> =
///     CallError::<std::io::Error>::Rejected(rejected).http_response().unwrap();
/// assert_eq!(response.status(), 503);
/// assert_eq!(response.headers()["retry-after"], "30");
///
/// // A retry that ran out on 503s, with `fail-after-max-attempts`: 502.
/// let retry = breaker_core::Retry::new(
///     "inventory",
///     breaker_core::RetryConfig::builder()
///         .max_attempts(2)
///         .wait_duration(Duration::ZERO)
///         .fail_after_max_attempts(true)
///         .build()?,
/// );
/// let unavailable = breaker_core::Classifier::new().result(|status: &u16| *status == 503);
/// let exhausted = retry
///     .call_sync_with(&unavailable, || Ok::<u16, std::io::Error>(503))
///     .unwrap_err();
/// let response: http::Response<String> = exhausted.http_response().unwrap();
/// assert_eq!(response.status(), 502);
/// assert_eq!(response.body(), "Retry 'inventory' has exhausted all attempts (2)");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ErrorResponse {
    /// The HTTP answer to a rejection, a timeout, a refusal or exhausted retries; `None` for
    /// the inner service's own error.
    fn http_response<B: From<String>>(&self) -> Option<http::Response<B>>;
}

impl<E> ErrorResponse for CallError<E> {
    fn http_response<B: From<String>>(&self) -> Option<http::Response<B>> {
        let (status, retry_after, text) = match self {
            CallError::Rejected(rejected) => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                rejected.retry_after(),
                rejected.to_string(),
            ),
            CallError::BulkheadFull(full) => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                None,
                full.to_string(),
            ),
            CallError::TimedOut(timed_out) => (
                http::StatusCode::GATEWAY_TIMEOUT,
                None,
                timed_out.to_string(),
            ),
            CallError::RetriesExhausted(exhausted) => {
                (http::StatusCode::BAD_GATEWAY, None, exhausted.to_string())
            }
            _ => return None,
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
