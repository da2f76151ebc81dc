//! Protected calls: acquire, time, classify, record.

use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::breaker::{CircuitBreaker, Shared};
use crate::clock::{duration_nanos, Timestamp};
use crate::error::{CallError, CallNotPermitted, CallTimedOut};
use crate::permit::{Outcome, Permit};
use crate::state::State;

/// Decides how a call's result counts: success, failure, or ignored.
///
/// Any `Fn(&Result<T, E>) -> Outcome` is a `Classify`; [`Classifier`] builds one from
/// Resilience4j's three predicates.
pub trait Classify<T, E> {
    /// How `result` counts.
    fn classify(&self, result: &Result<T, E>) -> Outcome;
}

impl<T, E, F> Classify<T, E> for F
where
    F: Fn(&Result<T, E>) -> Outcome,
{
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self(result)
    }
}

/// A test on a value: any `Fn(&X) -> bool`, or one of [`Always`] and [`Never`].
pub trait Predicate<X: ?Sized> {
    /// Whether `x` matches.
    fn test(&self, x: &X) -> bool;
}

impl<X: ?Sized, F: Fn(&X) -> bool> Predicate<X> for F {
    fn test(&self, x: &X) -> bool {
        self(x)
    }
}

/// A predicate that matches everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Always;

/// A predicate that matches nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Never;

impl<X: ?Sized> Predicate<X> for Always {
    fn test(&self, _: &X) -> bool {
        true
    }
}

impl<X: ?Sized> Predicate<X> for Never {
    fn test(&self, _: &X) -> bool {
        false
    }
}

/// Resilience4j's classification: `ignore` errors count for nothing; of the rest, `record`
/// errors are failures and others successes; an `Ok` value matching `result` is a failure.
///
/// The default records every error and no `Ok` value.
///
/// ```
/// use breaker_core::{Classifier, Classify, Outcome};
///
/// #[derive(Debug)]
/// enum HttpError { Status(u16), Timeout }
///
/// let classify = Classifier::new()
///     .ignore(|e: &HttpError| matches!(e, HttpError::Status(400..=499)))
///     .result(|status: &u16| *status == 503);
/// assert_eq!(classify.classify(&Err::<u16, _>(HttpError::Status(404))), Outcome::Ignored);
/// assert_eq!(classify.classify(&Err::<u16, _>(HttpError::Timeout)), Outcome::Failure);
/// assert_eq!(classify.classify(&Ok::<u16, HttpError>(503)), Outcome::Failure);
/// assert_eq!(classify.classify(&Ok::<u16, HttpError>(200)), Outcome::Success);
/// ```
#[derive(Clone, Copy, Default)]
pub struct Classifier<Rec = Always, Ign = Never, Res = Never> {
    record: Rec,
    ignore: Ign,
    result: Res,
}

impl Classifier {
    /// Every error is a failure, every `Ok` a success.
    pub const fn new() -> Classifier {
        Classifier {
            record: Always,
            ignore: Never,
            result: Never,
        }
    }
}

impl<Rec, Ign, Res> Classifier<Rec, Ign, Res> {
    /// Only errors matching `record` are failures; other (not ignored) errors are successes.
    pub fn record<P>(self, record: P) -> Classifier<P, Ign, Res> {
        Classifier {
            record,
            ignore: self.ignore,
            result: self.result,
        }
    }

    /// Errors matching `ignore` count as neither success nor failure.
    pub fn ignore<P>(self, ignore: P) -> Classifier<Rec, P, Res> {
        Classifier {
            record: self.record,
            ignore,
            result: self.result,
        }
    }

    /// `Ok` values matching `result` count as failures (the value is still returned).
    pub fn result<P>(self, result: P) -> Classifier<Rec, Ign, P> {
        Classifier {
            record: self.record,
            ignore: self.ignore,
            result,
        }
    }
}

impl<T, E, Rec, Ign, Res> Classify<T, E> for Classifier<Rec, Ign, Res>
where
    Rec: Predicate<E>,
    Ign: Predicate<E>,
    Res: Predicate<T>,
{
    #[inline]
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        match result {
            Ok(value) if self.result.test(value) => Outcome::Failure,
            Ok(_) => Outcome::Success,
            Err(e) if self.ignore.test(e) => Outcome::Ignored,
            Err(e) if self.record.test(e) => Outcome::Failure,
            Err(_) => Outcome::Success,
        }
    }
}

impl<Rec, Ign, Res> fmt::Debug for Classifier<Rec, Ign, Res> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Classifier").finish_non_exhaustive()
    }
}

impl CircuitBreaker {
    /// Runs `fut` if the breaker permits, timing it and recording its result (every error a
    /// failure). A rejected call returns [`CallError::NotPermitted`] without polling `fut`.
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
    {
        const EVERY_ERROR: &Classifier = &Classifier::new();
        Call::new(self, EVERY_ERROR, std::convert::identity, fut)
    }

