//! How a call's result counts: success, failure, or ignored.
//!
//! Three layers, each optional: the code's own classification ([`Classifier`], or any
//! `Fn(&Result<T, E>) -> Outcome`), the configured error kinds (`record-exceptions` and
//! `ignore-exceptions`, named in configuration files and registered in code as [`ErrorKind`]s),
//! and [`ConfiguredClassifier`], which puts the second on top of the first.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::error::{BulkheadFull, CallNotPermitted, CallTimedOut};
use crate::event::error_text::DescribeError;

/// The names of the built-in kind [`ErrorKind::bulkhead_full`]: Resilience4j's exception, by its
/// simple name and by its class name.
const BULKHEAD_FULL_NAMES: [&str; 2] = [
    "BulkheadFullException",
    "io.github.resilience4j.bulkhead.BulkheadFullException",
];

/// The names of the built-in kind [`ErrorKind::call_not_permitted`]: Resilience4j's exception,
/// by its simple name and by its class name.
const CALL_NOT_PERMITTED_NAMES: [&str; 2] = [
    "CallNotPermittedException",
    "io.github.resilience4j.circuitbreaker.CallNotPermittedException",
];

/// The names of the built-in kind [`ErrorKind::call_timed_out`]: the exception Resilience4j's
/// time limiter throws, by its simple name and by its class name.
const TIMEOUT_NAMES: [&str; 2] = ["TimeoutException", "java.util.concurrent.TimeoutException"];

/// The names a configuration file may use for a built-in kind without registering it, in the
/// order error messages list them (each kind's simple name first).
pub(crate) const BUILT_IN_NAMES: [&str; 3] = [
    BULKHEAD_FULL_NAMES[0],
    CALL_NOT_PERMITTED_NAMES[0],
    TIMEOUT_NAMES[0],
];

/// How a call ended, as the breaker counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A success (slow if it took longer than `slow-call-duration-threshold`).
    Success,
    /// A failure (slow if it took longer than `slow-call-duration-threshold`).
    Failure,
    /// Neither: an error the breaker ignores (for example a 4xx caused by bad input). A trial
    /// permit in HALF_OPEN is given back.
    Ignored,
}

impl Outcome {
    /// How an HTTP response counts by its status code: a 5xx is a failure, a 4xx is ignored
    /// (the caller's mistake says nothing about the server's health), anything else a success.
    /// The one rule behind the tower layer's `HttpStatus` and the reqwest middleware's
    /// `StatusClassifier`.
    ///
    /// ```
    /// use breaker_core::Outcome;
    ///
    /// assert_eq!(Outcome::from_http_status(200), Outcome::Success);
    /// assert_eq!(Outcome::from_http_status(404), Outcome::Ignored);
    /// assert_eq!(Outcome::from_http_status(503), Outcome::Failure);
    /// ```
    #[inline]
    pub fn from_http_status(status: u16) -> Outcome {
        match status {
            500..=599 => Outcome::Failure,
            400..=499 => Outcome::Ignored,
            _ => Outcome::Success,
        }
    }
}

/// Decides how a call's result counts: success, failure, or ignored.
///
/// Any `Fn(&Result<T, E>) -> Outcome` is a `Classify`; [`Classifier`] builds one from
/// Resilience4j's three predicates.
pub trait Classify<T, E> {
    /// How `result` counts.
    fn classify(&self, result: &Result<T, E>) -> Outcome;

    /// Whether [`classify`](Classify::classify) already applied the configured error kinds
    /// itself, so that a call takes its outcome as is: the classification of an attempt
    /// through inner guards (`#[retry]` around a breaker), whose kinds must see the error
    /// inside the inner guard's `CallError`, not the `CallError`.
    #[doc(hidden)]
    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        false
    }

    /// How to write an error's text for the listeners that asked for error texts
    /// ([`ErrorText`](crate::ErrorText)): `Some` of a function that writes an error's
    /// `Display` text, or `None` (the default) to let the breaker find one itself (for the
    /// error types it knows, else the type name alone).
    ///
    /// Called only for a failed or ignored call, and only while such a listener hears the
    /// breaker. [`Described`] gives the `Display` of any error type that has one; the
    /// attribute's expansion does the same for its function's error type.
    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<E>> {
        None
    }
}

