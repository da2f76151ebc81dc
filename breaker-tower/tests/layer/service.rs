//! The tower layer over a hand-written `Service`, on a manual clock: failures open the
//! breaker, OPEN fails fast without calling the inner service, HALF_OPEN trials and recovery,
//! a dropped response future gives its permit back, the configured error kinds and the HTTP
//! status classifier apply, and `poll_ready` takes no permit. Then what the layer adds: the
//! OPEN wait as `Retry-After`, `timeout-duration`, a fallback service, breakers per key.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::{CircuitBreaker, Config, ErrorKind, ManualClock, Registry, State};
use breaker_tower::{CallError, CircuitBreakerLayer, ErrorResponse, HeaderKey, HttpStatus};
use tower_layer::Layer;
use tower_service::Service;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Downstream {
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
pub(crate) enum Mode {
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
pub(crate) struct Flaky {
    calls: Arc<AtomicUsize>,
    mode: Arc<std::sync::Mutex<Mode>>,
    pub(crate) ready: Arc<AtomicBool>,
}

impl Flaky {
    pub(crate) fn new() -> Flaky {
        Flaky {
            calls: Arc::new(AtomicUsize::new(0)),
            mode: Arc::new(std::sync::Mutex::new(Mode::Ok)),
            ready: Arc::new(AtomicBool::new(true)),
        }
    }

    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn calls(&self) -> usize {
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

pub(crate) fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = poll_once(f.as_mut()) {
            return v;
        }
    }
}

/// `poll_ready`, then `call`, then the response: what a tower stack does per request.
pub(crate) fn request<R, S: Service<R>>(
    service: &mut S,
    request: R,
) -> Result<S::Response, S::Error> {
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
        assert_eq!(error, CallError::Inner(Downstream::Unavailable));
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

    // Dropped (cancelled): nothing is recorded, so the breaker is still HALF_OPEN (a success
    // recorded for it would have closed the breaker with its one trial), and the trial comes
    // back.
    drop(pending);
    assert_trial_given_back(&breaker);
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
    assert_trial_given_back(&breaker);
    assert_eq!(
        request(&mut service, 3),
        Ok(3),
        "the next request gets the trial"
    );
    assert_eq!(breaker.state(), State::Closed);
}

/// A HALF_OPEN breaker of one trial whose trial was dropped: still HALF_OPEN, nothing in its
/// window. A dropped request recorded as a success would have closed it.
fn assert_trial_given_back(breaker: &CircuitBreaker) {
    let metrics = breaker.metrics();
    assert_eq!(
        (metrics.state, metrics.buffered_calls),
        (State::HalfOpen, 0),
        "the dropped request recorded nothing: {metrics:?}"
    );
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

#[test]
fn a_rejection_by_open_carries_the_rest_of_its_wait_as_retry_after() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "wait").layer(flaky.clone());
    let breaker = registry.breaker("wait");
    breaker.transition_to(State::Open).unwrap();

    clock.advance(Duration::from_millis(2_500));
    let error = request(&mut service, 1).unwrap_err();
    assert_eq!(
        error.rejected().unwrap().retry_after(),
        Some(Duration::from_millis(7_500))
    );
    let response: http::Response<String> = error.http_response().unwrap();
    assert_eq!(response.status(), 503);
    // Rounded up: a client that waits 8 s finds the wait over.
    assert_eq!(response.headers()["retry-after"], "8");
    assert_eq!(
        response.body(),
        "CircuitBreaker 'wait' is OPEN and does not permit further calls"
    );

    // FORCED_OPEN has no end: no Retry-After.
    breaker.transition_to(State::ForcedOpen).unwrap();
    let error = request(&mut service, 2).unwrap_err();
    assert_eq!(error.rejected().unwrap().retry_after(), None);
    let response: http::Response<String> = error.http_response().unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("retry-after").is_none());
    // The inner service's own errors are the service's to answer.
    assert!(CallError::Inner(Downstream::Unavailable)
        .http_response::<String>()
        .is_none());
    assert_eq!(flaky.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_configured_timeout_cancels_a_request_and_records_a_failure() {
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .failure_rate_threshold(50.0)
        .timeout_duration(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let registry = Registry::builder().default_config(config).build();
    let flaky = Flaky::new();
    let mut service = CircuitBreakerLayer::from_registry(&registry, "slow").layer(flaky.clone());
    let breaker = registry.breaker("slow");

    flaky.set(Mode::Hang);
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let error = service.call(1).await.unwrap_err();
    let timed_out = error.timed_out().expect("timed out");
    assert_eq!(timed_out.timeout(), Duration::from_millis(300));
    assert_eq!(timed_out.breaker_name(), "slow");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(error.http_response::<String>().unwrap().status(), 504);
    let metrics = breaker.metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (1, 1));

    // A request that answers in time is not affected.
    flaky.set(Mode::Ok);
    assert_eq!(service.call(2).await, Ok(2));
    assert_eq!(breaker.metrics().buffered_calls, 2);
    assert_eq!(breaker.state(), State::Open);
}

/// A fallback that counts its calls and answers `request + 1000`; ready when `ready` says.
#[derive(Clone)]
struct Cached {
    calls: Arc<AtomicUsize>,
    ready: Arc<AtomicBool>,
}

impl Service<u32> for Cached {
    type Response = u32;
    type Error = Downstream;
    type Future = std::future::Ready<Result<u32, Downstream>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Downstream>> {
        if self.ready.load(Ordering::SeqCst) {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    }

    fn call(&mut self, request: u32) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(request + 1000))
    }
}

#[test]
fn a_fallback_service_answers_rejected_requests_only() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    let cached = Cached {
        calls: Arc::new(AtomicUsize::new(0)),
        ready: Arc::new(AtomicBool::new(true)),
    };
    let mut service = CircuitBreakerLayer::from_registry(&registry, "cached")
        .fallback(cached.clone())
        .layer(flaky.clone());
    let breaker = registry.breaker("cached");

    assert_eq!(request(&mut service, 1), Ok(1));
    flaky.set(Mode::Fail);
    // A failure of the inner service is not the fallback's to answer.
    assert_eq!(
        request(&mut service, 2),
        Err(CallError::Inner(Downstream::Unavailable))
    );
    assert_eq!(cached.calls.load(Ordering::SeqCst), 0);

    breaker.transition_to(State::Open).unwrap();
    assert_eq!(request(&mut service, 3), Ok(1003));
    assert_eq!(request(&mut service, 4), Ok(1004));
    assert_eq!(cached.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        flaky.calls(),
        2,
        "the inner service was not called while OPEN"
    );
    assert_eq!(breaker.metrics().not_permitted_calls, 2);

    // The fallback's readiness is part of the service's.
    cached.ready.store(false, Ordering::SeqCst);
    let mut ready = pin!(std::future::poll_fn(|cx| service.poll_ready(cx)));
    assert!(poll_once(ready.as_mut()).is_pending());
}

