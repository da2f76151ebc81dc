//! A [reqwest-middleware](reqwest_middleware) [`Middleware`] that guards outgoing requests
//! with circuit breakers, and one that retries them (see [Retries](#retries)):
//! `breaker::reqwest` with the facade's feature `reqwest`. Built on breaker-core's public API
//! only (each request is one [`CircuitBreaker::call_with`], and one
//! [`Retry::call_with`](breaker_core::Retry::call_with) through the retry).
//!
//! [`CircuitBreakerMiddleware`] sends each request through a breaker: a permitted request goes
//! on down the chain and its result is classified and recorded; a rejected request is not sent
//! at all, and fails at once.
//!
//! ```
//! use breaker_reqwest::{into_call_error, rejected, CircuitBreakerMiddleware};
//! use breaker_core::{Config, Registry, State};
//! use reqwest_middleware::ClientBuilder;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builder()
//!     .instance("upstream", Config::builder().minimum_number_of_calls(2).build()?)
//!     .build();
//! let client = ClientBuilder::new(reqwest::Client::builder().no_proxy().build()?)
//!     .with(CircuitBreakerMiddleware::per_host(&registry, "upstream"))
//!     .build();
//!
//! // Nothing listens on this port: each request fails to connect, which is a failure.
//! # let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
//! let url = format!("http://127.0.0.1:{port}/");
//! for _ in 0..2 {
//!     assert!(client.get(&url).send().await.unwrap_err().is_connect());
//! }
//!
//! // That host's breaker is OPEN: the next request is not sent.
//! let error = client.get(&url).send().await.unwrap_err();
//! let rejection = rejected(&error).expect("the breaker rejects the request");
//! assert_eq!(rejection.state(), State::Open);
//! assert_eq!(rejection.breaker_name(), format!("upstream[127.0.0.1:{port}]"));
//! // The same error in the vocabulary of every other way through a breaker:
//! assert!(into_call_error(error).is_rejected());
//! # Ok(())
//! # }
//! ```
//!
//! # Which breaker
//!
//! - [`CircuitBreakerMiddleware::per_host`], the usual choice: one breaker per `host:port` of
//!   the request's URL (see [`PerHost`]), the keyed breakers `name[host:port]` of a
//!   [`Registry`], so that one failing upstream does not cut the client off from the others.
//!   They are configured by `name`, or per host by an instance entry `name[host:port]`, and an
//!   idle one is evicted as the registry's [`KeyedLimits`](breaker_core::KeyedLimits) say.
//! - [`CircuitBreakerMiddleware::keyed_by`]: keyed breakers with a key of your choosing (a
//!   [`RequestKey`]: a closure `Fn(&reqwest::Request) -> K`, or a type of your own).
//! - [`CircuitBreakerMiddleware::new`]: one breaker for every request.
//!
//! # What is recorded
//!
//! The result `Result<reqwest::Response, reqwest_middleware::Error>` is classified by a
//! [`Classify`], the same trait as the core's calls, with the breaker's configured
//! `record-exceptions` and `ignore-exceptions` applied to errors as
//! [`CircuitBreaker::call_with`] applies them (an [`ErrorKind`](breaker_core::ErrorKind) for these
//! tests a `reqwest_middleware::Error`). The default, [`StatusClassifier`], counts a 5xx
//! response as a failure, ignores a 4xx, counts any other response as a success, and every
//! error (a connect error, reqwest's own timeout, an error sending the body) as a failure.
//! [`CircuitBreakerMiddleware::classify`] puts another in its place.
//!
//! The call ends when the response's status and headers have arrived: reading the body
//! afterwards is not part of it, and neither its time nor its errors are recorded.
//!
//! # Rejections and timeouts
//!
//! Both come back as [`reqwest_middleware::Error::Middleware`], whose `anyhow::Error` holds
//! the core's error:
//!
//! - [`CallNotPermitted`](breaker_core::CallNotPermitted): the breaker rejected the request (OPEN,
//!   FORCED_OPEN, or HALF_OPEN with every trial taken), which was not sent. [`rejected`]
//!   finds it (`downcast_ref::<CallNotPermitted>()`).
//! - [`CallTimedOut`](breaker_core::CallTimedOut): the request was sent but ran longer than the
//!   breaker's `timeout-duration`; it was cancelled and recorded as a failure. [`timed_out`]
//!   finds it (`downcast_ref::<CallTimedOut>()`).
//!
//! Any other error is the request's own, from reqwest or from a middleware further down the
//! chain, returned as it came. [`into_call_error`] reads an error in the core's one
//! vocabulary, the [`CallError`](breaker_core::CallError) of the breaker's own calls and of
//! the tower layer: `Rejected`, `TimedOut`, or `Inner` with the request's own error.
//!
//! # The breaker's call
//!
//! Each request is one [`CircuitBreaker::call_with`], so everything that holds for the core's
//! async calls holds for it: `timeout-duration` cancels it (on the Tokio runtime reqwest runs
//! on), `slow-call-duration-threshold` counts it as slow, a panic further down the chain is
//! recorded as a failure and continues, and a request future dropped before it finishes
//! gives its permit back and records nothing (a cancelled request never keeps a HALF_OPEN
//! trial).
//!
//! Middlewares run in the order they are attached, and the breaker guards what comes after
//! it. Attached after a retrying middleware (as [Retries](#retries) shows), it records each
//! attempt, and its rejections reach that middleware as errors; attached before it, it
//! records all the attempts of one request as one call.
//!
//! Keys come from the URLs the client calls: the breaker's log lines and error messages escape
//! control characters in its name, and the middleware itself logs nothing.

