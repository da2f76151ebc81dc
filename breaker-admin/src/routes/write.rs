//! `POST /actuator/circuitbreakers/{name}`: Resilience4j's write operation, and its checks in
//! the order they run: the hook, the path, the content type, the body's size, the JSON and its
//! `updateState`, then the breaker's name.

use std::sync::Arc;

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::Json;
use breaker_core::{LogSafe, State as BreakerState};
use serde_json::Value;

use crate::json::UpdateStateResponse;
use crate::options::Authorization;
use crate::routes::error::ApiError;
use crate::routes::state::AppState;
use crate::text::echo;

/// The largest write-operation body read.
const MAX_BODY_BYTES: usize = 4096;

/// Resilience4j's `UpdateState`, and `METRICS_ONLY`.
fn operation(name: &str) -> Option<BreakerState> {
    match name {
        "CLOSE" => Some(BreakerState::Closed),
        "FORCE_OPEN" => Some(BreakerState::ForcedOpen),
        "DISABLE" => Some(BreakerState::Disabled),
        "METRICS_ONLY" => Some(BreakerState::MetricsOnly),
        _ => None,
    }
}

const OPERATIONS: &str = "CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY";

fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(value) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

pub(super) async fn update_state(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
    request: Request,
) -> Result<Json<UpdateStateResponse>, ApiError> {
    let (parts, body) = request.into_parts();
    let Some(hook) = &app.options.write else {
        // The route is only mounted with a hook; stay closed if that ever changes.
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "write operations are off",
        ));
    };
    match hook.authorize(&parts) {
        Authorization::Allow => {}
        Authorization::Unauthorized => {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this write operation needs credentials",
            ))
        }
        Authorization::Forbidden => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "these credentials may not use this write operation",
            ))
        }
    }
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    if !is_json(parts.headers.get(header::CONTENT_TYPE)) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON (Content-Type: application/json)",
        )
        .naming("header", "Content-Type"));
    }
    let bytes = read_body(body).await?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        // serde_json's messages say where, not what: they quote none of the input.
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the body is not valid JSON: {e}"),
        )
    })?;
    let given = match value.get("updateState") {
        Some(Value::String(op)) => op.clone(),
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("`updateState` must be a string, one of {OPERATIONS}"),
            )
            .naming("field", "updateState"))
        }
        None => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                "the body has no `updateState`: expected {{\"updateState\": one of {OPERATIONS}}}"
            ),
            )
            .naming("field", "updateState"))
        }
    };
    let Some(to) = operation(&given) else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown updateState \"{}\": expected one of {OPERATIONS}",
                echo(&given)
            ),
        )
        .naming("updateState", &given));
    };
    let tracked = app.find(&name)?;
    let breaker = &tracked.breaker;
    let from = breaker.state();
    breaker.transition_to(to).map_err(|e| {
        ApiError::new(StatusCode::CONFLICT, e.to_string()).naming("updateState", &given)
    })?;
    let now = breaker.state();
    tracing::info!(
        breaker = %LogSafe(breaker.name()),
        operation = given.as_str(),
        from = %from,
        to = %now,
        "breaker-admin: state changed by a write operation"
    );
    Ok(Json(UpdateStateResponse {
        circuit_breaker_name: breaker.name().to_owned(),
        current_state: now.as_str(),
        message: format!("{} state has been changed successfully", breaker.name()),
    }))
}

async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {MAX_BODY_BYTES} bytes, or could not be read"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_bodies_are_read() {
        let v = |s: &'static str| Some(HeaderValue::from_static(s));
        assert!(is_json(v("application/json").as_ref()));
        assert!(is_json(v("Application/JSON; charset=utf-8").as_ref()));
        assert!(is_json(
            v("application/vnd.spring-boot.actuator.v3+json").as_ref()
        ));
        assert!(!is_json(v("text/plain").as_ref()));
        assert!(!is_json(None));
    }
}
