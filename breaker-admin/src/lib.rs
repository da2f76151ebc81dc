//! An operations surface for [`breaker_core`]'s breakers, bulkheads and retries (used as
//! `breaker::admin` with the facade's feature `admin`): the endpoints of Resilience4j's Spring
//! Boot actuator, a health endpoint for readiness probes, live events and a dashboard, as an
//! axum [`Router`] that a service mounts.
//!
//! ```no_run
//! use breaker_admin::{Admin, Authorization};
//! use breaker_core::Registry;
//!
//! # async fn run() -> std::io::Result<()> {
//! let registry = Registry::new();
//! let admin = Admin::new(&registry)
//!     // The write operation is off unless a hook authorizes each request.
//!     .write_operations(|request: &axum::http::request::Parts| {
//!         match request.headers.get("x-admin-token") {
//!             Some(token) if token == "secret" => Authorization::Allow,
//!             Some(_) => Authorization::Forbidden,
//!             None => Authorization::Unauthorized,
//!         }
//!     });
//! // Either merge it into the service's router ...
//! let app = axum::Router::new().merge(admin.router());
//! # let _ = app;
//! // ... or serve it on a port of its own, on 127.0.0.1 only.
//! admin.serve_local(9090).await
//! # }
//! ```
//!
//! # Routes
//!
//! | route | what |
//! |---|---|
//! | `GET /actuator/circuitbreakers` | every breaker: `{"circuitBreakers": {name: details}}` |
//! | `GET /actuator/circuitbreakers/{name}` | one breaker, in the same envelope |
//! | `POST /actuator/circuitbreakers/{name}` | `{"updateState": "FORCE_OPEN"}`: only with [`Admin::write_operations`] |
//! | `GET /actuator/circuitbreakerevents[/{name}[/{eventType}]]` | recent events: `{"circuitBreakerEvents": [...]}` |
//! | `GET /actuator/streamcircuitbreakerevents[/{name}[/{eventType}]]` | live events, as server-sent events |
//! | `GET /actuator/bulkheads` | every bulkhead's name: `{"bulkheads": [name, ...]}`, sorted |
//! | `GET /actuator/bulkheadevents[/{name}[/{eventType}]]` | recent bulkhead events: `{"bulkheadEvents": [...]}` |
//! | `GET /actuator/retries` | every retry's name: `{"retries": [name, ...]}`, sorted |
//! | `GET /actuator/retryevents[/{name}[/{eventType}]]` | recent retry events: `{"retryEvents": [...]}` |
//! | `GET /actuator/health`, `/actuator/health/circuitBreakers` | Spring's health JSON; 503 when DOWN |
//! | `GET /actuator/prometheus` | only with [`Admin::prometheus`] |
//! | `GET /dashboard`, `/dashboard/dashboard.js`, `/dashboard/dashboard.css` | the dashboard page |
//! | `GET /dashboard/api/breakers`, `/dashboard/api/breakers/{name}/events` | the dashboard's data |
//! | `GET /dashboard/api/breakers/{name}/states` | one breaker's state history (below) |
//!
//! `{name}` is a breaker's display name ([`CircuitBreaker::name`], `name[key]` for a keyed
//! one), or a bulkhead's under `bulkheadevents`, or a retry's under `retryevents`,
//! percent-encoded in the path (`tenant%5Bacme%5D`; a `/` in a key as `%2F`). A name that
//! matches no breaker (no bulkhead, no retry) is a 404 whose JSON body names it; an unknown
//! `eventType` is a 400 that lists the valid ones (a bulkhead's are `CALL_PERMITTED`,
//! `CALL_REJECTED`, `CALL_FINISHED`; a retry's `RETRY`, `ERROR`, `SUCCESS`, `IGNORED_ERROR`,
//! `BUDGET_EXHAUSTED`; in any case). Every error body is `{"status", "error", "message"}` plus the field at
//! fault.
//!
//! # The JSON, and where it differs from Resilience4j's
//!
//! Field names, number formats and statuses are Resilience4j's actuator JSON: rates and
//! thresholds are strings as Java prints a float, then `%` (`"50.0%"`, `"-1.0%"` before the
//! minimum number of calls); `creationTime` is Java's `ZonedDateTime` text in UTC
//! (`2023-11-14T22:13:20.250Z`); `stateTransition` is `CLOSED_TO_OPEN`. Where breaker differs:
//!
//! - Resilience4j's write operation and event endpoints (the bulkheads' and retries' too) make
//!   or answer an unknown name (an empty list); here an unknown name is a 404, so a typo is
//!   seen and no request creates a breaker. An unknown bulkhead or retry event type is a 400
//!   that lists the valid ones (Resilience4j's `BulkheadEvent.Type.valueOf` and
//!   `RetryEvent.Type.valueOf` throw an `IllegalArgumentException`).
//! - `updateState` takes Resilience4j's `CLOSE`, `FORCE_OPEN` and `DISABLE`, and `METRICS_ONLY`
//!   too. An unknown operation is a 400 (Resilience4j answers 200 with a message).
//! - A breaker event's `errorMessage` (ERROR and IGNORED_ERROR) is Resilience4j's
//!   `throwable.toString()` shape, `type: text`: the error's Rust type name
//!   (`std::io::error::Error`) where Java prints the class name, then its `Display` text where
//!   the breaker can find one ([`ErrorText`](breaker_core::ErrorText): under the attribute, with
//!   [`Described`](breaker_core::Described), for the reqwest middleware and for the types the
//!   breaker knows on its own), cut at 256 bytes and marked `…`; a type without `Display` is
//!   named alone. Each breaker keeps the texts of its newest 16 failed or ignored calls (below),
//!   where Resilience4j keeps every buffered event's throwable: older ERROR events in the ring
//!   show none. A retry event's `errorMessage` says what the event tells instead (below).
//! - `GET /actuator/circuitbreakerevents` (every breaker), `GET /actuator/bulkheadevents`
//!   (every bulkhead) and `GET /actuator/retryevents` (every retry) give at most the newest
//!   10,000 events; each breaker, bulkhead and retry keeps its `event-consumer-buffer-size`
//!   newest. Events at the same instant come in name order.
//! - The bulkhead endpoints list the semaphore bulkheads of the registry; breaker has no
//!   thread-pool bulkhead, which Resilience4j's also lists.
//! - The event stream writes each event as a plain `data:` message (no `event:` name, so a
//!   browser's `onmessage` gets it) with the stream's sequence number as its `id:`; a
//!   reconnecting client's `Last-Event-ID` resumes after it.
//!
//! # Bulkheads
//!
//! `GET /actuator/bulkheads` is Resilience4j's `BulkheadEndpointResponse`, the names only.
//! Each bulkhead's events are Resilience4j's `BulkheadEventDTO`, its fields in its order:
//!
//! ```json
//! {"bulkheadEvents":[{"bulkheadName":"inventory","type":"CALL_PERMITTED","creationTime":"2023-11-14T22:13:20Z"},
//!  {"bulkheadName":"inventory","type":"CALL_REJECTED","creationTime":"2023-11-14T22:13:20.500Z"}]}
//! ```
//!
//! Each bulkhead keeps its newest `event-consumer-buffer-size` events (its own key, default
//! 100) in a ring of two words an event (16 bytes, 1.6 KB for 100), written by one listener on
//! the calling thread with atomics only, like a breaker's (below). The ring is sized when the
//! admin starts following the bulkhead: a later `change_config` keeps its size. On the
//! dashboard, a breaker's tile shows the bulkhead of its name (calls in flight against its
//! limit), and a bulkhead no breaker shares a name with gets a tile of its own.
//!
//! # Retries
//!
//! `GET /actuator/retries` is Resilience4j's `RetryEndpointResponse`, the names only. Each
//! retry's events are Resilience4j's `RetryEventDTO`, its fields in its order:
//!
//! ```json
//! {"retryEvents":[{"retryName":"inventory","type":"RETRY","creationTime":"2023-11-14T22:13:20Z",
//!   "errorMessage":"the attempt failed; the next one starts in 500 ms","numberOfAttempts":1},
//!  {"retryName":"inventory","type":"SUCCESS","creationTime":"2023-11-14T22:13:20.500Z","numberOfAttempts":1}]}
//! ```
//!
//! `type` is Resilience4j's `RETRY`, `ERROR`, `SUCCESS` or `IGNORED_ERROR`, or breaker's own
//! `BUDGET_EXHAUSTED` (the retry budget refused a retry; the call ended with its last
//! outcome). `numberOfAttempts` is the event's
//! [`number_of_attempts`](breaker_core::retry::RetryEvent::number_of_attempts).
//! Resilience4j's `errorMessage` is the last error's `toString()`; the core's events carry no
//! error, so it says what the event tells: `the attempt failed; the next one starts in 500 ms`
//! (RETRY, the wait in whole milliseconds), `every attempt failed: the retry gave up` (ERROR),
//! `the error is ignored: the retry does not retry it` (IGNORED_ERROR), `the attempt failed and
//! the retry budget refused the next one` (BUDGET_EXHAUSTED); a SUCCESS has none, and leaves
//! the field out as Spring leaves a null out.
//!
//! Each retry keeps its newest `event-consumer-buffer-size` events (its own key, default 100)
//! in a ring of four words an event (40 bytes with the slot's sequence word, 4 KB for 100),
//! written by one listener on the calling thread with atomics only, like a bulkhead's. On the
//! dashboard, a breaker's tile shows the retry of its name (its four counts and the budget's
//! refusals); a retry no breaker shares a name with is listed by the endpoints only.
//!
//! # State history
//!
//! `GET /dashboard/api/breakers/{name}/states` is what the dashboard draws a timeline's state
//! bands from: the breaker's state when the admin started following it, and its newest 32 state
//! changes since, oldest first.
//!
//! ```json
//! {"name": "payments", "since": "2023-11-14T22:13:20Z", "initialState": "CLOSED", "dropped": 0,
//!  "transitions": [
//!    {"type": "STATE_TRANSITION", "creationTime": "2023-11-14T22:13:21Z",
//!     "stateTransition": "CLOSED_TO_OPEN", "from": "CLOSED", "to": "OPEN"},
//!    {"type": "RESET", "creationTime": "2023-11-14T22:14Z", "to": "CLOSED"}]}
//! ```
//!
//! `since` and `creationTime` are written as the events' `creationTime`; `to` is the state from
//! then on (a `RESET` has no `from`: a reset from another state than CLOSED is a
//! `STATE_TRANSITION` to CLOSED first, at the same time). `dropped` counts the older changes no
//! longer kept: 0 means the list is every change since `since`; above 0 the state is known only
//! from the oldest change listed. A change published while the admin attached to the breaker
//! can be listed at or just before `since` (`initialState` already includes it).
//!
//! # Health
//!
//! Only breakers with `register-health-indicator` appear. CLOSED is `UP`, HALF_OPEN is
//! `CIRCUIT_HALF_OPEN`, OPEN is `DOWN` with `allow-health-indicator-to-fail` and `CIRCUIT_OPEN`
//! without, FORCED_OPEN, DISABLED and METRICS_ONLY are `UNKNOWN`, as Resilience4j maps them.
//! The aggregate is Spring's default: the first of `DOWN`, `OUT_OF_SERVICE`, `UP`, `UNKNOWN`
//! present; custom statuses (`CIRCUIT_OPEN`, `CIRCUIT_HALF_OPEN`) are outside that order and left
//! out, so one CLOSED and one OPEN breaker are `UP`, a service whose only breakers are OPEN
//! without allow-to-fail is `UNKNOWN`, and **no breaker with a health indicator is `UNKNOWN`**
//! (what Spring answers for an empty set). The HTTP status is 503 for `DOWN` and 200 otherwise
//! (Spring's default mapping), so the endpoint works as a Kubernetes readiness probe that fails
//! only when a breaker allowed to fail is OPEN.
//!
//! # Events and their cost
//!
//! Each breaker keeps its newest `event-consumer-buffer-size` events (default 100, Spring's
//! key) in a ring of its own, oldest first, and counts its calls, failures, slow calls and
//! rejections since the admin started following it. On a busy breaker 100 events are a few
//! seconds of calls, so it also keeps its newest 32 state changes (STATE_TRANSITION and RESET
//! events only) in a second ring, whatever its buffer size, with its state and the time when
//! the admin started following it: the state history above. All of it is written by one
//! listener on the thread that publishes the event, with atomics only: no lock, no waiting
//! (see `ring.rs`; a state change is one more ring write). A success is one ring write and
//! nothing else (the calls are counted by the ring's tickets, less the rejections and other
//! events, which have counters of their own). The listener subscribes with error texts
//! ([`CircuitBreaker::subscribe_with_error_texts`]): each failed or ignored call has its
//! error's text built once (one allocation), and the newest 16 are kept beside the ring under
//! a `try_lock`, so a call never waits (a text is left out if the lock is taken at that
//! instant, by a reader or another failing call); a text equal to the newest kept shares its
//! allocation. The stream's ring, shared by every breaker, is written only while a stream
//! client is connected. The breaker itself publishes a CLOSED call's event without its lock,
//! as it records the call, so following a breaker puts no call behind a lock either; what it
//! costs per call is measured in docs/PERFORMANCE.md ("The operations surface under load").
//! Without the `admin` feature none of this exists.
//!
//! Per breaker, a ring slot is its sequence word and the record's words, 8 bytes each, and a
//! ring has the next power of two of slots: an event is 4 words (32 bytes, 4 KB for 100 events
//! in 128 slots), a state change 3 (24 bytes, 768 bytes for 32), plus about 300 bytes of
//! counters, the rings' heads, the error texts' lock and the breaker's entry: about 5.2 KB a
//! breaker at the default buffer size (5.7 KB measured as resident memory, 57 MiB for 10,000
//! breakers in docs/PERFORMANCE.md's bench), and up to 16 texts of at most 256 bytes each for
//! a breaker whose calls fail. A buffer size just above a power of two (129) nearly doubles the
//! event ring's slots.
//!
//! Breakers are followed from when the admin is built: those in the registry then, and each one
//! added later ([`Registry::on_registry_event_for`], which drops the hook with the admin); a
//! removed, replaced or evicted breaker's rings are dropped with it (a replacement is followed
//! afresh: its state history's `since` is when it came in). Bulkheads and retries likewise,
//! through [`Registry::on_bulkhead_registry_event_for`] and
//! [`Registry::on_retry_registry_event_for`]: a removed bulkhead's (retry's) endpoints answer
//! 404 at once, and one made again under its name starts with no events.
//!
//! # Binding
//!
//! [`Admin::router`] binds nothing: the service serves it on its own listener, merged or nested
//! into its router, and chooses who can reach it. [`Admin::serve_local`] binds `127.0.0.1` and
//! nothing else; to expose the admin on another address, bind a listener there and serve
//! `router()` yourself, behind whatever authentication the network needs.
//!
//! [`CircuitBreaker::name`]: breaker_core::CircuitBreaker::name
//! [`CircuitBreaker::subscribe_with_error_texts`]: breaker_core::CircuitBreaker::subscribe_with_error_texts
//! [`Registry::on_registry_event_for`]: breaker_core::Registry::on_registry_event_for
//! [`Registry::on_bulkhead_registry_event_for`]: breaker_core::Registry::on_bulkhead_registry_event_for
//! [`Registry::on_retry_registry_event_for`]: breaker_core::Registry::on_retry_registry_event_for

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use breaker_core::Registry;

