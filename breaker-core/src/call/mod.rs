//! Protected calls: acquire, run, classify, record.
//!
//! Every path takes its permit from one place, `BreakerCore::acquire` (through `Permit`), and
//! hands a panic of the protected code to one place, `Permit::panicked`: the sync calls here,
//! the async [`Call`](future::Call) future (behind `call`, `call_with` and the attribute), and
//! [`CircuitBreaker::try_acquire`].

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::breaker::warned::Warning;
use crate::breaker::CircuitBreaker;
use crate::call::future::Call;
use crate::classify::{Classifier, Classify};
use crate::error::BulkheadFull;
use crate::error::CallError;
use crate::log_safe::LogSafe;

pub(crate) mod future;
pub(crate) mod permit;
pub(crate) mod timeout;

impl CircuitBreaker {
    /// Runs `fut` if the breaker permits, timing it and recording its result: every error a
    /// failure, except as the breaker's `record-exceptions` and `ignore-exceptions` say. A
    /// rejected call returns [`CallError::Rejected`] without polling `fut`.
    ///
    /// The configured kinds are tested through [`Any`](std::any::Any), so the error type must
    /// be `'static` (every call path has this bound, the attribute included).
    ///
    /// Nothing happens until the returned future is first polled: that is when the breaker is
    /// asked, and when the call's time (and its `timeout-duration`, under a Tokio runtime)
    /// starts. If the future is dropped before it finishes (a cancelled call), the permit is
    /// given back and nothing is recorded. If `fut` panics, a failure is recorded and the panic
    /// continues.
    #[inline]
    pub fn call<T, E, F>(
        &self,
        fut: F,
    ) -> impl Future<Output = Result<T, CallError<E>>> + use<'_, T, E, F>
    where
        F: Future<Output = Result<T, E>>,
        E: 'static,
    {
        const EVERY_ERROR: &Classifier = &Classifier::new();
        Call::new(self, EVERY_ERROR, Ok, fut)
    }

    /// [`call`](CircuitBreaker::call) with a classification of its own, under the breaker's
    /// configured kinds (an ignored kind is ignored whatever `classify` says; see
    /// [`ConfiguredClassifier`](crate::ConfiguredClassifier) for the order).
    #[inline]
    pub fn call_with<'a, T, E, F, C>(
        &'a self,
        classify: &'a C,
        fut: F,
    ) -> impl Future<Output = Result<T, CallError<E>>> + use<'a, T, E, F, C>
    where
        F: Future<Output = Result<T, E>>,
        C: Classify<T, E> + ?Sized,
        E: 'static,
    {
        Call::new(self, classify, Ok, fut)
    }

    /// Runs `f` if the breaker permits, timing it and recording its result as
    /// [`call`](CircuitBreaker::call) does. If `f` panics, a failure is recorded and the panic
    /// continues.
    #[inline]
    pub fn call_sync<T, E, F>(&self, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
        E: 'static,
    {
        self.call_sync_with(&Classifier::new(), f)
    }

    /// [`call_sync`](CircuitBreaker::call_sync) with a classification of its own, under the
    /// breaker's configured kinds as in [`call_with`](CircuitBreaker::call_with).
    #[inline(always)]
    pub fn call_sync_with<T, E, F, C>(&self, classify: &C, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
        C: Classify<T, E> + ?Sized,
        E: 'static,
    {
        self.call_sync_layered(classify, move || Ok(f()))
    }

    /// [`call_sync_with`](CircuitBreaker::call_sync_with) around a bulkhead's call: `f` ends
    /// with the call's result, or with the bulkhead's refusal, which is recorded as an error
    /// ([`Permit::refused`](crate::Permit)).
    #[inline(always)]
    pub(crate) fn call_sync_layered<T, E, F, C>(
        &self,
        classify: &C,
        f: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<Result<T, E>, BulkheadFull>,
        C: Classify<T, E> + ?Sized,
        E: 'static,
    {
        if self.config().timeout_duration().is_some() {
            untimed_sync_call(self);
        }
        let permit = self.try_acquire()?;
        let layered = match catch_unwind(AssertUnwindSafe(f)) {
            Ok(layered) => layered,
            Err(panic) => permit.panicked(panic),
        };
        match layered {
            Ok(result) => {
                permit.finish_with(classify, &result);
                result.map_err(CallError::Inner)
            }
            Err(full) => Err(CallError::BulkheadFull(permit.refused(full))),
        }
    }
}

/// A synchronous call cannot be cancelled, so `timeout-duration` does not apply to it: say so,
/// once per breaker.
#[cold]
fn untimed_sync_call(breaker: &CircuitBreaker) {
    if breaker.core.warned().first(Warning::TimeoutOnSyncCall) {
        tracing::warn!(
            breaker = %LogSafe(breaker.name()),
            "timeout-duration is set but applies to async calls only: a synchronous call cannot \
             be cancelled, so it runs to the end (said once per breaker)"
        );
    }
}
