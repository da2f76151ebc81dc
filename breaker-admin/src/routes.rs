//! The HTTP side: routes, handlers and error bodies.

use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, MethodRouter};
use axum::{Json, Router};
use breaker_core::State as BreakerState;
use serde_json::{json, Map, Value};

use crate::event::EventType;
use crate::hub::{Hub, Tracked};
use crate::json::{
    self, BreakerSummary, EventDto, StateCounts, StateHistory, Status, Summary, UpdateStateResponse,
};
use breaker_core::LogSafe;

use crate::text::echo;
use crate::{Authorization, Options};

/// What every handler shares.
pub(crate) struct App {
    pub(crate) hub: Arc<Hub>,
    pub(crate) options: Options,
}

type Shared = Arc<App>;

/// At most this many events in `GET /actuator/circuitbreakerevents` (every breaker).
pub(crate) const MAX_ALL_EVENTS: usize = 10_000;
/// The largest write-operation body read.
const MAX_BODY_BYTES: usize = 4096;
/// The longest query string the dashboard's API reads.
const MAX_QUERY_BYTES: usize = 4096;
/// The longest `q` the dashboard's API takes, in characters.
const MAX_SEARCH_CHARS: usize = 256;
/// The largest `limit` of the dashboard's API.
const MAX_LIMIT: usize = 1000;
const DEFAULT_LIMIT: usize = 100;

