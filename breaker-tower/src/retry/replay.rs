//! Which requests the retry's service may send more than once: [`IdempotentMethod`] for HTTP,
//! [`Always`](breaker_core::Always) for every request, or any `Fn(&Request) -> bool`.

use http::Method;

use breaker_core::Predicate;

/// Replays an HTTP request only when its method is idempotent (RFC 9110, section 9.2.2): GET,
/// HEAD, OPTIONS, PUT, DELETE and TRACE. A POST, a PATCH or a CONNECT is sent once and never
/// retried, since sending it twice may do its work twice.
///
/// ```
/// use breaker_core::Predicate;
/// use breaker_tower::IdempotentMethod;
///
/// let request = |method: &str| http::Request::builder().method(method).body(()).unwrap();
/// assert!(IdempotentMethod.test(&request("GET")));
/// assert!(IdempotentMethod.test(&request("PUT")));
/// assert!(!IdempotentMethod.test(&request("POST")));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct IdempotentMethod;

impl IdempotentMethod {
    /// Whether `method` is one of the six idempotent methods.
    #[inline]
    pub fn is_idempotent(method: &Method) -> bool {
        matches!(
            *method,
            Method::GET
                | Method::HEAD
                | Method::OPTIONS
                | Method::PUT
                | Method::DELETE
                | Method::TRACE
        )
    }
}

impl<B> Predicate<http::Request<B>> for IdempotentMethod {
    #[inline]
    fn test(&self, request: &http::Request<B>) -> bool {
        IdempotentMethod::is_idempotent(request.method())
    }
}
