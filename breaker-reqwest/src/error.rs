//! Telling the breaker's errors from the request's own: [`rejected`], [`timed_out`], and
//! [`into_call_error`] for the core's one vocabulary.

use reqwest_middleware::Error;

use breaker_core::{CallError, CallNotPermitted, CallTimedOut};

/// The breaker's rejection, if `error` is one: the breaker was OPEN, FORCED_OPEN, or HALF_OPEN
/// with every trial taken, and the request was not sent.
///
/// The middleware returns a rejection as [`Error::Middleware`] holding the
/// [`CallNotPermitted`]; this is `downcast_ref::<CallNotPermitted>()` on it. A timeout is not a
/// rejection (see [`timed_out`]).
///
/// ```
/// use breaker_reqwest::rejected;
///
/// fn status_for(error: &reqwest_middleware::Error) -> u16 {
///     match rejected(error) {
///         // The upstream is known to be failing: nothing was sent.
///         Some(_rejection) => 503,
///         // The request was sent, or tried, and failed.
///         None => 502,
///     }
/// }
/// # let _ = status_for;
/// ```
pub fn rejected(error: &Error) -> Option<&CallNotPermitted> {
    match error {
        Error::Middleware(error) => error.downcast_ref(),
        Error::Reqwest(_) => None,
    }
}

/// The breaker's timeout, if `error` is one: the request was sent, ran longer than the
/// breaker's `timeout-duration`, was cancelled and recorded as a failure.
///
/// The middleware returns it as [`Error::Middleware`] holding the [`CallTimedOut`]; this is
/// `downcast_ref::<CallTimedOut>()` on it. A timeout set on the reqwest client is reqwest's own
/// error instead ([`Error::Reqwest`], whose `is_timeout()` is true).
pub fn timed_out(error: &Error) -> Option<&CallTimedOut> {
    match error {
        Error::Middleware(error) => error.downcast_ref(),
        Error::Reqwest(_) => None,
    }
}

/// `error` as the core's [`CallError`], the error every other way through a breaker ends
/// with: [`CallError::Rejected`] or [`CallError::TimedOut`] when the middleware's breaker
/// ended the request, else [`CallError::Inner`] with the request's own error, as it came.
///
/// ```
/// use breaker_core::CallError;
/// use breaker_reqwest::into_call_error;
///
/// fn status_for(error: reqwest_middleware::Error) -> u16 {
///     match into_call_error(error) {
///         CallError::Rejected(_) => 503,
///         CallError::TimedOut(_) => 504,
///         _ => 502,
///     }
/// }
/// # let _ = status_for;
/// ```
pub fn into_call_error(error: Error) -> CallError<Error> {
    if let Some(rejected) = rejected(&error) {
        return CallError::Rejected(rejected.clone());
    }
    if let Some(timed_out) = timed_out(&error) {
        return CallError::TimedOut(timed_out.clone());
    }
    CallError::Inner(error)
}