const DASHBOARD_HTML: &str = include_str!("../assets/dashboard.html");
const DASHBOARD_JS: &str = include_str!("../assets/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("../assets/dashboard.css");

pub(crate) fn router(app: Shared) -> Router {
    let o = &app.options;
    let mut router = Router::new();
    if o.circuit_breakers || o.write.is_some() {
        let mut one: MethodRouter<Shared> = MethodRouter::new();
        if o.circuit_breakers {
            router = router.route("/actuator/circuitbreakers", get(all_breakers));
            one = one.get(one_breaker);
        }
        if o.write.is_some() {
            one = one.post(update_state);
        }
        router = router.route("/actuator/circuitbreakers/{name}", one);
    }
    if o.events {
        router = router
            .route("/actuator/circuitbreakerevents", get(all_events))
            .route("/actuator/circuitbreakerevents/{name}", get(breaker_events))
            .route(
                "/actuator/circuitbreakerevents/{name}/{eventType}",
                get(breaker_events_of_type),
            );
    }
    if o.stream {
        router = router
            .route("/actuator/streamcircuitbreakerevents", get(crate::sse::all))
            .route(
                "/actuator/streamcircuitbreakerevents/{name}",
                get(crate::sse::one),
            )
            .route(
                "/actuator/streamcircuitbreakerevents/{name}/{eventType}",
                get(crate::sse::one_of_type),
            );
    }
    if o.health {
        router = router
            .route("/actuator/health", get(health))
            .route("/actuator/health/circuitBreakers", get(health_component));
    }
    if let Some(render) = o.prometheus.clone() {
        router = router.route(
            "/actuator/prometheus",
            get(move || {
                let render = Arc::clone(&render);
                async move {
                    let content = "text/plain; version=0.0.4; charset=utf-8";
                    ([(header::CONTENT_TYPE, content)], render())
                }
            }),
        );
    }
    if o.dashboard {
        router = router
            .route(
                "/dashboard",
                get(|| asset("text/html; charset=utf-8", DASHBOARD_HTML)),
            )
            .route(
                "/dashboard/dashboard.js",
                get(|| asset("text/javascript; charset=utf-8", DASHBOARD_JS)),
            )
            .route(
                "/dashboard/dashboard.css",
                get(|| asset("text/css; charset=utf-8", DASHBOARD_CSS)),
            )
            .route("/dashboard/api/breakers", get(dashboard_breakers))
            .route("/dashboard/api/breakers/{name}/events", get(breaker_events))
            .route("/dashboard/api/breakers/{name}/states", get(breaker_states));
    }
    router.with_state(app)
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// An error answer: `{"status", "error", "message"}` and the field at fault, written by
/// serde_json (so whatever the request sent is escaped).
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    field: Option<(&'static str, String)>,
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

impl App {
    pub(crate) fn find(&self, name: &str) -> Result<Arc<Tracked>, ApiError> {
        self.hub
            .find(name)
            .ok_or_else(|| ApiError::no_breaker(name))
    }
}

pub(crate) fn event_type(given: &str) -> Result<EventType, ApiError> {
    EventType::parse(given).ok_or_else(|| ApiError::unknown_event_type(given))
}

async fn all_breakers(State(app): State<Shared>) -> Json<Value> {
    let all = app.hub.all();
    Json(json::circuit_breakers(all.iter().map(|t| &**t)))
}

async fn one_breaker(
    State(app): State<Shared>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
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

async fn all_events(State(app): State<Shared>) -> Json<Value> {
    let all = app.hub.all();
    let per_breaker: Vec<_> = all.iter().map(|t| (t.name(), t.feed.recent())).collect();
    let mut list: Vec<_> = per_breaker
        .iter()
        .flat_map(|(name, records)| records.iter().map(move |r| (r.at, *name, r)))
        .collect();
    // Resilience4j sorts every breaker's events by creation time; a stable sort keeps each
    // breaker's own order for events at the same instant.
    list.sort_by_key(|(at, _, _)| *at);
    let skip = list.len().saturating_sub(MAX_ALL_EVENTS);
    let dtos: Vec<EventDto<'_>> = list[skip..]
        .iter()
        .map(|(_, name, r)| EventDto::new(name, r))
        .collect();
    Json(json::events(&dtos))
}

async fn breaker_events(
    State(app): State<Shared>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
    Ok(Json(events_of(&tracked, None)))
}

async fn breaker_events_of_type(
    State(app): State<Shared>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
    let only = event_type(&given)?;
    Ok(Json(events_of(&tracked, Some(only))))
}

/// The dashboard's state history of one breaker (`json::StateHistory`).
async fn breaker_states(
    State(app): State<Shared>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
    let history = StateHistory::of(&tracked);
    Ok(Json(serde_json::to_value(history).unwrap_or(Value::Null)))
}

/// Spring's default mapping: DOWN and OUT_OF_SERVICE are 503, every other status 200.
fn http_status(status: Status) -> StatusCode {
    match status {
        Status::Down | Status::OutOfService => StatusCode::SERVICE_UNAVAILABLE,
        Status::Up | Status::Unknown | Status::CircuitOpen | Status::CircuitHalfOpen => {
            StatusCode::OK
        }
    }
}

async fn health(State(app): State<Shared>) -> Response {
    let all = app.hub.all();
    let details = app.options.health_details;
    let (component_status, component) = json::health_component(all.iter().map(|t| &**t), details);
    // The service's status aggregates its components; `circuitBreakers` is the only one here.
    let status = Status::aggregate([component_status]);
    let body = if details {
        json!({ "status": status.as_str(), "components": { "circuitBreakers": component } })
    } else {
        json!({ "status": status.as_str() })
    };
    (http_status(status), Json(body)).into_response()
}

async fn health_component(State(app): State<Shared>) -> Response {
    let all = app.hub.all();
    let (status, component) =
        json::health_component(all.iter().map(|t| &**t), app.options.health_details);
    (http_status(status), Json(component)).into_response()
}

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

async fn update_state(
    State(app): State<Shared>,
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

async fn read_body(body: Body) -> Result<axum::body::Bytes, ApiError> {
    to_bytes(body, MAX_BODY_BYTES).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {MAX_BODY_BYTES} bytes, or could not be read"),
        )
    })
}

/// The dashboard's query: `q`, `state`, `offset`, `limit`.
#[derive(Debug, PartialEq)]
struct Query {
    q: Option<String>,
    state: Option<BreakerState>,
    offset: usize,
    limit: usize,
}

fn parse_query(raw: Option<&str>) -> Result<Query, ApiError> {
    let mut query = Query {
        q: None,
        state: None,
        offset: 0,
        limit: DEFAULT_LIMIT,
    };
    let raw = raw.unwrap_or("");
    if raw.len() > MAX_QUERY_BYTES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the query string is longer than {MAX_QUERY_BYTES} bytes"),
        )
        .naming("parameter", "query"));
    }
    let bad = |parameter: &'static str, message: String| {
        ApiError::new(StatusCode::BAD_REQUEST, message).naming("parameter", parameter)
    };
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        match &*key {
            "q" => {
                if value.chars().count() > MAX_SEARCH_CHARS {
                    return Err(bad(
                        "q",
                        format!("`q` is longer than {MAX_SEARCH_CHARS} characters"),
                    ));
                }
                query.q = (!value.is_empty()).then(|| value.to_lowercase());
            }
            "state" => {
                query.state = if value.is_empty() {
                    None
                } else {
                    let state = BreakerState::from_name(&value.to_ascii_uppercase());
                    Some(state.ok_or_else(|| {
                        let states = BreakerState::ALL.map(BreakerState::as_str).join(", ");
                        bad(
                            "state",
                            format!(
                                "unknown state \"{}\": expected one of {states}",
                                echo(&value)
                            ),
                        )
                    })?)
                };
            }
            "offset" => {
                query.offset = value.parse().map_err(|_| {
                    bad(
                        "offset",
                        format!("`offset` must be a whole number, not \"{}\"", echo(&value)),
                    )
                })?;
            }
            "limit" => {
                let limit: usize = value.parse().map_err(|_| {
                    bad(
                        "limit",
                        format!("`limit` must be a whole number, not \"{}\"", echo(&value)),
                    )
                })?;
                if limit > MAX_LIMIT {
                    return Err(bad(
                        "limit",
                        format!("`limit` is at most {MAX_LIMIT}, not {limit}"),
                    ));
                }
                query.limit = limit;
            }
            _ => {}
        }
    }
    Ok(query)
}

