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

/// `GET /actuator/retryevents/{name}`: one retry's recent events, oldest first; an empty list
/// for a name no retry has (yet), as Resilience4j answers it.
pub(super) async fn retry_events(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<RetryEventsResponse>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    Ok(events_of(app.hub.retries.find(&name).as_deref(), None))
}

/// `GET /actuator/retryevents/{name}/{eventType}`: those of one type. The type is checked
/// first: a type no retry has is a 400 whatever the name.
pub(super) async fn retry_events_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<RetryEventsResponse>, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let only = retry_event_type(&given)?;
    Ok(events_of(
        app.hub.retries.find(&name).as_deref(),
        Some(only),
    ))
}

/// A retry's recent events of type `only` (every type for `None`); none for a retry the admin
/// does not follow.
fn events_of(
    tracked: Option<&TrackedRetry>,
    only: Option<RetryEventType>,
) -> Json<RetryEventsResponse> {
    Json(RetryEventsResponse {
        retry_events: tracked.map_or_else(Vec::new, |tracked| {
            tracked
                .recent()
                .iter()
                .filter(|r| only.is_none_or(|t| r.kind == t))
                .map(|r| RetryEventDto::new(tracked.name(), r))
                .collect()
        }),
    })
}
