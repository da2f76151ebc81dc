//! The dashboard: its page (assets/) and the data it draws, a filtered page of breakers (each
//! with the bulkhead and the retry of its name, if any, and the bulkheads no breaker shares a
//! name with) and one breaker's state history.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::json::{BreakerSummary, LoneBulkhead, StateCounts, StateHistory, Summary};
use crate::roster::Followed;
use crate::routes::error::ApiError;
use crate::routes::query::{parse_query, Query};
use crate::routes::state::AppState;

const DASHBOARD_HTML: &str = include_str!("../../assets/dashboard.html");
const DASHBOARD_JS: &str = include_str!("../../assets/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("../../assets/dashboard.css");

fn asset(content_type: &'static str, body: &'static str) -> Response {
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

/// The page's policy: its own script, style and data, nothing inline, nothing from elsewhere;
/// no `<base>` or form can point it away, and no other page may frame it (clickjacking).
/// Relative `'self'`, so it holds wherever the router is nested.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// `GET /dashboard`: the page, with its policy, a frame policy for browsers that predate
/// `frame-ancestors`, and no referrer sent from it.
pub(super) async fn page() -> Response {
    let mut response = asset("text/html; charset=utf-8", DASHBOARD_HTML);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /dashboard/dashboard.js`.
pub(super) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", DASHBOARD_JS)
}

/// `GET /dashboard/dashboard.css`.
pub(super) async fn style() -> Response {
    asset("text/css; charset=utf-8", DASHBOARD_CSS)
}

/// `GET /dashboard/api/breakers`: the breakers matching the query (`query.rs`), one page of
/// them, and the count of each state over all. Each breaker carries the bulkhead and the retry
/// of its name, if there are; `bulkheads` lists the bulkheads whose name no breaker has, those matching
/// `q` (none under a `state` filter: a bulkhead has no state), the first `limit` of them by
/// name, and `bulkheadsMatched` counts them all.
pub(super) async fn breakers(
    State(app): State<Arc<AppState>>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = parse_query(raw.as_deref())?;
    // Cloned out first, so the filtering below holds no lock a new breaker's hook waits on.
    let all = app.hub.all();
    let mut states = StateCounts::default();
    let mut matched = Vec::new();
    for tracked in &all {
        let state = tracked.breaker.state();
        states.add(state);
        let by_state = query.state.is_none_or(|s| s == state);
        let by_name = matches_name(&query, tracked.name());
        if by_state && by_name {
            matched.push(tracked);
        }
    }
    // Every list is sorted by name.
    let bulkheads = app.hub.bulkheads.all();
    let retries = app.hub.retries.all();
    let page: Vec<BreakerSummary<'_>> = matched
        .iter()
        .skip(query.offset)
        .take(query.limit)
        .map(|t| BreakerSummary::of(t, named(&bulkheads, t.name()), named(&retries, t.name())))
        .collect();
    let lone: Vec<_> = bulkheads
        .iter()
        .filter(|b| query.state.is_none() && matches_name(&query, b.name()))
        .filter(|b| all.binary_search_by(|t| t.name().cmp(b.name())).is_err())
        .collect();
    let now = app.hub.registry.clock().now().unix_nanos() / 1_000_000;
    let summary = Summary {
        total: all.len(),
        matched: matched.len(),
        states,
        now,
        breakers: page,
        bulkheads: lone
            .iter()
            .take(query.limit)
            .map(|b| LoneBulkhead::of(b))
            .collect(),
        bulkheads_matched: lone.len(),
    };
    // Written from the struct while it borrows `all`: its fields keep their order.
    Ok(Json(summary).into_response())
}

/// The one of `list` (sorted by name) named `name`.
fn named<'a, T: Followed>(list: &'a [Arc<T>], name: &str) -> Option<&'a T> {
    list.binary_search_by(|t| t.name().cmp(name))
        .ok()
        .map(|i| &*list[i])
}

/// Whether `name` contains the query's `q` (lowercased), if it has one.
fn matches_name(query: &Query, name: &str) -> bool {
    query
        .q
        .as_deref()
        .is_none_or(|q| name.to_lowercase().contains(q))
}

/// The dashboard's state history of one breaker (`json::StateHistory`).
pub(super) async fn breaker_states(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let tracked = app.find_at(name)?;
    Ok(Json(StateHistory::of(&tracked)).into_response())
}
