//! The tower layer over a hand-written `Service`, on a manual clock: failures open the
//! breaker, OPEN fails fast without calling the inner service, HALF_OPEN trials and recovery,
//! a dropped response future gives its permit back, the configured error kinds and the HTTP
//! status classifier apply, and `poll_ready` takes no permit.
#![cfg(feature = "tower")]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::tower::{BreakerError, CircuitBreakerLayer, HttpStatus};
use breaker_core::{Config, ErrorKind, ManualClock, Registry, State};
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Downstream {
    Unavailable,
    NotFound,
}

impl std::fmt::Display for Downstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Downstream::Unavailable => "downstream unavailable",
            Downstream::NotFound => "not found",
        })
    }
}

impl std::error::Error for Downstream {}

/// What the next request to [`Flaky`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Ok,
    Fail,
    NotFound,
    /// Never finishes.
    Hang,
    Panic,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<u32, Downstream>> + Send>>;

/// A downstream service that counts its calls and does what `mode` says.
#[derive(Clone)]
struct Flaky {
    calls: Arc<AtomicUsize>,
    mode: Arc<std::sync::Mutex<Mode>>,
    ready: Arc<AtomicBool>,
}

impl Flaky {
    fn new() -> Flaky {
        Flaky {
            calls: Arc::new(AtomicUsize::new(0)),
            mode: Arc::new(std::sync::Mutex::new(Mode::Ok)),
            ready: Arc::new(AtomicBool::new(true)),
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Service<u32> for Flaky {
    type Response = u32;
    type Error = Downstream;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Downstream>> {
        if self.ready.load(Ordering::SeqCst) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, request: u32) -> BoxFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mode = *self.mode.lock().unwrap();
        Box::pin(async move {
            match mode {
                Mode::Ok => Ok(request),
                Mode::Fail => Err(Downstream::Unavailable),
                Mode::NotFound => Err(Downstream::NotFound),
                Mode::Hang => std::future::pending().await,
                Mode::Panic => panic!("the handler panicked"),
            }
        })
    }
}

fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = poll_once(f.as_mut()) {
            return v;
        }
    }
}

/// `poll_ready`, then `call`, then the response: what a tower stack does per request.
fn request<R, S: Service<R>>(service: &mut S, request: R) -> Result<S::Response, S::Error> {
    block_on(std::future::poll_fn(|cx| service.poll_ready(cx)))?;
    block_on(service.call(request))
}

fn registry(clock: &ManualClock, config: Config) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .default_config(config)
        .build()
}

fn four_calls_half_fail(half_open_trials: u32) -> Config {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(10))
        .permitted_number_of_calls_in_half_open_state(half_open_trials)
        .build()
        .unwrap()
}

#[test]
fn failures_open_the_breaker_and_open_fails_fast_then_half_open_recovers() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(2));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "flaky").layer(flaky.clone());

    assert_eq!(request(&mut service, 1), Ok(1));
    assert_eq!(request(&mut service, 2), Ok(2));
    flaky.set(Mode::Fail);
    for i in 0..2 {
        let error = request(&mut service, i).unwrap_err();
        assert_eq!(error, BreakerError::Inner(Downstream::Unavailable));
        assert_eq!(error.to_string(), "downstream unavailable");
    }
    let breaker = registry.breaker("flaky");
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(flaky.calls(), 4);

    // OPEN: rejected in `call`, the inner service is never reached.
    flaky.set(Mode::Ok);
    for i in 0..10 {
        let error = request(&mut service, i).unwrap_err();
        let rejected = error.rejected().expect("rejected");
        assert_eq!(rejected.breaker_name(), "flaky");
        assert_eq!(rejected.state(), State::Open);
        assert_eq!(
            error.to_string(),
            "CircuitBreaker 'flaky' is OPEN and does not permit further calls"
        );
    }
    assert_eq!(
        flaky.calls(),
        4,
        "no rejected request reached the inner service"
    );
    assert_eq!(breaker.metrics().not_permitted_calls, 10);

    // After the wait: HALF_OPEN lets two trials through, and they close the breaker.
    clock.advance(Duration::from_millis(10_001));
    assert_eq!(request(&mut service, 7), Ok(7));
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(request(&mut service, 8), Ok(8));
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(flaky.calls(), 6);
}

#[test]
fn a_failed_half_open_trial_opens_the_breaker_again() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "reopen").layer(flaky.clone());
    let breaker = registry.breaker("reopen");
    breaker.transition_to(State::Open).unwrap();
    clock.advance(Duration::from_millis(10_001));

    flaky.set(Mode::Fail);
    assert!(!request(&mut service, 1).unwrap_err().is_rejected());
    assert_eq!(breaker.state(), State::Open);
    assert!(request(&mut service, 2).unwrap_err().is_rejected());
    assert_eq!(flaky.calls(), 1);
}

#[test]
fn a_dropped_response_future_gives_its_trial_back() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "cancel").layer(flaky.clone());
    let breaker = registry.breaker("cancel");
    breaker.transition_to(State::Open).unwrap();
    breaker.transition_to(State::HalfOpen).unwrap();

    // The one trial is taken by a request that never finishes.
    flaky.set(Mode::Hang);
    let mut pending = Box::pin(service.call(1));
    assert!(poll_once(pending.as_mut()).is_pending());
    assert!(
        request(&mut service, 2).unwrap_err().is_rejected(),
        "no trial left"
    );
    assert_eq!(flaky.calls(), 1);

    // Dropped (cancelled): the trial comes back, nothing is recorded.
    drop(pending);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    flaky.set(Mode::Ok);
    assert_eq!(
        request(&mut service, 3),
        Ok(3),
        "the next request gets the trial"
    );
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(flaky.calls(), 2);
}

