//! The retry's layer over a hand-written service, on a manual clock: a failed request is sent
//! again after each wait (the clock ends it), `poll_ready` is asked before each later attempt,
//! a dropped response future starts no further attempt, a request that cannot be replayed is
//! sent once, an ignored error ends the request. Then the layer outermost in Spring's order,
//! over the breaker's and the bulkhead's: an OPEN breaker is tried once, a bulkhead's refusal
//! is retried.

use std::pin::pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use breaker_core::{
    BulkheadConfig, ErrorKind, ManualClock, Outcome, Registry, RetryConfig, RetryConfigBuilder,
    State,
};
use breaker_tower::{BulkheadLayer, CallError, CircuitBreakerLayer, RetryLayer};
use tower::ServiceBuilder;
use tower_layer::Layer;
use tower_service::Service;

use crate::service::{block_on, poll_once, request, Downstream, Flaky, Mode};

const WAIT: Duration = Duration::from_secs(1);

/// Three attempts, a second between them, and a budget that never refuses in these tests.
fn config() -> RetryConfigBuilder {
    RetryConfig::builder().max_attempts(3).wait_duration(WAIT)
}

fn retries(clock: &ManualClock, config: RetryConfigBuilder) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .retry_default_config(config.build().unwrap())
        .bulkhead_default_config(
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .build()
                .unwrap(),
        )
        .build()
}

/// A manual clock, a registry on it with the retry `bureau` of [`config`], and a downstream.
fn bureau() -> (ManualClock, Registry, Flaky) {
    let clock = ManualClock::new();
    let registry = retries(&clock, config());
    (clock, registry, Flaky::new())
}

/// `poll_ready`, then `call`: the response future, not polled yet.
fn called<R, S: Service<R>>(service: &mut S, request: R) -> S::Future {
    block_on(std::future::poll_fn(|cx| service.poll_ready(cx))).unwrap_or_else(|_| panic!());
    service.call(request)
}

#[test]
fn a_failed_request_is_sent_again_after_each_wait_on_the_retrys_clock() {
    let clock = ManualClock::new();
    let registry = retries(&clock, config());
    let layer = RetryLayer::from_registry(&registry, "bureau");
    assert!(layer.retry().ptr_eq(&registry.retry("bureau")));
    let flaky = Flaky::new();
    flaky.set(Mode::Fail);
    let mut service = layer.layer(flaky.clone());

    let mut response = pin!(called(&mut service, 7));
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(flaky.calls(), 1);
    // No attempt before the wait is over.
    clock.advance(WAIT - Duration::from_millis(1));
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(flaky.calls(), 1);
    clock.advance(Duration::from_millis(1));
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(flaky.calls(), 2);
    clock.advance(WAIT);
    // The third attempt is the last: its error is the answer.
    assert_eq!(
        poll_once(response.as_mut()),
        Poll::Ready(Err(CallError::Inner(Downstream::Unavailable)))
    );
    assert_eq!(flaky.calls(), 3);
    let metrics = registry.retry("bureau").metrics();
    assert_eq!(metrics.failed_calls_with_retry_attempt(), 1);
    assert_eq!(metrics.successful_calls_without_retry_attempt(), 0);
}

#[test]
fn a_request_that_succeeds_on_a_retry_answers_with_that_response() {
    let (clock, registry, flaky) = bureau();
    let mut service = RetryLayer::from_registry(&registry, "bureau").layer(flaky.clone());

    flaky.set(Mode::Fail);
    let mut response = pin!(called(&mut service, 7));
    assert!(poll_once(response.as_mut()).is_pending());
    flaky.set(Mode::Ok);
    clock.advance(WAIT);
    assert_eq!(poll_once(response.as_mut()), Poll::Ready(Ok(7)));
    assert_eq!(flaky.calls(), 2);

    // A first attempt that succeeds answers at once.
    assert_eq!(request(&mut service, 8), Ok(8));
    assert_eq!(flaky.calls(), 3);
    let metrics = registry.retry("bureau").metrics();
    assert_eq!(metrics.successful_calls_with_retry_attempt(), 1);
    assert_eq!(metrics.successful_calls_without_retry_attempt(), 1);
}

#[test]
fn each_later_attempt_waits_for_the_inner_service_to_be_ready() {
    let (clock, registry, flaky) = bureau();
    let mut service = RetryLayer::from_registry(&registry, "bureau").layer(flaky.clone());

    flaky.set(Mode::Fail);
    let mut response = pin!(called(&mut service, 7));
    assert!(poll_once(response.as_mut()).is_pending());
    flaky.ready.store(false, Ordering::SeqCst);
    flaky.set(Mode::Ok);
    clock.advance(WAIT);
    // The wait is over, but the inner service is not ready: it is not called.
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(flaky.calls(), 1);
    flaky.ready.store(true, Ordering::SeqCst);
    assert_eq!(poll_once(response.as_mut()), Poll::Ready(Ok(7)));
    assert_eq!(flaky.calls(), 2);
}

#[test]
fn a_dropped_response_future_starts_no_further_attempt() {
    let (clock, registry, flaky) = bureau();
    let mut service = RetryLayer::from_registry(&registry, "bureau").layer(flaky.clone());

    flaky.set(Mode::Fail);
    let mut response = Box::pin(called(&mut service, 7));
    assert!(poll_once(response.as_mut()).is_pending());
    drop(response);
    clock.advance(WAIT * 10);
    assert_eq!(flaky.calls(), 1);
}

