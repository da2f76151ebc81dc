//! No heap allocation per request through the tower layers: the breaker's in CLOSED, OPEN and
//! HALF_OPEN, the bulkhead's with a place and refused, and the two stacked (a
//! counting global allocator, per thread, as in `no_alloc.rs`: everything measured runs on the
//! test's thread, the futures polled in place, the manual clock running no thread).

use std::convert::Infallible;
use std::future::{poll_fn, ready, Ready};
use std::task::{Context, Poll};
use std::time::Duration;

use breaker_core::{
    Always, BulkheadConfig, Classifier, Config, ErrorKind, ManualClock, Registry, State,
};
use breaker_tower::{BulkheadLayer, CircuitBreakerLayer, HttpStatus};
use tower_layer::Layer;
use tower_service::Service;

use crate::counting_alloc::{self, allocations_during, block_on};

fn request<R, S: Service<R>>(service: &mut S, request: R) -> Result<S::Response, S::Error> {
    block_on(poll_fn(|cx| service.poll_ready(cx)))?;
    block_on(service.call(request))
}

/// A trivial service: odd requests fail.
#[derive(Clone, Copy)]
struct Parity;

impl Service<u32> for Parity {
    type Response = u32;
    type Error = u32;
    type Future = Ready<Result<u32, u32>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), u32>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        ready(if request.is_multiple_of(2) {
            Ok(request)
        } else {
            Err(request)
        })
    }
}

/// A trivial HTTP service answering 200 with an empty body (`http::Response::new` allocates
/// nothing for a `()` body and empty headers).
#[derive(Clone, Copy)]
struct Okay;

impl Service<()> for Okay {
    type Response = http::Response<()>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<()>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        ready(Ok(http::Response::new(())))
    }
}

#[test]
fn requests_through_the_layer_allocate_nothing() {
    let clock = ManualClock::new();
    let registry = counting_alloc::ten_call_registry(clock.clone());
    let layer = CircuitBreakerLayer::from_registry(&registry, "tower-no-alloc");
    let breaker = layer.breaker().clone();
    let mut parity = layer.layer(Parity);
    let mut http = layer.clone().classify(HttpStatus).layer(Okay);
    let mut ignoring = layer
        .classify(Classifier::new().ignore(Always))
        .layer(Parity);
    // Warm up: the first calls may initialise lazy statics.
    for i in 0..100 {
        let _ = request(&mut parity, i);
        let _ = request(&mut http, ());
    }

    let closed = allocations_during(|| {
        for i in 0..10_000 {
            let _ = request(&mut parity, i);
            assert!(request(&mut http, ()).is_ok());
        }
    });
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(closed, 0, "allocations in CLOSED");

    breaker.transition_to(State::Open).unwrap();
    let open = allocations_during(|| {
        for i in 0..10_000 {
            assert!(request(&mut parity, i).unwrap_err().is_rejected());
        }
    });
    assert_eq!(open, 0, "allocations in OPEN");

    breaker.transition_to(State::HalfOpen).unwrap();
    // Ignored errors give their trial back, and a dropped future its permit: HALF_OPEN lasts
    // the whole loop.
    let half_open = allocations_during(|| {
        for _ in 0..10_000 {
            drop(ignoring.call(2));
            let error = request(&mut ignoring, 1).unwrap_err();
            assert_eq!(error.into_inner(), Some(1), "the call ran");
        }
    });
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(half_open, 0, "allocations in HALF_OPEN");
}

/// Always answers `0` (a fallback).
#[derive(Clone, Copy)]
struct Zero;

impl Service<u32> for Zero {
    type Response = u32;
    type Error = u32;
    type Future = Ready<Result<u32, u32>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), u32>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: u32) -> Self::Future {
        ready(Ok(0))
    }
}

