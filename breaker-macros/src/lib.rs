//! The `#[circuit_breaker]`, `#[bulkhead]` and `#[retry]` attributes of the
//! [`resilience-breaker`](https://docs.rs/resilience-breaker) crate (lib name `breaker`).
//!
//! Use them through `breaker` (feature `macros`, on by default), which re-exports them and the
//! runtime their expansion calls. This crate only parses, checks syntax and writes one
//! expansion; everything that runs lives in `breaker-core`.

mod args;
mod errors;
mod expand;
mod guards;
mod item;
mod validate;

use proc_macro::TokenStream;

/// Guards a function with the circuit breaker named `name`, configured in the registry under
/// that name.
///
/// ```
/// use breaker::{circuit_breaker, CallError};
///
/// # #[derive(Debug)] struct ProductError;
/// # struct Client; impl Client { async fn get_product_by_id(&self, id: &str) -> Result<String, ProductError> { Ok(id.into()) } }
/// # static PRODUCT_CLIENT: Client = Client;
/// #[circuit_breaker(name = "productService", fallback = "fallback")]
/// async fn invoke_product_api(id: &str) -> Result<String, ProductError> {
///     PRODUCT_CLIENT.get_product_by_id(id).await
/// }
///
/// async fn fallback(id: &str, err: CallError<ProductError>) -> Result<String, ProductError> {
///     Ok("not able to invoke product service".into())
/// }
///
/// // A plain function, without a fallback: a rejected call is `Err(io::Error::from(..))`.
/// #[circuit_breaker(name = "config")]
/// fn read_config(path: &str) -> std::io::Result<String> {
///     std::fs::read_to_string(path)
/// }
/// # let _ = (invoke_product_api("7"), read_config("/nonexistent"));
/// ```
///
/// Works on `async fn` and plain `fn`, free functions and methods (`&self`, `&mut self`,
/// `self: Arc<Self>`), with generics, lifetimes, `where` clauses, `impl Trait` arguments and
/// `impl Trait` inside the return type, and on native `async fn` in trait impls. The return type
/// must be a `Result` (any alias counts) whose error type is `'static` (the configured error
/// kinds match it by type). The signature is re-emitted unchanged; only the body is wrapped.
/// Each call site holds a `static` that resolves its breaker (with `key`, its keyed group) from
/// `Registry::global()` on the first call and caches it.
///
/// # Options
///
/// - `name = "..."` (required): the breaker's name in the global registry, which is also the
///   name of its configuration instance: a non-empty string literal without leading or
///   trailing whitespace. Functions with the same name share one breaker.
/// - `fallback = "path"` (or a bare path): called with the same arguments followed by a
///   `CallError<E>`, returning the same type, for **every** call that does not return `Ok`:
///   a recorded failure, an error that `ignore` leaves uncounted or `record` counts as a
///   success, a rejected call (`CallError::Rejected`) and a timed-out one
///   (`CallError::TimedOut`). This is what
///   Resilience4j's aspect does (it runs the fallback for any exception); to pass an error
///   through, return `Err(e)` from the fallback for `CallError::Inner(e)`. An `Ok` that the
///   `result` predicate counts as a failure is returned as is, without the fallback. On a method,
///   a bare name is the method on `Self` (`self.fallback(..)`), as in Spring; a path such as
///   `Self::fb` or `other::fb` is called as written, with `self` first. The fallback of an
///   `async fn` is an `async fn`. The arguments are passed on by name, so with a fallback every
///   parameter is a plain binding (`id`, `mut id`, not a pattern) and the body borrows it
///   rather than moving it (clone what it must own).
///
///   Without a fallback, the call's own error is returned as is; a rejected call returns
///   `Err(E::from(CallNotPermitted))` and a timed-out one (`timeout-duration`)
///   `Err(E::from(CallTimedOut))`, so `E` must implement `From<CallNotPermitted>` and
///   `From<CallTimedOut>` (`std::io::Error` has both).
/// - `record = path`: `Fn(&E) -> bool`; only matching errors are failures (others count as
///   successes). `ignore = path`: `Fn(&E) -> bool`; matching errors count as neither (an
///   error both match is ignored).
///   `result = path`: `Fn(&T) -> bool`; a matching `Ok` value counts as a failure. A closure
///   works too, with its parameter type written out.
/// - `key = expr`: one breaker per run-time key. The expression is evaluated at the start of
///   every call and borrowed, not moved (`key = self.tenant` leaves the field in place); its
///   type needs only `Display` (a `&str` argument, a `String`, a number, a type of your own).
///   The breaker belongs to the key's text, so keys of different types that print the same
///   share one. It is named `name[key]` (a `\` or `]` in the key, and a `\` or `[` in the
///   name, escaped with `\`), configured by `name`, and kept in the registry's keyed group for
///   `name` (`Registry::keyed`), whose `KeyedLimits` bound how many breakers it holds and evict
///   idle ones.
/// - `crate = "path"`: where the facade is. Without it, the expansion uses the name your
///   Cargo.toml gives the `resilience-breaker` package (`cb = { package = "resilience-breaker" }`
///   is `::cb`; un-renamed, it is `::breaker`); set it when the facade is reached another way,
///   such as through a re-export, or renamed to exactly `resilience_breaker`, which cannot be
///   told from the un-renamed package (`crate = "resilience_breaker"`).
///
/// ```
/// use breaker::circuit_breaker;
///
/// struct Tenant {
///     id: u32,
/// }
///
/// impl Tenant {
///     // One breaker per tenant, `quotes[7]`, `quotes[8]`, ..., all configured by `quotes`.
///     #[circuit_breaker(name = "quotes", key = self.id)]
///     fn quote(&self) -> std::io::Result<u32> {
///         Ok(self.id * 100)
///     }
/// }
///
/// assert_eq!(Tenant { id: 7 }.quote().unwrap(), 700);
/// let quotes = breaker::Registry::global().keyed("quotes");
/// assert_eq!(quotes.find("7").unwrap().name(), "quotes[7]");
/// ```
///
/// Numbers (thresholds, windows, waits, the call timeout `timeout-duration`) are configuration
/// under the breaker's name, never attribute options.
///
/// # Errors
///
/// Misuse is a compile error at the token to change, and the function is still emitted so
/// that the rest of the crate type-checks: a missing, empty or repeated option, an unknown
/// option (the message lists the valid ones), a `name` with surrounding whitespace, a fallback
/// that is not a path, is not found, or has the wrong parameters, error type, return type or
/// async-ness, a parameter that is a pattern when there is a fallback, `record` and `ignore`
/// naming the same predicate, a predicate of the wrong type, a `key` that is not `Display`, a
/// return type that is not a `Result`, an error type that is not `'static`, or without
/// `From<CallNotPermitted>` or `From<CallTimedOut>` and no fallback, a `const fn`, a trait
/// method without a body, an `async fn` that `#[async_trait]` has already rewritten, and the
/// attribute on something that is not a fn or applied twice.
#[proc_macro_attribute]
pub fn circuit_breaker(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::circuit_breaker(attr.into(), item.into()).into()
}