mod bulkheads;
mod event;
mod hub;
mod json;
mod options;
mod retries;
mod ring;
#[cfg(test)]
mod ring_tests;
mod roster;
mod routes;
mod text;

/// The atomics the ring is made of: std's here; loom's where `tests/admin/ring_loom.rs` compiles
/// `ring.rs` into its model.
mod sync {
    pub(crate) use std::sync::atomic::{fence, AtomicU64};
}

use crate::hub::Hub;
use crate::options::Options;
pub use crate::options::{Authorization, Authorize};

/// The default stream ring: events of every breaker kept for the server-sent event clients.
pub const DEFAULT_STREAM_BUFFER_SIZE: usize = 4096;

/// The largest stream ring [`AdminBuilder::stream_buffer_size`] takes.
pub const MAX_STREAM_BUFFER_SIZE: usize = 1 << 20;

/// The operations surface over one registry: build it, then mount [`Admin::router`] or run
/// [`Admin::serve_local`].
///
/// Building it attaches to the registry's breakers (see the crate's docs); the methods that
/// follow choose the routes. Every read endpoint is on by default; the write operation and the
/// Prometheus route are off until given what they need.
pub struct Admin {
    hub: Arc<Hub>,
    options: Options,
}

/// Builds an [`Admin`] with settings fixed for its life: [`Admin::builder`].
#[derive(Debug)]
pub struct AdminBuilder {
    registry: Registry,
    stream_buffer_size: usize,
}

