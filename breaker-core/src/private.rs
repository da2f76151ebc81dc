//! Support for the code that `#[circuit_breaker]`, `#[bulkhead]` and `#[retry]` generate. Not a public
//! API: anything here may change in any release, in step with `breaker-macros`, which is
//! pinned to this version.
//!
//! The generated code calls a few identity-like shims. Their generic bounds are the facts the
//! attribute needs (the function returns a `Result`, its error can hold a rejection, the
//! fallback has the right shape), written as traits with `#[diagnostic::on_unimplemented]`, so
//! that a mistake is reported in words, at the token the macro spans the call at. Each trait
//! has a blanket impl rather than a supertrait: with a supertrait, rustc prints the
//! supertrait's message instead of ours.
//!
//! Everything with behaviour is the breaker's call (`call::future::Call`,
//! [`CircuitBreaker::call_sync_with`]) and the bulkhead's places ([`Bulkhead::acquire`],
//! [`Bulkhead::acquire_blocking`]); the shims only route types. With both attributes, the
//! breaker's call wraps the bulkhead's (Breaker(Bulkhead(fn)), Spring's order): the breaker
//! decides first, so an OPEN breaker never takes a place, its `timeout-duration` covers the
//! wait for one, and a refusal reaches it as its own kind of error
//! ([`Permit::refused`](crate::Permit)).
//!
//! With `#[retry]`, the retry's call ([`Retry::call_with`], [`Retry::call_sync_with`]) is
//! outermost: Retry(Breaker(Bulkhead(fn))). The expansion hands it a closure that makes one
//! attempt through the inner guards, so each attempt takes its own permit and place; the
//! retry classifies an attempt's `CallError` with `Attempts` (a rejection is not retried
//! unless `retry-exceptions` names it) and its nested error is flattened into one
//! `CallError`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

pub use std::result::Result::{self, Err, Ok};

pub use crate::breaker::CircuitBreaker;
pub use crate::bulkhead::{Bulkhead, BulkheadFull};
pub use crate::classify::Classifier;
pub use crate::error::{CallError, CallNotPermitted, CallTimedOut};
pub use crate::registry::keyed::KeyedLease;
pub use crate::retry::{MaxRetriesExceeded, Retry};
pub use crate::site::{BulkheadSite, CallSite, KeyedCallSite, RetrySite};

use crate::classify::{Always, Classify, Never, Outcome, Predicate};
use crate::config::retry::RetryConfig;
use crate::event::error_text::DescribeError;

/// The guarded function's return type, split into its `Ok` and `Err` types.
#[diagnostic::on_unimplemented(
    message = "`#[circuit_breaker]`, `#[bulkhead]` and `#[retry]` guard functions that return a `Result`, not `{Self}`",
    label = "this is not a `Result`",
    note = "any `Result` type works, aliases such as `io::Result<T>` included: a rejected or refused call ends as its `Err`, and a breaker records its `Err` values"
)]
pub trait GuardedOutput: Sized {
    /// The `Ok` type.
    type Ok;
    /// The `Err` type.
    type Err;
    /// `self` as a `Result` (the identity).
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
    /// A `Result` as `Self` (the identity).
    fn from_result(result: Result<Self::Ok, Self::Err>) -> Self;
}

impl<T, E> GuardedOutput for Result<T, E> {
    type Ok = T;
    type Err = E;
    #[inline]
    fn into_result(self) -> Self {
        self
    }
    #[inline]
    fn from_result(result: Self) -> Self {
        result
    }
}

/// An error type that can stand for a rejected call and for a timed-out one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a rejected or timed-out call: implement `From<CallNotPermitted>` and `From<CallTimedOut>` for it, or give the attribute a `fallback`",
    label = "without a `fallback`, a rejected call returns `Err({Self}::from(CallNotPermitted))`, a timed-out one `Err({Self}::from(CallTimedOut))`",
    note = "`std::io::Error` has both conversions"
)]
pub trait FromRejection: Sized {
    /// The error for a rejected call.
    fn from_rejection(rejected: CallNotPermitted) -> Self;
    /// The error for a call cut by `timeout-duration`.
    fn from_timeout(timed_out: CallTimedOut) -> Self;
}