async fn dashboard_breakers(
    State(app): State<Shared>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let query = parse_query(raw.as_deref())?;
    // Cloned out first, so the filtering below holds no lock a new breaker's hook waits on.
    let all = app.hub.all();
    let mut states = StateCounts::default();
    let mut matched = Vec::new();
    for tracked in &all {
        let state = tracked.breaker.state();
        states.add(state);
        let by_state = query.state.is_none_or(|s| s == state);
        let by_name = query
            .q
            .as_deref()
            .is_none_or(|q| tracked.name().to_lowercase().contains(q));
        if by_state && by_name {
            matched.push(tracked);
        }
    }
    let page: Vec<BreakerSummary<'_>> = matched
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|t| BreakerSummary::of(t))
        .collect();
    let now = app.hub.registry.clock().now().unix_nanos() / 1_000_000;
    let summary = Summary {
        total: all.len(),
        matched: matched.len(),
        states,
        now,
        breakers: page,
    };
    Ok(Json(serde_json::to_value(summary).unwrap_or(Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_bad_values_name_their_parameter() {
        assert_eq!(
            parse_query(None).unwrap(),
            Query {
                q: None,
                state: None,
                offset: 0,
                limit: 100
            }
        );
        assert_eq!(
            parse_query(Some(
                "q=Pay%20Ment&state=half_open&offset=20&limit=1000&x=1"
            ))
            .unwrap(),
            Query {
                q: Some("pay ment".to_owned()),
                state: Some(BreakerState::HalfOpen),
                offset: 20,
                limit: 1000
            }
        );
        let field = |raw: &str| parse_query(Some(raw)).unwrap_err().field.unwrap();
        assert_eq!(field("limit=1001"), ("parameter", "limit".to_owned()));
        assert_eq!(field("limit=-1"), ("parameter", "limit".to_owned()));
        assert_eq!(field("offset=x"), ("parameter", "offset".to_owned()));
        assert_eq!(field("state=AJAR"), ("parameter", "state".to_owned()));
        assert_eq!(
            field(&format!("q={}", "a".repeat(257))),
            ("parameter", "q".to_owned())
        );
        assert_eq!(field(&"a".repeat(5000)), ("parameter", "query".to_owned()));
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