impl AdminBuilder {
    /// How many events (of every breaker together) the stream keeps for clients that read
    /// behind the newest: default [`DEFAULT_STREAM_BUFFER_SIZE`], from 1 to
    /// [`MAX_STREAM_BUFFER_SIZE`] (a value outside is clamped). A client that falls further
    /// behind gets an `event: lagged` with the number of events it lost.
    pub fn stream_buffer_size(mut self, events: usize) -> AdminBuilder {
        self.stream_buffer_size = events.clamp(1, MAX_STREAM_BUFFER_SIZE);
        self
    }

    /// The admin, attached to the registry's breakers from now on.
    pub fn build(self) -> Admin {
        Admin {
            hub: Hub::attach(&self.registry, self.stream_buffer_size),
            options: Options {
                circuit_breakers: true,
                events: true,
                bulkheads: true,
                bulkhead_events: true,
                retries: true,
                retry_events: true,
                stream: true,
                health: true,
                health_details: true,
                dashboard: true,
                write: None,
                prometheus: None,
                stream_interval: Duration::from_millis(100),
            },
        }
    }
}

impl Admin {
    /// The admin of `registry` with the default settings (`Admin::builder(registry).build()`).
    pub fn new(registry: &Registry) -> Admin {
        Admin::builder(registry).build()
    }