impl<E: From<CallNotPermitted> + From<CallTimedOut>> FromRejection for E {
    #[inline]
    fn from_rejection(rejected: CallNotPermitted) -> Self {
        E::from(rejected)
    }
    #[inline]
    fn from_timeout(timed_out: CallTimedOut) -> Self {
        E::from(timed_out)
    }
}

/// An error type that can stand for a call refused by a full bulkhead.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a call refused by a full bulkhead: implement `From<BulkheadFull>` for it, or give the function a `fallback`",
    label = "without a `fallback`, a refused call returns `Err({Self}::from(BulkheadFull))`",
    note = "`std::io::Error` has this conversion; with `#[circuit_breaker]` on the function too, the fallback goes on `#[circuit_breaker]`"
)]
pub trait FromBulkheadFull: Sized {
    /// The error for a refused call.
    fn from_bulkhead_full(full: BulkheadFull) -> Self;
}

impl<E: From<BulkheadFull>> FromBulkheadFull for E {
    #[inline]
    fn from_bulkhead_full(full: BulkheadFull) -> Self {
        E::from(full)
    }
}

/// The fallback of a plain function returns exactly the guarded function's type.
#[diagnostic::on_unimplemented(
    message = "the fallback returns `{Self}`, but the guarded function returns `{R}`",
    label = "this fallback returns `{Self}`",
    note = "a fallback takes the guarded function's parameters plus a trailing `CallError<E>` and returns the same type; a plain function's fallback is a plain `fn`, not an `async fn`"
)]
pub trait SameAs<R> {
    /// `self`, as `R`.
    fn same(self) -> R;
}

impl<R> SameAs<R> for R {
    #[inline]
    fn same(self) -> R {
        self
    }
}

/// The fallback of an async function is a future of exactly the guarded function's type.
#[diagnostic::on_unimplemented(
    message = "the fallback of an async function must be an `async fn` returning `{R}`",
    label = "this fallback returns `{Self}`",
    note = "a fallback takes the guarded function's parameters plus a trailing `CallError<E>` and returns the same type; an `async fn`'s fallback is an `async fn` too"
)]
pub trait FallbackFuture<R> {
    /// The future, resolving to `R`.
    type Future: Future<Output = R>;
    /// Converts `self` into that future.
    fn into_fallback(self) -> Self::Future;
}

impl<R, F: Future<Output = R>> FallbackFuture<R> for F {
    type Future = F;
    #[inline]
    fn into_fallback(self) -> F {
        self
    }
}

/// A `record` or `ignore` predicate: `Fn(&E) -> bool`.
#[diagnostic::on_unimplemented(
    message = "a `record` or `ignore` predicate takes `&{E}` and returns `bool`",
    label = "this is not a `Fn(&{E}) -> bool`",
    note = "name a `fn(&E) -> bool`, or write a closure with its parameter type: `|e: &MyError| ...`"
)]
pub trait ErrorPredicate<E> {}

impl<E, P: Fn(&E) -> bool> ErrorPredicate<E> for P {}

/// A `result` predicate: `Fn(&T) -> bool`, for an `Ok` value that counts as a failure.
#[diagnostic::on_unimplemented(
    message = "a `result` predicate takes `&{T}` (the `Ok` value) and returns `bool`",
    label = "this is not a `Fn(&{T}) -> bool`",
    note = "name a `fn(&T) -> bool`, or write a closure with its parameter type: `|v: &Reply| ...`"
)]
pub trait ValuePredicate<T> {}

impl<T, P: Fn(&T) -> bool> ValuePredicate<T> for P {}

