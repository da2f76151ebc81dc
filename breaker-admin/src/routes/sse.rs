//! `GET /actuator/streamcircuitbreakerevents`: live events as server-sent events.
//!
//! Every breaker's listener writes the stream's one ring (while a client is connected); no
//! client costs anything on the call path. Each client keeps its own cursor (a ticket of that
//! ring) and reads forward on a timer: at most the ring's capacity per read, so what a client
//! holds is bounded, and a client that fell further behind than the ring holds skips to the
//! oldest event still there and is told how many it lost (`event: lagged`,
//! `data: {"lost": n}`). Each event is written as Resilience4j's stream writes it, named by its
//! type (`event: STATE_TRANSITION`) with its DTO as `data:` (a field the event has no value
//! for as `null`), but with `id: <ticket>` where Resilience4j puts the breaker's name (which is
//! also the DTO's `circuitBreakerName`): a reconnecting client's `Last-Event-ID` then resumes
//! after that ticket. As Resilience4j's, every stream also sends `event: ping` (no data) every
//! second, whatever else it sends.
//!
//! `/{name}` follows a name, not a breaker: it is open for a name no breaker has yet (a breaker
//! made on its first call has no events before then), and it carries the events of whichever
//! breaker has the name, one made or replaced later included.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
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

/// Resilience4j's heartbeat: an `event: ping` every second.
const PING_EVERY: Duration = Duration::from_secs(1);

/// Which events a client wants: those of the breaker with this display name, of this type.
#[derive(Clone, Debug, Default)]
struct Filter {
    breaker: Option<String>,
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

    /// The message of the ring's record `ticket` (`words` and the breaker's `id`), if the
    /// client wants it: `id: <ticket>`, `event: <type>`, `data: <event DTO>`.
    fn event(&self, ticket: u64, words: [u64; 3], id: u64) -> Option<Event> {
        let record = Record::from_words(words)?;
        if self.filter.kind.is_some_and(|k| k != record.kind) {
            return None;
        }
        // A breaker removed since has no name left to show; its last events are skipped.
        let tracked = self.app.hub.by_id(id)?;
        if self
            .filter
            .breaker
            .as_deref()
            .is_some_and(|name| name != tracked.name())
        {
            return None;
        }
        let data = serde_json::to_string(&EventDto::new(tracked.name(), &record, None)).ok()?;
        Some(
            Event::default()
                .id(ticket.to_string())
                .event(record.kind.as_str())
                .data(data),
        )
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
    Sse::new(with_pings(stream)).into_response()
}

/// `events`, and Resilience4j's heartbeat between them: `event: ping` with no data every
/// [`PING_EVERY`] from a second after the stream opens, however many events it sends (as its
/// `Flux.interval`), so a client may take a missing ping for a dead stream. A browser's
/// `EventSource` dispatches no event without data, so it sees no ping, as with Resilience4j.
fn with_pings<S>(events: S) -> impl Stream<Item = Result<Event, Infallible>>
where
    S: Stream<Item = Result<Event, Infallible>>,
{
    let mut every = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let pings = futures_util::stream::unfold(every, |mut every| async move {
        every.tick().await;
        Some((Ok(Event::default().event("ping")), every))
    });
    futures_util::stream::select(events, pings)
}

pub(super) async fn all(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    open(app, Filter::default(), &headers)
}

/// `/{name}`: the events of the breaker named `name`, whenever it exists.
pub(super) async fn one(
    State(app): State<Arc<AppState>>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path(name) = name.map_err(|_| ApiError::bad_path())?;
    let filter = Filter {
        breaker: Some(name),
        kind: None,
    };
    Ok(open(app, filter, &headers))
}

/// `/{name}/{eventType}`: those of one type; a type no breaker has is a 400.
pub(super) async fn one_of_type(
    State(app): State<Arc<AppState>>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Path((name, given)) = path.map_err(|_| ApiError::bad_path())?;
    let filter = Filter {
        breaker: Some(name),
        kind: Some(event_type(&given)?),
    };
    Ok(open(app, filter, &headers))
}
