//! [`HttpStatus`]: classification of HTTP responses by status.

use breaker_core::{Classify, Outcome};

/// Classifies an [`http::Response`] by its status: a 5xx is a failure, a 4xx is ignored (the
/// caller's mistake says nothing about the server's health), anything else a success. An `Err`
/// (no response at all) is a failure, unless the breaker's configured error kinds say
/// otherwise.
///
/// ```
/// use breaker_tower::HttpStatus;
/// use breaker_core::{Classify, Outcome};
///
/// let status = |code: u16| {
///     let response = http::Response::builder().status(code).body(()).unwrap();
///     HttpStatus.classify(&Ok::<_, std::io::Error>(response))
/// };
/// assert_eq!(status(200), Outcome::Success);
/// assert_eq!(status(404), Outcome::Ignored);
/// assert_eq!(status(503), Outcome::Failure);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpStatus;

impl<B, E> Classify<http::Response<B>, E> for HttpStatus {
    #[inline]
    fn classify(&self, result: &Result<http::Response<B>, E>) -> Outcome {
        match result {
            Ok(response) => Outcome::from_http_status(response.status().as_u16()),
            Err(_) => Outcome::Failure,
        }
    }
}
