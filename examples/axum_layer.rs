//! An axum service behind the tower layer: a breaker per tenant (the `x-tenant` header) in
//! front of `/stock/{sku}`. One tenant's failing backend opens that tenant's breaker only; its
//! requests are then answered 503 with `Retry-After` at once, without reaching the handler,
//! while the other tenant is served as before.
//!
//! Run it with `cargo run --example axum_layer --features tower`: it serves on 127.0.0.1,
//! sends itself a few requests with reqwest, and prints what came back.

use std::convert::Infallible;
use std::error::Error;
use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use breaker::tower::{CallError, CircuitBreakerLayer, ErrorResponse, HeaderKey, HttpStatus};
use breaker::{Config, Registry};
use serde::Serialize;
use tower::ServiceBuilder;

#[derive(Serialize)]
struct Stock {
    sku: String,
    available: u32,
}

/// The protected handler. Tenant `acme`'s warehouse backend is down: its requests fail with a
/// 500, which the breaker counts (a 4xx would be ignored).
async fn stock(Path(sku): Path<String>, headers: HeaderMap) -> Result<Json<Stock>, StatusCode> {
    if headers
        .get("x-tenant")
        .is_some_and(|tenant| tenant == "acme")
    {
        return Err(StatusCode::INTERNAL_SERVER_ERROR);
    }
    Ok(Json(Stock { sku, available: 12 }))
}

/// What the breaker's errors become: 503 with `Retry-After` for a rejection, 504 for a
/// request that ran past `timeout-duration`.
async fn breaker_error(error: CallError<Infallible>) -> Response {
    error
        .http_response()
        .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let registry = Registry::builder()
        .instance(
            "stock",
            Config::builder()
                .sliding_window_size(10)
                .minimum_number_of_calls(4)
                .failure_rate_threshold(50.0)
                .wait_duration_in_open_state(Duration::from_secs(20))
                .timeout_duration(Some(Duration::from_secs(2)))
                .build()?,
        )
        .build();

    let per_tenant =
        CircuitBreakerLayer::per_key(&registry, "stock", HeaderKey::from_static("x-tenant"))
            .classify(HttpStatus);
    let app = Router::new().route("/stock/{sku}", get(stock)).layer(
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(breaker_error))
            .layer(per_tenant),
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/stock/sku-42", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::builder().no_proxy().build()?;
    for tenant in ["acme", "acme", "acme", "acme", "acme", "globex"] {
        let response = client.get(&url).header("x-tenant", tenant).send().await?;
        let status = response.status();
        let retry_after = response.headers().get("retry-after").cloned();
        let body = response.text().await?;
        match retry_after {
            Some(seconds) => println!("{tenant}: {status}, Retry-After {seconds:?}: {body}"),
            None => println!("{tenant}: {status} {body}"),
        }
    }
    for breaker in registry.keyed("stock").breakers() {
        println!("{}: {}", breaker.name(), breaker.state());
    }
    Ok(())
}
