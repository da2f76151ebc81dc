//! [`RetryClassifier`]: which attempts the retry's service sends again.

use breaker_core::{CallError, Classify, Outcome, RetryConfig};

/// The names by which `retry-exceptions` lets a breaker's rejection be retried: Resilience4j's
/// exception by its simple name and by its class name.
const CALL_NOT_PERMITTED_NAMES: [&str; 2] = [
    "CallNotPermittedException",
    "io.github.resilience4j.circuitbreaker.CallNotPermittedException",
];

/// How the retry's service classifies each attempt's result: the layer's classifier `C` (a
/// `Failure` is retried, an `Ignored` error ends the call, a `Success` ends it), except that a
/// breaker's rejection ([`CallError::Rejected`]) is never retried unless the retry's
/// `retry-exceptions` names `CallNotPermittedException`: an OPEN breaker says the dependency
/// is failing, and asking it again at once only adds load.
///
/// The rejection ends the call as an ignored error (Resilience4j's `IGNORED_ERROR`), and the
/// caller gets the [`CallError::Rejected`].
#[derive(Clone, Copy, Debug)]
pub struct RetryClassifier<C> {
    code: C,
    retry_rejections: bool,
}

impl<C> RetryClassifier<C> {
    /// `code`, with rejections retried only when `config`'s `retry-exceptions` names
    /// `CallNotPermittedException`.
    pub fn new(code: C, config: &RetryConfig) -> Self {
        let retry_rejections = config
            .retry_exceptions()
            .iter()
            .any(|kind| CALL_NOT_PERMITTED_NAMES.contains(&kind.name()));
        RetryClassifier {
            code,
            retry_rejections,
        }
    }

    /// Whether a breaker's rejection is retried.
    pub fn retries_rejections(&self) -> bool {
        self.retry_rejections
    }

    /// The layer's own classifier.
    pub fn code(&self) -> &C {
        &self.code
    }
}

impl<T, E, C> Classify<T, CallError<E>> for RetryClassifier<C>
where
    C: Classify<T, CallError<E>>,
{
    #[inline]
    fn classify(&self, result: &Result<T, CallError<E>>) -> Outcome {
        match result {
            Err(CallError::Rejected(_)) if !self.retry_rejections => Outcome::Ignored,
            other => self.code.classify(other),
        }
    }
}