/// A run-time key: one breaker per distinct `Display` text.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot key a breaker",
    label = "a `key` is a value that is `Display`, borrowed or owned",
    note = "the key's text names the breaker (`name[key]`), so it must be `Display`; for several parts, format them into a `String` or use a struct of your own"
)]
pub trait BreakerKey {
    /// The breaker of this key at `site`, lent for the call.
    fn breaker(&self, site: &'static KeyedCallSite) -> KeyedLease;
}

impl<K: fmt::Display + ?Sized> BreakerKey for K {
    #[inline]
    fn breaker(&self, site: &'static KeyedCallSite) -> KeyedLease {
        site.lease(self)
    }
}

/// Checks a `record`/`ignore` predicate against the guarded function's error type.
#[inline]
pub fn error_predicate<R, P>(predicate: P) -> P
where
    R: GuardedOutput,
    P: ErrorPredicate<R::Err>,
{
    predicate
}

/// Checks a `result` predicate against the guarded function's `Ok` type.
#[inline]
pub fn value_predicate<R, P>(predicate: P) -> P
where
    R: GuardedOutput,
    P: ValuePredicate<R::Ok>,
{
    predicate
}

/// The breaker's classification in the expansion, with the way to write the function's
/// errors for the listeners that asked for error texts: the error type's `Display` where it has
/// one, found by [`ErrorTextProbe`] (autoref specialization, so a type without `Display` still
/// compiles, and gets its type name alone).
#[derive(Clone, Copy)]
pub struct Texted<C, E> {
    code: C,
    text: Option<DescribeError<E>>,
}

/// The classification `code`, with `text` (see [`Texted`]).
#[inline]
pub fn texted<C, E>(code: C, text: Option<DescribeError<E>>) -> Texted<C, E> {
    Texted { code, text }
}

impl<T, E, C: Classify<T, E>> Classify<T, E> for Texted<C, E> {
    #[inline]
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self.code.classify(result)
    }

    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        self.code.applies_kinds()
    }

    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<E>> {
        self.text
    }
}

impl<C, E> fmt::Debug for Texted<C, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Texted")
            .field("display", &self.text.is_some())
            .finish_non_exhaustive()
    }
}

/// Asks, in the expansion, whether the error type of a function returning `R` has a
/// `Display`: `(&&ErrorTextProbe::<R>::new()).error_text()` with [`DisplayErrorText`] and
/// [`NoErrorText`] in scope finds the first for a `Result` whose error type has one (its
/// receiver needs one auto-reference less) and the second otherwise. The second asks nothing
/// of `R`, so a return type that is not a `Result` is reported once, by the other shims.
pub struct ErrorTextProbe<R>(PhantomData<fn() -> R>);

impl<R> ErrorTextProbe<R> {
    /// The probe for `R`.
    #[inline(always)]
    pub const fn new() -> Self {
        ErrorTextProbe(PhantomData)
    }
}

impl<R> Default for ErrorTextProbe<R> {
    fn default() -> Self {
        ErrorTextProbe::new()
    }
}

impl<R> fmt::Debug for ErrorTextProbe<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ErrorTextProbe")
    }
}

/// [`ErrorTextProbe`]'s answer for an error type with `Display`: its text.
pub trait DisplayErrorText<E> {
    /// Writes the error's `Display` text.
    fn error_text(&self) -> Option<DescribeError<E>>;
}

impl<R> DisplayErrorText<R::Err> for &ErrorTextProbe<R>
where
    R: GuardedOutput,
    R::Err: fmt::Display,
{
    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<R::Err>> {
        Some(<R::Err as fmt::Display>::fmt)
    }
}

/// [`ErrorTextProbe`]'s answer otherwise: none (the breaker writes the text of an error type it
/// knows, else the type name alone).
pub trait NoErrorText {
    /// None.
    fn error_text<E>(&self) -> Option<DescribeError<E>>;
}

impl<R> NoErrorText for ErrorTextProbe<R> {
    #[inline(always)]
    fn error_text<E>(&self) -> Option<DescribeError<E>> {
        None
    }
}

/// The breaker of a run-time key, lent for the call ([`KeyedCallSite::lease`]). The key is
/// borrowed: its text is made owned only when its breaker is created.
#[inline]
pub fn keyed<K: BreakerKey + ?Sized>(site: &'static KeyedCallSite, key: &K) -> KeyedLease {
    key.breaker(site)
}