#[test]
fn per_key_breakers_keep_keys_apart_and_are_the_registrys_keyed_breakers() {
    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let flaky = Flaky::new();
    // Odd requests belong to one tenant, even ones to another.
    let tenant = |request: &u32| if request % 2 == 1 { "odd" } else { "even" };
    let mut service =
        CircuitBreakerLayer::per_key(&registry, "tenants", tenant).layer(flaky.clone());

    flaky.set(Mode::Fail);
    for i in [1, 3, 5, 7] {
        assert!(!request(&mut service, i).unwrap_err().is_rejected());
    }
    let group = registry.keyed("tenants");
    let odd = group.find("odd").expect("the odd tenant has a breaker");
    assert_eq!(odd.state(), State::Open);
    assert_eq!(odd.name(), "tenants[odd]");
    assert!(group.find("even").is_none(), "no even request was made yet");

    // The odd tenant is rejected; the even one still reaches the service.
    let rejected = request(&mut service, 9).unwrap_err();
    assert_eq!(rejected.rejected().unwrap().breaker_name(), "tenants[odd]");
    flaky.set(Mode::Ok);
    assert_eq!(request(&mut service, 2), Ok(2));
    assert_eq!(group.find("even").unwrap().state(), State::Closed);
    assert_eq!(flaky.calls(), 5);
    assert_eq!(group.len(), 2);
}

#[test]
fn a_header_key_gives_each_tenant_a_breaker() {
    #[derive(Clone)]
    struct Status(Arc<AtomicUsize>);

    impl Service<http::Request<()>> for Status {
        type Response = http::Response<()>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<http::Response<()>, std::convert::Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<()>) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            let failing = request.headers()["x-tenant"] == "acme";
            let status = if failing { 500 } else { 200 };
            let response = http::Response::builder().status(status).body(()).unwrap();
            std::future::ready(Ok(response))
        }
    }

    let clock = ManualClock::new();
    let registry = registry(&clock, four_calls_half_fail(1));
    let hits = Arc::new(AtomicUsize::new(0));
    let mut service =
        CircuitBreakerLayer::per_key(&registry, "api", HeaderKey::from_static("x-tenant"))
            .classify(HttpStatus)
            .layer(Status(hits.clone()));
    let from = |tenant: &str| {
        http::Request::builder()
            .header("x-tenant", tenant)
            .body(())
            .unwrap()
    };

    for _ in 0..4 {
        assert_eq!(request(&mut service, from("acme")).unwrap().status(), 500);
    }
    assert!(request(&mut service, from("acme"))
        .unwrap_err()
        .is_rejected());
    assert_eq!(request(&mut service, from("globex")).unwrap().status(), 200);
    // A control character in the header does not reach the breaker's name unescaped.
    let odd = http::HeaderValue::from_bytes(b"ev\\\til\xff").unwrap();
    let mut request_with = from("x");
    request_with.headers_mut().insert("x-tenant", odd);
    assert_eq!(request(&mut service, request_with).unwrap().status(), 200);
    let names: Vec<String> = registry
        .keyed("api")
        .breakers()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert_eq!(
        names,
        ["api[acme]", "api[ev\\\\x5c\\\\x09il\\\\xff]", "api[globex]"]
    );
    assert_eq!(hits.load(Ordering::SeqCst), 6);
}