/// Guards a function with the bulkhead named `name`, configured in the registry under that
/// name: at most `max-concurrent-calls` calls run at once, and a call that finds no free place
/// waits up to `max-wait-duration` (by default it does not wait) and is then refused with
/// `BulkheadFull`, without running.
///
/// ```
/// use breaker::{bulkhead, circuit_breaker, BulkheadFull, CallError};
///
/// # #[derive(Debug)] struct ProductError;
/// # impl From<BulkheadFull> for ProductError { fn from(_: BulkheadFull) -> Self { ProductError } }
/// # struct Client; impl Client { async fn get_product_by_id(&self, id: &str) -> Result<String, ProductError> { Ok(id.into()) } }
/// # static PRODUCT_CLIENT: Client = Client;
/// // Alone: a refused call returns `Err(ProductError::from(BulkheadFull))`.
/// #[bulkhead(name = "productService")]
/// async fn invoke_product_api(id: &str) -> Result<String, ProductError> {
///     PRODUCT_CLIENT.get_product_by_id(id).await
/// }
///
/// // With a breaker, in either order: Breaker(Bulkhead(fn)), one fallback on the breaker.
/// #[bulkhead(name = "inventory")]
/// #[circuit_breaker(name = "inventory", fallback = "stock_fallback")]
/// async fn stock(id: &str) -> Result<u32, ProductError> {
///     Ok(7)
/// }
///
/// async fn stock_fallback(id: &str, err: CallError<ProductError>) -> Result<u32, ProductError> {
///     match err {
///         CallError::BulkheadFull(_) | CallError::Rejected(_) => Ok(0),
///         CallError::Inner(e) => Err(e),
///         _ => Err(ProductError),
///     }
/// }
/// # let _ = (invoke_product_api("7"), stock("7"));
/// ```
///
/// Works on the same functions as `#[circuit_breaker]`: `async fn` and plain `fn` (which
/// waits for a place on its own thread), free functions and methods, generics, lifetimes,
/// `where` clauses, `impl Trait`, native `async fn` in trait impls; the return type must be a
/// `Result`. Each call site holds a `static` `BulkheadSite` that resolves the bulkhead from
/// `Registry::global()` on the first call and caches it. A place is held from when the call
/// gets it until the call ends: a future dropped early gives it back.
///
/// # Options
///
/// - `name = "..."` (required): the bulkhead's name in the global registry and the name of its
///   configuration instance (`resilience4j.bulkhead.instances.<name>`). Functions with the
///   same name share one bulkhead, so their calls share its places.
/// - `fallback = "path"`: as on `#[circuit_breaker]`, called with the same arguments followed
///   by a `CallError<E>` for every call that does not return `Ok`; a refused call is
///   `CallError::BulkheadFull`. Without a fallback, a refused call returns
///   `Err(E::from(BulkheadFull))`, so `E` must implement `From<BulkheadFull>`
///   (`std::io::Error` does).
/// - `crate = "path"`: as on `#[circuit_breaker]`.
///
/// Numbers (`max-concurrent-calls`, `max-wait-duration`) are configuration under the
/// bulkhead's name. There is no `key`: a bulkhead bounds the calls to one dependency whatever
/// their key (key the breaker instead), and no `record`, `ignore` or `result`: a bulkhead
/// counts calls, it does not classify them.
///
/// # With `#[circuit_breaker]`
///
/// Written together, in either order, the two attributes expand once, in Spring's order:
/// Breaker(Bulkhead(fn)). Each call takes one breaker permit, then one bulkhead place:
///
/// - an OPEN breaker rejects the call before it takes a place (`CallError::Rejected`);
/// - the breaker's `timeout-duration` covers the wait for a place as well as the call;
/// - a call the bulkhead refuses is an error the breaker records, a failure unless the
///   breaker's `ignore-exceptions` names `BulkheadFullException` (or `record-exceptions` is
///   set without it), so the breaker opens sooner while the dependency is slow; the
///   attribute's `record`, `ignore` and `result` see the function's own results only;
/// - there is one fallback, written on `#[circuit_breaker]` (on `#[bulkhead]` it is an
///   error). It catches everything: a rejection, a timeout, a refusal and the function's own
///   errors. Without one, `E` needs `From<CallNotPermitted>`, `From<CallTimedOut>` and
///   `From<BulkheadFull>`.
/// - `key` on the breaker keys the breaker only: every key shares the one bulkhead.
///
/// # Errors
///
/// As `#[circuit_breaker]`'s, at the token to change, with the function still emitted: a
/// missing, empty, repeated or unknown option (`key` and the predicates say where they go
/// instead), a `name` that is not a string, a return type that is not a `Result`, an error
/// type without `From<BulkheadFull>` and no fallback, a fallback on `#[bulkhead]` beside
/// `#[circuit_breaker]`, `crate` given on both, and `#[bulkhead]` applied twice.
#[proc_macro_attribute]
pub fn bulkhead(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::bulkhead(attr.into(), item.into()).into()
}