    /// A builder, for the settings fixed when the admin attaches.
    pub fn builder(registry: &Registry) -> AdminBuilder {
        AdminBuilder {
            registry: registry.clone(),
            stream_buffer_size: DEFAULT_STREAM_BUFFER_SIZE,
        }
    }

    /// Mounts `POST /actuator/circuitbreakers/{name}` (Resilience4j's write operation), guarded
    /// by `hook`: each request is first shown to it, and only [`Authorization::Allow`] goes on
    /// (401 for [`Authorization::Unauthorized`], 403 for [`Authorization::Forbidden`], before
    /// the body is read or the name looked up). Without this call the route does not exist.
    ///
    /// The body must be JSON (`Content-Type: application/json`, which also keeps a browser on
    /// another site from posting it without a preflight), at most 4 KiB:
    /// `{"updateState": "CLOSE" | "FORCE_OPEN" | "DISABLE" | "METRICS_ONLY"}`. The answer is
    /// Resilience4j's `{"circuitBreakerName", "currentState", "message"}`; each change is logged
    /// at INFO with the breaker's name (escaped) and the operation.
    pub fn write_operations(mut self, hook: impl Authorize) -> Admin {
        self.options.write = Some(Arc::new(hook));
        self
    }

    /// Mounts `GET /actuator/prometheus`, answered by `render` as
    /// `text/plain; version=0.0.4; charset=utf-8` (with `metrics-exporter-prometheus`,
    /// `move || handle.render()`). Without this call the route does not exist.
    pub fn prometheus<F>(mut self, render: F) -> Admin
    where
        F: Fn() -> String + Send + Sync + 'static,
    {
        self.options.prometheus = Some(Arc::new(render));
        self
    }