    /// [`call`](CircuitBreaker::call) with a classification of its own.
    #[inline]
    pub fn call_with<'a, T, E, F, C>(
        &'a self,
        classify: &'a C,
        fut: F,
    ) -> impl Future<Output = Result<T, CallError<E>>> + use<'a, T, E, F, C>
    where
        F: Future<Output = Result<T, E>>,
        C: Classify<T, E> + ?Sized,
    {
        Call::new(self, classify, std::convert::identity, fut)
    }

    /// Permission for an async call: see [`Grant`].
    #[inline(always)]
    fn grant(&self) -> Result<Grant<'_>, CallNotPermitted> {
        let shared = &*self.shared;
        if let Some((state_id, start)) = shared.begin_unlimited() {
            return Ok(Grant::Unlimited(shared, state_id, start));
        }
        if shared.reject_while_open() {
            return Err(shared.not_permitted_error(State::Open));
        }
        shared.acquire_slow().map(Grant::Counted)
    }

    /// The configured timeout, if there is one and a Tokio runtime to enforce it.
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        let limit = self.config().timeout_duration()?;
        self.enforceable(limit)
    }

    #[cold]
    fn enforceable(&self, limit: Duration) -> Option<Duration> {
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!(
                breaker = %self.name(),
                "timeout-duration is set but the call runs outside a Tokio runtime; not enforced"
            );
            return None;
        }
        Some(limit)
    }

    /// Runs `f` if the breaker permits, timing it and recording its result (every error a
    /// failure). If `f` panics, a failure is recorded and the panic continues.
    #[inline]
    pub fn call_sync<T, E, F>(&self, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        self.call_sync_with(&Classifier::new(), f)
    }

    /// [`call_sync`](CircuitBreaker::call_sync) with a classification of its own.
    #[inline(always)]
    pub fn call_sync_with<T, E, F, C>(&self, classify: &C, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
        C: Classify<T, E> + ?Sized,
    {
        let shared = &*self.shared;
        let Some((state_id, start)) = shared.begin_unlimited() else {
            if shared.reject_while_open() {
                let rejected = shared.not_permitted_error(State::Open);
                return Err(CallError::NotPermitted(rejected));
            }
            return self.call_sync_counted(classify, f);
        };
        // CLOSED, DISABLED, METRICS_ONLY: the permit is only the state id and the start time,
        // kept in registers instead of a `Permit` moved through memory. (The async path's `Grant`
        // would fold these two branches into one; here it measured slower, 0.98-1.10 of
        // recloser against 0.94-0.96, so the sync path keeps them apart.)
        let result = match catch_unwind(AssertUnwindSafe(f)) {
            Ok(result) => result,
            Err(panic) => {
                shared.finish(state_id, start, Outcome::Failure);
                resume_unwind(panic)
            }
        };
        shared.finish(state_id, start, classify.classify(&result));
        result.map_err(CallError::Failed)
    }

    /// The sync call where the state counts its permits (HALF_OPEN, FORCED_OPEN, or OPEN at the
    /// end of its wait): a real permit, or a rejection. Kept out of line so that the two common
    /// paths above stay small enough to inline into the caller.
    #[inline(never)]
    fn call_sync_counted<T, E, F, C>(&self, classify: &C, f: F) -> Result<T, CallError<E>>
    where
        F: FnOnce() -> Result<T, E>,
        C: Classify<T, E> + ?Sized,
    {
        let permit = self.shared.acquire_slow()?;
        let result = match catch_unwind(AssertUnwindSafe(f)) {
            Ok(result) => result,
            Err(panic) => {
                permit.failure();
                resume_unwind(panic)
            }
        };
        finish(permit, classify, &result);
        result.map_err(CallError::Failed)
    }
}

/// An async protected call: the future behind [`CircuitBreaker::call`], `call_with` and the
/// attribute.
///
/// Written out rather than as an `async fn`, so that every way in is this one type and
/// awaiting it moves no future into another: `fut` stays where the call was pinned, and the
/// timer for `timeout-duration` is built in place on the first poll. `map` turns `fut`'s output
/// into the `Result` that is classified (the identity, or the attribute's conversion).
pub(crate) struct Call<'a, F, C: ?Sized, M> {
    breaker: &'a CircuitBreaker,
    classify: &'a C,
    map: M,
    stage: Stage<'a>,
    // Pinned whenever the call is: never moved out, dropped in place with the call.
    fut: F,
    // Pinned likewise; set once, on the first poll, if a timeout applies.
    timer: Option<Timer>,
}

/// Where a [`Call`] is: not yet asked, running under a grant, or finished.
enum Stage<'a> {
    Start,
    Running(Grant<'a>),
    Done,
}

