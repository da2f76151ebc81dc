//! A tower [`Layer`](tower_layer::Layer) and [`Service`] around a [`CircuitBreaker`], one
//! around a [`Bulkhead`] (see [Bulkheads](#bulkheads)) and one around a
//! [`Retry`](breaker_core::Retry) (see [Retries](#retries)), for axum, tonic, hyper and any
//! other stack built on `tower::Service`: `breaker::tower` with the facade's feature `tower`.
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
//!
//! # Bulkheads
//!
//! [`BulkheadLayer`] wraps a service in a [`BulkheadService`]: at most the bulkhead's
//! `max-concurrent-calls` requests run in the inner service at once. A request takes a place
//! when the service is called ([`Bulkhead::try_acquire_owned`]) and holds it, an
//! [`OwnedBulkheadPermit`](breaker_core::OwnedBulkheadPermit), in its response future until the
//! inner future finishes or is dropped. The inner service is called only under a place: a
//! refused request never reaches it. The bulkhead comes from a registry by name
//! ([`BulkheadLayer::from_registry`], the registry's `bulkhead(name)`, configured under
//! `resilience4j.bulkhead`) or is given ([`BulkheadLayer::new`]).
//!
//! A request that finds every place taken fails with [`CallError::BulkheadFull`], at once when
//! the bulkhead's `max-wait-duration` is 0 (the default). With a wait, its response future
//! waits for a place up to that long ([`Bulkhead::acquire_owned`], on the bulkhead's clock:
//! no thread is blocked, and a dropped future leaves the queue), then calls the inner service
//! or fails. [`ErrorResponse::http_response`] answers a `BulkheadFull` with 503 Service
//! Unavailable, its body naming the bulkhead.
//!
//! ## Readiness of the bulkhead's service
//!
//! `poll_ready` asks the inner service only; it never takes, holds or waits for a place.
//! tower's `ConcurrencyLimit` does the opposite: it takes a semaphore permit in `poll_ready` and
//! answers `Pending` while none is free, so a caller waits there for as long as the calls in
//! flight take, with no limit, and a handle made ready but never called holds a place. A
//! bulkhead is a promise to answer at once when the dependency is saturated (Resilience4j's
//! `max-wait-duration` 0): so the place is taken in `call`, as the breaker's permit is (see
//! [Readiness and rejection](#readiness-and-rejection)), and a caller waits only as long as
//! the bulkhead's `max-wait-duration` says, in the response future.
//!
//! ## With the breaker, in Spring's order
//!
//! Resilience4j's Spring order puts the bulkhead inside the breaker:
//! `CircuitBreaker(Bulkhead(call))`. With tower's `ServiceBuilder`, the first layer is the
//! outermost, so the breaker's layer comes first:
//!
//! - an OPEN breaker rejects a request before it reaches the bulkhead: it never takes a place;
//! - a request the bulkhead refuses is a failure the breaker records (unless the breaker's
//!   `ignore-exceptions` names the kind `BulkheadFullException`), so a saturated dependency
//!   opens the breaker sooner, as in Resilience4j;
//! - the breaker's `timeout-duration` covers the wait for a place.
//!
//! The bulkhead's service answers with `CallError<E>`; wrapped again by the breaker's it
//! would be `CallError<CallError<E>>`. [`CircuitBreakerLayer::flatten_errors`] makes the
//! breaker's services take the inner `CallError<E>` as their own ([`Flatten`]): they answer
//! with the same `CallError<E>`, classify the inner `Result<T, E>` with the layer's classifier
//! (an `Err(CallError::Inner(e))` counts as `Err(e)` would), and record a
//! [`CallError::BulkheadFull`] as a failure under the breaker's configured error kinds.
//!
//! ```
//! use std::convert::Infallible;
//! use std::future::{pending, Pending};
//! use std::task::{Context, Poll};
//!
//! use breaker_core::{BulkheadConfig, ManualClock, Registry};
//! use breaker_tower::{BulkheadLayer, CallError, CircuitBreakerLayer};
//! use tower::{Service, ServiceBuilder};
//!
//! /// A dependency that never answers: each request holds its place.
//! #[derive(Clone)]
//! struct Saturated;
//!
//! impl Service<u32> for Saturated {
//!     type Response = u32;
//!     type Error = Infallible;
//!     type Future = Pending<Result<u32, Infallible>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
//!         Poll::Ready(Ok(()))
//!     }
//!
//!     fn call(&mut self, _: u32) -> Self::Future {
//!         pending()
//!     }
//! }
//!
//! let registry = Registry::builder()
//!     .clock(ManualClock::new())
//!     .bulkhead_instance("bureau", BulkheadConfig::builder().max_concurrent_calls(2).build()?)
//!     .build();
//! let mut service = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::from_registry(&registry, "bureau").flatten_errors())
//!     .layer(BulkheadLayer::from_registry(&registry, "bureau"))
//!     .service(Saturated);
//! # let mut cx = Context::from_waker(std::task::Waker::noop());
//! # let mut poll = |f: &mut _| std::future::Future::poll(std::pin::Pin::new(f), &mut cx);
//!
//! // Two requests take the two places (and hold them while their futures live).
//! let mut held = [service.call(1), service.call(2)];
//! # assert!(held.iter_mut().all(|f| poll(f).is_pending()));
//! // The third is refused at once, without reaching the dependency: one level of `CallError`.
//! let mut refused = service.call(3);
//! # let Poll::Ready(answer) = poll(&mut refused) else { panic!() };
//! let error: CallError<Infallible> = answer.unwrap_err();
//! assert!(error.is_bulkhead_full());
//! // ... and recorded by the breaker as a failure.
//! assert_eq!(registry.breaker("bureau").metrics().failed_calls, 1);
//!
//! // Dropping the requests gives their places back.
//! drop(held);
//! let bulkhead = registry.bulkhead("bureau");
//! assert_eq!(bulkhead.metrics().available_concurrent_calls(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Without [`flatten_errors`](CircuitBreakerLayer::flatten_errors), the stack still records a
//! refusal as a failure (every error is one by default), and answers with
//! `CallError<CallError<E>>`.
//!
//! ## What the bulkhead's layer costs
//!
//! A request that gets a place or is refused at once allocates nothing: the permit holds a
//! clone of the bulkhead's handle (a reference count), the refusal is a
//! [`BulkheadFull`](breaker_core::BulkheadFull) (the bulkhead's name, shared), and the response
//! future polls the inner future in place. A request that has to wait (every place taken, and
//! a `max-wait-duration`) allocates its wait: boxed with the request and the inner service, so
//! that every other response future stays small, and the wait's timer on the bulkhead's
//! scheduler. An HTTP answer built by [`ErrorResponse::http_response`] allocates its body.