/// Runs an async body through `breaker` ([`CircuitBreaker::call_with`]).
///
/// Returns the same future as `call_with`, converting the body's output where `call_with` takes
/// it as is; the classifier is borrowed from the expansion's statement, whose temporaries
/// outlive the `.await`.
#[inline]
pub fn run<'a, R, C, F>(
    breaker: &'a CircuitBreaker,
    classify: &'a C,
    body: F,
) -> impl Future<Output = Result<R::Ok, CallError<R::Err>>> + use<'a, R, C, F>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    F: Future<Output = R>,
{
    crate::call::future::Call::new(breaker, classify, ran::<R>, body)
}

/// The body's output as the breaker's call takes it: the body ran (no bulkhead refused it).
#[inline]
fn ran<R: GuardedOutput>(out: R) -> Layered<R> {
    Ok(out.into_result())
}

/// What a body behind a bulkhead ends with: its own result, or the bulkhead's refusal.
type Layered<R> = Result<Result<<R as GuardedOutput>::Ok, <R as GuardedOutput>::Err>, BulkheadFull>;

/// The body behind `bulkhead`: a place taken (waiting up to `max-wait-duration`), the body
/// run, the place given back. Refused, the body is dropped without being polled.
///
/// Dropped while running, the body (a temporary of its `.await`, in an inner scope) is dropped
/// before the place, so that no new call gets the place while this one's clean-up still runs.
async fn in_bulkhead<R, F>(bulkhead: &Bulkhead, body: F) -> Layered<R>
where
    R: GuardedOutput,
    F: Future<Output = R>,
{
    let place = bulkhead.acquire().await?;
    let out = body.await;
    drop(place);
    Ok(out.into_result())
}

/// [`in_bulkhead`] for a plain body: waits for a place on this thread.
#[inline]
fn in_bulkhead_sync<R, F>(bulkhead: &Bulkhead, body: F) -> Layered<R>
where
    R: GuardedOutput,
    F: FnOnce() -> R,
{
    let place = bulkhead.acquire_blocking()?;
    let out = body();
    drop(place);
    Ok(out.into_result())
}

/// A bulkhead's answer as the guarded call's: a refusal is [`CallError::BulkheadFull`].
#[inline]
fn answer<T, E>(layered: Result<Result<T, E>, BulkheadFull>) -> Result<T, CallError<E>> {
    match layered {
        Ok(result) => result.map_err(CallError::Inner),
        Err(full) => Err(CallError::BulkheadFull(full)),
    }
}

/// Runs an async body behind `bulkhead` alone.
pub async fn run_bulkhead<R, F>(bulkhead: &Bulkhead, body: F) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    F: Future<Output = R>,
{
    answer(in_bulkhead(bulkhead, body).await)
}

/// Runs a plain body behind `bulkhead` alone.
#[inline]
pub fn run_bulkhead_sync<R, F>(bulkhead: &Bulkhead, body: F) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    F: FnOnce() -> R,
{
    answer(in_bulkhead_sync(bulkhead, body))
}

/// Runs an async body through `breaker`, around `bulkhead`: Breaker(Bulkhead(fn)).
#[inline]
pub fn run_composed<'a, R, C, F>(
    breaker: &'a CircuitBreaker,
    classify: &'a C,
    bulkhead: &'a Bulkhead,
    body: F,
) -> impl Future<Output = Result<R::Ok, CallError<R::Err>>> + use<'a, R, C, F>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    F: Future<Output = R>,
{
    crate::call::future::Call::new(
        breaker,
        classify,
        std::convert::identity,
        in_bulkhead(bulkhead, body),
    )
}

/// Runs a plain body through `breaker`, around `bulkhead`: Breaker(Bulkhead(fn)).
#[inline]
pub fn run_composed_sync<R, C, F>(
    breaker: &CircuitBreaker,
    classify: C,
    bulkhead: &Bulkhead,
    body: F,
) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    F: FnOnce() -> R,
{
    breaker.call_sync_layered(&classify, move || in_bulkhead_sync(bulkhead, body))
}

