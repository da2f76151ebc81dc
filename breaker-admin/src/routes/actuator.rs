//! Resilience4j's actuator read endpoints: the breakers and their recent events.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::event::EventType;
use crate::hub::{Hub, Tracked};
use crate::json::{CircuitBreakersResponse, EventDto, EventsResponse};
use crate::newest::newest;
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;

/// At most this many events in `GET /actuator/circuitbreakerevents`,
/// `GET /actuator/bulkheadevents` and `GET /actuator/retryevents` (every breaker, bulkhead,
/// retry): the newest, chosen without gathering the rest (`newest.rs`).
pub(crate) const MAX_ALL_EVENTS: usize = 10_000;

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

/// One breaker's recent events of type `only` (every type for `None`), oldest first, each with
/// its error's text where the feed keeps it; none for a breaker the admin does not follow.
fn events_of(tracked: Option<&Tracked>, only: Option<EventType>) -> Response {
    let records = tracked.map_or_else(Vec::new, |t| t.feed.recent_with_errors());
    let name = tracked.map_or("", |t| t.name());
    let circuit_breaker_events = records
        .iter()
        .filter(|(r, _)| only.is_none_or(|t| r.kind == t))
        .map(|(r, error)| EventDto::new(name, r, error.as_deref()))
        .collect();
    Json(EventsResponse {
        circuit_breaker_events,
    })
    .into_response()
}

/// `GET /actuator/circuitbreakerevents`: every breaker's newest events, by creation time.
pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        all_events_json(&app.hub),
    )
        .into_response()
}

/// The body of `GET /actuator/circuitbreakerevents`: every breaker's newest events, at most
/// [`MAX_ALL_EVENTS`], by time.
pub(crate) fn all_events_json(hub: &Hub) -> Vec<u8> {
    let all = hub.all();
    let newest = newest(
        all.iter().map(|t| t.feed.newest_first()),
        MAX_ALL_EVENTS,
        |(r, _)| r.at,
    );
    let errors: Vec<Option<String>> = newest
        .iter()
        .map(|(i, (_, words))| all[*i].feed.error_text(words))
        .collect();
    let circuit_breaker_events: Vec<EventDto<'_>> = newest
        .iter()
        .zip(&errors)
        .map(|((i, (r, _)), error)| EventDto::new(all[*i].name(), r, error.as_deref()))
        .collect();
    // A struct always serializes: its fields are strings and numbers.
    serde_json::to_vec(&EventsResponse {
        circuit_breaker_events,
    })
    .unwrap_or_default()
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
