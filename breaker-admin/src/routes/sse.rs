//! `GET /actuator/streamcircuitbreakerevents`: live events as server-sent events.
//!
//! Every breaker's listener writes the stream's one ring while it is switched on
//! (`stream.rs`); with no client, a call costs the stream nothing. Each client keeps its own
//! cursor (a ticket of that ring) and reads forward on a timer, at most [`BATCH`] events at a
//! time (reading on at once while more are there), so what a client holds is bounded; a client
//! that fell further behind than the ring holds skips to the oldest event still there and is
//! told how many it lost (`event: lagged`, `data: {"lost": n}`).
//!
//! Each event is written as Resilience4j's stream writes it, named by its type
//! (`event: STATE_TRANSITION`) with its DTO as `data:` (a field the event has no value for as
//! `null`), but with `id: <ticket>` where Resilience4j puts the breaker's name (which is also
//! the DTO's `circuitBreakerName`): a reconnecting client's `Last-Event-ID` then resumes after
//! that ticket, and one the stream cannot resume from gets an `event: lagged` that says why,
//! with `"lost": null` (not known). As Resilience4j's, every stream also sends `event: ping`
//! (no data) every second, whatever else it sends.
//!
//! `/{name}` follows a name, not a breaker: it is open for a name no breaker has yet (a breaker
//! made on its first call has no events before then), and it carries the events of whichever
//! breaker has the name, one made or replaced later included.
//!
//! # Slots, and clients that do not read
//!
//! Each stream holds one of the admin's slots (`max_stream_clients`). A client that connects and
//! never reads would hold it for ever, and under light traffic the kernel's socket buffers take
//! its events for hours before a write blocks. So a watchdog task per stream gives the slot back
//! when either bound is reached:
//!
//! - its lifetime (`stream_max_lifetime`): the stream then ends, and an `EventSource`
//!   reconnects with its `Last-Event-ID`, without loss while the ring holds what it missed (the
//!   ring stays on for the linger after the last client leaves);
//! - a stall (`stream_stall_timeout`): the stream handed the server an event that the
//!   server has not taken for that long, which happens only once the connection's buffers are
//!   full: the client stopped reading under heavy traffic.
//!
//! The body ends the next time the server polls it (its pings stop with it). A stalled body the
//! server never polls again stays with its connection until that closes: a bounded amount (at
//! most [`BATCH`] events, plus the server's buffers), but no slot and no work on the call path.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use tokio::time::{Instant, Interval, MissedTickBehavior};

use crate::event::{EventType, Record};
use crate::hub::Hub;
use crate::json::EventDto;
use crate::ring::Read;
use crate::routes::error::{event_type, ApiError};
use crate::routes::state::AppState;
use crate::text::echo;

/// At most this many events are read from the ring into a client's queue at a time: what one
/// client holds, whatever the ring's size.
const BATCH: u64 = 128;

/// How long a client waits on a record whose writer has not finished (or gave it up) before
/// counting it lost and reading on.
const UNFINISHED_WAIT: Duration = Duration::from_secs(1);

/// Resilience4j's heartbeat: an `event: ping` every second.
const PING_EVERY: Duration = Duration::from_secs(1);

/// What a 503 tells the client to wait before trying again, in seconds.
const RETRY_AFTER_SECONDS: &str = "5";

/// Which events a client wants: those of the breaker with this display name, of this type.
#[derive(Clone, Debug, Default)]
struct Filter {
    breaker: Option<String>,
    kind: Option<EventType>,
}

/// One stream's slot: taken when the stream opens, given back once, by whichever comes first
/// of the stream's end (its body dropped) and its watchdog (its lifetime, or a stall).
struct Slot {
    hub: Arc<Hub>,
    opened: Instant,
    released: AtomicBool,
    /// When the body last handed the server an event that the server has not polled past
    /// yet, in nanoseconds since `opened`; [`Slot::NOT_WAITING`] while the body waits on the
    /// ring instead.
    handed_at: AtomicU64,
}

impl Slot {
    const NOT_WAITING: u64 = u64::MAX;

