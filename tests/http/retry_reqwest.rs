//! The retry in the reqwest middleware, through a real reqwest client against an axum server on
//! loopback that counts the attempts it receives: a 503 is retried and the success returned, a
//! POST is sent once by default and retried with its body when configured, a connect error is
//! retried, the budget refuses a retry, and with the breaker's middleware attached after it an
//! OPEN breaker makes one attempt that never reaches the server.
#![cfg(feature = "reqwest")]

use std::sync::{Arc, Mutex};

use breaker::reqwest::{rejected, CircuitBreakerMiddleware, RetryMiddleware};
use breaker::retry::RetryEventKind;
use breaker::State;
use reqwest::Method;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

use crate::retry_upstream::{config, registry, Upstream};

fn client(retry: RetryMiddleware) -> ClientWithMiddleware {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    ClientBuilder::new(client).with(retry).build()
}

#[tokio::test]
async fn a_503_is_retried_and_the_success_returned() {
    let (upstream, authority) = Upstream::start(&[503, 503]).await;
    let registry = registry("upstream", config());
    let client = client(RetryMiddleware::from_registry(&registry, "upstream"));

    let response = client
        .get(format!("http://{authority}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(upstream.hits(), 3);
    let metrics = registry.retry("upstream").metrics();
    assert_eq!(metrics.successful_calls_with_retry_attempt(), 1);

    // Attempts used up on 503s: the last 503 is the answer.
    upstream.script(&[503, 503, 503, 503]);
    let response = client
        .get(format!("http://{authority}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(upstream.hits(), 6);
}

#[tokio::test]
async fn a_post_is_sent_once_by_default_and_retried_with_its_body_when_configured() {
    let (upstream, authority) = Upstream::start(&[503, 503]).await;
    let registry = registry("upstream", config());
    let url = format!("http://{authority}/");

    let idempotent = client(RetryMiddleware::from_registry(&registry, "upstream"));
    let response = idempotent.post(&url).body("order=1").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(upstream.hits(), 1);
    // Not counted by the retry: it did not go through it.
    let metrics = registry.retry("upstream").metrics();
    assert_eq!(metrics.failed_calls_without_retry_attempt(), 0);

    let posts = RetryMiddleware::from_registry(&registry, "upstream").methods([Method::POST]);
    let response = client(posts)
        .post(&url)
        .body("order=2")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let received = upstream.received();
    assert_eq!(received.len(), 3);
    assert!(received[1..]
        .iter()
        .all(|(method, body)| method == "POST" && body == "order=2"));
}

#[tokio::test]
async fn a_connect_error_is_retried() {
    let registry = registry("upstream", config());
    let retries = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&retries);
    let _subscription = registry.retry("upstream").subscribe(move |event| {
        if matches!(event.kind(), RetryEventKind::Retry { .. }) {
            *seen.lock().unwrap() += 1;
        }
    });
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = client(RetryMiddleware::from_registry(&registry, "upstream"));

    let error = client
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_connect());
    assert_eq!(*retries.lock().unwrap(), 2);
    let metrics = registry.retry("upstream").metrics();
    assert_eq!(metrics.failed_calls_with_retry_attempt(), 1);
}

#[tokio::test]
async fn the_budget_refuses_a_retry_and_the_last_response_is_returned() {
    let (upstream, authority) = Upstream::start(&[503, 503, 503]).await;
    // No floor, and a ratio no single call reaches: the first retry is refused.
    let registry = registry(
        "upstream",
        config().budget_ratio(0.01).budget_min_retries_per_second(0),
    );
    let client = client(RetryMiddleware::from_registry(&registry, "upstream"));

    let response = client
        .get(format!("http://{authority}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(upstream.hits(), 1);
    let metrics = registry.retry("upstream").metrics();
    assert_eq!(metrics.retries_refused_by_budget(), 1);
}

#[tokio::test]
async fn with_the_breaker_inside_an_open_breaker_makes_one_attempt_that_is_not_sent() {
    let (upstream, authority) = Upstream::start(&[503, 503, 503]).await;
    let registry = registry("upstream", config());
    let client = ClientBuilder::new(reqwest::Client::builder().no_proxy().build().unwrap())
        .with(RetryMiddleware::from_registry(&registry, "upstream"))
        .with(CircuitBreakerMiddleware::per_host(&registry, "upstream"))
        .build();
    let url = format!("http://{authority}/");

    // CLOSED: three attempts, each recorded by the host's breaker.
    assert_eq!(client.get(&url).send().await.unwrap().status(), 503);
    assert_eq!(upstream.hits(), 3);
    let breaker = registry.keyed("upstream").get(&authority);
    assert_eq!(breaker.metrics().failed_calls, 3);

    // OPEN: one attempt, rejected, not retried and not sent.
    breaker.transition_to(State::ForcedOpen).unwrap();
    let error = client.get(&url).send().await.unwrap_err();
    assert!(rejected(&error).is_some());
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
    assert_eq!(upstream.hits(), 3);
}