/// The timeout of a running call. Its sleep is polled outside Tokio's cooperative budget, as
/// `tokio::time::timeout` does when the call has spent the budget: a busy call still times out.
struct Timer {
    sleep: tokio::task::Unconstrained<tokio::time::Sleep>,
    limit: Duration,
}

impl<'a, F, C: ?Sized, M> Call<'a, F, C, M> {
    #[inline]
    pub(crate) fn new(breaker: &'a CircuitBreaker, classify: &'a C, map: M, fut: F) -> Self {
        Call {
            breaker,
            classify,
            map,
            stage: Stage::Start,
            fut,
            timer: None,
        }
    }
}

impl<F, C, M, T, E> Future for Call<'_, F, C, M>
where
    F: Future,
    M: Fn(F::Output) -> Result<T, E>,
    C: Classify<T, E> + ?Sized,
{
    type Output = Result<T, CallError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `fut` and `timer` are pinned structurally and nothing else is: they are never
        // moved out of a pinned `Call` (only polled, and `timer` only set through `Pin::set`),
        // `Call` has no `Drop` of its own, and it is `Unpin` only if both are.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let mut fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        // SAFETY: as above.
        let mut timer = unsafe { Pin::new_unchecked(&mut this.timer) };
        match this.stage {
            Stage::Running(_) => {}
            Stage::Start => {
                match this.breaker.grant() {
                    Ok(grant) => this.stage = Stage::Running(grant),
                    Err(rejected) => {
                        this.stage = Stage::Done;
                        return Poll::Ready(Err(CallError::NotPermitted(rejected)));
                    }
                }
                if let Some(limit) = this.breaker.timeout() {
                    timer.set(Some(Timer {
                        sleep: tokio::task::unconstrained(tokio::time::sleep(limit)),
                        limit,
                    }));
                }
            }
            Stage::Done => panic!("a breaker's call future was polled after it completed"),
        }
        let polled = match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(polled) => polled,
            Err(panic) => {
                if let Stage::Running(grant) = std::mem::replace(&mut this.stage, Stage::Done) {
                    grant.finish(Outcome::Failure);
                }
                resume_unwind(panic)
            }
        };
        if let Poll::Ready(output) = polled {
            let result = (this.map)(output);
            if let Stage::Running(grant) = std::mem::replace(&mut this.stage, Stage::Done) {
                grant.finish(this.classify.classify(&result));
            }
            return Poll::Ready(result.map_err(CallError::Failed));
        }
        if let Some(timer) = timer.as_mut().as_pin_mut() {
            // SAFETY: `sleep` is pinned structurally in `Timer`, which is pinned in `Call`.
            let (sleep, limit) = unsafe {
                let timer = timer.get_unchecked_mut();
                (Pin::new_unchecked(&mut timer.sleep), timer.limit)
            };
            if sleep.poll(cx).is_ready() {
                // The call is cancelled: `fut` is not polled again, and is dropped with this
                // future.
                if let Stage::Running(grant) = std::mem::replace(&mut this.stage, Stage::Done) {
                    grant.timed_out(limit);
                }
                let name = this.breaker.shared.interned_name();
                return Poll::Ready(Err(CallError::TimedOut(CallTimedOut::new(name, limit))));
            }
        }
        Poll::Pending
    }
}

impl<F, C: ?Sized, M> fmt::Debug for Call<'_, F, C, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}

/// What a running async call holds. Where the state counts its permits (HALF_OPEN), the
/// [`Permit`], given back if the call is dropped; where every call is permitted, only the state's
/// id and the start time, kept in the future's state as two words (dropping the call then has
/// nothing to give back).
enum Grant<'a> {
    Unlimited(&'a Shared, u64, Timestamp),
    Counted(Permit<'a>),
}

impl Grant<'_> {
    #[inline(always)]
    fn finish(self, outcome: Outcome) {
        match self {
            Grant::Unlimited(shared, state_id, start) => shared.finish(state_id, start, outcome),
            Grant::Counted(permit) => permit.finish(outcome),
        }
    }

    /// The call was cancelled by `timeout`: a failure that took at least that long.
    fn timed_out(self, limit: Duration) {
        match self {
            Grant::Unlimited(shared, state_id, start) => {
                let now = shared.clock().now();
                let elapsed = now.saturating_duration_since(start).max(limit);
                shared.complete(state_id, Outcome::Failure, duration_nanos(elapsed), now);
            }
            Grant::Counted(permit) => {
                let elapsed = permit.elapsed().max(limit);
                permit.record(Outcome::Failure, elapsed);
            }
        }
    }
}

#[inline]
fn finish<T, E, C: Classify<T, E> + ?Sized>(
    permit: Permit<'_>,
    classify: &C,
    result: &Result<T, E>,
) {
    permit.finish(classify.classify(result));
}
