//! The tower layer in front of a flaky axum handler, served over loopback and driven by a real
//! HTTP client: 5xx responses open the breaker, OPEN answers 503 without reaching the handler
//! (the server counts), 4xx responses are ignored, HALF_OPEN trials close it again.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use breaker::tower::{CallError, CircuitBreakerLayer, ErrorResponse, HttpStatus};
use breaker::{Config, ManualClock, Registry, State};
use tower_layer::Stack;

/// What the handler answers, and how often it ran.
#[derive(Clone, Default)]
struct Downstream {
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
}

impl Downstream {
    fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A rejection becomes a 503 with `Retry-After`; the handler's own errors cannot happen
/// (`Infallible`).
async fn rejected(error: CallError<Infallible>) -> Response {
    error
        .http_response()
        .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn serve(downstream: Downstream, layer: CircuitBreakerLayer<HttpStatus>) -> String {
    let handler = move || {
        let downstream = downstream.clone();
        async move {
            downstream.hits.fetch_add(1, Ordering::SeqCst);
            StatusCode::from_u16(downstream.status.load(Ordering::SeqCst)).unwrap()
        }
    };
    let app = Router::new().route("/", get(handler)).layer(Stack::new(
        layer,
        axum::error_handling::HandleErrorLayer::new(rejected),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_axum_app_behind_the_layer_opens_fails_fast_and_recovers() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance(
            "flaky-handler",
            Config::builder()
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
                .failure_rate_threshold(50.0)
                .wait_duration_in_open_state(Duration::from_secs(30))
                .permitted_number_of_calls_in_half_open_state(2)
                .build()
                .unwrap(),
        )
        .build();
    let layer = CircuitBreakerLayer::from_registry(&registry, "flaky-handler").classify(HttpStatus);
    let breaker = layer.breaker().clone();
    let downstream = Downstream::default();
    let url = serve(downstream.clone(), layer).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let get = |client: &reqwest::Client| {
        let request = client.get(&url).send();
        async move { request.await.unwrap().status().as_u16() }
    };

    downstream.answer(404);
    for _ in 0..5 {
        assert_eq!(get(&client).await, 404);
    }
    assert_eq!(breaker.metrics().buffered_calls, 0, "4xx is ignored");

    downstream.answer(200);
    assert_eq!(get(&client).await, 200);
    assert_eq!(get(&client).await, 200);
    downstream.answer(500);
    assert_eq!(get(&client).await, 500);
    assert_eq!(get(&client).await, 500);
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(downstream.hits(), 9);

    // OPEN: 503 from the layer, the handler never runs.
    downstream.answer(200);
    for _ in 0..5 {
        assert_eq!(get(&client).await, 503);
    }
    let response = client.get(&url).send().await.unwrap();
    // The breaker has waited none of its 30 s on the manual clock.
    assert_eq!(response.headers()["retry-after"], "30");
    let body = response.text().await.unwrap();
    assert_eq!(
        body,
        "CircuitBreaker 'flaky-handler' is OPEN and does not permit further calls"
    );
    assert_eq!(
        downstream.hits(),
        9,
        "rejected requests never reach the handler"
    );

    // After the wait, two HALF_OPEN trials reach the handler and close the breaker.
    clock.advance(Duration::from_millis(30_001));
    assert_eq!(get(&client).await, 200);
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(get(&client).await, 200);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(downstream.hits(), 11);
}