/// Retries a function with the retry named `name`, configured in the registry under that name
/// (`resilience4j.retry.instances.<name>`): a failed call is made again, up to `max-attempts`
/// in all, waiting `wait-duration` (with the configured backoff) between attempts, while the
/// retry budget allows.
///
/// ```
/// use breaker::{circuit_breaker, retry, CallError};
///
/// # #[derive(Debug)] struct ProductError;
/// # struct Client; impl Client { async fn get_product_by_id(&self, id: &str) -> Result<String, ProductError> { Ok(id.into()) } }
/// # static PRODUCT_CLIENT: Client = Client;
/// fn is_transient(e: &ProductError) -> bool {
///     true
/// }
///
/// // Alone: the call's own error once the attempts are used up.
/// #[retry(name = "productService", retry = is_transient)]
/// async fn invoke_product_api(id: &str) -> Result<String, ProductError> {
///     PRODUCT_CLIENT.get_product_by_id(id).await
/// }
///
/// // With a breaker, in either order: Retry(Breaker(fn)), one fallback, outside the retry.
/// #[retry(name = "inventory")]
/// #[circuit_breaker(name = "inventory", fallback = "stock_fallback")]
/// async fn stock(id: &str) -> Result<u32, ProductError> {
///     Ok(7)
/// }
///
/// async fn stock_fallback(id: &str, err: CallError<ProductError>) -> Result<u32, ProductError> {
///     match err {
///         CallError::Inner(e) => Err(e),
///         _ => Ok(0),
///     }
/// }
/// # let _ = (invoke_product_api("7"), stock("7"));
/// ```
///
/// Works on the same functions as `#[circuit_breaker]`. The body runs once per attempt, so it
/// must be able to run again: it borrows its parameters rather than moving them (clone what
/// it must own), and an `async fn`'s body may not hold a `&mut` borrow across attempts (a
/// `&mut self` method that mutates `self` is retried as a plain `fn`, or through `Retry::call`
/// by hand). Each call site holds a `static` `RetrySite` that resolves the retry from
/// `Registry::global()` on the first call and caches it. An async call waits between attempts
/// on a timer of the registry's clock, without blocking a thread; dropping its future stops the
/// retries. A plain `fn` sleeps its thread between attempts.
///
/// # Options
///
/// - `name = "..."` (required): the retry's name in the global registry and the name of its
///   configuration instance. Functions with the same name share one retry, and so its budget
///   and metrics.
/// - `retry = path`: `Fn(&E) -> bool`; only matching errors are retried, any other ends the
///   call at once with that error (Resilience4j's `retryOnException`). `ignore = path`:
///   `Fn(&E) -> bool`; matching errors are never retried (an error both match is not
///   retried). `result = path`: `Fn(&T) -> bool`; a matching `Ok` value is retried, such as
///   an HTTP 503 in `Ok` (`retryOnResult`). The configuration's `retry-exceptions` and
///   `ignore-exceptions` apply on top, as for every call of the retry.
/// - `fallback = "path"`: as on `#[circuit_breaker]`: called once, after the last attempt,
///   with the same arguments followed by a `CallError<E>`, for every call that does not end
///   with `Ok`. With `#[circuit_breaker]` on the function too, it goes there.
/// - `crate = "path"`: as on `#[circuit_breaker]`.
///
/// Without a fallback, the call's own (last) error is returned as is; with `result = ..`, the
/// retries can run out on an `Ok`, which with `fail-after-max-attempts` ends as
/// `Err(E::from(MaxRetriesExceeded))`, so `E` must then implement `From<MaxRetriesExceeded>`
/// (`std::io::Error` does). There is no `key` and no `record` (`retry` takes its place).
///
/// # With `#[circuit_breaker]` and `#[bulkhead]`
///
/// Any of the three, written in any order, expand once, in Spring's order:
/// Retry(Breaker(Bulkhead(fn))). The retry is outermost, and every attempt goes through the
/// breaker and the bulkhead afresh:
///
/// - each attempt takes its own breaker permit and bulkhead place, and the breaker records
///   each attempt's result;
/// - a call the breaker rejects (`CallError::Rejected`) is not retried: it ends at once,
///   unless the retry's `retry-exceptions` names `CallNotPermittedException`;
/// - an attempt cut by the breaker's `timeout-duration` (`TimeoutException`) or refused by the
///   bulkhead (`BulkheadFullException`) is retried as any error (unless the retry's
///   configuration says otherwise);
/// - the attribute's `retry`, `ignore` and `result` see the function's own results only;
/// - there is one fallback, outermost: written on `#[circuit_breaker]` when it is there, else
///   on `#[retry]`, else on `#[bulkhead]`; anywhere else it is an error. It runs once, after
///   the retries, and sees how the call ended: it can never turn a failed attempt into a
///   success that stops the retries (as a `@CircuitBreaker` fallback inside `@Retry` does in
///   Spring). Without one, `E` needs the conversions of every guard given.
///
/// # Errors
///
/// As `#[circuit_breaker]`'s, at the token to change, with the function still emitted: a
/// missing, empty, repeated or unknown option (`key` and `record` say what to do instead), a
/// `name` that is not a string, a predicate of the wrong type, a return type that is not a
/// `Result`, an error type without `From<MaxRetriesExceeded>` with `result` and no fallback, a
/// fallback on the wrong attribute, `crate` given on more than one, and `#[retry]` applied
/// twice.
#[proc_macro_attribute]
pub fn retry(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::retry(attr.into(), item.into()).into()
}
