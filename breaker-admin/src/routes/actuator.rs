//! Resilience4j's actuator read endpoints: the breakers, their recent events, and health.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use breaker_core::Timestamp;
use serde_json::{json, Value};

use crate::event::EventType;
use crate::hub::Tracked;
use crate::json::{self, EventDto, Status};
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;

/// At most this many events in `GET /actuator/circuitbreakerevents`,
/// `GET /actuator/bulkheadevents` and `GET /actuator/retryevents` (every breaker, bulkhead,
/// retry).
const MAX_ALL_EVENTS: usize = 10_000;

pub(super) async fn all_breakers(State(app): State<Arc<AppState>>) -> Json<Value> {
    let all = app.hub.all();
    Json(json::circuit_breakers(all.iter().map(|t| &**t)))
}

pub(super) async fn one_breaker(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let tracked = app.find_at(name)?;
    Ok(Json(json::circuit_breakers([&*tracked])))
}

fn events_of(tracked: &Tracked, only: Option<EventType>) -> Value {
    let records = tracked.feed.recent_with_errors();
    let list: Vec<EventDto<'_>> = records
        .iter()
        .filter(|(r, _)| only.is_none_or(|t| r.kind == t))
        .map(|(r, error)| EventDto::new(tracked.name(), r, error.as_deref()))
        .collect();
    json::events(&list)
}

pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Json<Value> {
    let all = app.hub.all();
    let per_breaker: Vec<_> = all
        .iter()
        .map(|t| (t.name(), t.feed.recent_with_errors()))
        .collect();
    let mut list: Vec<_> = per_breaker
        .iter()
        .flat_map(|(name, records)| records.iter().map(move |(r, e)| (r.at, *name, (r, e))))
        .collect();
    let dtos: Vec<EventDto<'_>> = newest_by_time(&mut list)
        .iter()
        .map(|(_, name, (r, error))| EventDto::new(name, r, error.as_deref()))
        .collect();
    Json(json::events(&dtos))
}

/// The newest [`MAX_ALL_EVENTS`] of `list` (events of every breaker, or every bulkhead, each
/// with its creation time first), by creation time, as Resilience4j sorts them; a stable sort
/// keeps each one's own order for events at the same instant.
pub(super) fn newest_by_time<T, U>(list: &mut [(Timestamp, T, U)]) -> &[(Timestamp, T, U)] {
    list.sort_by_key(|(at, _, _)| *at);
    let skip = list.len().saturating_sub(MAX_ALL_EVENTS);
    &list[skip..]
}

/// One breaker's recent events (also the dashboard's `/dashboard/api/breakers/{name}/events`).
pub(super) async fn breaker_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let tracked = app.find_at(name)?;
    Ok(Json(events_of(&tracked, None)))
}

pub(super) async fn breaker_events_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
    let only = event_type(&given)?;
    Ok(Json(events_of(&tracked, Some(only))))
}

/// Spring's default mapping: DOWN and OUT_OF_SERVICE are 503, every other status 200.
fn http_status(status: Status) -> StatusCode {
    match status {
        Status::Down | Status::OutOfService => StatusCode::SERVICE_UNAVAILABLE,
        Status::Up | Status::Unknown | Status::CircuitOpen | Status::CircuitHalfOpen => {
            StatusCode::OK
        }
    }
}

pub(super) async fn health(State(app): State<Arc<AppState>>) -> Response {
    let all = app.hub.all();
    let details = app.options.health_details;
    let (component_status, component) = json::health_component(all.iter().map(|t| &**t), details);
    // The service's status aggregates its components; `circuitBreakers` is the only one here.
    let status = Status::aggregate([component_status]);
    let body = if details {
        json!({ "status": status.as_str(), "components": { "circuitBreakers": component } })
    } else {
        json!({ "status": status.as_str() })
    };
    (http_status(status), Json(body)).into_response()
}

pub(super) async fn health_component(State(app): State<Arc<AppState>>) -> Response {
    let all = app.hub.all();
    let (status, component) =
        json::health_component(all.iter().map(|t| &**t), app.options.health_details);
    (http_status(status), Json(component)).into_response()
}
