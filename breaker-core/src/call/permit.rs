//! Permission to make one call, as a value.
//!
//! A permit is a [`Grant`] (the state that granted it, and when) beside its breaker, which
//! gives the grant back on drop. The borrowed [`Permit`] holds `&BreakerCore`; the
//! [`OwnedPermit`], for futures that must be `'static`, holds the breaker's `Arc`. The owned
//! one completes through a borrowed one, and both take their grant from the one
//! [`BreakerCore::acquire`] and hand it back to the breaker to complete, give back or record a
//! panic.

use std::any::Any;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::breaker::core::{BreakerCore, Grant};
use crate::call::timeout::CallTimeout;
use crate::classify::{Classifier, Classify, Outcome};
use crate::config::Config;
use crate::error::BulkheadFull;
use crate::error::{CallNotPermitted, CallTimedOut};
use crate::event::ErrorText;
use crate::time::timestamp::Timestamp;

/// Permission to make one call, granted by [`CircuitBreaker::try_acquire`].
///
/// Complete it with the call's outcome ([`success`](Permit::success),
/// [`failure`](Permit::failure), [`ignore`](Permit::ignore), or [`record`](Permit::record) with
/// a measured duration). Dropping it without an outcome (a cancelled call) gives it back and
/// records nothing, so a future dropped mid-flight never keeps a half-open trial permit.
///
/// [`CircuitBreaker::try_acquire`]: crate::CircuitBreaker::try_acquire
#[must_use = "a permit that is dropped at once records nothing; complete it with the call's outcome"]
pub struct Permit<'a> {
    breaker: &'a BreakerCore,
    grant: Grant,
}

impl<'a> Permit<'a> {
    /// Asks `breaker` for permission to make one call ([`BreakerCore::acquire`]).
    #[inline(always)]
    pub(crate) fn acquire(breaker: &'a BreakerCore) -> Result<Permit<'a>, CallNotPermitted> {
        let grant = breaker.acquire()?;
        Ok(Permit { breaker, grant })
    }

    /// The grant, with the give-back on drop disarmed: for a caller that completes it.
    #[inline(always)]
    fn into_grant(self) -> Grant {
        let grant = self.grant;
        // A reference and a `Copy` grant: forgetting leaks nothing.
        std::mem::forget(self);
        grant
    }

    /// When the permit was granted, on the breaker's clock.
    pub fn started_at(&self) -> Timestamp {
        self.grant.started_at()
    }

    /// Time since the permit was granted, on the breaker's clock.
    pub fn elapsed(&self) -> Duration {
        self.breaker.elapsed(self.grant)
    }

    /// Records the call's outcome with a duration measured by the caller.
    pub fn record(self, outcome: Outcome, elapsed: Duration) {
        let breaker = self.breaker;
        breaker.record(self.into_grant(), outcome, elapsed, None);
    }

    /// Records the outcome of a call that took the time since the permit was granted (one
    /// clock read).
    #[inline]
    pub fn finish(self, outcome: Outcome) {
        let breaker = self.breaker;
        breaker.finish(self.into_grant(), outcome);
    }

    /// Records a success that took the time since the permit was granted.
    pub fn success(self) {
        self.finish(Outcome::Success);
    }

    /// Records a failure that took the time since the permit was granted.
    pub fn failure(self) {
        self.finish(Outcome::Failure);
    }

    /// Records an ignored error: neither success nor failure.
    pub fn ignore(self) {
        self.finish(Outcome::Ignored);
    }

    /// Records the call's `result` as every call path classifies it: `classify`'s outcome,
    /// with the breaker's configured `record-exceptions` and `ignore-exceptions` on top (see
    /// [`ConfiguredClassifier`](crate::ConfiguredClassifier)), taking the time since the
    /// permit was granted.
    ///
    /// A failure or an ignored error carries its error's text ([`ErrorText`]) to the listeners
    /// that asked for error texts, if one hears the breaker: written by
    /// [`Classify::error_text`] if `classify` gives a way, else found by the breaker (see
    /// [`ErrorText`]). A success builds nothing.
    #[inline]
    pub fn finish_with<T, E, C>(self, classify: &C, result: &Result<T, E>)
    where
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        let outcome = self.breaker.config().classify(classify, result);
        match outcome {
            Outcome::Success => self.finish(outcome),
            Outcome::Failure | Outcome::Ignored => {
                self.finish_unsuccessful(classify, result, outcome)
            }
        }
    }

