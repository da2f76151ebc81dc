//! Resilience4j's actuator read endpoints: the breakers and their recent events.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use breaker_core::Timestamp;
use serde_json::Value;

use crate::event::EventType;
use crate::hub::Tracked;
use crate::json::{self, EventDto};
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
    let records = tracked.feed.recent();
    let list: Vec<EventDto<'_>> = records
        .iter()
        .filter(|r| only.is_none_or(|t| r.kind == t))
        .map(|r| EventDto::new(tracked.name(), r))
        .collect();
    json::events(&list)
}

pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Json<Value> {
    let all = app.hub.all();
    let per_breaker: Vec<_> = all.iter().map(|t| (t.name(), t.feed.recent())).collect();
    let mut list: Vec<_> = per_breaker
        .iter()
        .flat_map(|(name, records)| records.iter().map(move |r| (r.at, *name, r)))
        .collect();
    let dtos: Vec<EventDto<'_>> = newest_by_time(&mut list)
        .iter()
        .map(|(_, name, r)| EventDto::new(name, r))
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
