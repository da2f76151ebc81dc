//! [`RetryClassifier`]: which attempts the retry's service sends again.

use std::fmt;

use breaker_core::{CallError, Classify, Outcome, RetryConfig};

/// How the retry's service classifies each attempt's `Result<T, CallError<E>>`: the layer's
/// classifier `C` (a `Failure` is retried, an `Ignored` error ends the request, a `Success`
/// ends it), with the retry's `retry-exceptions` and `ignore-exceptions` applied to the error
/// inside the [`CallError`] (the inner service's own `E`, or how a guard inside ended the
/// attempt), and one rule of its own:
///
/// - a breaker's rejection ([`CallError::Rejected`]) is never retried unless
///   `retry-exceptions` names `CallNotPermittedException` (and `ignore-exceptions` does not):
///   an OPEN breaker says the dependency is failing, and asking it again at once only adds the
///   load it was opened to keep away. It ends the request as an ignored error (Resilience4j's
///   `IGNORED_ERROR`), and the caller gets the rejection;
/// - a breaker's timeout and a bulkhead's refusal are retried as any error, unless the kinds
///   say otherwise (`TimeoutException`, `BulkheadFullException`).
///
/// Built by the layer from its classifier and the retry's configuration.
#[derive(Clone)]
pub struct RetryClassifier<C> {
    code: C,
    config: RetryConfig,
}

impl<C> RetryClassifier<C> {
    /// `code`, under `config`'s `retry-exceptions` and `ignore-exceptions`.
    pub fn new(code: C, config: &RetryConfig) -> Self {
        RetryClassifier {
            code,
            config: config.clone(),
        }
    }

    /// The layer's own classifier.
    pub fn code(&self) -> &C {
        &self.code
    }
}

impl<T, E, C> Classify<T, CallError<E>> for RetryClassifier<C>
where
    E: 'static,
    C: Classify<T, CallError<E>>,
{
    fn classify(&self, result: &Result<T, CallError<E>>) -> Outcome {
        let code = self.code.classify(result);
        let Err(error) = result else {
            return code;
        };
        match error {
            CallError::Inner(inner) => self.config.classify_error(inner, code),
            CallError::Rejected(_) if self.config.retry_exceptions().is_empty() => Outcome::Ignored,
            CallError::Rejected(rejected) => self.config.classify_error(rejected, Outcome::Failure),
            CallError::TimedOut(timed_out) => self.config.classify_error(timed_out, code),
            CallError::BulkheadFull(full) => self.config.classify_error(full, code),
            // Another retry's end inside this one, or a way of ending a later breaker-core
            // adds: as the layer's classifier says.
            _ => code,
        }
    }

    /// The kinds were applied above, to the error inside the `CallError`: the retry's call
    /// must not apply them again to the `CallError` itself, which no kind names.
    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        true
    }
}

impl<C> fmt::Debug for RetryClassifier<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryClassifier").finish_non_exhaustive()
    }
}
