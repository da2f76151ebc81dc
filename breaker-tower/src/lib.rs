//! A tower [`Layer`](tower_layer::Layer) and [`Service`] around a [`CircuitBreaker`], for axum,
//! tonic, hyper and any other stack built on `tower::Service`: `breaker::tower` with the
//! facade's feature `tower`.
//!
//! Built on breaker-core's public API only: a request takes an
//! [`OwnedPermit`](breaker_core::OwnedPermit) ([`CircuitBreaker::try_acquire_owned`]), runs
//! under its [`CallTimeout`](breaker_core::CallTimeout), and completes the permit with its
//! classified result.
//!
//! [`CircuitBreakerLayer`] wraps a service in a [`CircuitBreakerService`]. Each request asks the
//! breaker for a permit when the service is called: a permitted request runs the inner service
//! under that permit, and its result is classified and recorded when the response future
//! finishes; a rejected request fails at once with [`CallError::Rejected`], without calling
//! the inner service.
//!
//! ```
//! use std::convert::Infallible;
//! use std::future::{ready, Ready};
//! use std::task::{Context, Poll};
//!
//! use breaker_tower::{CallError, CircuitBreakerLayer};
//! use breaker_core::{ManualClock, Registry};
//! use tower_layer::Layer;
//! use tower_service::Service;
//!
//! struct Echo;
//!
//! impl Service<u32> for Echo {
//!     type Response = u32;
//!     type Error = Infallible;
//!     type Future = Ready<Result<u32, Infallible>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
//!         Poll::Ready(Ok(()))
//!     }
//!
//!     fn call(&mut self, request: u32) -> Self::Future {
//!         ready(Ok(request))
//!     }
//! }
//!
//! let registry = Registry::builder().clock(ManualClock::new()).build();
//! let mut service = CircuitBreakerLayer::from_registry(&registry, "echo").layer(Echo);
//! let response = service.call(7);
//! # let response = std::pin::pin!(response);
//! # let mut cx = Context::from_waker(std::task::Waker::noop());
//! # let Poll::Ready(response) = std::future::Future::poll(response, &mut cx) else { panic!() };
//! assert_eq!(response.ok(), Some(7));
//! # let _: Option<CallError<Infallible>> = None;
//! ```
//!
//! # Readiness and rejection
//!
//! `poll_ready` only asks the inner service, and rejection happens in `call`, as tower's
//! `load_shed` fails in `call` with `Overloaded`. Two reasons:
//!
//! - A permit taken in `poll_ready` would be held across readiness: a HALF_OPEN trial would be
//!   kept by a handle that is made ready and then never called (or called much later), and
//!   every other request would be rejected meanwhile. The permit is taken in `call` and lives
//!   in the response future, so it is held exactly while the request runs.
//! - An OPEN breaker answering `Pending` in `poll_ready` would stall callers until the wait is
//!   over (and needs a timer to wake them); answering `Err` would make tower treat the service
//!   as failed for good. Failing fast in `call` lets each request be answered at once, and the
//!   caller map [`CallError::Rejected`] to what it wants (for HTTP, a 503).
//!
//! When a request is rejected, the inner service was made ready and is not called; its
//! readiness is kept for the next request on the same handle.
//!
//! # Classification
//!
//! The result `Result<S::Response, S::Error>` is classified by the same [`Classify`] as the
//! core's calls, with the breaker's configured `record-exceptions` and `ignore-exceptions`
//! applied to errors as [`CircuitBreaker::call_with`] applies them. The default,
//! [`Classifier::new()`](Classifier::new), counts every `Err` as a failure and every response as
//! a success; [`HttpStatus`] counts a 5xx response as a failure and ignores a 4xx.
//!
//! # Cancellation and panics
//!
//! A response future dropped before it finishes gives its permit back and records nothing, as
//! a dropped [`Permit`](breaker_core::Permit) does: a cancelled request never keeps a HALF_OPEN trial.
//! A panic in the inner future is recorded as a failure, and continues.
//!
//! # Per-key breakers
//!
//! [`CircuitBreakerLayer::per_key`] gives each request key its own breaker, from the
//! registry's keyed group of that name (the same breakers as the attribute's `key = ...`):
//! [`HostKey`] (per downstream host), [`HeaderKey`] (per tenant header), [`PathKey`], or any
//! closure `Fn(&Request) -> impl Display`. One failing tenant or host then opens its own
//! breaker only. Keys from requests are bounded by the group's limits (see [`PerKey`]).
//!
//! # Rejections, timeouts and fallbacks
//!
//! The service's error is the core's [`CallError`], the same error as the breaker's own calls
//! (re-exported here): [`CallError::Rejected`], [`CallError::TimedOut`], or
//! [`CallError::Inner`] for the inner service's error, with `is_rejected()`,
//! `is_timed_out()` and `into_inner()`.
//!
//! A rejected request fails with [`CallError::Rejected`], whose
//! [`CallNotPermitted::retry_after`](breaker_core::CallNotPermitted::retry_after) tells how long an
//! OPEN breaker still waits; [`ErrorResponse::http_response`] turns it into a 503 with
//! `Retry-After` (axum: in a `HandleErrorLayer`). With
//! [`fallback`](CircuitBreakerLayer::fallback), rejected requests go to another service
//! instead.
//!
//! The breaker's `timeout-duration`, when set, applies to each request as to the core's async
//! calls: the timer starts when the service is called, and a request still running when it
//! fires is dropped, recorded as a failure and answered with [`CallError::TimedOut`]. It
//! needs a Tokio runtime with its time driver; elsewhere requests run untimed and the breaker
//! says so once.
//!
//! # Cost
//!
//! No allocation per request: the permit holds a clone of the breaker's handle (a reference
//! count), and the response future is one named type that polls the inner future in place.
//! A breaker with `timeout-duration` is the exception: its timer (a Tokio sleep, about a
//! hundred bytes) is boxed, one allocation per request, so that the response futures of every
//! other breaker stay small (held in place, it made the CLOSED path half again as slow in the
//! layer bench). A per-key request also looks its key up in the keyed group (a hash
//! and a lock-free map read; a key text of up to 64 bytes is formatted on the stack).

#![forbid(unsafe_code)]

#[cfg(doc)]
use breaker_core::{CircuitBreaker, Classifier, Classify};
#[cfg(doc)]
use tower_service::Service;

mod error;
mod fallback;
pub mod future;
mod key;
mod layer;
mod select;
mod service;
mod status;

pub use self::error::ErrorResponse;
pub use self::fallback::{Fallback, FallbackService, NoFallback};
pub use self::future::ResponseFuture;
pub use self::key::{HeaderKey, HeaderText, HostKey, PathKey};
pub use self::layer::CircuitBreakerLayer;
pub use self::select::{Breakers, PerKey};
pub use self::service::CircuitBreakerService;
pub use self::status::HttpStatus;
pub use breaker_core::CallError;
pub use breaker_core::RequestKey;