/// Runs a plain body through `breaker` ([`CircuitBreaker::call_sync_with`]).
#[inline]
pub fn run_sync<R, C, F>(
    breaker: &CircuitBreaker,
    classify: C,
    body: F,
) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    F: FnOnce() -> R,
{
    breaker.call_sync_with(&classify, move || body().into_result())
}

/// The guarded call's `Ok` value, as `R`.
#[inline]
pub fn ok<R: GuardedOutput>(value: R::Ok) -> R {
    R::from_result(Ok(value))
}

/// Awaits an async fallback, checking that it returns `R`.
#[inline]
pub fn fallback<R, F>(fallback: F) -> F::Future
where
    F: FallbackFuture<R>,
{
    fallback.into_fallback()
}

/// A plain fallback's result, checked to be `R`.
#[inline]
pub fn fallback_sync<R, X>(result: X) -> R
where
    X: SameAs<R>,
{
    result.same()
}

/// Without a fallback, through a breaker alone: the call's own error as is, a rejection
/// through `From<CallNotPermitted>`, a timeout through `From<CallTimedOut>`.
#[inline]
pub fn reject<R>(out: Result<R::Ok, CallError<R::Err>>) -> R
where
    R: GuardedOutput,
    R::Err: FromRejection,
{
    R::from_result(out.map_err(|error| match error {
        CallError::Inner(e) => e,
        CallError::Rejected(rejected) => R::Err::from_rejection(rejected),
        CallError::TimedOut(timed_out) => R::Err::from_timeout(timed_out),
        CallError::BulkheadFull(_) | CallError::RetriesExhausted(_) => {
            unreachable!("a breaker alone neither refuses a call as full nor retries it")
        }
    }))
}

/// Without a fallback, behind a bulkhead alone: the call's own error as is, a refusal
/// through `From<BulkheadFull>`.
#[inline]
pub fn reject_bulkhead<R>(out: Result<R::Ok, CallError<R::Err>>) -> R
where
    R: GuardedOutput,
    R::Err: FromBulkheadFull,
{
    R::from_result(out.map_err(|error| match error {
        CallError::Inner(e) => e,
        CallError::BulkheadFull(full) => R::Err::from_bulkhead_full(full),
        CallError::Rejected(_) | CallError::TimedOut(_) | CallError::RetriesExhausted(_) => {
            unreachable!("a bulkhead alone neither rejects, times out nor retries a call")
        }
    }))
}

/// Without a fallback, through a breaker around a bulkhead: each way a call can end without
/// its own result through its conversion.
#[inline]
pub fn reject_composed<R>(out: Result<R::Ok, CallError<R::Err>>) -> R
where
    R: GuardedOutput,
    R::Err: FromRejection + FromBulkheadFull,
{
    R::from_result(out.map_err(|error| match error {
        CallError::Inner(e) => e,
        CallError::Rejected(rejected) => R::Err::from_rejection(rejected),
        CallError::TimedOut(timed_out) => R::Err::from_timeout(timed_out),
        CallError::BulkheadFull(full) => R::Err::from_bulkhead_full(full),
        CallError::RetriesExhausted(_) => {
            unreachable!("a breaker around a bulkhead does not retry a call")
        }
    }))
}

// --- #[retry] ------------------------------------------------------------------------------

/// An error type that can stand for retries that ran out on an `Ok` value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold exhausted retries: implement `From<MaxRetriesExceeded>` for it, or give the function a `fallback`",
    label = "with `result = ..` and without a `fallback`, retries that run out on an `Ok` (with `fail-after-max-attempts`) return `Err({Self}::from(MaxRetriesExceeded))`",
    note = "`std::io::Error` has this conversion; without `result = ..`, only errors are retried and the last one is returned as is"
)]
pub trait FromRetriesExhausted: Sized {
    /// The error for retries that ran out.
    fn from_retries_exhausted(exhausted: MaxRetriesExceeded) -> Self;
}

impl<E: From<MaxRetriesExceeded>> FromRetriesExhausted for E {
    #[inline]
    fn from_retries_exhausted(exhausted: MaxRetriesExceeded) -> Self {
        E::from(exhausted)
    }
}

