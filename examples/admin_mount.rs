//! A service with its breakers' operations surface mounted beside its own routes: the
//! actuator endpoints, health with Kubernetes' probes, Prometheus metrics, the live event
//! stream and the dashboard, on 127.0.0.1:8080. Forcing a breaker's state needs the token the
//! service is started with.
//!
//! Run it with `ADMIN_TOKEN=s3cret cargo run --example admin_mount --features admin`, then
//! open http://127.0.0.1:8080/dashboard, or:
//!
//! ```sh
//! curl -s http://127.0.0.1:8080/actuator/circuitbreakers/inventory
//! curl -s -X POST -H 'Authorization: Bearer s3cret' -H 'Content-Type: application/json' \
//!      -d '{"updateState":"FORCE_OPEN"}' http://127.0.0.1:8080/actuator/circuitbreakers/inventory
//! curl -s -i http://127.0.0.1:8080/actuator/health/readiness
//! curl -s http://127.0.0.1:8080/actuator
//! ```

use std::error::Error;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{request::Parts, StatusCode};
use axum::routing::get;
use axum::Router;
use breaker::admin::{Admin, Authorization};
use breaker::{CircuitBreaker, Config, MetricsExport, Registry};
use metrics_exporter_prometheus::PrometheusBuilder;

/// The service's own route, behind the `inventory` breaker.
async fn stock(
    State(inventory): State<CircuitBreaker>,
    Path(sku): Path<String>,
) -> (StatusCode, String) {
    let lookup = inventory.call(async { Ok::<_, std::io::Error>(format!("{sku}: 12 in stock")) });
    match lookup.await {
        Ok(answer) => (StatusCode::OK, answer),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let token = std::env::var("ADMIN_TOKEN").map_err(|_| "set ADMIN_TOKEN to the write token")?;
    let expected = format!("Bearer {token}");
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .wait_duration_in_open_state(Duration::from_secs(30))
                // Spring's keys: the health endpoint reports this breaker, and its OPEN makes
                // the service DOWN (with the breakers in the readiness group, below, the
                // readiness probe then takes it out of rotation).
                .register_health_indicator(true)
                .allow_health_indicator_to_fail(true)
                .build()?,
        )
        .build();
    let inventory = registry.breaker("inventory");

    let prometheus = PrometheusBuilder::new().install_recorder()?;
    MetricsExport::install(&registry);

    let admin = Admin::new(&registry)
        .prometheus(move || prometheus.render())
        // Spring's `group.readiness.include=readinessState,circuitBreakers`.
        .readiness_includes_circuit_breakers(true)
        // Off unless a hook is given; the hook sees the request's head and decides.
        .write_operations(
            move |request: &Parts| match request.headers.get("authorization") {
                Some(value) if value.as_bytes() == expected.as_bytes() => Authorization::Allow,
                Some(_) => Authorization::Forbidden,
                None => Authorization::Unauthorized,
            },
        );
    let app = Router::new()
        .route("/stock/{sku}", get(stock))
        .with_state(inventory)
        .merge(admin.router());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    println!("dashboard: http://{}/dashboard", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
