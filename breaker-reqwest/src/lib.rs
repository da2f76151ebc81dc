//! A [reqwest-middleware](reqwest_middleware) [`Middleware`] that guards outgoing requests
//! with circuit breakers: `breaker::reqwest` with the facade's feature `reqwest`. Built on
//! breaker-core's public API only (each request is one [`CircuitBreaker::call_with`]).
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
//! it. Attached after a retrying middleware, it records each attempt, and its rejections reach
//! that middleware as errors; attached before it, it records all the attempts of one request
//! as one call.
//!
//! Keys come from the URLs the client calls: the breaker's log lines and error messages escape
//! control characters in its name, and the middleware itself logs nothing.

#![forbid(unsafe_code)]

#[cfg(doc)]
use breaker_core::{CircuitBreaker, Classify, Registry};
#[cfg(doc)]
use reqwest_middleware::Middleware;

mod classify;
mod error;
mod key;
mod middleware;

pub use self::classify::StatusClassifier;
pub use self::error::{into_call_error, rejected, timed_out};
pub use self::key::{HostPort, PerHost};
pub use self::middleware::CircuitBreakerMiddleware;
pub use breaker_core::RequestKey;