/// `#[retry]`'s classification of an attempt, from its `retry`, `ignore` and `result`
/// predicates (Resilience4j's `retryOnException`, `ignoreExceptions` and `retryOnResult`):
/// an `Ok` value that `result` matches is retried (a failure), any other `Ok` ends the call (a
/// success); an error that `ignore` matches ends the call (ignored), as does one that `retry`
/// does not match; any other error is retried. By default every error is retried and no `Ok`.
#[derive(Clone, Copy, Default)]
pub struct RetryOn<Ret = Always, Ign = Never, Res = Never> {
    retry: Ret,
    ignore: Ign,
    result: Res,
}

impl RetryOn {
    /// Every error retried, no `Ok` value.
    pub const fn new() -> RetryOn {
        RetryOn {
            retry: Always,
            ignore: Never,
            result: Never,
        }
    }
}

impl<Ret, Ign, Res> RetryOn<Ret, Ign, Res> {
    /// Only errors matching `retry` are retried.
    pub fn retry<P>(self, retry: P) -> RetryOn<P, Ign, Res> {
        RetryOn {
            retry,
            ignore: self.ignore,
            result: self.result,
        }
    }

    /// Errors matching `ignore` are never retried.
    pub fn ignore<P>(self, ignore: P) -> RetryOn<Ret, P, Res> {
        RetryOn {
            retry: self.retry,
            ignore,
            result: self.result,
        }
    }

    /// `Ok` values matching `result` are retried.
    pub fn result<P>(self, result: P) -> RetryOn<Ret, Ign, P> {
        RetryOn {
            retry: self.retry,
            ignore: self.ignore,
            result,
        }
    }

    #[inline]
    fn value<T>(&self, value: &T) -> Outcome
    where
        Res: Predicate<T>,
    {
        if self.result.test(value) {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    }

    #[inline]
    fn error<E>(&self, error: &E) -> Outcome
    where
        Ret: Predicate<E>,
        Ign: Predicate<E>,
    {
        if self.ignore.test(error) || !self.retry.test(error) {
            Outcome::Ignored
        } else {
            Outcome::Failure
        }
    }
}

impl<T, E, Ret, Ign, Res> Classify<T, E> for RetryOn<Ret, Ign, Res>
where
    Ret: Predicate<E>,
    Ign: Predicate<E>,
    Res: Predicate<T>,
{
    #[inline]
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        match result {
            Ok(value) => self.value(value),
            Err(error) => self.error(error),
        }
    }
}

impl<Ret, Ign, Res> fmt::Debug for RetryOn<Ret, Ign, Res> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryOn").finish_non_exhaustive()
    }
}

/// How the retry counts an attempt made through a breaker or a bulkhead: the code's
/// [`RetryOn`] and the retry's configured kinds see the function's own result, and the
/// configured kinds alone see how an inner guard ended the attempt:
///
/// - a rejection by the breaker ends the call (ignored), unless `retry-exceptions` names
///   `CallNotPermittedException` (and `ignore-exceptions` does not);
/// - a timeout and a bulkhead's refusal are retried as any error, unless the configured kinds
///   say otherwise (`TimeoutException`, `BulkheadFullException`).
struct Attempts<'a, C> {
    code: &'a C,
    config: &'a RetryConfig,
}

impl<T, E, Ret, Ign, Res> Classify<T, CallError<E>> for Attempts<'_, RetryOn<Ret, Ign, Res>>
where
    E: 'static,
    Ret: Predicate<E>,
    Ign: Predicate<E>,
    Res: Predicate<T>,
{
    fn classify(&self, result: &Result<T, CallError<E>>) -> Outcome {
        let error = match result {
            Ok(value) => return self.code.value(value),
            Err(error) => error,
        };
        match error {
            CallError::Inner(e) => self.config.classify_error(e, self.code.error(e)),
            // Never retried unless named: the breaker is OPEN, and asking again at once only
            // adds load it was opened to keep away.
            CallError::Rejected(_) if self.config.retry_exceptions().is_empty() => Outcome::Ignored,
            CallError::Rejected(rejected) => self.config.classify_error(rejected, Outcome::Failure),
            CallError::TimedOut(timed_out) => {
                self.config.classify_error(timed_out, Outcome::Failure)
            }
            CallError::BulkheadFull(full) => self.config.classify_error(full, Outcome::Failure),
            // Only a retry ends a call so, and the retry is outermost.
            CallError::RetriesExhausted(_) => Outcome::Ignored,
        }
    }

    /// The kinds were applied above, to the error inside the `CallError`.
    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        true
    }
}