    /// [`finish_with`](Permit::finish_with) for a failure or an ignored error: with its text,
    /// if a listener that asked for error texts hears the breaker. Out of line, so that a
    /// success's completion stays small.
    #[inline(never)]
    fn finish_unsuccessful<T, E, C>(self, classify: &C, result: &Result<T, E>, outcome: Outcome)
    where
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        if !self.breaker.wants_error_texts() {
            return self.finish(outcome);
        }
        let error = match result {
            Err(error) => ErrorText::of_error(error, classify.error_text()),
            Ok(_) => ErrorText::of_value::<T>(outcome == Outcome::Failure),
        };
        let breaker = self.breaker;
        breaker.finish_described(self.into_grant(), outcome, &error);
    }

    /// The call ran into its [`CallTimeout`]: records a failure that took at least `limit`
    /// (the time since the permit was granted, if longer), and returns the error to answer the
    /// caller with. The caller stops polling the call and drops it.
    #[cold]
    pub fn timed_out(self, limit: Duration) -> CallTimedOut {
        let timed_out = CallTimedOut::new(self.breaker.display_name(), limit);
        let elapsed = self.elapsed().max(limit);
        let error = self
            .breaker
            .wants_error_texts()
            .then(|| ErrorText::of_error(&timed_out, None));
        let breaker = self.breaker;
        breaker.record(self.into_grant(), Outcome::Failure, elapsed, error.as_ref());
        timed_out
    }

    /// A bulkhead inside the breaker refused the call: records the refusal as the breaker
    /// records an error of the kind `BulkheadFullException` (a failure, unless
    /// `ignore-exceptions` names that kind or `record-exceptions` leaves it out), taking the
    /// time since the permit was granted, and hands it back.
    #[cold]
    pub(crate) fn refused(self, full: BulkheadFull) -> BulkheadFull {
        let refused: Result<Infallible, BulkheadFull> = Err(full);
        self.finish_with(&Classifier::new(), &refused);
        let Err(full) = refused;
        full
    }

    /// The breaker's `timeout-duration` for this call, started now: `None` if the breaker has
    /// none, or if the call runs where it cannot be enforced (outside a Tokio runtime, or on
    /// one without its time driver: the breaker warns once). See [`CallTimeout`].
    #[inline]
    pub fn start_timeout(&self) -> Option<CallTimeout> {
        CallTimeout::start(self.breaker)
    }

    /// Gives the permit back without recording anything (what dropping it does).
    pub fn release(self) {}

    /// The call panicked: records a failure, then lets the panic go on. Every call path
    /// catches a panic of the protected code and hands it here.
    #[cold]
    pub(crate) fn panicked(self, payload: Box<dyn Any + Send>) -> ! {
        let breaker = self.breaker;
        breaker.panicked(self.into_grant(), payload)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.breaker.release(self.grant);
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("breaker", &self.breaker.name())
            .field("started_at", &self.grant.started_at())
            .finish_non_exhaustive()
    }
}

/// Permission to make one call, holding its breaker by `Arc` rather than by reference: for a
/// call future that must be `'static` and `Send`, such as a `tower::Service`'s response
/// future. Granted by [`CircuitBreaker::try_acquire_owned`].
///
/// The same permit as a [`Permit`], completed and given back the same way: complete it with
/// the call's outcome ([`finish_with`](OwnedPermit::finish_with) to classify a result as the
/// breaker's own calls do, [`success`](OwnedPermit::success), [`failure`](OwnedPermit::failure),
/// [`ignore`](OwnedPermit::ignore), [`record`](OwnedPermit::record) with a measured duration,
/// or [`timed_out`](OwnedPermit::timed_out)). Dropped without an outcome (a cancelled call),
/// it gives the permit back and records nothing, so a future dropped mid-flight never keeps a
/// half-open trial permit. Taking one costs what [`CircuitBreaker::try_acquire`] does, plus a
/// reference count; it allocates nothing.
///
/// A call future holds its permit and drops it last, after everything the call owns: a trial
/// permit given back earlier could let another trial start while this one's clean-up still
/// runs.
///
/// [`CircuitBreaker::try_acquire_owned`]: crate::CircuitBreaker::try_acquire_owned
/// [`CircuitBreaker::try_acquire`]: crate::CircuitBreaker::try_acquire
#[must_use = "a permit that is dropped at once records nothing; complete it with the call's outcome"]
pub struct OwnedPermit {
    breaker: Arc<BreakerCore>,
    // `Some` until a method that takes the permit by value completes it (so that dropping it
    // then gives nothing back).
    grant: Option<Grant>,
}

