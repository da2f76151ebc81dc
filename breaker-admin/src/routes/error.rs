//! The error answer every route gives: `{"status", "error", "message"}` and the field at fault.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};

use crate::event::EventType;
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
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no circuit breaker is named \"{}\"", echo(name)),
        )
        .naming("name", name)
    }

    pub(crate) fn bad_path() -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "the path is not valid: a breaker name must be percent-encoded UTF-8",
        )
    }

    pub(crate) fn unknown_event_type(given: &str) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown event type \"{}\": expected one of {}",
                echo(given),
                EventType::list()
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
