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
use crate::lenient;
use crate::options::Authorization;
use crate::routes::error::ApiError;
use crate::routes::state::AppState;
use crate::text::echo;

/// The largest write-operation body read.
const MAX_BODY_BYTES: usize = 4096;

/// Resilience4j's `UpdateState` (`CLOSE`, `FORCE_OPEN`, `DISABLE`, in its order), then
/// `METRICS_ONLY`, and the state each one moves the breaker to.
const OPERATIONS: [(&str, BreakerState); 4] = [
    ("CLOSE", BreakerState::Closed),
    ("FORCE_OPEN", BreakerState::ForcedOpen),
    ("DISABLE", BreakerState::Disabled),
    ("METRICS_ONLY", BreakerState::MetricsOnly),
];

/// The operation `given` names, read as Spring Boot reads an enum parameter of a write
/// operation (`force_open`, `Force-Open`, ` FORCE_OPEN `, `forceOpen`: see `lenient.rs`).
fn operation(given: &str) -> Option<(&'static str, BreakerState)> {
    lenient::spring_enum(given, OPERATIONS, |(name, _)| name)
}

/// `CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY`, for an error message.
fn operation_list() -> String {
    OPERATIONS.map(|(name, _)| name).join(", ")
}

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
    let operations = operation_list();
    let given = match value.get("updateState") {
        Some(Value::String(op)) => op.clone(),
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("`updateState` must be a string, one of {operations}"),
            )
            .naming("field", "updateState"))
        }
        None => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                "the body has no `updateState`: expected {{\"updateState\": one of {operations}}}"
            ),
            )
            .naming("field", "updateState"))
        }
    };
    // Spring reads a blank value as no value at all (Resilience4j's operation then fails on
    // it with a 500); here it is a 400 like any other value that names no operation.
    let Some((operation_name, to)) = operation(&given) else {
        let what = if given.trim_matches(|c: char| c <= ' ').is_empty() {
            "`updateState` is empty".to_owned()
        } else {
            format!("unknown updateState \"{}\"", echo(&given))
        };
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{what}: expected one of {operations} (in any case, `_` or `-` between words)"),
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
        operation = operation_name,
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
    fn update_state_is_read_as_spring_reads_an_enum() {
        assert_eq!(
            operation("FORCE_OPEN"),
            Some(("FORCE_OPEN", BreakerState::ForcedOpen))
        );
        assert_eq!(
            operation("force_open").map(|o| o.1),
            Some(BreakerState::ForcedOpen)
        );
        assert_eq!(
            operation("Force-Open").map(|o| o.1),
            Some(BreakerState::ForcedOpen)
        );
        assert_eq!(
            operation(" close ").map(|o| o.1),
            Some(BreakerState::Closed)
        );
        assert_eq!(
            operation("disable").map(|o| o.1),
            Some(BreakerState::Disabled)
        );
        assert_eq!(
            operation("metricsOnly").map(|o| o.1),
            Some(BreakerState::MetricsOnly)
        );
        for bad in ["", "  ", "OPEN", "FORCED_OPEN", "CLOSED", "half_open"] {
            assert_eq!(operation(bad), None, "{bad:?}");
        }
        assert_eq!(operation_list(), "CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY");
    }

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