    /// A slot of `hub`'s stream, unless every one is taken.
    fn take(hub: &Arc<Hub>) -> Option<Arc<Slot>> {
        hub.take_stream_slot().then(|| {
            Arc::new(Slot {
                hub: Arc::clone(hub),
                opened: Instant::now(),
                released: AtomicBool::new(false),
                handed_at: AtomicU64::new(Slot::NOT_WAITING),
            })
        })
    }

    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// The server polled the body: whatever it was handed, it took.
    fn polled(&self) {
        self.handed_at.store(Slot::NOT_WAITING, Ordering::Relaxed);
    }

    /// The body hands the server an event now.
    fn handing(&self) {
        let since = u64::try_from(self.opened.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.handed_at.store(since, Ordering::Relaxed);
    }

    /// Since when the server has not taken what the body handed it, if it has not.
    fn stalled_since(&self) -> Option<Instant> {
        match self.handed_at.load(Ordering::Relaxed) {
            Slot::NOT_WAITING => None,
            nanos => Some(self.opened + Duration::from_nanos(nanos)),
        }
    }

    /// Gives the slot back, once. The last slot given back switches the stream's ring off after
    /// the linger: on a timer task when there is a runtime to run it, else at once.
    fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        let stream = &self.hub.stream;
        let Some(departure) = stream.give_back_slot() else {
            return;
        };
        let linger = stream.limits().linger;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if !linger.is_zero() => {
                let hub = Arc::downgrade(&self.hub);
                runtime.spawn(async move {
                    tokio::time::sleep(linger).await;
                    if let Some(hub) = hub.upgrade() {
                        hub.switch_stream_off_after(departure);
                    }
                });
            }
            _ => self.hub.switch_stream_off_after(departure),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.release();
    }
}