#[test]
fn per_key_requests_and_fallbacks_allocate_nothing() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock)
        .default_config(
            Config::builder()
                .sliding_window_size(10)
                .minimum_number_of_calls(10)
                .failure_rate_threshold(100.0)
                .build()
                .unwrap(),
        )
        .build();
    // Eight keys, each a breaker: the key is formatted on the stack and looked up.
    let mut keyed = CircuitBreakerLayer::per_key(&registry, "tenant", |r: &u32| r % 8)
        .fallback(Zero)
        .layer(Parity);
    for i in 0..100 {
        let _ = request(&mut keyed, i * 2);
    }
    let closed = allocations_during(|| {
        for i in 0..10_000 {
            assert_eq!(request(&mut keyed, i * 2), Ok(i * 2));
        }
    });
    assert_eq!(closed, 0, "allocations with a breaker per key");

    let breaker = registry.keyed("tenant").find(&4).unwrap();
    breaker.transition_to(State::Open).unwrap();
    let fallback = allocations_during(|| {
        for _ in 0..10_000 {
            assert_eq!(request(&mut keyed, 4), Ok(0));
        }
    });
    assert_eq!(fallback, 0, "allocations answering through the fallback");
}

/// With `timeout-duration` set, the layer boxes the request's timer: one allocation per
/// request, and nothing else.
#[test]
fn requests_under_a_timeout_allocate_their_timer_only() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .timeout_duration(Some(Duration::from_secs(60)))
                .build()
                .unwrap(),
        )
        .build();
    let layer = CircuitBreakerLayer::from_registry(&registry, "timed");
    let mut service = layer.layer(Parity);
    // Everything runs on this thread: the current-thread runtime polls the block on it.
    runtime.block_on(async {
        for i in 0..100 {
            let _ = service.call(i * 2).await;
        }
        let timed = allocations_during_async(async {
            for i in 0..10_000 {
                assert_eq!(service.call(i * 2).await, Ok(i * 2));
            }
        })
        .await;
        assert_eq!(timed, 10_000, "allocations with timeout-duration set");
    });
    assert_eq!(layer.breaker().metrics().buffered_calls, 100);
}

async fn allocations_during_async(f: impl std::future::Future<Output = ()>) -> usize {
    let before = counting_alloc::allocations();
    f.await;
    counting_alloc::allocations() - before
}

/// A request that gets a place, and one the bulkhead refuses without waiting, allocate
/// nothing: alone, and with the breaker's layer outside (which ignores the refusals, so that
/// it stays CLOSED through the loop; the refusals still go through its classification).
#[test]
fn requests_through_the_bulkheads_layer_allocate_nothing() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(
            Config::builder()
                .ignore_exceptions([ErrorKind::bulkhead_full()])
                .build()
                .unwrap(),
        )
        .bulkhead_default_config(
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .build()
                .unwrap(),
        )
        .build();
    let bulkhead = BulkheadLayer::from_registry(&registry, "tower-no-alloc");
    let mut alone = bulkhead.layer(Parity);
    let breaker = CircuitBreakerLayer::from_registry(&registry, "tower-no-alloc").flatten_errors();
    let mut stacked = breaker.layer(bulkhead.layer(Parity));
    for i in 0..100 {
        let _ = request(&mut alone, i * 2);
        let _ = request(&mut stacked, i * 2);
    }

    let with_a_place = allocations_during(|| {
        for i in 0..10_000 {
            assert_eq!(request(&mut alone, i * 2), Ok(i * 2));
            assert_eq!(request(&mut stacked, i * 2), Ok(i * 2));
        }
    });
    assert_eq!(with_a_place, 0, "allocations of requests with a place");

    // The one place held by a response future not polled yet.
    let held = alone.call(0);
    let refused = allocations_during(|| {
        for i in 0..10_000 {
            assert!(request(&mut alone, i).unwrap_err().is_bulkhead_full());
            assert!(request(&mut stacked, i).unwrap_err().is_bulkhead_full());
        }
    });
    assert_eq!(refused, 0, "allocations of refused requests");
    assert_eq!(breaker.breaker().state(), State::Closed);
    drop(held);
    assert_eq!(
        bulkhead.bulkhead().metrics().available_concurrent_calls(),
        1
    );
}