//!
//! # Retries
//!
//! [`RetryLayer`] wraps a service in a [`RetryService`]: a request that fails is sent again
//! through a [`Retry`](breaker_core::Retry) (Spring's `resilience4j.retry` section:
//! `max-attempts`, the waits between attempts and their backoff, `fail-after-max-attempts`,
//! and our budget, which keeps retries to a fraction of the requests). The retry comes from a
//! registry by name ([`RetryLayer::from_registry`], the registry's `retry(name)`) or is given
//! ([`RetryLayer::new`]).
//!
//! ## Which requests, and their bodies
//!
//! Only a request that can be replayed is retried: the service needs `Request: Clone`, clones
//! a request once when it is called, and sends each attempt a clone. For `http::Request<B>`,
//! that is a body `B: Clone` whose clones carry the same bytes: `String`, `Bytes`,
//! `http_body_util::Full<Bytes>` (a reference count, not a copy of the bytes). A streaming body
//! (hyper's `Incoming`, axum's `Body`) is not `Clone` and cannot be read twice: buffer it first,
//! with a limit on its size (`http_body_util::Limited`, then `collect` into a `Full<Bytes>`),
//! since the retry holds the whole body until the request's last attempt ends; or leave the
//! retry out of that stack.
//!
//! [`replay_if`](RetryLayer::replay_if) says which requests may be sent more than once: all of
//! them by default ([`Always`](breaker_core::Always)), for HTTP usually
//! [`IdempotentMethod`] (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), or any
//! `Fn(&Request) -> bool`. A request it refuses is sent once, never retried: the inner
//! service is called with it as it is, and the retry does not count it.
//!
//! ## Attempts, readiness and waits
//!
//! The first attempt calls the inner service that `poll_ready` made ready, as any tower
//! service does. Each later attempt waits first: the retry's wait (`wait-duration`, with its
//! backoff), a timer on the retry's clock (a registry's [`ManualClock`](breaker_core::ManualClock)
//! ends it in tests), then for a clone of the inner service to be ready (`poll_ready`), then
//! calls it. Dropping the response future drops the attempt in flight or the wait, and no
//! further attempt starts.
//!
//! Each attempt's `Result<Response, CallError<E>>` is classified by the layer's classifier
//! ([`RetryLayer::classify`]; the default retries every error) under the retry's configured
//! `retry-exceptions` and `ignore-exceptions`: a `Failure` is retried, an `Ignored` error ends
//! the request with that error, a `Success` ends it. For HTTP, [`HttpStatus`] retries a 5xx
//! response and an error (no response at all: a transport error, a timeout, a bulkhead's
//! refusal) and not a 4xx ([`Outcome::from_http_status`](breaker_core::Outcome::from_http_status)).
//! Attempts used up end with the last attempt's error, or its response (the last 5xx, as a
//! response); with `fail-after-max-attempts`, a retried response ends as
//! [`CallError::RetriesExhausted`]. A retry the budget refuses ends the request at once the
//! same way.
//!
//! ## With the breaker and the bulkhead, in Spring's order
//!
//! Spring's order is `Retry(CircuitBreaker(Bulkhead(call)))`: the retry is outermost, and each
//! attempt goes through the breaker (which records it) and takes a place of the bulkhead
//! afresh. With `ServiceBuilder`, the outermost layer comes first; the breaker's and the
//! retry's [`flatten_errors`](RetryLayer::flatten_errors) keep the errors at one level, so the
//! retry sees and answers the one `CallError<E>`:
//!
//! - a breaker's rejection ([`CallError::Rejected`]) is never retried (see
//!   [`RetryClassifier`]) unless the retry's `retry-exceptions` names
//!   `CallNotPermittedException`: an OPEN breaker makes one attempt, answered at once;
//! - a bulkhead's refusal and a breaker's timeout are errors, retried as any other (as
//!   Resilience4j retries every exception unless told otherwise).
//!
//! ```
//! use std::convert::Infallible;
//! use std::future::{ready, Ready};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::task::{Context, Poll};
//!
//! use breaker_core::{Config, ManualClock, Registry, RetryConfig, State};
//! use breaker_tower::{BulkheadLayer, CircuitBreakerLayer, RetryLayer};
//! use tower::{Service, ServiceBuilder};
//!
//! /// A dependency that fails every request, and counts them.
//! #[derive(Clone, Default)]
//! struct Down(Arc<AtomicU32>);
//!
//! impl Service<u32> for Down {
//!     type Response = u32;
//!     type Error = &'static str;
//!     type Future = Ready<Result<u32, &'static str>>;
//!
//!     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), &'static str>> {
//!         Poll::Ready(Ok(()))
//!     }
//!
//!     fn call(&mut self, _: u32) -> Self::Future {
//!         self.0.fetch_add(1, Ordering::SeqCst);
//!         ready(Err("down"))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builder()
//!     .clock(ManualClock::new())
//!     .retry_instance("bureau", RetryConfig::builder().wait_duration(std::time::Duration::ZERO).build()?)
//!     .build();
//! let down = Down::default();
//! let mut service = ServiceBuilder::new()
//!     .layer(RetryLayer::from_registry(&registry, "bureau").flatten_errors())
//!     .layer(CircuitBreakerLayer::from_registry(&registry, "bureau").flatten_errors())
//!     .layer(BulkheadLayer::from_registry(&registry, "bureau"))
//!     .service(down.clone());
//!
//! // Three attempts (`max-attempts` 3 by default), each through the breaker and the bulkhead.
//! let error = service.call(1).await.unwrap_err();
//! assert_eq!(error.into_inner(), Some("down"));
//! assert_eq!(down.0.load(Ordering::SeqCst), 3);
//!
//! // An OPEN breaker's rejection is not retried: one attempt, answered at once.
//! registry.breaker("bureau").transition_to(State::ForcedOpen)?;
//! assert!(service.call(2).await.unwrap_err().is_rejected());
//! assert_eq!(down.0.load(Ordering::SeqCst), 3);
//! # let _ = Config::builder();
//! # let _: Option<Infallible> = None;
//! # Ok(())
//! # }
//! ```
//!
//! ## What the retry's layer costs
//!
//! A request that is replayed allocates its attempts' future (boxed, with the retry's and the
//! request's clones): the retry's call has no type name a `Future` type could give, so one
//! allocation per request, whatever the number of attempts, plus what the retry's own call
//! allocates (nothing for a first attempt that succeeds). A request sent once is polled in
//! place and allocates nothing.

#![forbid(unsafe_code)]

#[cfg(doc)]
use breaker_core::{Bulkhead, CircuitBreaker, Classifier, Classify};
#[cfg(doc)]
use tower_service::Service;

mod bulkhead;
mod error;
mod fallback;
pub mod future;
mod inner_error;
mod key;
mod layer;
mod retry;
mod select;
mod service;
mod status;

pub use self::bulkhead::{BulkheadFuture, BulkheadLayer, BulkheadService};
pub use self::error::ErrorResponse;
pub use self::fallback::{Fallback, FallbackService, NoFallback};
pub use self::future::ResponseFuture;
pub use self::inner_error::{Flatten, InnerError, Wrap};
pub use self::key::{HeaderKey, HeaderText, HostKey, PathKey};
pub use self::layer::CircuitBreakerLayer;
pub use self::retry::{IdempotentMethod, RetryClassifier, RetryFuture, RetryLayer, RetryService};
pub use self::select::{Breakers, PerKey};
pub use self::service::CircuitBreakerService;
pub use self::status::HttpStatus;
pub use breaker_core::CallError;
pub use breaker_core::RequestKey;
