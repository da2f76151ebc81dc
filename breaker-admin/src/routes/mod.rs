//! The HTTP side: which routes a configuration mounts, and the handlers behind them, one file
//! per job.
//!
//! `state.rs` is what every handler shares ([`AppState`]) and `error.rs` the JSON error body;
//! the handlers sit above them: `actuator.rs` (Resilience4j's read endpoints),
//! `bulkheads.rs` and `retries.rs` (its bulkhead and retry endpoints), `health.rs` (Spring's
//! health endpoint and probes), `index.rs` (the `/actuator` links index), `write.rs` (the
//! write operation and its checks), `dashboard.rs` (the page and its data, with `query.rs`
//! parsing its query) and `sse.rs` (the live event stream); `host.rs` is the `Host` check in
//! front of them all. Only this file names them all.

mod actuator;
mod bulkheads;
mod dashboard;
mod error;
mod health;
mod host;
mod index;
mod query;
mod retries;
mod sse;
mod state;
mod write;

use std::sync::Arc;

use axum::http::header;
use axum::routing::{get, MethodRouter};
use axum::Router;

#[cfg(feature = "bench-internals")]
pub(crate) use self::actuator::{all_events_json, MAX_ALL_EVENTS};
pub(crate) use self::state::AppState;

/// The routes `state.options` asks for, over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let o = &state.options;
    let mut router = Router::new();
    if o.index {
        router = router
            .route("/actuator", get(index::links))
            .route("/actuator/", get(index::links));
    }
    if o.circuit_breakers || o.write.is_some() {
        let mut one: MethodRouter<Arc<AppState>> = MethodRouter::new();
        if o.circuit_breakers {
            router = router.route("/actuator/circuitbreakers", get(actuator::all_breakers));
            one = one.get(actuator::one_breaker);
        }
        if o.write.is_some() {
            one = one.post(write::update_state);
        }
        router = router.route("/actuator/circuitbreakers/{name}", one);
    }
    if o.events {
        router = events(
            router,
            "/actuator/circuitbreakerevents",
            [
                get(actuator::all_events),
                get(actuator::breaker_events),
                get(actuator::breaker_events_of_type),
            ],
        );
    }
    if o.bulkheads {
        router = router.route("/actuator/bulkheads", get(bulkheads::all_bulkheads));
    }
    if o.bulkhead_events {
        router = events(
            router,
            "/actuator/bulkheadevents",
            [
                get(bulkheads::all_events),
                get(bulkheads::bulkhead_events),
                get(bulkheads::bulkhead_events_of_type),
            ],
        );
    }
    if o.retries {
        router = router.route("/actuator/retries", get(retries::all_retries));
    }
    if o.retry_events {
        router = events(
            router,
            "/actuator/retryevents",
            [
                get(retries::all_events),
                get(retries::retry_events),
                get(retries::retry_events_of_type),
            ],
        );
    }
    if o.stream {
        router = events(
            router,
            "/actuator/streamcircuitbreakerevents",
            [get(sse::all), get(sse::one), get(sse::one_of_type)],
        );
    }
    if o.health {
        router = router
            .route("/actuator/health", get(health::root))
            .route("/actuator/health/{*path}", get(health::below));
    }
    if let Some(render) = o.prometheus.clone() {
        router = router.route(
            "/actuator/prometheus",
            get(move || {
                let render = Arc::clone(&render);
                async move {
                    let content = "text/plain; version=0.0.4; charset=utf-8";
                    ([(header::CONTENT_TYPE, content)], render())
                }
            }),
        );
    }
    if o.dashboard {
        router = router
            .route("/dashboard", get(dashboard::page))
            .route("/dashboard/dashboard.js", get(dashboard::script))
            .route("/dashboard/dashboard.css", get(dashboard::style))
            .route("/dashboard/api/breakers", get(dashboard::breakers))
            .route(
                "/dashboard/api/breakers/{name}/events",
                get(actuator::followed_breaker_events),
            )
            .route(
                "/dashboard/api/breakers/{name}/states",
                get(dashboard::breaker_states),
            );
    }
    if let Some(hosts) = o.allowed_hosts.clone() {
        // Last, so it runs first: before any route, an unknown path's 404 too.
        router = router.layer(axum::middleware::from_fn_with_state(hosts, host::check));
    }
    router.with_state(state)
}

/// Resilience4j's three event routes under `path`: every instance's events, one instance's
/// (`{name}`), and one instance's of one type (`{name}/{eventType}`), served by `handlers` in
/// that order.
fn events(
    router: Router<Arc<AppState>>,
    path: &str,
    [all, one, of_type]: [MethodRouter<Arc<AppState>>; 3],
) -> Router<Arc<AppState>> {
    router
        .route(path, all)
        .route(&format!("{path}/{{name}}"), one)
        .route(&format!("{path}/{{name}}/{{eventType}}"), of_type)
}