/// Runs an async body through `retry` alone: `make` makes one attempt's future of the body.
#[inline]
pub fn run_retry<'a, R, C, M, F>(
    retry: &'a Retry,
    classify: &'a C,
    mut make: M,
) -> impl Future<Output = Result<R::Ok, CallError<R::Err>>> + use<'a, R, C, M, F>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    M: FnMut() -> F,
    F: Future<Output = R>,
{
    retry.call_with(classify, move || {
        let attempt = make();
        async move { attempt.await.into_result() }
    })
}

/// Runs a plain body through `retry` alone.
#[inline]
pub fn run_retry_sync<R, C, M>(
    retry: &Retry,
    classify: C,
    mut body: M,
) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: 'static,
    C: Classify<R::Ok, R::Err>,
    M: FnMut() -> R,
{
    retry.call_sync_with(&classify, move || body().into_result())
}

/// Runs an async attempt through `retry` around the inner guards: `make` makes one attempt's
/// future through the breaker (and bulkhead), Retry(Breaker(Bulkhead(fn))).
pub async fn run_retry_layered<R, Ret, Ign, Res, M, F>(
    retry: &Retry,
    classify: &RetryOn<Ret, Ign, Res>,
    make: M,
) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: 'static,
    Ret: Predicate<R::Err>,
    Ign: Predicate<R::Err>,
    Res: Predicate<R::Ok>,
    M: FnMut() -> F,
    F: Future<Output = Result<R::Ok, CallError<R::Err>>>,
{
    let attempts = Attempts {
        code: classify,
        config: retry.config(),
    };
    retry
        .call_with(&attempts, make)
        .await
        .map_err(CallError::flatten)
}

/// Runs a plain attempt through `retry` around the inner guards.
#[inline]
pub fn run_retry_layered_sync<R, Ret, Ign, Res, M>(
    retry: &Retry,
    classify: RetryOn<Ret, Ign, Res>,
    make: M,
) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: 'static,
    Ret: Predicate<R::Err>,
    Ign: Predicate<R::Err>,
    Res: Predicate<R::Ok>,
    M: FnMut() -> Result<R::Ok, CallError<R::Err>>,
{
    let attempts = Attempts {
        code: &classify,
        config: retry.config(),
    };
    retry
        .call_sync_with(&attempts, make)
        .map_err(CallError::flatten)
}

/// Without a fallback, with `result = ..`: retries that ran out on an `Ok` through
/// `From<MaxRetriesExceeded>`, before the inner guards' conversions.
#[inline]
pub fn exhausted<R>(out: Result<R::Ok, CallError<R::Err>>) -> Result<R::Ok, CallError<R::Err>>
where
    R: GuardedOutput,
    R::Err: FromRetriesExhausted,
{
    out.map_err(|error| match error {
        CallError::RetriesExhausted(exhausted) => {
            CallError::Inner(R::Err::from_retries_exhausted(exhausted))
        }
        other => other,
    })
}

/// Without a fallback, through a retry alone: the call's own (last) error as is.
#[inline]
pub fn reject_retry<R>(out: Result<R::Ok, CallError<R::Err>>) -> R
where
    R: GuardedOutput,
{
    R::from_result(out.map_err(|error| match error {
        CallError::Inner(e) => e,
        CallError::Rejected(_)
        | CallError::TimedOut(_)
        | CallError::BulkheadFull(_)
        | CallError::RetriesExhausted(_) => unreachable!(
            "a retry alone neither rejects, times out nor refuses a call, and without a `result` \
             predicate (or with `exhausted` before) it never ends one with exhausted retries"
        ),
    }))
}
