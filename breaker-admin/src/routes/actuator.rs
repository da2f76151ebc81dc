//! Resilience4j's actuator read endpoints: the breakers and their recent events.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use serde_json::Value;

use crate::event::EventType;
use crate::hub::{Hub, Tracked};
use crate::json::{self, EventDto};
use crate::newest::newest;
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;

/// At most this many events in `GET /actuator/circuitbreakerevents`,
/// `GET /actuator/bulkheadevents` and `GET /actuator/retryevents` (every breaker, bulkhead,
/// retry): the newest, chosen without gathering the rest (`newest.rs`).
pub(crate) const MAX_ALL_EVENTS: usize = 10_000;

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
    let records = tracked.feed.recent();
    let list: Vec<EventDto<'_>> = records
        .iter()
        .filter(|r| only.is_none_or(|t| r.kind == t))
        .map(|r| EventDto::new(tracked.name(), r))
        .collect();
    json::events(&list)
}

pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Json<Value> {
    Json(all_events_value(&app.hub))
}

/// The body of `GET /actuator/circuitbreakerevents`: every breaker's newest events, at most
/// [`MAX_ALL_EVENTS`], by time.
pub(crate) fn all_events_value(hub: &Hub) -> Value {
    let all = hub.all();
    let newest = newest(
        all.iter().map(|t| t.feed.newest_first()),
        MAX_ALL_EVENTS,
        |r| r.at,
    );
    let dtos: Vec<EventDto<'_>> = newest
        .iter()
        .map(|(i, r)| EventDto::new(all[*i].name(), r))
        .collect();
    json::events(&dtos)
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