#[test]
fn a_request_that_cannot_be_replayed_is_sent_once_and_not_counted() {
    let (clock, registry, flaky) = bureau();
    // Odd requests are not replayed (say, they carry a streaming body).
    let layer =
        RetryLayer::from_registry(&registry, "bureau").replay_if(|r: &u32| r.is_multiple_of(2));
    let mut service = layer.layer(flaky.clone());

    flaky.set(Mode::Fail);
    assert_eq!(
        request(&mut service, 7),
        Err(CallError::Inner(Downstream::Unavailable))
    );
    assert_eq!(flaky.calls(), 1);
    let metrics = registry.retry("bureau").metrics();
    assert_eq!(metrics.failed_calls_without_retry_attempt(), 0);
    assert_eq!(metrics.failed_calls_with_retry_attempt(), 0);

    // An even one is retried.
    let mut response = pin!(called(&mut service, 8));
    assert!(poll_once(response.as_mut()).is_pending());
    clock.advance(WAIT);
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(flaky.calls(), 3);
}

#[test]
fn an_error_the_classifier_ignores_ends_the_request_at_once() {
    let (_, registry, flaky) = bureau();
    let classify = |result: &Result<u32, CallError<Downstream>>| match result {
        Err(CallError::Inner(Downstream::NotFound)) => Outcome::Ignored,
        Err(_) => Outcome::Failure,
        Ok(_) => Outcome::Success,
    };
    let layer = RetryLayer::from_registry(&registry, "bureau").classify(classify);
    let mut service = layer.layer(flaky.clone());

    flaky.set(Mode::NotFound);
    assert_eq!(
        request(&mut service, 7),
        Err(CallError::Inner(Downstream::NotFound))
    );
    assert_eq!(flaky.calls(), 1);
}

/// `flaky` behind the bulkhead, the breaker and the retry `bureau`, in Spring's order.
fn springs_order(
    registry: &Registry,
    flaky: &Flaky,
) -> impl Service<u32, Response = u32, Error = CallError<Downstream>> {
    ServiceBuilder::new()
        .layer(RetryLayer::from_registry(registry, "bureau").flatten_errors())
        .layer(CircuitBreakerLayer::from_registry(registry, "bureau").flatten_errors())
        .layer(BulkheadLayer::from_registry(registry, "bureau"))
        .service(flaky.clone())
}

#[test]
fn in_springs_order_an_open_breaker_is_tried_once() {
    let (_, registry, flaky) = bureau();
    let mut service = springs_order(&registry, &flaky);
    let breaker = registry.breaker("bureau");
    breaker.transition_to(State::ForcedOpen).unwrap();

    // One attempt, rejected, answered at once: no wait, no second attempt.
    let mut response = pin!(called(&mut service, 7));
    let Poll::Ready(Err(error)) = poll_once(response.as_mut()) else {
        panic!("a rejection is answered at once")
    };
    assert!(error.is_rejected());
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
    assert_eq!(flaky.calls(), 0);
    assert_eq!(
        registry
            .bulkhead("bureau")
            .metrics()
            .available_concurrent_calls(),
        1
    );
}

#[test]
fn a_rejection_is_retried_when_retry_exceptions_names_it() {
    let clock = ManualClock::new();
    let kind = ErrorKind::of_type::<breaker_core::CallNotPermitted>("CallNotPermittedException");
    let registry = retries(&clock, config().retry_exceptions([kind]));
    let flaky = Flaky::new();
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::from_registry(&registry, "bureau").flatten_errors())
        .layer(CircuitBreakerLayer::from_registry(&registry, "bureau"))
        .service(flaky.clone());
    let breaker = registry.breaker("bureau");
    breaker.transition_to(State::ForcedOpen).unwrap();

    let mut response = pin!(called(&mut service, 7));
    assert!(poll_once(response.as_mut()).is_pending());
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
    // Closed again before the retry: the second attempt reaches the service.
    breaker.transition_to(State::Closed).unwrap();
    clock.advance(WAIT);
    assert_eq!(poll_once(response.as_mut()), Poll::Ready(Ok(7)));
    assert_eq!(flaky.calls(), 1);
}

#[test]
fn in_springs_order_a_bulkheads_refusal_is_retried_and_each_attempt_takes_a_place_afresh() {
    let (clock, registry, flaky) = bureau();
    let mut service = springs_order(&registry, &flaky);
    let bulkhead = registry.bulkhead("bureau");

    // One request holds the bulkhead's one place.
    flaky.set(Mode::Hang);
    let mut held = Box::pin(called(&mut service, 1));
    assert!(poll_once(held.as_mut()).is_pending());
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);

    // The next is refused, and retried after the wait: refused again while the place is held,
    // then let in once it is free.
    flaky.set(Mode::Ok);
    let mut response = pin!(called(&mut service, 2));
    assert!(poll_once(response.as_mut()).is_pending());
    clock.advance(WAIT);
    assert!(poll_once(response.as_mut()).is_pending());
    drop(held);
    clock.advance(WAIT);
    assert_eq!(poll_once(response.as_mut()), Poll::Ready(Ok(2)));
    assert_eq!(flaky.calls(), 2);
    // The two refusals were failures the breaker recorded.
    assert_eq!(registry.breaker("bureau").metrics().failed_calls, 2);
}