/// A classification (`C`, [`Classifier::new()`] by default) whose errors are described by their
/// `Display` text for the listeners that asked for error texts (see
/// [`ErrorText`](crate::ErrorText)): for a plain call whose error type the breaker does not
/// know on its own.
///
/// ```
/// use breaker_core::{CircuitBreaker, Classifier, Config, Described};
///
/// #[derive(Debug)]
/// struct Refused;
/// impl std::fmt::Display for Refused {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("the peer refused the connection")
///     }
/// }
///
/// let breaker = CircuitBreaker::new("peer", Config::default());
/// let _texts = breaker.subscribe_with_error_texts(|event| {
///     if let Some(error) = event.error() {
///         assert_eq!(error.text(), Some("the peer refused the connection"));
///     }
/// });
/// let _ = breaker.call_sync_with(&Described::new(), || Err::<(), _>(Refused));
/// // With a classification of its own:
/// let ignore_none = Classifier::new().ignore(|_: &Refused| false);
/// let _ = breaker.call_sync_with(&Described(ignore_none), || Err::<(), _>(Refused));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Described<C = Classifier>(pub C);

impl Described {
    /// The default classification (every error a failure), described.
    pub const fn new() -> Described {
        Described(Classifier::new())
    }
}

impl<T, E, C> Classify<T, E> for Described<C>
where
    E: fmt::Display,
    C: Classify<T, E>,
{
    #[inline]
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self.0.classify(result)
    }

    #[inline(always)]
    fn applies_kinds(&self) -> bool {
        self.0.applies_kinds()
    }

    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<E>> {
        Some(<E as fmt::Display>::fmt)
    }
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

/// A named test on errors, registered in code so that configuration files can name it in
/// `record-exceptions` and `ignore-exceptions`.
///
/// Resilience4j lists exception classes there (`java.io.IOException`); Rust errors have no class
/// hierarchy, so the name stands for a predicate over your own error type. A kind only matches
/// errors of the type it was made for: `ErrorKind::new("ServerError", |e: &HttpError| ...)`
/// never matches an `io::Error`.
///
/// ```
/// use breaker_core::ErrorKind;
///
/// #[derive(Debug)]
/// enum HttpError { Status(u16), Timeout }
///
/// let server = ErrorKind::new("ServerError", |e: &HttpError| matches!(e, HttpError::Status(500..=599)));
/// let io = ErrorKind::of_type::<std::io::Error>("java.io.IOException");
/// assert!(server.matches(&HttpError::Status(503)));
/// assert!(!server.matches(&HttpError::Timeout));
/// assert!(!server.matches(&std::io::Error::other("down")));
/// assert!(io.matches(&std::io::Error::other("down")));
/// ```
#[derive(Clone)]
pub struct ErrorKind {
    name: Arc<str>,
    test: Arc<KindTest>,
}

type KindTest = dyn Fn(&dyn Any) -> bool + Send + Sync;

impl ErrorKind {
    /// The kind `name`: errors of type `E` for which `predicate` returns true.
    ///
    /// Names are matched exactly (case-sensitive). A name meant for a `.properties` list
    /// (`record-exceptions=a,b`) should not contain a comma.
    pub fn new<E, P>(name: &str, predicate: P) -> ErrorKind
    where
        E: 'static,
        P: Fn(&E) -> bool + Send + Sync + 'static,
    {
        ErrorKind {
            name: Arc::from(name),
            test: Arc::new(move |error: &dyn Any| {
                error.downcast_ref::<E>().is_some_and(&predicate)
            }),
        }
    }

