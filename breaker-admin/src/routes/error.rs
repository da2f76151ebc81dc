//! The error answer every route gives: `{"status", "error", "message"}` and the field at fault.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use breaker_core::BulkheadEventKind;
use serde_json::{Map, Value};

use crate::bulkheads::{event_type_list, parse_event_type};
use crate::event::EventType;
use crate::retries::RetryEventType;
use crate::text::echo;

/// An error answer: `{"status", "error", "message"}` and the field at fault, written by
/// serde_json (so whatever the request sent is escaped).
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    pub(super) field: Option<(&'static str, String)>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            field: None,
        }
    }

    /// Names the field at fault: `{"parameter": "limit"}`, `{"name": "..."}`.
    pub(crate) fn naming(mut self, key: &'static str, value: &str) -> ApiError {
        self.field = Some((key, echo(value)));
        self
    }

    pub(crate) fn no_breaker(name: &str) -> ApiError {
        ApiError::not_named("circuit breaker", name)
    }

    pub(crate) fn no_bulkhead(name: &str) -> ApiError {
        ApiError::not_named("bulkhead", name)
    }

    pub(crate) fn no_retry(name: &str) -> ApiError {
        ApiError::not_named("retry", name)
    }

    /// A 404 saying no `what` is named `name`.
    fn not_named(what: &str, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no {what} is named \"{}\"", echo(name)),
        )
        .naming("name", name)
    }

    pub(crate) fn bad_path() -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "the path is not valid: a name must be percent-encoded UTF-8",
        )
    }

    pub(crate) fn unknown_event_type(given: &str) -> ApiError {
        ApiError::unknown_type("event type", given, &EventType::list())
    }

    pub(crate) fn unknown_bulkhead_event_type(given: &str) -> ApiError {
        ApiError::unknown_type("bulkhead event type", given, &event_type_list())
    }

    pub(crate) fn unknown_retry_event_type(given: &str) -> ApiError {
        ApiError::unknown_type("retry event type", given, &RetryEventType::list())
    }

    /// A 400 saying `given` is no `what`, and listing the `valid` ones.
    fn unknown_type(what: &str, given: &str, valid: &str) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown {what} \"{}\": expected one of {valid}",
                echo(given)
            ),
        )
        .naming("eventType", given)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("status".to_owned(), self.status.as_u16().into());
        body.insert(
            "error".to_owned(),
            self.status.canonical_reason().unwrap_or("Error").into(),
        );
        body.insert("message".to_owned(), self.message.into());
        if let Some((key, value)) = self.field {
            body.insert(key.to_owned(), value.into());
        }
        (self.status, Json(Value::Object(body))).into_response()
    }
}

/// The `{eventType}` of a path, or a 400 that lists the valid ones.
pub(crate) fn event_type(given: &str) -> Result<EventType, ApiError> {
    EventType::parse(given).ok_or_else(|| ApiError::unknown_event_type(given))
}

/// The `{eventType}` of a bulkhead events path, or a 400 that lists the valid ones.
pub(crate) fn bulkhead_event_type(given: &str) -> Result<BulkheadEventKind, ApiError> {
    parse_event_type(given).ok_or_else(|| ApiError::unknown_bulkhead_event_type(given))
}

/// The `{eventType}` of a retry events path, or a 400 that lists the valid ones.
pub(crate) fn retry_event_type(given: &str) -> Result<RetryEventType, ApiError> {
    RetryEventType::parse(given).ok_or_else(|| ApiError::unknown_retry_event_type(given))
}
