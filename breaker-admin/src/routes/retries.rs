//! Resilience4j's retry read endpoints: the retries' names, and their recent events.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::Json;

use crate::json::{RetriesResponse, RetryEventDto, RetryEventsResponse};
use crate::newest::newest;
use crate::retries::{RetryEventType, TrackedRetry};
use crate::roster::Followed;
use crate::routes::actuator::MAX_ALL_EVENTS;
use crate::routes::error::{retry_event_type, ApiError};
use crate::routes::state::AppState;

/// `GET /actuator/retries`: every retry's name, sorted.
pub(super) async fn all_retries(State(app): State<Arc<AppState>>) -> Json<RetriesResponse> {
    let all = app.hub.retries.all();
    Json(RetriesResponse {
        retries: all.iter().map(|t| t.name().to_owned()).collect(),
    })
}

/// `GET /actuator/retryevents`: every retry's recent events, sorted by creation time.
pub(super) async fn all_events(State(app): State<Arc<AppState>>) -> Json<RetryEventsResponse> {
    let all = app.hub.retries.all();
    let newest = newest(all.iter().map(|t| t.newest_first()), MAX_ALL_EVENTS, |r| {
        r.at
    });
    Json(RetryEventsResponse {
        retry_events: newest
            .iter()
            .map(|(i, r)| RetryEventDto::new(all[*i].name(), r))
            .collect(),
    })
}

/// `GET /actuator/retryevents/{name}`: one retry's recent events, oldest first.
pub(super) async fn retry_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<RetryEventsResponse>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find_retry(&name)?;
    Ok(events_of(&tracked, None))
}

/// `GET /actuator/retryevents/{name}/{eventType}`: those of one type.
pub(super) async fn retry_events_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<RetryEventsResponse>, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find_retry(&name)?;
    let only = retry_event_type(&given)?;
    Ok(events_of(&tracked, Some(only)))
}

fn events_of(tracked: &TrackedRetry, only: Option<RetryEventType>) -> Json<RetryEventsResponse> {
    Json(RetryEventsResponse {
        retry_events: tracked
            .recent()
            .iter()
            .filter(|r| only.is_none_or(|t| r.kind == t))
            .map(|r| RetryEventDto::new(tracked.name(), r))
            .collect(),
    })
}
