//! The retry's tower layer on the client side: hyper's own client behind it, against an axum
//! server on loopback that counts the attempts it receives. A 503 is retried and the success
//! returned, a body is sent again whole, a 404 is not retried, a POST is sent once when only
//! idempotent methods are replayed, the budget refuses a retry, and in Spring's order an OPEN
//! breaker makes one attempt that never reaches the server.
#![cfg(feature = "tower")]

use axum::body::Bytes;
use breaker::tower::{
    BulkheadLayer, CallError, CircuitBreakerLayer, HttpStatus, IdempotentMethod, RetryLayer,
};
use breaker::State;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, Service, ServiceBuilder};

use crate::retry_upstream::{config, registry, Upstream};

type HyperClient = Client<HttpConnector, Full<Bytes>>;
type Request = axum::http::Request<Full<Bytes>>;

fn client() -> HyperClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// `poll_ready`, then `call`, as a tower stack sends a request.
async fn send<S: Service<Request>>(
    service: &mut S,
    request: Request,
) -> Result<S::Response, S::Error> {
    std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
    service.call(request).await
}

fn request(method: &str, authority: &str, body: &'static str) -> Request {
    axum::http::Request::builder()
        .method(method)
        .uri(format!("http://{authority}/"))
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

#[tokio::test]
async fn a_503_is_retried_with_the_same_body_and_the_success_returned() {
    let (upstream, authority) = Upstream::start(&[503, 503]).await;
    let registry = registry("bureau", config());
    let mut service = RetryLayer::from_registry(&registry, "bureau")
        .classify(HttpStatus)
        .replay_if(IdempotentMethod)
        .layer(client());

    let response = send(&mut service, request("PUT", &authority, "score=7"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let received = upstream.received();
    assert_eq!(received.len(), 3);
    assert!(received
        .iter()
        .all(|(method, body)| method == "PUT" && body == "score=7"));
    let metrics = registry.retry("bureau").metrics();
    assert_eq!(metrics.successful_calls_with_retry_attempt(), 1);
}

#[tokio::test]
async fn a_404_is_not_retried_and_a_post_is_sent_once() {
    let (upstream, authority) = Upstream::start(&[404]).await;
    let registry = registry("bureau", config());
    let mut service = RetryLayer::from_registry(&registry, "bureau")
        .classify(HttpStatus)
        .replay_if(IdempotentMethod)
        .layer(client());

    let response = send(&mut service, request("GET", &authority, "")).await;
    assert_eq!(response.unwrap().status(), 404);
    assert_eq!(upstream.hits(), 1);

    upstream.script(&[503, 503]);
    let response = send(&mut service, request("POST", &authority, "order"));
    assert_eq!(response.await.unwrap().status(), 503);
    assert_eq!(upstream.hits(), 2);
}

#[tokio::test]
async fn the_budget_refuses_a_retry_and_the_last_response_is_returned() {
    let (upstream, authority) = Upstream::start(&[503, 503, 503]).await;
    // No floor, and a ratio no single call reaches: the first retry is refused.
    let registry = registry(
        "bureau",
        config().budget_ratio(0.01).budget_min_retries_per_second(0),
    );
    let mut service = RetryLayer::from_registry(&registry, "bureau")
        .classify(HttpStatus)
        .layer(client());

    let response = send(&mut service, request("GET", &authority, ""));
    assert_eq!(response.await.unwrap().status(), 503);
    assert_eq!(upstream.hits(), 1);
    assert_eq!(
        registry
            .retry("bureau")
            .metrics()
            .retries_refused_by_budget(),
        1
    );
}

#[tokio::test]
async fn in_springs_order_an_open_breaker_makes_one_attempt_that_never_reaches_the_server() {
    let (upstream, authority) = Upstream::start(&[503, 503, 503]).await;
    let registry = registry("bureau", config());
    let mut service = ServiceBuilder::new()
        .layer(
            RetryLayer::from_registry(&registry, "bureau")
                .classify(HttpStatus)
                .flatten_errors(),
        )
        .layer(
            CircuitBreakerLayer::from_registry(&registry, "bureau")
                .classify(HttpStatus)
                .flatten_errors(),
        )
        .layer(BulkheadLayer::from_registry(&registry, "bureau"))
        .service(client());

    // CLOSED: three attempts, each recorded by the breaker.
    let response = send(&mut service, request("GET", &authority, ""));
    assert_eq!(response.await.unwrap().status(), 503);
    assert_eq!(upstream.hits(), 3);
    let breaker = registry.breaker("bureau");
    assert_eq!(breaker.metrics().failed_calls, 3);

    // OPEN: one attempt, rejected, not retried.
    breaker.transition_to(State::ForcedOpen).unwrap();
    let response = send(&mut service, request("GET", &authority, ""));
    let error: CallError<hyper_util::client::legacy::Error> = response.await.unwrap_err();
    assert!(error.is_rejected());
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
    assert_eq!(upstream.hits(), 3);
}