#[test]
fn a_response_future_that_is_never_polled_holds_its_trial_until_dropped() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "unpolled").layer(flaky);
    let breaker = registry.breaker("unpolled");
    breaker.transition_to(State::Open).unwrap();
    breaker.transition_to(State::HalfOpen).unwrap();

    let unpolled = service.call(1);
    assert!(request(&mut service, 2).unwrap_err().is_rejected());
    drop(unpolled);
    assert_eq!(request(&mut service, 3), Ok(3));
}

#[test]
fn poll_ready_asks_the_inner_service_and_takes_no_permit() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "ready").layer(flaky.clone());
    let breaker = registry.breaker("ready");
    breaker.transition_to(State::Open).unwrap();
    breaker.transition_to(State::HalfOpen).unwrap();

    flaky.ready.store(false, Ordering::SeqCst);
    let mut ready = pin!(std::future::poll_fn(|cx| service.poll_ready(cx)));
    assert!(
        poll_once(ready.as_mut()).is_pending(),
        "the inner service is not ready"
    );
    // A handle made ready holds nothing either: the trial is still there for another handle.
    flaky.ready.store(true, Ordering::SeqCst);
    let mut other = service.clone();
    assert_eq!(
        block_on(std::future::poll_fn(|cx| service.poll_ready(cx))),
        Ok(())
    );
    assert_eq!(request(&mut other, 1), Ok(1));
    assert_eq!(breaker.state(), State::Closed);

    // OPEN: `poll_ready` is still Ready (rejection is in `call`).
    breaker.transition_to(State::Open).unwrap();
    assert_eq!(
        block_on(std::future::poll_fn(|cx| service.poll_ready(cx))),
        Ok(())
    );
    assert!(block_on(service.call(2)).unwrap_err().is_rejected());
}

#[test]
fn the_configured_error_kinds_apply() {
    let not_found = ErrorKind::new("NotFound", |e: &Downstream| *e == Downstream::NotFound);
    let clock = ManualClock::new();
    let config = Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .ignore_exceptions([not_found])
        .build()
        .unwrap();
    let registry = registry(&clock, config);
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "kinds").layer(flaky.clone());
    let breaker = registry.breaker("kinds");

    flaky.set(Mode::NotFound);
    for i in 0..10 {
        let error = request(&mut service, i).unwrap_err();
        assert_eq!(error.into_inner(), Some(Downstream::NotFound));
    }
    assert_eq!(
        breaker.metrics().buffered_calls,
        0,
        "an ignored kind counts for nothing"
    );
    assert_eq!(breaker.state(), State::Closed);

    flaky.set(Mode::Fail);
    for i in 0..4 {
        let _ = request(&mut service, i);
    }
    assert_eq!(
        breaker.metrics().failed_calls,
        4,
        "other errors are failures"
    );
    assert_eq!(breaker.state(), State::Open);
}

#[test]
fn a_classifier_of_the_callers_own_applies_under_the_configured_kinds() {
    use breaker_core::{Always, Classifier};
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let layer = CircuitBreakerLayer::from_registry(&registry, "own")
        .classify(Classifier::new().ignore(Always));
    let mut service = layer.layer(flaky.clone());
    flaky.set(Mode::Fail);
    for i in 0..10 {
        let _ = request(&mut service, i);
    }
    let breaker = layer.breaker();
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(breaker.state(), State::Closed);
}

#[test]
fn a_panicking_response_future_is_a_failure_and_the_panic_continues() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "panic").layer(flaky.clone());
    flaky.set(Mode::Panic);
    let panicked = catch_unwind(AssertUnwindSafe(|| request(&mut service, 1)));
    assert!(panicked.is_err());
    let metrics = registry.breaker("panic").metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (1, 1));
}

/// An HTTP service: the status comes from the request.
#[derive(Clone)]
struct Status {
    calls: Arc<AtomicUsize>,
}

impl Service<u16> for Status {
    type Response = http::Response<()>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<http::Response<()>, std::io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, status: u16) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(http::Response::builder()
            .status(status)
            .body(())
            .unwrap()))
    }
}

#[test]
fn http_status_5xx_fails_4xx_is_ignored() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = CircuitBreakerLayer::from_registry(&registry, "http")
        .classify(HttpStatus)
        .layer(Status {
            calls: Arc::clone(&calls),
        });
    let breaker = registry.breaker("http");

    for _ in 0..10 {
        let response = request(&mut service, 404).unwrap();
        assert_eq!(response.status(), 404);
    }
    assert_eq!(breaker.metrics().buffered_calls, 0, "4xx ignored");
    assert_eq!(request(&mut service, 200).unwrap().status(), 200);
    assert_eq!(request(&mut service, 200).unwrap().status(), 200);
    assert_eq!(request(&mut service, 503).unwrap().status(), 503);
    assert_eq!(request(&mut service, 500).unwrap().status(), 500);
    assert_eq!(breaker.state(), State::Open);
    assert!(request(&mut service, 200).unwrap_err().is_rejected());
    assert_eq!(calls.load(Ordering::SeqCst), 14);
}

#[test]
fn the_response_future_is_send_and_static() {
    fn send_static<T: Send + 'static>(_: &T) {}
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "send").layer(Flaky::new());
    send_static(&service);
    let future = service.call(1);
    send_static(&future);
    drop(registry);
    assert_eq!(block_on(future), Ok(1), "the future owns its breaker");
}