    /// Serves `GET /actuator/circuitbreakers` and `/{name}` (default on).
    pub fn circuit_breakers_endpoint(mut self, on: bool) -> Admin {
        self.options.circuit_breakers = on;
        self
    }

    /// Serves `GET /actuator/circuitbreakerevents` and below (default on).
    pub fn events_endpoint(mut self, on: bool) -> Admin {
        self.options.events = on;
        self
    }

    /// Serves `GET /actuator/bulkheads` (default on).
    pub fn bulkheads_endpoint(mut self, on: bool) -> Admin {
        self.options.bulkheads = on;
        self
    }

    /// Serves `GET /actuator/bulkheadevents` and below (default on).
    pub fn bulkhead_events_endpoint(mut self, on: bool) -> Admin {
        self.options.bulkhead_events = on;
        self
    }

    /// Serves `GET /actuator/retries` (default on).
    pub fn retries_endpoint(mut self, on: bool) -> Admin {
        self.options.retries = on;
        self
    }

    /// Serves `GET /actuator/retryevents` and below (default on).
    pub fn retry_events_endpoint(mut self, on: bool) -> Admin {
        self.options.retry_events = on;
        self
    }

    /// Serves `GET /actuator/streamcircuitbreakerevents` and below (default on).
    pub fn stream_endpoint(mut self, on: bool) -> Admin {
        self.options.stream = on;
        self
    }

