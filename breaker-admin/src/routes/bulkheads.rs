//! Resilience4j's bulkhead read endpoints: the bulkheads' names, and their recent events.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;
use breaker_core::BulkheadEventKind;

use crate::bulkheads::TrackedBulkhead;
use crate::json::{BulkheadEventDto, BulkheadEventsResponse, BulkheadsResponse};
use crate::newest::newest;
use crate::roster::Followed;
use crate::routes::actuator::MAX_ALL_EVENTS;
use crate::routes::error::{bulkhead_event_type, ApiError};
use crate::routes::state::AppState;

/// `GET /actuator/bulkheads`: every bulkhead's name, sorted.
pub(super) async fn all_bulkheads(State(app): State<Arc<AppState>>) -> Json<BulkheadsResponse> {
    let all = app.hub.bulkheads.all();
    Json(BulkheadsResponse {
        bulkheads: all.iter().map(|t| t.name().to_owned()).collect(),
    })
}

/// `GET /actuator/bulkheadevents`: every bulkhead's recent events, sorted by creation time.
pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Json<BulkheadEventsResponse> {
    let all = app.hub.bulkheads.all();
    let newest = newest(all.iter().map(|t| t.newest_first()), MAX_ALL_EVENTS, |r| {
        r.at
    });
    Json(BulkheadEventsResponse {
        bulkhead_events: newest
            .iter()
            .map(|(i, r)| BulkheadEventDto::new(all[*i].name(), r))
            .collect(),
    })
}

/// `GET /actuator/bulkheadevents/{name}`: one bulkhead's recent events, oldest first; an empty
/// list for a name no bulkhead has (yet), as Resilience4j answers it.
pub(super) async fn bulkhead_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<BulkheadEventsResponse>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    Ok(events_of(app.hub.bulkheads.find(&name).as_deref(), None))
}

/// `GET /actuator/bulkheadevents/{name}/{eventType}`: those of one type. The type is checked
/// first: a type no bulkhead has is a 400 whatever the name.
pub(super) async fn bulkhead_events_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<BulkheadEventsResponse>, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let only = bulkhead_event_type(&given)?;
    Ok(events_of(
        app.hub.bulkheads.find(&name).as_deref(),
        Some(only),
    ))
}

/// A bulkhead's recent events of type `only` (every type for `None`); none for a bulkhead the
/// admin does not follow.
fn events_of(
    tracked: Option<&TrackedBulkhead>,
    only: Option<BulkheadEventKind>,
) -> Json<BulkheadEventsResponse> {
    Json(BulkheadEventsResponse {
        bulkhead_events: tracked.map_or_else(Vec::new, |tracked| {
            tracked
                .recent()
                .iter()
                .filter(|r| only.is_none_or(|t| r.kind == t))
                .map(|r| BulkheadEventDto::new(tracked.name(), r))
                .collect()
        }),
    })
}
