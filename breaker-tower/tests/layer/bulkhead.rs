//! The bulkhead's layer over a hand-written service, on a manual clock: at most
//! `max-concurrent-calls` requests reach the inner service and the others are refused at once
//! without reaching it; a place is given back when the inner future finishes, when the response
//! future is dropped, and when the inner future panics; a request waits for a place up to
//! `max-wait-duration` (the manual clock ends the wait) and leaves the queue when dropped;
//! `poll_ready` takes no place. Then the breaker's layer outside it, in Spring's order: the
//! refusals are failures the breaker records, under one level of `CallError`, and an OPEN
//! breaker takes no place.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use breaker_core::{
    BulkheadConfig, BulkheadEventKind, Classifier, Config, ErrorKind, ManualClock, Registry, State,
};
use breaker_tower::{BulkheadLayer, CallError, CircuitBreakerLayer, ErrorResponse};
use tower::ServiceBuilder;
use tower_layer::Layer;
use tower_service::Service;

use crate::service::{block_on, poll_once, request, Downstream, Flaky, Mode};

/// A registry on `clock` whose bulkheads let `max` calls in at once and wait up to `wait`.
fn bulkheads(clock: &ManualClock, max: u32, wait: Duration) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .bulkhead_default_config(bulkhead_config(max, wait))
        .build()
}

fn bulkhead_config(max: u32, wait: Duration) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .max_wait_duration(wait)
        .build()
        .unwrap()
}

/// `poll_ready`, then `call`: the response future, not polled yet.
fn called<R, S: Service<R>>(service: &mut S, request: R) -> S::Future {
    block_on(std::future::poll_fn(|cx| service.poll_ready(cx))).unwrap_or_else(|_| panic!());
    service.call(request)
}

#[test]
fn at_most_the_limit_reaches_the_inner_service_and_the_rest_are_refused_at_once() {
    let clock = ManualClock::new();
    let registry = bulkheads(&clock, 2, Duration::ZERO);
    let layer = BulkheadLayer::from_registry(&registry, "inventory");
    let bulkhead = layer.bulkhead().clone();
    assert!(bulkhead.ptr_eq(&registry.bulkhead("inventory")));
    let flaky = Flaky::new();
    let mut service = layer.layer(flaky.clone());

    // Two requests that never finish hold the two places, from `call` on.
    flaky.set(Mode::Hang);
    let mut first = called(&mut service, 1);
    let second = called(&mut service, 2);
    assert!(poll_once(pin!(&mut first)).is_pending());
    assert_eq!(flaky.calls(), 2);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);

    // The others are refused at once, and never reach the inner service.
    flaky.set(Mode::Ok);
    for i in 0..5 {
        let error = request(&mut service, i).unwrap_err();
        assert!(error.is_bulkhead_full());
        assert_eq!(error.bulkhead_full().unwrap().bulkhead_name(), "inventory");
        assert_eq!(
            error.to_string(),
            "Bulkhead 'inventory' is full and does not permit further calls"
        );
    }
    // A clone of the service, or another service of the layer, shares the places.
    assert!(request(&mut service.clone(), 5)
        .unwrap_err()
        .is_bulkhead_full());
    assert!(request(&mut layer.layer(flaky.clone()), 6)
        .unwrap_err()
        .is_bulkhead_full());
    assert_eq!(
        flaky.calls(),
        2,
        "no refused request reached the inner service"
    );

    // Its HTTP answer: 503, saying which bulkhead is full, and no `Retry-After`.
    let error = request(&mut service, 7).unwrap_err();
    let response: http::Response<String> = error.http_response().unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.body(),
        "Bulkhead 'inventory' is full and does not permit further calls"
    );
    assert!(!response.headers().contains_key("retry-after"));

    // A dropped response future gives its place back, though its inner future never finished
    // (and the one never polled held its place all the same).
    drop(first);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    assert_eq!(request(&mut service, 8), Ok(8));
    assert_eq!(flaky.calls(), 3);
    drop(second);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 2);
}

#[test]
fn a_place_is_given_back_when_the_inner_future_finishes_or_panics() {
    let clock = ManualClock::new();
    let registry = bulkheads(&clock, 1, Duration::ZERO);
    let flaky = Flaky::new();
    let mut service = BulkheadLayer::from_registry(&registry, "finish").layer(flaky.clone());
    let bulkhead = registry.bulkhead("finish");

    // Finished: the place is free while the response future still lives.
    let mut response = called(&mut service, 1);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    assert_eq!(poll_once(pin!(&mut response)), Poll::Ready(Ok(1)));
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    drop(response);

    // The inner service's error is the service's `CallError::Inner`, and frees the place.
    flaky.set(Mode::Fail);
    assert_eq!(
        request(&mut service, 2),
        Err(CallError::Inner(Downstream::Unavailable))
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);

    // A panic of the inner future goes on, and the place is given back on the way.
    flaky.set(Mode::Panic);
    let panicked = catch_unwind(AssertUnwindSafe(|| request(&mut service, 3)));
    assert!(panicked.is_err());
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    flaky.set(Mode::Ok);
    assert_eq!(request(&mut service, 4), Ok(4));
}

