//! A reqwest client whose every host gets a breaker of its own (`upstreams[host:port]`), against
//! two upstreams on 127.0.0.1: `pricing` answers 503, `catalog` answers 200. The first
//! requests to `pricing` reach it and fail, which opens its breaker; the rest are not sent at
//! all, while `catalog` goes on being called.
//!
//! Run it with `cargo run --example reqwest_client --features reqwest`.

use std::error::Error;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use breaker::reqwest::{rejected, timed_out, CircuitBreakerMiddleware};
use breaker::{Config, Registry};
use reqwest_middleware::ClientBuilder;

/// An upstream on 127.0.0.1 that always answers `status`; its base URL.
async fn upstream(status: StatusCode) -> Result<String, Box<dyn Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    let app = Router::new().route("/", get(move || async move { status }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let pricing = upstream(StatusCode::SERVICE_UNAVAILABLE).await?;
    let catalog = upstream(StatusCode::OK).await?;

    let registry = Registry::builder()
        .instance(
            "upstreams",
            Config::builder()
                .sliding_window_size(10)
                .minimum_number_of_calls(4)
                .failure_rate_threshold(50.0)
                .wait_duration_in_open_state(Duration::from_secs(30))
                .timeout_duration(Some(Duration::from_secs(2)))
                .build()?,
        )
        .build();
    let client = ClientBuilder::new(reqwest::Client::builder().no_proxy().build()?)
        .with(CircuitBreakerMiddleware::per_host(&registry, "upstreams"))
        .build();

    for url in [&pricing; 6].into_iter().chain([&catalog]) {
        match client.get(url).send().await {
            // A response is returned as it came: a 5xx counts as a failure, a 4xx not at all.
            Ok(response) => println!("{url}: answered {}", response.status()),
            Err(error) => {
                if let Some(rejection) = rejected(&error) {
                    println!("{url}: not sent: {rejection}");
                } else if let Some(timeout) = timed_out(&error) {
                    println!("{url}: cancelled: {timeout}");
                } else {
                    println!("{url}: failed: {error}");
                }
            }
        }
    }
    for breaker in registry.keyed("upstreams").breakers() {
        println!("{}: {}", breaker.name(), breaker.state());
    }
    Ok(())
}
