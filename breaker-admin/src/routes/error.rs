//! The error answer every route gives: `{"status", "error", "message"}` and the field at fault.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use breaker_core::BulkheadEventKind;
use serde::ser::{Serialize, SerializeMap, Serializer};

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

/// The body keeps its keys in this order (`status`, `error`, `message`, then the field at
/// fault) whatever serde_json's features: it is written entry by entry, never through a
/// `serde_json::Map`.
impl Serialize for ApiError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_map(Some(3 + usize::from(self.field.is_some())))?;
        body.serialize_entry("status", &self.status.as_u16())?;
        body.serialize_entry("error", self.status.canonical_reason().unwrap_or("Error"))?;
        body.serialize_entry("message", &self.message)?;
        if let Some((key, value)) = &self.field {
            body.serialize_entry(key, value)?;
        }
        body.end()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(&self)).into_response()
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