//! # Retries
//!
//! [`RetryMiddleware`] sends a failed request again through a [`Retry`](breaker_core::Retry)
//! (Spring's `resilience4j.retry` section: `max-attempts`, the waits between attempts and
//! their backoff, and our budget, which keeps retries to a fraction of the requests): from a
//! registry by name ([`RetryMiddleware::from_registry`]) or given ([`RetryMiddleware::new`]).
//!
//! - **Which requests**: by default those with an idempotent method (GET, HEAD, OPTIONS, PUT,
//!   DELETE, TRACE), since sending a POST or a PATCH twice may do its work twice;
//!   [`RetryMiddleware::methods`] sets another list. A request with another method is sent
//!   once, never retried, and the retry does not count it.
//! - **Bodies**: each attempt sends a copy of the request made by
//!   [`Request::try_clone`](reqwest::Request::try_clone): a body given as bytes (a string, a
//!   `Vec<u8>`, JSON, a form) is copied; a streaming body (`Body::wrap_stream`, a file) cannot
//!   be, and such a request is sent once, never retried.
//! - **What is retried**: as [`StatusClassifier`] classifies an attempt (the breaker
//!   middleware's default too): a 5xx response and an error (a connect error, reqwest's own
//!   timeout) are retried; a 4xx is not, and ends the request as an ignored error;
//!   [`RetryMiddleware::classify`] puts another classifier in its place (for example one that
//!   retries a 429). A breaker middleware's rejection is never retried unless the retry's
//!   `retry-exceptions` names `CallNotPermittedException`.
//! - **The end**: attempts used up end with the last attempt's result: its error, or its
//!   response (the last 5xx, as a response); with `fail-after-max-attempts`, a retried response
//!   ends as [`Error::Middleware`](reqwest_middleware::Error::Middleware) holding a
//!   [`MaxRetriesExceeded`](breaker_core::MaxRetriesExceeded). A retry the budget refuses ends
//!   the request at once the same way.
//! - **Waits** between attempts are timers on the retry's clock, on the Tokio runtime reqwest
//!   runs on; dropping the request's future stops the retries.
//!
//! With the breaker, attach the retry first: middlewares run in the order they are attached,
//! so the retry is outside (Spring's order, `Retry(CircuitBreaker(call))`), each attempt goes
//! through the breaker, which records it, and an OPEN breaker's rejection ends the request at
//! once instead of being retried.
//!
//! ```
//! use breaker_core::{Registry, RetryConfig};
//! use breaker_reqwest::{CircuitBreakerMiddleware, RetryMiddleware};
//! use reqwest_middleware::ClientBuilder;
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let retry = RetryConfig::builder()
//!     .max_attempts(3)
//!     .wait_duration(Duration::from_millis(100))
//!     .build()?;
//! let registry = Registry::builder().retry_instance("upstream", retry).build();
//! let client = ClientBuilder::new(reqwest::Client::builder().no_proxy().build()?)
//!     .with(RetryMiddleware::from_registry(&registry, "upstream"))
//!     .with(CircuitBreakerMiddleware::per_host(&registry, "upstream"))
//!     .build();
//! # let _ = client;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

#[cfg(doc)]
use breaker_core::{CircuitBreaker, Classify, Registry};
#[cfg(doc)]
use reqwest_middleware::Middleware;

mod classify;
mod error;
mod key;
mod middleware;
mod retry;

pub use self::classify::StatusClassifier;
pub use self::error::{into_call_error, rejected, timed_out};
pub use self::key::{HostPort, PerHost};
pub use self::middleware::CircuitBreakerMiddleware;
pub use self::retry::RetryMiddleware;
pub use breaker_core::RequestKey;
