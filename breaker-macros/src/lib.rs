//! The `#[circuit_breaker]` attribute of the
//! [`resilience-breaker`](https://docs.rs/resilience-breaker) crate (lib name `breaker`).
//!
//! Use it through `breaker` (feature `macros`, on by default), which re-exports it and the
//! runtime its expansion calls. This crate only parses, checks syntax and writes one
//! expansion; everything that runs lives in `breaker-core`.

mod args;
mod errors;
mod expand;
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
/// must be a `Result` (any alias counts). The signature is re-emitted unchanged; only the body
/// is wrapped, and the breaker is resolved once per call site from `Registry::global()`.
///
/// # Options
///
/// - `name = "..."` (required): the breaker's name in the global registry, which is also the
///   name of its configuration instance. Functions with the same name share one breaker.
/// - `fallback = "path"` (or a bare path): called with the same arguments followed by a
///   `CallError<E>`, returning the same type, for **every** call that does not return `Ok`:
///   a recorded failure, an error that `ignore` or `record` leaves uncounted, a rejected call
///   (`CallError::Rejected`) and a timed-out one (`CallError::TimedOut`). This is what
///   Resilience4j's aspect does (it runs the fallback for any exception); to pass an error
///   through, return `Err(e)` from the fallback for `CallError::Inner(e)`. An `Ok` that the
///   `result` predicate counts as a failure is returned as is, without the fallback. On a method,
///   a bare name is the method on `Self` (`self.fallback(..)`), as in Spring; a path such as
///   `Self::fb` or `other::fb` is called as written, with `self` first. The fallback of an
///   `async fn` is an `async fn`. Without a fallback, a rejected call returns
///   `Err(E::from(CallNotPermitted))` and a timed-out one `Err(E::from(CallTimedOut))`, so `E`
///   must implement `From<CallNotPermitted>` and `From<CallTimedOut>` (`std::io::Error` has
///   both).
/// - `record = path`: `Fn(&E) -> bool`; only matching errors are failures (others count as
///   successes). `ignore = path`: `Fn(&E) -> bool`; matching errors count as neither.
///   `result = path`: `Fn(&T) -> bool`; a matching `Ok` value counts as a failure. A closure
///   works too, with its parameter type written out.
/// - `key = expr`: one breaker per run-time key (`Hash + Eq + Clone + Display + Send + Sync +
///   'static`), named `name:key` and configured by `name`.
/// - `crate = "path"`: where the facade is. Without it, the expansion uses the name your
///   Cargo.toml gives the `resilience-breaker` package (`cb = { package = "resilience-breaker" }`
///   is `::cb`; un-renamed, it is `::breaker`); set it when the facade is reached another way,
///   such as through a re-export.
///
/// Numbers (thresholds, windows, waits, the call timeout `timeout-duration`) are configuration
/// under the breaker's name, never attribute options.
///
/// # Errors
///
/// Misuse is a compile error at the token to change, and the function is still emitted so
/// that the rest of the crate type-checks: a missing, empty or repeated option, an unknown
/// option (the message lists the valid ones), a fallback that is not a path, is not found, or
/// has the wrong parameters, error type, return type or async-ness, a return type that is not a
/// `Result`, an error type without `From<CallNotPermitted>` or `From<CallTimedOut>` and no fallback, a `const fn`, a
/// trait method without a body, and the attribute on something that is not a fn or applied
/// twice.
#[proc_macro_attribute]
pub fn circuit_breaker(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::circuit_breaker(attr.into(), item.into()).into()
}