/// Gives `slot` back once its stream has lived `lifetime`, or once the server has left an
/// event the body handed it untaken for `stall`; ends with the stream.
async fn watch(slot: Weak<Slot>, lifetime: Duration, stall: Duration) {
    let Some(end) = slot.upgrade().map(|s| s.opened + lifetime) else {
        return;
    };
    loop {
        let next = {
            let Some(slot) = slot.upgrade() else { return };
            if slot.released() {
                return;
            }
            let now = Instant::now();
            let stall_at = slot.stalled_since().map(|since| since + stall);
            if now >= end || stall_at.is_some_and(|at| now >= at) {
                slot.release();
                return;
            }
            // Not stalled yet: look again when it would be, or, if the body is not waiting on
            // the server now, one stall bound from now (a wait that starts meanwhile is then
            // seen before it is due).
            stall_at.unwrap_or(now + stall).min(end)
        };
        tokio::time::sleep_until(next).await;
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
    /// Whether the last read stopped at [`BATCH`] with more to read.
    more: bool,
    slot: Arc<Slot>,
}

impl Client {
    /// Reads what the ring has past the cursor into `pending`, at most [`BATCH`] events.
    fn read(&mut self) {
        let stream = &self.app.hub.stream;
        let ring = &stream.ring;
        let head = ring.head();
        let mut lost = 0u64;
        let oldest = head.saturating_sub(ring.capacity());
        if self.cursor < oldest {
            lost += oldest - self.cursor;
            self.cursor = oldest;
        }
        let until = head.min(self.cursor.saturating_add(BATCH));
        let mut events = Vec::new();
        while self.cursor < until {
            let ticket = self.cursor;
            match ring.read(ticket) {
                Read::Record([meta, at, elapsed, id]) => {
                    if let Some(event) = self.event(ticket, [meta, at, elapsed], id) {
                        events.push(event);
                    }
                }
                Read::Overwritten => lost += 1,
                Read::Pending => {
                    // A run of tickets skipped for events published while the ring was off.
                    if let Some(end) = stream.gap_end(ticket) {
                        let end = end.min(head);
                        lost += end - ticket;
                        self.cursor = end;
                        self.stalled = None;
                        continue;
                    }
                    let now = Instant::now();
                    match self.stalled {
                        Some((t, since)) if t == ticket && now - since >= UNFINISHED_WAIT => {
                            lost += 1
                        }
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
        self.more = self.cursor == until && until < head;
        if lost > 0 {
            self.pending
                .push_back(lagged(&serde_json::json!({ "lost": lost })));
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
        let error = tracked.feed.error_text(&words);
        let dto = EventDto::new(tracked.name(), &record, error.as_deref());
        let data = serde_json::to_string(&dto).ok()?;
        Some(
            Event::default()
                .id(ticket.to_string())
                .event(record.kind.as_str())
                .data(data),
        )
    }
}

/// An `event: lagged` message with `data`.
fn lagged(data: &serde_json::Value) -> Event {
    Event::default().event("lagged").data(data.to_string())
}

/// Where a client starts, given its `Last-Event-ID` (if it sent one): after that event, if it
/// is one of this stream's; else at the newest, with a notice saying why the stream cannot
/// resume from it.
fn resume(hub: &Hub, last_event_id: Option<&HeaderValue>) -> (u64, Option<Event>) {
    let stream = &hub.stream;
    let head = stream.ring.head();
    let Some(value) = last_event_id else {
        return (head, None);
    };
    let given = String::from_utf8_lossy(value.as_bytes());
    let first = stream.first_ticket();
    let why = match given.trim().parse::<u64>() {
        Ok(last) if (first..head).contains(&last) => return (last + 1, None),
        Ok(last) if last < first => format!(
            "Last-Event-ID {last} is from before this stream started: its ids start at {first}, \
             the admin's start time in microseconds since 1970; what was published before now \
             is not known"
        ),
        Ok(last) => format!(
            "Last-Event-ID {last} is beyond this stream's newest event ({}): it is not an id \
             this stream gave (another process?); what was published before now is not known",
            head.saturating_sub(1).max(first)
        ),
        Err(_) => format!(
            "Last-Event-ID \"{}\" is not an id of this stream (a number of at least {first}); \
             what was published before now is not known",
            echo(&given)
        ),
    };
    let notice = lagged(&serde_json::json!({ "lost": null, "message": why }));
    (head, Some(notice))
}

fn open(app: Arc<AppState>, filter: Filter, headers: &HeaderMap) -> Response {
    let Some(slot) = Slot::take(&app.hub) else {
        let max = app.hub.stream.limits().max_clients;
        let mut response = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "at most {max} event streams are served at once, and {max} are open: \
                 try again later"
            ),
        )
        .into_response();
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from_static(RETRY_AFTER_SECONDS),
        );
        return response;
    };
    tokio::spawn(watch(
        Arc::downgrade(&slot),
        app.options.stream_max_lifetime,
        app.options.stream_stall_timeout,
    ));
    // After the slot: taking the first one may skip tickets for what the ring missed.
    let (cursor, notice) = resume(&app.hub, headers.get("last-event-id"));
    let mut interval = tokio::time::interval(app.options.stream_interval);
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let client = Client {
        app,
        cursor,
        filter,
        interval,
        pending: notice.into_iter().collect(),
        stalled: None,
        more: false,
        slot,
    };
    let ping_slot = Arc::downgrade(&client.slot);
    let stream = futures_util::stream::unfold(client, |mut client| async move {
        loop {
            // The server polled: it took what it was handed.
            client.slot.polled();
            if client.slot.released() {
                return None;
            }
            if let Some(event) = client.pending.pop_front() {
                client.slot.handing();
                return Some((Ok::<_, Infallible>(event), client));
            }
            if !client.more {
                client.interval.tick().await;
            }
            client.read();
        }
    });
    Sse::new(with_pings(stream, ping_slot)).into_response()
}

/// `events`, and Resilience4j's heartbeat between them: `event: ping` with no data every
/// [`PING_EVERY`] from a second after the stream opens, however many events it sends (as its
/// `Flux.interval`), so a client may take a missing ping for a dead stream. A browser's
/// `EventSource` dispatches no event without data, so it sees no ping, as with Resilience4j.
/// The pings stop once `slot` is given back, so that the response ends with `events`.
fn with_pings<S>(events: S, slot: Weak<Slot>) -> impl Stream<Item = Result<Event, Infallible>>
where
    S: Stream<Item = Result<Event, Infallible>>,
{
    let mut every = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let pings = futures_util::stream::unfold(every, move |mut every| {
        let slot = slot.clone();
        async move {
            every.tick().await;
            let live = slot.upgrade().is_some_and(|s| !s.released());
            live.then(|| (Ok(Event::default().event("ping")), every))
        }
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