    /// The kind `name`: every error of type `E`.
    pub fn of_type<E: 'static>(name: &str) -> ErrorKind {
        ErrorKind::new(name, |_: &E| true)
    }

    /// The built-in kind `BulkheadFullException`: a call refused by a full bulkhead inside the
    /// breaker ([`BulkheadFull`]). Configuration files name it without registering it, as
    /// `BulkheadFullException` or by Resilience4j's class name
    /// `io.github.resilience4j.bulkhead.BulkheadFullException`; a kind registered under either
    /// name takes its place.
    ///
    /// By default a refusal is a failure the breaker records; in `ignore-exceptions`, it counts
    /// for nothing.
    ///
    /// ```
    /// use breaker_core::{Config, ErrorKind};
    ///
    /// let config = Config::builder()
    ///     .ignore_exceptions([ErrorKind::bulkhead_full()])
    ///     .build()?;
    /// assert_eq!(config.ignore_exceptions()[0].name(), "BulkheadFullException");
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn bulkhead_full() -> ErrorKind {
        ErrorKind::of_type::<BulkheadFull>(BULKHEAD_FULL_NAMES[0])
    }

    /// The built-in kind `CallNotPermittedException`: a call a circuit breaker rejected
    /// ([`CallNotPermitted`]), as a retry around the breaker sees it. Configuration files name
    /// it without registering it, as `CallNotPermittedException` or by Resilience4j's class
    /// name `io.github.resilience4j.circuitbreaker.CallNotPermittedException`; a kind
    /// registered under either name takes its place.
    ///
    /// A retry never retries a rejection unless its `retry-exceptions` names this kind.
    ///
    /// ```
    /// use breaker_core::{ErrorKind, RetryConfig};
    ///
    /// let config = RetryConfig::builder()
    ///     .retry_exceptions([ErrorKind::call_not_permitted()])
    ///     .build()?;
    /// assert_eq!(config.retry_exceptions()[0].name(), "CallNotPermittedException");
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn call_not_permitted() -> ErrorKind {
        ErrorKind::of_type::<CallNotPermitted>(CALL_NOT_PERMITTED_NAMES[0])
    }

    /// The built-in kind `TimeoutException`: a call a circuit breaker cut at its
    /// `timeout-duration` ([`CallTimedOut`]), as a retry around the breaker sees it.
    /// Configuration files name it without registering it, as `TimeoutException` or by Java's
    /// class name `java.util.concurrent.TimeoutException` (what Resilience4j's time limiter
    /// throws); a kind registered under either name takes its place.
    ///
    /// ```
    /// use breaker_core::{ErrorKind, RetryConfig};
    ///
    /// let config = RetryConfig::builder()
    ///     .ignore_exceptions([ErrorKind::call_timed_out()])
    ///     .build()?;
    /// assert_eq!(config.ignore_exceptions()[0].name(), "TimeoutException");
    /// # Ok::<(), breaker_core::ConfigError>(())
    /// ```
    pub fn call_timed_out() -> ErrorKind {
        ErrorKind::of_type::<CallTimedOut>(TIMEOUT_NAMES[0])
    }

    /// The built-in kind a configuration file may name without registering it, under the name
    /// the file gives.
    pub(crate) fn built_in(name: &str) -> Option<ErrorKind> {
        if BULKHEAD_FULL_NAMES.contains(&name) {
            Some(ErrorKind::of_type::<BulkheadFull>(name))
        } else if CALL_NOT_PERMITTED_NAMES.contains(&name) {
            Some(ErrorKind::of_type::<CallNotPermitted>(name))
        } else if TIMEOUT_NAMES.contains(&name) {
            Some(ErrorKind::of_type::<CallTimedOut>(name))
        } else {
            None
        }
    }

    /// The kind's name, as configuration files spell it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `error` is of this kind.
    pub fn matches<E: 'static>(&self, error: &E) -> bool {
        self.matches_any(error)
    }

    /// Whether `error` (of any type) is of this kind.
    pub fn matches_any(&self, error: &dyn Any) -> bool {
        (self.test)(error)
    }
}

impl PartialEq for ErrorKind {
    /// Two kinds are equal when they are the same registered kind (the same name and the same
    /// predicate, as cloned from one `ErrorKind`).
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.test, &other.test)
    }
}

