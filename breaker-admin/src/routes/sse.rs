//! `GET /actuator/streamcircuitbreakerevents`: live events as server-sent events.
//!
//! Every breaker's listener writes the stream's one ring (while a client is connected); no
//! client costs anything on the call path. Each client keeps its own cursor (a ticket of that
//! ring) and reads forward on a timer: at most the ring's capacity per read, so what a client
//! holds is bounded, and a client that fell further behind than the ring holds skips to the
//! oldest event still there and is told how many it lost (`event: lagged`,
//! `data: {"lost": n}`). Each event is `id: <ticket>` and `data: <event DTO>`; a reconnecting
//! client's `Last-Event-ID` resumes after that ticket.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::event::{EventType, Record};
use crate::hub::StreamHub;
use crate::json::EventDto;
use crate::ring::Read;
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;

/// At most this many stream clients at once; the next gets a 503.
const MAX_CLIENTS: usize = 256;

/// How long a client waits on a record whose writer has not finished (or gave it up) before
/// counting it lost and reading on.
const STALL: Duration = Duration::from_secs(1);

/// Resilience4j's heartbeat: an `event: ping` each second without another event.
const PING_EVERY: Duration = Duration::from_secs(1);

/// Which events a client wants.
#[derive(Clone, Copy, Debug, Default)]
struct Filter {
    breaker: Option<u64>,
    kind: Option<EventType>,
}

/// Counts a client in while it lives.
struct Connected(Arc<StreamHub>);

impl Connected {
    fn new(stream: &Arc<StreamHub>) -> Option<Connected> {
        let counted = stream
            .clients
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_CLIENTS).then_some(n + 1)
            });
        counted.ok().map(|_| Connected(Arc::clone(stream)))
    }
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One client's position in the stream.
struct Client {
    app: Arc<AppState>,
    cursor: u64,
    filter: Filter,
    interval: Interval,
    pending: VecDeque<Event>,
    /// The ticket the client is waiting on, and since when.
    stalled: Option<(u64, Instant)>,
    _connected: Connected,
}

impl Client {
    /// Reads what the ring has past the cursor into `pending`.
    fn read(&mut self) {
        let ring = &self.app.hub.stream.ring;
        let head = ring.head();
        let mut lost = 0u64;
        let oldest = head.saturating_sub(ring.capacity());
        if self.cursor < oldest {
            lost += oldest - self.cursor;
            self.cursor = oldest;
        }
        let mut events = Vec::new();
        while self.cursor < head {
            let ticket = self.cursor;
            match ring.read(ticket) {
                Read::Record([meta, at, elapsed, id]) => {
                    if let Some(event) = self.event(ticket, [meta, at, elapsed], id) {
                        events.push(event);
                    }
                }
                Read::Overwritten => lost += 1,
                Read::Pending => {
                    let now = Instant::now();
                    match self.stalled {
                        Some((t, since)) if t == ticket && now - since >= STALL => lost += 1,
                        Some((t, _)) if t == ticket => break,
                        _ => {
                            self.stalled = Some((ticket, now));
                            break;
                        }
                    }
                }
            }
            self.cursor += 1;
            self.stalled = None;
        }
        if lost > 0 {
            let data = serde_json::json!({ "lost": lost }).to_string();
            self.pending
                .push_back(Event::default().event("lagged").data(data));
        }
        self.pending.extend(events);
    }

    fn event(&self, ticket: u64, words: [u64; 3], id: u64) -> Option<Event> {
        if self.filter.breaker.is_some_and(|b| b != id) {
            return None;
        }
        let record = Record::from_words(words)?;
        if self.filter.kind.is_some_and(|k| k != record.kind) {
            return None;
        }
        // A breaker removed since has no name left to show; its last events are skipped.
        let tracked = self.app.hub.by_id(id)?;
        let error = tracked.feed.error_text(&words);
        let dto = EventDto::new(tracked.name(), &record, error.as_deref());
        let data = serde_json::to_string(&dto).ok()?;
        Some(Event::default().id(ticket.to_string()).data(data))
    }
}

fn open(app: Arc<AppState>, filter: Filter, headers: &HeaderMap) -> Response {
    let Some(connected) = Connected::new(&app.hub.stream) else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("at most {MAX_CLIENTS} event streams are served at once"),
        )
        .into_response();
    };
    let head = app.hub.stream.ring.head();
    // Resume after the last event a reconnecting client saw, if the ring may still hold it.
    let cursor = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(head, |last| last.saturating_add(1).min(head));
    let mut interval = tokio::time::interval(app.options.stream_interval);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let client = Client {
        app,
        cursor,
        filter,
        interval,
        pending: VecDeque::new(),
        stalled: None,
        _connected: connected,
    };
    let stream = futures_util::stream::unfold(client, |mut client| async move {
        loop {
            if let Some(event) = client.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), client));
            }
            client.interval.tick().await;
            client.read();
        }
    });
    Sse::new(stream)
        .keep_alive(
            KeepAlive::new()
                .interval(PING_EVERY)
                .event(Event::default().event("ping")),
        )
        .into_response()
}

pub(super) async fn all(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    open(app, Filter::default(), &headers)
}

pub(super) async fn one(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tracked = app.find_at(name)?;
    let filter = Filter {
        breaker: Some(tracked.id),
        kind: None,
    };
    Ok(open(app, filter, &headers))
}

pub(super) async fn one_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let tracked = app.find(&name)?;
    let filter = Filter {
        breaker: Some(tracked.id),
        kind: Some(event_type(&given)?),
    };
    Ok(open(app, filter, &headers))
}
