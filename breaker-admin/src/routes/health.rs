//! `GET /actuator/health` and the paths below it (`liveness`, `readiness`, a component): the
//! answer `health.rs` computes, with the HTTP status Spring maps it to, or a 404 that says why
//! nothing answers there.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::health::{Health, Missing, Status};
use crate::routes::error::ApiError;
use crate::routes::state::AppState;

/// Spring's default `HttpCodeStatusMapper`: DOWN and OUT_OF_SERVICE are 503, every other
/// status (the custom ones too) 200.
fn http_status(status: Status) -> StatusCode {
    match status {
        Status::Down | Status::OutOfService => StatusCode::SERVICE_UNAVAILABLE,
        Status::Up | Status::Unknown | Status::CircuitOpen | Status::CircuitHalfOpen => {
            StatusCode::OK
        }
    }
}

/// The answer for `segments` below `/actuator/health` (none for the root itself).
fn answer(app: &AppState, segments: &[&str], path: &str) -> Response {
    let breakers = app.hub.all();
    let health = Health::new(&app.options, &breakers);
    match health.resolve(segments) {
        Ok(descriptor) => (http_status(descriptor.status()), Json(&descriptor)).into_response(),
        Err(missing) => {
            let message = match missing {
                Missing::Hidden => {
                    "health components are not shown here: only the health root and its groups answer"
                }
                Missing::NoSuch => "no health group or component is at this path",
            };
            ApiError::new(StatusCode::NOT_FOUND, message)
                .naming("path", path)
                .into_response()
        }
    }
}

pub(super) async fn root(State(app): State<Arc<AppState>>) -> Response {
    answer(&app, &[], "")
}

/// `/actuator/health/{*path}`: a group, a component, or a component of a group.
pub(super) async fn below(
    State(app): State<Arc<AppState>>,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(path)) = path else {
        return ApiError::bad_path().into_response();
    };
    let segments: Vec<&str> = path.split('/').collect();
    answer(&app, &segments, &path)
}
