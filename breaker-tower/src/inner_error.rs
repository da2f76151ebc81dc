//! How a [`CircuitBreakerService`](crate::CircuitBreakerService) answers with its inner
//! service's errors and records them: wrapped in [`CallError::Inner`] ([`Wrap`], the default),
//! or, for an inner service that already answers with a [`CallError`] (a
//! [`BulkheadService`](crate::BulkheadService)), passed on as they are ([`Flatten`]).

use std::convert::Infallible;

use breaker_core::{CallError, Classifier, Classify, OwnedPermit};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Wrap {}
    impl Sealed for super::Flatten {}
}

/// How a breaker's service turns its inner service's error `E` into its own,
/// `CallError<Self::Inner>`, and records a result on the breaker. Implemented by [`Wrap`] and
/// [`Flatten`] only; chosen with
/// [`CircuitBreakerLayer::flatten_errors`](crate::CircuitBreakerLayer::flatten_errors).
pub trait InnerError<E>: sealed::Sealed {
    /// The error the caller's classifier sees and [`CallError::Inner`] carries.
    type Inner;

    /// The inner service's error (from `poll_ready`, or a fallback's) as the service's own.
    fn convert(error: E) -> CallError<Self::Inner>;

    /// Records the inner service's `result` on `permit`, classified by `classify` under the
    /// breaker's configured error kinds, and returns it as the service's answer.
    fn finish<T, C>(
        permit: OwnedPermit,
        classify: &C,
        result: Result<T, E>,
    ) -> Result<T, CallError<Self::Inner>>
    where
        C: Classify<T, Self::Inner>;
}

/// The inner service's error `E` becomes [`CallError::Inner`]`(E)`: the service answers with
/// `CallError<E>`. The default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wrap;

/// The inner service answers with `CallError<E>` (a
/// [`BulkheadService`](crate::BulkheadService), or another breaker's service): the breaker's
/// service answers with the same `CallError<E>`, not `CallError<CallError<E>>`.
///
/// Its classifier sees the inner `Result<T, E>`; an inner [`CallError::Inner`] is classified
/// as a plain `E` would be. What the inner service refused or cut itself (a
/// [`BulkheadFull`](breaker_core::BulkheadFull), an inner breaker's rejection or timeout) is a
/// failure of the dependency as this breaker sees it, as Resilience4j's breaker records a
/// `BulkheadFullException` thrown inside it, unless the breaker's `ignore-exceptions` names its
/// kind (or `record-exceptions` is set and does not).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flatten;

impl<E: 'static> InnerError<E> for Wrap {
    type Inner = E;

    #[inline]
    fn convert(error: E) -> CallError<E> {
        CallError::Inner(error)
    }

    #[inline(always)]
    fn finish<T, C>(
        permit: OwnedPermit,
        classify: &C,
        result: Result<T, E>,
    ) -> Result<T, CallError<E>>
    where
        C: Classify<T, E>,
    {
        permit.finish_with(classify, &result);
        result.map_err(CallError::Inner)
    }
}

impl<E: 'static> InnerError<CallError<E>> for Flatten {
    type Inner = E;

    #[inline]
    fn convert(error: CallError<E>) -> CallError<E> {
        error
    }

    #[inline]
    fn finish<T, C>(
        permit: OwnedPermit,
        classify: &C,
        result: Result<T, CallError<E>>,
    ) -> Result<T, CallError<E>>
    where
        C: Classify<T, E>,
    {
        let own = match result {
            Ok(value) => Ok(value),
            Err(CallError::Inner(error)) => Err(error),
            Err(refused) => return Err(record_refusal(permit, refused)),
        };
        Wrap::finish(permit, classify, own)
    }
}

/// Records what the inner service refused or cut itself: each error under its own type, so
/// that the breaker's configured kinds (`BulkheadFullException`, ...) see it; otherwise a
/// failure.
#[cold]
fn record_refusal<E>(permit: OwnedPermit, error: CallError<E>) -> CallError<E> {
    match error {
        CallError::BulkheadFull(full) => CallError::BulkheadFull(record_as_error(permit, full)),
        CallError::Rejected(rejected) => CallError::Rejected(record_as_error(permit, rejected)),
        CallError::TimedOut(timed_out) => CallError::TimedOut(record_as_error(permit, timed_out)),
        other => {
            permit.failure();
            other
        }
    }
}

/// Records `error` as a call's error, classified by the breaker's configured kinds over the
/// default (a failure), and hands it back.
fn record_as_error<X: 'static>(permit: OwnedPermit, error: X) -> X {
    let result: Result<Infallible, X> = Err(error);
    permit.finish_with(&Classifier::new(), &result);
    let Err(error) = result;
    error
}