impl fmt::Debug for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ErrorKind").field(&self.name).finish()
    }
}

/// A [`Classify`] that applies a config's `record-exceptions` and `ignore-exceptions`; made by
/// [`Config::classifier`](crate::Config::classifier).
///
/// For an error, in this order:
/// 1. it matches an `ignore-exceptions` kind: ignored;
/// 2. the code's classification says ignored: ignored;
/// 3. `record-exceptions` is set: a failure if the error matches one of its kinds, else a
///    success (Resilience4j: with `recordExceptions`, only those are failures);
/// 4. otherwise the code's classification decides (by default: a failure).
///
/// `Ok` values are always classified by the code (its `result` predicate). The config's kinds
/// test errors through [`Any`], so the error type must be `'static`.
#[derive(Clone, Copy)]
pub struct ConfiguredClassifier<'a, C = Classifier> {
    record: &'a [ErrorKind],
    ignore: &'a [ErrorKind],
    code: C,
}

impl<'a> ConfiguredClassifier<'a> {
    /// The kinds `record` (`record-exceptions`) and `ignore` (`ignore-exceptions`), on top of
    /// the default classification (every error a failure).
    pub(crate) fn new(record: &'a [ErrorKind], ignore: &'a [ErrorKind]) -> Self {
        ConfiguredClassifier {
            record,
            ignore,
            code: Classifier::new(),
        }
    }
}

impl<'a, C> ConfiguredClassifier<'a, C> {
    /// The same configured kinds, on top of `code` (for example a [`Classifier`] with `record`,
    /// `ignore` and `result` predicates).
    pub fn with_code<D>(self, code: D) -> ConfiguredClassifier<'a, D> {
        ConfiguredClassifier {
            record: self.record,
            ignore: self.ignore,
            code,
        }
    }
}

/// How `error` counts once the kinds `record` (`record-exceptions`) and `ignore`
/// (`ignore-exceptions`) are applied to what the code said (`code`): an ignored kind makes it
/// ignored; with a record list, only a listed kind is a failure and any other (not ignored)
/// error a success. With both lists empty, the code decides.
#[inline]
fn apply_kinds<E: 'static>(
    record: &[ErrorKind],
    ignore: &[ErrorKind],
    error: &E,
    code: Outcome,
) -> Outcome {
    if ignore.iter().any(|k| k.matches(error)) {
        return Outcome::Ignored;
    }
    if code == Outcome::Ignored || record.is_empty() {
        return code;
    }
    if record.iter().any(|k| k.matches(error)) {
        Outcome::Failure
    } else {
        Outcome::Success
    }
}

/// How a call's result counts on every call path: the code's classification, with the
/// breaker's configured kinds on top (what [`ConfiguredClassifier`] does, without building
/// one). An `Ok` value is the code's alone, so a success costs nothing more.
#[inline]
pub(crate) fn classify_call<T, E, C>(
    record: &[ErrorKind],
    ignore: &[ErrorKind],
    code: &C,
    result: &Result<T, E>,
) -> Outcome
where
    E: 'static,
    C: Classify<T, E> + ?Sized,
{
    let outcome = code.classify(result);
    if code.applies_kinds() {
        return outcome;
    }
    match result {
        Ok(_) => outcome,
        Err(error) => apply_kinds(record, ignore, error, outcome),
    }
}

impl<T, E, C> Classify<T, E> for ConfiguredClassifier<'_, C>
where
    E: 'static,
    C: Classify<T, E>,
{
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        classify_call(self.record, self.ignore, &self.code, result)
    }

    #[inline(always)]
    fn error_text(&self) -> Option<DescribeError<E>> {
        self.code.error_text()
    }
}

impl<C> fmt::Debug for ConfiguredClassifier<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfiguredClassifier")
            .field("record_exceptions", &self.record)
            .field("ignore_exceptions", &self.ignore)
            .finish_non_exhaustive()
    }
}
