//! The bulkhead's tower layer in front of an axum handler that holds each request until the test
//! releases it, served over loopback and driven by a real HTTP client: of ten concurrent
//! requests, exactly the bulkhead's three places reach the handler, the seven others are
//! answered 503 while those three are still held, and once they are released every place is
//! free again.
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use breaker::tower::{BulkheadLayer, CallError, ErrorResponse};
use breaker::{BulkheadConfig, ManualClock, Registry};
use tokio::sync::{mpsc, Semaphore};
use tower_layer::Stack;

const PLACES: u32 = 3;
const REQUESTS: usize = 10;

/// A refusal becomes a 503 saying which bulkhead is full; the handler's own errors cannot
/// happen (`Infallible`).
async fn refused(error: CallError<Infallible>) -> Response {
    error
        .http_response()
        .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Serves a handler behind `layer` that reports each request on `entered`, then holds it
/// until `release` has a permit for it.
async fn serve(
    layer: BulkheadLayer,
    entered: mpsc::UnboundedSender<()>,
    release: Arc<Semaphore>,
) -> String {
    let handler = move || {
        let entered = entered.clone();
        let release = Arc::clone(&release);
        async move {
            entered.send(()).unwrap();
            release.acquire().await.unwrap().forget();
            StatusCode::OK
        }
    };
    let app = Router::new().route("/", get(handler)).layer(Stack::new(
        layer,
        axum::error_handling::HandleErrorLayer::new(refused),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_concurrent_requests_exactly_the_limit_reach_the_handler_and_the_rest_get_503() {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(PLACES)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .bulkhead_instance("handler", config)
        .build();
    let layer = BulkheadLayer::from_registry(&registry, "handler");
    let bulkhead = layer.bulkhead().clone();
    let (entered_tx, mut entered) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let url = serve(layer, entered_tx, Arc::clone(&release)).await;

    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let (answered_tx, mut answered) = mpsc::unbounded_channel();
    for _ in 0..REQUESTS {
        let request = client.get(&url).send();
        let answered = answered_tx.clone();
        tokio::spawn(async move {
            let response = request.await.unwrap();
            let status = response.status().as_u16();
            answered
                .send((status, response.text().await.unwrap()))
                .unwrap();
        });
    }

    // The three places reach the handler and are held there; every other request is answered
    // meanwhile, by the bulkhead: 503.
    for _ in 0..PLACES {
        entered.recv().await.unwrap();
    }
    for _ in PLACES as usize..REQUESTS {
        let (status, body) = tokio::select! {
            answer = answered.recv() => answer.unwrap(),
            _ = entered.recv() => panic!("a fourth request reached the handler"),
        };
        assert_eq!(status, 503);
        assert_eq!(
            body,
            "Bulkhead 'handler' is full and does not permit further calls"
        );
    }
    assert!(
        entered.try_recv().is_err(),
        "no fourth request reached the handler"
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);

    // Released, the three are answered, and every place is free again.
    release.add_permits(PLACES as usize);
    for _ in 0..PLACES {
        let (status, _) = answered.recv().await.unwrap();
        assert_eq!(status, 200);
    }
    assert!(entered.try_recv().is_err());
    let metrics = bulkhead.metrics();
    assert_eq!(metrics.available_concurrent_calls(), PLACES);
    assert_eq!(metrics.waiting_calls(), 0);
}
