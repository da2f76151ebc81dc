//! [`StatusClassifier`]: how a request's result counts unless the middleware is told otherwise.

use ::reqwest::Response;
use reqwest_middleware::Error;

use breaker_core::{Classify, Outcome};

/// The middleware's default classification, by the response's status:
///
/// - a 5xx response is a failure;
/// - a 4xx response is ignored: the caller's mistake (a missing resource, a bad request, a
///   refused credential) says nothing about the server's health, and the trial permit of a
///   HALF_OPEN breaker is given back;
/// - any other response (1xx, 2xx, 3xx) is a success;
/// - an error, where no response came back (a connect error, reqwest's own timeout, an error
///   sending the request body, an error of a middleware further down the chain), is a
///   failure.
///
/// The breaker's configured `record-exceptions` and `ignore-exceptions` apply on top, to
/// errors of type [`reqwest_middleware::Error`].
///
/// To change one case, classify it yourself and leave the rest to this one:
///
/// ```
/// use breaker_reqwest::StatusClassifier;
/// use breaker_core::{Classify, Outcome};
/// use reqwest::StatusCode;
///
/// // 429 Too Many Requests is the server saying it is overloaded: count it as a failure.
/// let classify = |result: &Result<reqwest::Response, reqwest_middleware::Error>| match result {
///     Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS => Outcome::Failure,
///     other => StatusClassifier.classify(other),
/// };
///
/// let response = |code: u16| {
///     let response = http::Response::builder().status(code).body("").unwrap();
///     Ok(reqwest::Response::from(response))
/// };
/// assert_eq!(StatusClassifier.classify(&response(200)), Outcome::Success);
/// assert_eq!(StatusClassifier.classify(&response(404)), Outcome::Ignored);
/// assert_eq!(StatusClassifier.classify(&response(429)), Outcome::Ignored);
/// assert_eq!(StatusClassifier.classify(&response(503)), Outcome::Failure);
/// assert_eq!(classify(&response(429)), Outcome::Failure);
/// assert_eq!(classify(&response(404)), Outcome::Ignored);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct StatusClassifier;

impl Classify<Response, Error> for StatusClassifier {
    #[inline]
    fn classify(&self, result: &Result<Response, Error>) -> Outcome {
        match result {
            Ok(response) => Outcome::from_http_status(response.status().as_u16()),
            Err(_) => Outcome::Failure,
        }
    }
}