impl OwnedPermit {
    /// Asks `breaker` for permission to make one call ([`BreakerCore::acquire`]), then clones
    /// the breaker's `Arc` into the permit (a reference count, no allocation).
    #[inline(always)]
    pub(crate) fn acquire(breaker: &Arc<BreakerCore>) -> Result<OwnedPermit, CallNotPermitted> {
        let grant = breaker.acquire()?;
        Ok(OwnedPermit {
            breaker: Arc::clone(breaker),
            grant: Some(grant),
        })
    }

    /// The permit as a borrowed [`Permit`], which completes it; `None` once completed.
    #[inline(always)]
    fn take(&mut self) -> Option<Permit<'_>> {
        let grant = self.grant.take()?;
        Some(Permit {
            breaker: &self.breaker,
            grant,
        })
    }

    /// The name of the breaker that granted the permit.
    pub fn breaker_name(&self) -> &str {
        self.breaker.name()
    }

    /// The configuration of the breaker that granted the permit.
    pub fn config(&self) -> &Config {
        self.breaker.config()
    }

    /// Records the call's outcome with a duration measured by the caller.
    pub fn record(mut self, outcome: Outcome, elapsed: Duration) {
        if let Some(permit) = self.take() {
            permit.record(outcome, elapsed);
        }
    }

    /// Records the outcome of a call that took the time since the permit was granted (one
    /// clock read).
    #[inline]
    pub fn finish(mut self, outcome: Outcome) {
        if let Some(permit) = self.take() {
            permit.finish(outcome);
        }
    }

    /// Records the call's `result` as every call path classifies it; see
    /// [`Permit::finish_with`].
    #[inline]
    pub fn finish_with<T, E, C>(mut self, classify: &C, result: &Result<T, E>)
    where
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        if let Some(permit) = self.take() {
            permit.finish_with(classify, result);
        }
    }

    /// Records a success that took the time since the permit was granted.
    pub fn success(self) {
        self.finish(Outcome::Success);
    }

    /// Records a failure that took the time since the permit was granted.
    pub fn failure(self) {
        self.finish(Outcome::Failure);
    }

    /// Records an ignored error: neither success nor failure.
    pub fn ignore(self) {
        self.finish(Outcome::Ignored);
    }

    /// The call ran into its [`CallTimeout`]: records a failure that took at least `limit`
    /// and returns the error to answer the caller with; see [`Permit::timed_out`].
    #[cold]
    pub fn timed_out(mut self, limit: Duration) -> CallTimedOut {
        let breaker = &self.breaker;
        match self.grant.take() {
            Some(grant) => Permit { breaker, grant }.timed_out(limit),
            // Not reached: the grant is there until a method that takes `self` completes it.
            None => CallTimedOut::new(breaker.display_name(), limit),
        }
    }

    /// The breaker's `timeout-duration` for this call, started now; see
    /// [`Permit::start_timeout`].
    #[inline]
    pub fn start_timeout(&self) -> Option<CallTimeout> {
        CallTimeout::start(&self.breaker)
    }

    /// Gives the permit back without recording anything (what dropping it does).
    pub fn release(self) {}
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        if let Some(grant) = self.grant.take() {
            self.breaker.release(grant);
        }
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("breaker", &self.breaker.name())
            .field("started_at", &self.grant.map(Grant::started_at))
            .finish_non_exhaustive()
    }
}