#[test]
fn poll_ready_asks_the_inner_service_and_neither_takes_nor_waits_for_a_place() {
    let clock = ManualClock::new();
    // A wait configured: `poll_ready` still does not wait for a place.
    let registry = bulkheads(&clock, 1, Duration::from_secs(5));
    let flaky = Flaky::new();
    let mut service = BulkheadLayer::from_registry(&registry, "ready").layer(flaky.clone());
    let bulkhead = registry.bulkhead("ready");

    // Made ready (several times), the service holds no place.
    for _ in 0..3 {
        assert_eq!(
            block_on(std::future::poll_fn(|cx| service.poll_ready(cx))),
            Ok(())
        );
    }
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);

    // Full: `poll_ready` is still Ready at once.
    flaky.set(Mode::Hang);
    let held = called(&mut service, 1);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    let mut ready = pin!(std::future::poll_fn(|cx| service.poll_ready(cx)));
    assert_eq!(poll_once(ready.as_mut()), Poll::Ready(Ok(())));

    // Not ready when the inner service is not.
    flaky.ready.store(false, Ordering::SeqCst);
    let mut ready = pin!(std::future::poll_fn(|cx| service.poll_ready(cx)));
    assert!(poll_once(ready.as_mut()).is_pending());
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
    drop(held);
}

#[test]
fn a_request_waits_for_a_place_up_to_max_wait_duration_on_the_registrys_clock() {
    let clock = ManualClock::new();
    let registry = bulkheads(&clock, 1, Duration::from_millis(500));
    let flaky = Flaky::new();
    let mut service = BulkheadLayer::from_registry(&registry, "waits").layer(flaky.clone());
    let bulkhead = registry.bulkhead("waits");

    flaky.set(Mode::Hang);
    let held = called(&mut service, 1);
    // The second request waits in its response future; the inner service is not called.
    let mut waiting = called(&mut service, 2);
    assert!(poll_once(pin!(&mut waiting)).is_pending());
    assert_eq!(bulkhead.metrics().waiting_calls(), 1);
    assert_eq!(flaky.calls(), 1);

    // A place comes free: the waiting request takes it and only then calls the inner service
    // (with the mode of that moment).
    flaky.set(Mode::Ok);
    drop(held);
    assert_eq!(poll_once(pin!(&mut waiting)), Poll::Ready(Ok(2)));
    assert_eq!(flaky.calls(), 2);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);

    // A request that waits longer than `max-wait-duration` is refused, without calling the
    // inner service.
    flaky.set(Mode::Hang);
    let held = called(&mut service, 3);
    let mut too_long = called(&mut service, 4);
    assert!(poll_once(pin!(&mut too_long)).is_pending());
    clock.advance(Duration::from_millis(499));
    assert!(poll_once(pin!(&mut too_long)).is_pending());
    clock.advance(Duration::from_millis(2));
    let Poll::Ready(Err(error)) = poll_once(pin!(&mut too_long)) else {
        panic!("the wait is over")
    };
    assert!(error.is_bulkhead_full());
    assert_eq!(flaky.calls(), 3);
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);

    // A waiting request that is dropped leaves the queue, and is never called.
    let waiting = called(&mut service, 5);
    let mut waiting = Box::pin(waiting);
    assert!(poll_once(waiting.as_mut()).is_pending());
    assert_eq!(bulkhead.metrics().waiting_calls(), 1);
    drop(waiting);
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
    drop(held);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    assert_eq!(flaky.calls(), 3);

    // The wait is read per request: changed at run time to none, the bulkhead refuses at once.
    bulkhead.change_config(bulkhead_config(1, Duration::ZERO));
    let held = called(&mut service, 6);
    let mut refused = called(&mut service, 7);
    let Poll::Ready(Err(error)) = poll_once(pin!(&mut refused)) else {
        panic!("refused at once")
    };
    assert!(error.is_bulkhead_full());
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
    drop(held);
}

#[test]
fn the_bulkheads_events_follow_the_requests() {
    let clock = ManualClock::new();
    let registry = bulkheads(&clock, 1, Duration::ZERO);
    let flaky = Flaky::new();
    let mut service = BulkheadLayer::from_registry(&registry, "events").layer(flaky.clone());
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let _subscription = registry
        .bulkhead("events")
        .subscribe(move |event| seen.lock().unwrap().push(event.kind()));

    flaky.set(Mode::Hang);
    let held = called(&mut service, 1);
    assert!(request(&mut service, 2).unwrap_err().is_bulkhead_full());
    drop(held);
    assert_eq!(
        *events.lock().unwrap(),
        [
            BulkheadEventKind::CallPermitted,
            BulkheadEventKind::CallRejected,
            BulkheadEventKind::CallFinished,
        ]
    );
}

