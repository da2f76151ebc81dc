//! Resilience4j's actuator read endpoints: the breakers, their recent events, and health.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use breaker_core::Timestamp;
use serde_json::json;

use crate::event::EventType;
use crate::hub::Tracked;
use crate::json::{self, CircuitBreakersResponse, EventDto, EventsResponse, Status};
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;

/// At most this many events in `GET /actuator/circuitbreakerevents`,
/// `GET /actuator/bulkheadevents` and `GET /actuator/retryevents` (every breaker, bulkhead,
/// retry).
const MAX_ALL_EVENTS: usize = 10_000;

/// `GET /actuator/circuitbreakers`: every breaker's details, in name order.
pub(super) async fn all_breakers(State(app): State<Arc<AppState>>) -> Response {
    let all = app.hub.all();
    Json(CircuitBreakersResponse::of(all.iter().map(|t| &**t))).into_response()
}

/// `GET /actuator/circuitbreakers/{name}`, breaker's own (Resilience4j has only the POST
/// there): one breaker's details in the same envelope, or a 404 that names it (a read creates
/// no breaker).
pub(super) async fn one_breaker(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let tracked = app.find_at(name)?;
    Ok(Json(CircuitBreakersResponse::of([&*tracked])).into_response())
}

/// One breaker's recent events of type `only` (every type for `None`), oldest first; none for
/// a breaker the admin does not follow.
fn events_of(tracked: Option<&Tracked>, only: Option<EventType>) -> Response {
    let records = tracked.map_or_else(Vec::new, |t| t.feed.recent());
    let name = tracked.map_or("", |t| t.name());
    let circuit_breaker_events = records
        .iter()
        .filter(|r| only.is_none_or(|t| r.kind == t))
        .map(|r| EventDto::new(name, r, None))
        .collect();
    Json(EventsResponse {
        circuit_breaker_events,
    })
    .into_response()
}

/// `GET /actuator/circuitbreakerevents`: every breaker's recent events, by creation time.
pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Response {
    let all = app.hub.all();
    let per_breaker: Vec<_> = all.iter().map(|t| (t.name(), t.feed.recent())).collect();
    let mut list: Vec<_> = per_breaker
        .iter()
        .flat_map(|(name, records)| records.iter().map(move |r| (r.at, *name, r)))
        .collect();
    let circuit_breaker_events: Vec<EventDto<'_>> = newest_by_time(&mut list)
        .iter()
        .map(|(_, name, r)| EventDto::new(name, r, None))
        .collect();
    Json(EventsResponse {
        circuit_breaker_events,
    })
    .into_response()
}

/// The newest [`MAX_ALL_EVENTS`] of `list` (events of every breaker, or every bulkhead, each
/// with its creation time first), by creation time, as Resilience4j sorts them; a stable sort
/// keeps each one's own order for events at the same instant.
pub(super) fn newest_by_time<T, U>(list: &mut [(Timestamp, T, U)]) -> &[(Timestamp, T, U)] {
    list.sort_by_key(|(at, _, _)| *at);
    let skip = list.len().saturating_sub(MAX_ALL_EVENTS);
    &list[skip..]
}

/// `GET /actuator/circuitbreakerevents/{name}`: one breaker's recent events, oldest first. An
/// unknown name is an empty list, as Resilience4j answers it: a breaker made on its first call
/// has no events before then, and a dashboard asking early gets no error.
pub(super) async fn breaker_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    Ok(events_of(app.hub.find(&name).as_deref(), None))
}

/// `GET /actuator/circuitbreakerevents/{name}/{eventType}`: those of one type. The type is
/// checked first: a type no breaker has is a 400 whatever the name.
pub(super) async fn breaker_events_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let only = event_type(&given)?;
    Ok(events_of(app.hub.find(&name).as_deref(), Some(only)))
}

/// The dashboard's `GET /dashboard/api/breakers/{name}/events`: the same list, but an unknown
/// name is a 404, as the dashboard's other per-breaker route answers it.
pub(super) async fn followed_breaker_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let tracked = app.find_at(name)?;
    Ok(events_of(Some(&tracked), None))
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