    /// Serves `GET /actuator/health` and `/actuator/health/circuitBreakers` (default on).
    pub fn health_endpoint(mut self, on: bool) -> Admin {
        self.options.health = on;
        self
    }

    /// Whether the health JSON names the breakers and shows their details (default on); off,
    /// it is only `{"status": ...}`, as Spring's `show-details: never` (the HTTP status is the
    /// same).
    pub fn health_details(mut self, on: bool) -> Admin {
        self.options.health_details = on;
        self
    }

    /// Serves the dashboard page and its `/dashboard/api/...` data (default on).
    pub fn dashboard_endpoint(mut self, on: bool) -> Admin {
        self.options.dashboard = on;
        self
    }

    /// How often each stream client reads the stream's ring (default 100 ms, from 1 ms to
    /// 1 s; a value outside is clamped). Events reach a client within about this long.
    pub fn stream_interval(mut self, every: Duration) -> Admin {
        self.options.stream_interval =
            every.clamp(Duration::from_millis(1), Duration::from_secs(1));
        self
    }

    /// The routes, to `merge` or `nest` into the service's router. It binds nothing.
    pub fn router(&self) -> Router {
        routes::router(Arc::new(routes::AppState {
            hub: Arc::clone(&self.hub),
            options: self.options.clone(),
        }))
    }

    /// Serves [`Admin::router`] on `127.0.0.1:port` until the listener fails; it never binds
    /// another address. Port 0 picks a free port (which only the OS then knows; bind your own
    /// listener to learn it).
    pub async fn serve_local(self, port: u16) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(local_address(port)).await?;
        axum::serve(listener, self.router()).await
    }
}

/// The only address [`Admin::serve_local`] binds.
fn local_address(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

impl fmt::Debug for Admin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        f.debug_struct("Admin")
            .field("hub", &self.hub)
            .field("write_operations", &o.write.is_some())
            .field("prometheus", &o.prometheus.is_some())
            .field("circuit_breakers", &o.circuit_breakers)
            .field("events", &o.events)
            .field("bulkheads", &o.bulkheads)
            .field("bulkhead_events", &o.bulkhead_events)
            .field("retries", &o.retries)
            .field("retry_events", &o.retry_events)
            .field("stream", &o.stream)
            .field("health", &o.health)
            .field("dashboard", &o.dashboard)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_local_binds_loopback_only() {
        for port in [0, 9090, u16::MAX] {
            let address = local_address(port);
            assert!(address.ip().is_loopback(), "{address}");
            assert_eq!(address.port(), port);
        }
    }
}