#[test]
fn the_response_future_is_send_and_static() {
    fn send_static<T: Send + 'static>(_: &T) {}
    let registry = bulkheads(&ManualClock::new(), 1, Duration::from_secs(1));
    let mut service = BulkheadLayer::from_registry(&registry, "send").layer(Flaky::new());
    send_static(&service);
    let future = called(&mut service, 1);
    send_static(&future);
    drop(registry);
    assert_eq!(block_on(future), Ok(1), "the future owns its bulkhead");
}

/// A breaker that opens when half of 4 calls fail, with the bulkheads of `bulkheads`.
fn breaker_and_bulkhead(clock: &ManualClock, breaker: Config, max: u32) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .default_config(breaker)
        .bulkhead_default_config(bulkhead_config(max, Duration::ZERO))
        .build()
}

fn four_calls_half_fail() -> breaker_core::ConfigBuilder {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(10))
}

#[test]
fn the_breaker_outside_records_refusals_as_failures_and_an_open_breaker_takes_no_place() {
    let clock = ManualClock::new();
    let registry = breaker_and_bulkhead(&clock, four_calls_half_fail().build().unwrap(), 1);
    let flaky = Flaky::new();
    let mut service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::from_registry(&registry, "bureau").flatten_errors())
        .layer(BulkheadLayer::from_registry(&registry, "bureau"))
        .service(flaky.clone());
    let breaker = registry.breaker("bureau");
    let bulkhead = registry.bulkhead("bureau");
    let permitted = Arc::new(Mutex::new(0));
    let count = Arc::clone(&permitted);
    let _subscription = bulkhead.subscribe(move |event| {
        if event.kind() == BulkheadEventKind::CallPermitted {
            *count.lock().unwrap() += 1;
        }
    });

    // One level of `CallError`: the inner service's own error is `Inner`, and counts.
    flaky.set(Mode::Fail);
    let error: CallError<Downstream> = request(&mut service, 1).unwrap_err();
    assert_eq!(error, CallError::Inner(Downstream::Unavailable));
    assert_eq!(breaker.metrics().failed_calls, 1);
    flaky.set(Mode::Ok);
    assert_eq!(request(&mut service, 2), Ok(2));

    // The one place held, two refusals: failures the breaker records, and they open it.
    flaky.set(Mode::Hang);
    let held = called(&mut service, 3);
    for i in 0..2 {
        let error: CallError<Downstream> = request(&mut service, i).unwrap_err();
        assert!(error.is_bulkhead_full());
    }
    assert_eq!(breaker.metrics().failed_calls, 3);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(flaky.calls(), 3);
    assert_eq!(*permitted.lock().unwrap(), 3);

    // OPEN: rejected before the bulkhead, which hands out no place (even a free one).
    drop(held);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    flaky.set(Mode::Ok);
    for i in 0..5 {
        assert!(request(&mut service, i).unwrap_err().is_rejected());
    }
    assert_eq!(*permitted.lock().unwrap(), 3);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
    assert_eq!(flaky.calls(), 3);
}

#[test]
fn under_the_breaker_the_callers_classifier_sees_the_inner_error_and_the_kinds_see_bulkhead_full() {
    let clock = ManualClock::new();
    let breaker = four_calls_half_fail()
        .ignore_exceptions([ErrorKind::bulkhead_full()])
        .build()
        .unwrap();
    let registry = breaker_and_bulkhead(&clock, breaker, 1);
    let flaky = Flaky::new();
    let not_found = |e: &Downstream| *e == Downstream::NotFound;
    let mut service = ServiceBuilder::new()
        .layer(
            CircuitBreakerLayer::from_registry(&registry, "kinds")
                .classify(Classifier::new().ignore(not_found))
                .flatten_errors(),
        )
        .layer(BulkheadLayer::from_registry(&registry, "kinds"))
        .service(flaky.clone());
    let breaker = registry.breaker("kinds");

    // The classifier is over the inner service's own error.
    flaky.set(Mode::NotFound);
    for i in 0..3 {
        assert_eq!(
            request(&mut service, i),
            Err(CallError::Inner(Downstream::NotFound))
        );
    }
    // `ignore-exceptions` naming the bulkhead's refusal: refusals count for nothing.
    flaky.set(Mode::Hang);
    let held = called(&mut service, 3);
    for i in 0..5 {
        assert!(request(&mut service, i).unwrap_err().is_bulkhead_full());
    }
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(breaker.state(), State::Closed);
    drop(held);
}

#[test]
fn without_flatten_errors_the_errors_nest_and_refusals_still_count() {
    let clock = ManualClock::new();
    let registry = breaker_and_bulkhead(&clock, four_calls_half_fail().build().unwrap(), 1);
    let flaky = Flaky::new();
    let mut service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::from_registry(&registry, "nested"))
        .layer(BulkheadLayer::from_registry(&registry, "nested"))
        .service(flaky.clone());

    flaky.set(Mode::Hang);
    let held = called(&mut service, 1);
    let error: CallError<CallError<Downstream>> = request(&mut service, 2).unwrap_err();
    assert!(error.into_inner().is_some_and(|e| e.is_bulkhead_full()));
    assert_eq!(registry.breaker("nested").metrics().failed_calls, 1);
    drop(held);
}
