//! An operations surface for [`breaker_core`]'s breakers, bulkheads and retries (used as
//! `breaker::admin` with the facade's feature `admin`): the endpoints of Resilience4j's Spring
//! Boot actuator, Spring Boot's health endpoint with its Kubernetes probes and its `/actuator`
//! links index, live events and a dashboard, as an axum [`Router`] that a service mounts.
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
//! | `GET /actuator/circuitbreakers/{name}` | one breaker, in the same envelope (breaker's own: Resilience4j has only the POST here) |
//! | `POST /actuator/circuitbreakers/{name}` | `{"updateState": "FORCE_OPEN"}`: only with [`Admin::write_operations`] |
//! | `GET /actuator/circuitbreakerevents[/{name}[/{eventType}]]` | recent events: `{"circuitBreakerEvents": [...]}` |
//! | `GET /actuator/streamcircuitbreakerevents[/{name}[/{eventType}]]` | live events, as server-sent events |
//! | `GET /actuator/bulkheads` | every bulkhead's name: `{"bulkheads": [name, ...]}`, sorted |
//! | `GET /actuator/bulkheadevents[/{name}[/{eventType}]]` | recent bulkhead events: `{"bulkheadEvents": [...]}` |
//! | `GET /actuator/retries` | every retry's name: `{"retries": [name, ...]}`, sorted |
//! | `GET /actuator/retryevents[/{name}[/{eventType}]]` | recent retry events: `{"retryEvents": [...]}` |
//! | `GET /actuator` | Spring Boot's links index of the endpoints mounted (below) |
//! | `GET /actuator/health` | Spring's health JSON, `{"status": "UP", "groups": [...]}` by default; 503 when DOWN or OUT_OF_SERVICE |
//! | `GET /actuator/health/liveness`, `/actuator/health/readiness` | the Kubernetes probes, Spring Boot's availability groups |
//! | `GET /actuator/health/{component}` | one component (`circuitBreakers`, `ping`, ...), only with [`Admin::health_components`] or [`Admin::health_details`] |
//! | `GET /actuator/prometheus` | only with [`Admin::prometheus`] |
//! | `GET /dashboard`, `/dashboard/dashboard.js`, `/dashboard/dashboard.css` | the dashboard page |
//! | `GET /dashboard/api/breakers`, `/dashboard/api/breakers/{name}/events` | the dashboard's data |
//! | `GET /dashboard/api/breakers/{name}/states` | one breaker's state history (below) |
//!
//! `{name}` is a breaker's display name ([`CircuitBreaker::name`], `name[key]` for a keyed
//! one), or a bulkhead's under `bulkheadevents`, or a retry's under `retryevents`,
//! percent-encoded in the path (`tenant%5Bacme%5D`; a `/` in a key as `%2F`). For a name that
//! matches no breaker (no bulkhead, no retry) the event lists answer an empty list and the
//! stream stays open for the name (below); `GET` and `POST /actuator/circuitbreakers/{name}`
//! and the dashboard's per-breaker routes answer a 404 whose JSON body names it. `{eventType}`
//! is read upper-cased, as Resilience4j reads it, or as leniently as `updateState`
//! (`state-transition`, `stateTransition`); one that names no type is a 400 that lists the
//! valid ones (a breaker's are Resilience4j's ten, a bulkhead's `CALL_PERMITTED`,
//! `CALL_REJECTED`, `CALL_FINISHED`, a retry's `RETRY`, `ERROR`, `SUCCESS`, `IGNORED_ERROR`,
//! `BUDGET_EXHAUSTED`), whatever the name. Every error body is `{"status", "error",
//! "message"}` plus the field at fault.
//!
//! # The JSON, and where it differs from Resilience4j's
//!
//! Field names, their order, number formats and statuses are Resilience4j's actuator JSON.
//! Each body's fields come in the order of the Java class's fields, which is the order Jackson
//! writes them in, whatever serde_json features the build turns on; the breakers'
//! `circuitBreakers` map is in name order, as Resilience4j sorts it. Rates and thresholds are
//! strings as Java prints a float, then `%` (`"50.0%"`, `"-1.0%"` before the minimum number of
//! calls); `creationTime` is Java's `ZonedDateTime.toString()` in a JVM whose zone is UTC
//! (`2023-11-14T22:13:20.250Z[UTC]`, seconds left out at `:00` with no fraction, a fraction of
//! 3, 6 or 9 digits); `stateTransition` is `CLOSED_TO_OPEN`. An event DTO has every field of
//! Resilience4j's, in its order (`circuitBreakerName`, `type`, `creationTime`, `errorMessage`,
//! `durationInMs`, `stateTransition`), and one the event has no value for is `null`: Jackson
//! writes it so in Resilience4j's stream (a plain `ObjectMapper`) and in its event lists,
//! which Spring Boot writes with the application's mapper (its own non-null endpoint mapper
//! takes only Spring's endpoint types), unless the service sets
//! `spring.jackson.default-property-inclusion: non_null`; a client written for either reads
//! both. `updateState` is read as Spring converts an enum parameter: trimmed, in any case, with
//! anything but letters and digits ignored (`force_open`, `Force-Open`, `forceOpen`).
//!
//! The event stream is Resilience4j's: each message is named by the event's type (`event:
//! STATE_TRANSITION`, so `addEventListener("STATE_TRANSITION")` receives it and a browser's
//! `onmessage` does not) with the DTO as its `data:`, and every second, whatever the traffic,
//! comes `event: ping` with no data (which a browser's `EventSource` does not dispatch, with
//! Resilience4j's stream as with this one; other clients filter it out by its name). Where
//! breaker differs:
//!
//! - A message's `id:` is the stream's sequence number, not the breaker's name (the DTO's
//!   `circuitBreakerName` has it): a reconnecting client's `Last-Event-ID` resumes after it. A
//!   client that falls behind gets `event: lagged` with `{"lost": n}` where Resilience4j drops
//!   events without a word.
//! - No request makes a breaker. Resilience4j's write operation and stream make an unknown
//!   name's breaker; here `POST /actuator/circuitbreakers/{name}` answers an unknown name with
//!   a 404 (a typo is seen), and the stream of an unknown name stays open and carries the events
//!   of whichever breaker has the name, so one an attribute makes on its first call is seen from
//!   that call. The event lists answer an unknown name with an empty list, as Resilience4j's
//!   do (the bulkheads' and retries' too).
//! - `GET /actuator/circuitbreakers/{name}` is breaker's own (Resilience4j serves only the POST
//!   there); an unknown name is a 404.
//! - An `{eventType}` that names no type is a 400 that lists the valid ones, whatever the name;
//!   Resilience4j's `Type.valueOf` throws (a 500) for a name with events, and answers an empty
//!   list for one without.
//! - `updateState` takes Resilience4j's `CLOSE`, `FORCE_OPEN` and `DISABLE`, and `METRICS_ONLY`
//!   too. A value Spring's converter would not convert is a 400 that names it and lists the
//!   four, as Spring answers 400; a blank one is a 400 too (Spring passes no value, on which
//!   Resilience4j's operation fails with a 500).
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
//!   newest. Events at the same instant come in name order. Resilience4j gathers and sorts
//!   every buffered event; here the newest 10,000 are picked without gathering the rest, so a
//!   request costs what the cap and the number of instances cost, not what is stored (below,
//!   "Events and their cost").
//! - The bulkhead endpoints list the semaphore bulkheads of the registry; breaker has no
//!   thread-pool bulkhead, which Resilience4j's also lists.
//! - `creationTime` always names the zone `UTC`; a JVM whose zone is another region (or
//!   `Etc/UTC`) prints that one. The dashboard's state history writes its times the same way.
//! - The event stream serves at most 256 clients at once by default (a JSON 503 beyond), ends
//!   a stream after 5 minutes or once it leaves an event untaken for 30 seconds, and tells a
//!   client what it missed (`event: lagged`); Resilience4j's endpoint bounds neither its
//!   clients' number nor their time, and drops what a slow client cannot take without saying
//!   so. Its ids are numbers that resume; Resilience4j's `id` is the breaker's name and does
//!   not. See "The event stream" below.
//! - Health: the `circuitBreakers` component is always there (Resilience4j registers it only
//!   with `management.health.circuitbreakers.enabled`): with no breaker registering a health
//!   indicator it is UNKNOWN, which leaves the service UP, so it costs nothing to have. Its
//!   breakers come in name order (Resilience4j collects them into a `HashMap`). The probes are
//!   on by default, as in Spring Boot 4 (Spring Boot 3 turns them on only on Kubernetes), so the
//!   root lists `groups`; `health_probes(false)` gives the bare `{"status":"UP"}`. Spring's
//!   other indicators (`diskSpace`, a data source's) are not here: a service's own checks are
//!   its own. A 404 under `/actuator/health` has the JSON error body (Spring's is empty); it
//!   says whether components are hidden, never whether a hidden name exists.
//! - The links index lists this admin's endpoints only, in the order of the route table above
//!   (Spring's follows the order its endpoints were found in). Its hrefs need the request's host:
//!   a missing or malformed `Host` is a 400 (Spring always has a request URL), and the scheme is
//!   `http` unless the request URI carries one (no forwarded header is trusted).
//!
//! # Bulkheads
//!
//! `GET /actuator/bulkheads` is Resilience4j's `BulkheadEndpointResponse`, the names only.
//! Each bulkhead's events are Resilience4j's `BulkheadEventDTO`, its fields in its order:
//!
//! ```json
//! {"bulkheadEvents":[{"bulkheadName":"inventory","type":"CALL_PERMITTED","creationTime":"2023-11-14T22:13:20Z[UTC]"},
//!  {"bulkheadName":"inventory","type":"CALL_REJECTED","creationTime":"2023-11-14T22:13:20.500Z[UTC]"}]}
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
//! {"retryEvents":[{"retryName":"inventory","type":"RETRY","creationTime":"2023-11-14T22:13:20Z[UTC]",
//!   "errorMessage":"the attempt failed; the next one starts in 500 ms","numberOfAttempts":1},
//!  {"retryName":"inventory","type":"SUCCESS","creationTime":"2023-11-14T22:13:20.500Z[UTC]",
//!   "errorMessage":null,"numberOfAttempts":1}]}
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
//! the retry budget refused the next one` (BUDGET_EXHAUSTED); a SUCCESS has none (`null`).
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
//! {"name": "payments", "since": "2023-11-14T22:13:20Z[UTC]", "initialState": "CLOSED", "dropped": 0,
//!  "transitions": [
//!    {"type": "STATE_TRANSITION", "creationTime": "2023-11-14T22:13:21Z[UTC]",
//!     "stateTransition": "CLOSED_TO_OPEN", "from": "CLOSED", "to": "OPEN"},
//!    {"type": "RESET", "creationTime": "2023-11-14T22:14Z[UTC]", "to": "CLOSED"}]}
//! ```
//!
//! `since` and `creationTime` are written as the events' `creationTime`; `to` is the state from
//! then on (a `RESET` has no `from`: a reset from another state than CLOSED is a
//! `STATE_TRANSITION` to CLOSED first, at the same time). `dropped` counts the older changes no
//! longer kept: 0 means the list is every change since `since`; above 0 the state is known only
//! from the oldest change listed. A change published while the admin attached to the breaker
//! can be listed at or just before `since` (`initialState` already includes it).
//!
//! # The event stream
//!
//! `GET /actuator/streamcircuitbreakerevents` sends every breaker's events (or one breaker's,
//! or one type's) as they happen, from a ring of the newest
//! [`stream_buffer_size`](AdminBuilder::stream_buffer_size) events of all breakers (default
//! 4,096) that each client reads at its own pace, a heartbeat (`ping`) each second in between.
//!
//! - **Ids and resuming.** Each event's `id:` is its number in the stream. Numbers start at the
//!   admin's start time in microseconds since 1970 (on the registry's clock) and go up by one an
//!   event, so an earlier run's ids are below this run's. A client that reconnects with
//!   `Last-Event-ID` (an `EventSource` does by itself) resumes after that event. One that fell
//!   further behind than the ring holds first gets `event: lagged` with `data: {"lost": n}`, the
//!   number of events it missed, then reads on from the oldest still held. A `Last-Event-ID`
//!   from before this admin started, beyond its newest event (another process's) or not a
//!   number gets `event: lagged` with `{"lost": null, "message": ...}` saying which, and the
//!   stream goes on from the newest event.
//! - **No client, no cost.** The ring is written only while a client is connected, and for
//!   [`stream_linger`](AdminBuilder::stream_linger) after the last one leaves (default 10 s),
//!   so that a client that reconnects within it misses nothing. After that a call costs the
//!   stream nothing (one atomic read). What was published while the ring was off is counted from
//!   what each breaker keeps anyway (its own ring's head): a client that resumes from before that
//!   time gets `event: lagged` with the number of events published meanwhile. The count is exact
//!   unless a call published at the very instant the ring was switched on or off (such a call
//!   can be counted lost and still be delivered); events of a breaker removed meanwhile are not
//!   counted (their breaker has no name left to show).
//! - **Slots.** At most [`max_stream_clients`](AdminBuilder::max_stream_clients) streams are
//!   served at once (default 256); the next client gets a 503 whose JSON says so, with
//!   `Retry-After: 5`. A client that connects and never reads gives its slot back within a
//!   bound: under light traffic the kernel's socket buffers take its heartbeats and few events
//!   for hours, so no write ever blocks, and only the stream's
//!   [lifetime](Admin::stream_max_lifetime) frees it (default 5 minutes; the server then ends
//!   the stream and an `EventSource` reconnects with its `Last-Event-ID`, missing nothing the
//!   ring holds); under heavy traffic its buffers fill in seconds, and a
//!   [stall bound](Admin::stream_stall_timeout) frees it once an event handed to the server has
//!   stayed untaken that long (default 30 s). [`Admin::stream_clients`] counts the slots taken.
//!   Each client holds at most 128 events read from the ring at a time, whatever the ring's size.
//!   The slot, not the connection: a stalled connection stays open until the peer or the
//!   server's own timeouts close it (it costs no call anything).
//!
//! # Health
//!
//! `GET /actuator/health` answers as a Spring Boot service with Resilience4j's starter (and its
//! health indicator enabled) answers. The service's status aggregates its components':
//!
//! | component | status |
//! |---|---|
//! | `circuitBreakers` | Resilience4j's indicator over the breakers with `register-health-indicator` (below) |
//! | `livenessState` | `UP`; `DOWN` after [`Liveness::mark_broken`] (Spring's `LivenessState`) |
//! | `ping` | always `UP` (Spring's `PingHealthIndicator`) |
//! | `readinessState` | `UP`; `OUT_OF_SERVICE` after [`Readiness::refuse_traffic`] (Spring's `ReadinessState`) |
//!
//! (`livenessState` and `readinessState` with the probes, on unless [`Admin::health_probes`]
//! turns them off.) Aggregating is Spring's default: the first of `DOWN`, `OUT_OF_SERVICE`,
//! `UP`, `UNKNOWN` present; a status outside that order (Resilience4j's custom ones) is left
//! out, and with nothing left the result is `UNKNOWN`. `DOWN` and `OUT_OF_SERVICE` answer 503,
//! every other status 200 (Spring's default mapping).
//!
//! In `circuitBreakers`, CLOSED is `UP`, HALF_OPEN is `CIRCUIT_HALF_OPEN`, OPEN is `DOWN` with
//! `allow-health-indicator-to-fail` and `CIRCUIT_OPEN` without, FORCED_OPEN, DISABLED and
//! METRICS_ONLY are `UNKNOWN`, as Resilience4j maps them, aggregated the same way. So with no
//! breaker registered, or only OPEN ones not allowed to fail, the component is `UNKNOWN` and
//! the service `UP` (`ping` is); one breaker allowed to fail that is OPEN makes both `DOWN`.
//!
//! What it shows beyond the status follows Spring's `show-details` and `show-components`, both
//! `never` by default: the status, and the probe groups' names.
//!
//! ```json
//! {"status":"UP","groups":["liveness","readiness"]}
//! ```
//!
//! [`Admin::health_details`] (`show-details: always`) shows the components and each breaker's
//! details, keys in Spring's order (components by name, `groups` last, a breaker's details in
//! the order Resilience4j's indicator adds them):
//!
//! ```json
//! {"status":"UP","components":{"circuitBreakers":{"status":"UP","details":{
//!    "inventory":{"status":"UP","details":{"failureRate":"-1.0%","failureRateThreshold":"50.0%",
//!      "slowCallRate":"-1.0%","slowCallRateThreshold":"100.0%","bufferedCalls":3,"slowCalls":0,
//!      "slowFailedCalls":0,"failedCalls":0,"notPermittedCalls":0,"state":"CLOSED"}},
//!    "payments":{"status":"CIRCUIT_OPEN","details":{"failureRate":"100.0%", ...,"state":"OPEN"}}}},
//!  "livenessState":{"status":"UP"},"ping":{"status":"UP"},"readinessState":{"status":"UP"}},
//!  "groups":["liveness","readiness"]}
//! ```
//!
//! [`Admin::health_components`] (`show-components`) shows the components with their statuses
//! but no breaker unless the details are shown too. A component's own path
//! (`/actuator/health/circuitBreakers`, `/actuator/health/ping`) answers only where components
//! are shown; elsewhere it is a 404, as in Spring, whose body says components are hidden (not
//! whether the name exists).
//!
//! # Probes
//!
//! `/actuator/health/liveness` and `/actuator/health/readiness` are Spring Boot's availability
//! groups: `liveness` is `livenessState`, `readiness` is `readinessState`, each answering its
//! status only (`{"status":"UP"}`, or `OUT_OF_SERVICE` / `DOWN` with 503). The breakers are
//! not in the readiness group unless [`Admin::readiness_includes_circuit_breakers`] puts them
//! there, as Spring's
//! `management.endpoint.health.group.readiness.include=readinessState,circuitBreakers` does;
//! the group then also shows what the whole shows. Think before doing it: a dependency that
//! fails every replica at once takes every replica out of rotation at once.
//!
//! [`Admin::readiness`] is the service's handle on `readinessState`: during a graceful shutdown,
//! [`Readiness::refuse_traffic`] first, so the probe fails and the balancer stops sending
//! requests, then stop accepting connections (the example on [`Readiness`]). The whole's
//! status includes `readinessState` and `livenessState`, so `/actuator/health` answers 503 then
//! too, as Spring's does. A Kubernetes manifest written for a Spring Boot service points at the
//! same paths:
//!
//! ```yaml
//! livenessProbe:
//!   httpGet: { path: /actuator/health/liveness, port: 8080 }
//! readinessProbe:
//!   httpGet: { path: /actuator/health/readiness, port: 8080 }
//! ```
//!
//! The kubelet probes the pod's address: serve the router where it reaches (merged into the
//! service's router, or on a listener of your own), not on [`Admin::serve_local`]'s loopback.
//!
//! # The links index
//!
//! `GET /actuator` (and `/actuator/`) is Spring Boot's links index, which Spring Boot Admin
//! reads to find the endpoints: `{"_links": {id: {"href", "templated"}}}`, `self` first, then
//! one link per endpoint path this admin mounts, with Spring's ids for Resilience4j's
//! endpoints (the endpoint's id, then `-` and each path variable's name) and `templated` where
//! the href has a variable:
//!
//! ```json
//! {"_links":{"self":{"href":"http://127.0.0.1:8080/actuator","templated":false},
//!  "circuitbreakers":{"href":"http://127.0.0.1:8080/actuator/circuitbreakers","templated":false},
//!  "circuitbreakers-name":{"href":"http://127.0.0.1:8080/actuator/circuitbreakers/{name}","templated":true},
//!  "circuitbreakerevents-name-eventType":{"href":"http://127.0.0.1:8080/actuator/circuitbreakerevents/{name}/{eventType}","templated":true},
//!  ...,
//!  "bulkheadevents-bulkheadName":{"href":"http://127.0.0.1:8080/actuator/bulkheadevents/{bulkheadName}","templated":true},
//!  ...,
//!  "health":{"href":"http://127.0.0.1:8080/actuator/health","templated":false},
//!  "health-path":{"href":"http://127.0.0.1:8080/actuator/health/{*path}","templated":true}}}
//! ```
//!
//! An href is the scheme, the host the request asked for (its `Host`, or the authority of an
//! HTTP/2 or absolute-form request URI) and the path the index was reached at, the prefix the
//! service nested the admin under included (`http://host/ops/actuator/health` under
//! `nest("/ops", ...)`); a byte that has no place in a URI path is percent-encoded. The scheme
//! is the request URI's when it has one, else `http`: behind a proxy that ends TLS, the links
//! say `http`. A request that does not carry exactly one `Host` that is a plain `host[:port]`
//! (a name, an IPv4 or bracketed IPv6 address, a port up to 65535) is a 400 that names the
//! header, rather than an index of relative links: every HTTP/1.1 client sends one, a client
//! written for Spring takes the hrefs as absolute, and nothing else a client sends reaches an
//! href. The dashboard is not listed (it is no actuator endpoint).
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
//! client is connected (and for the linger after the last one leaves: "The event stream"
//! above). The breaker itself publishes a CLOSED call's event without its lock,
//! as it records the call, so following a breaker puts no call behind a lock either; what it
//! costs per call is measured in docs/PERFORMANCE.md ("The operations surface under load").
//! Without the `admin` feature none of this exists.
//!
//! `GET /actuator/circuitbreakerevents` reads each ring back from its newest event and keeps a
//! heap of one candidate per breaker, picking the newest of all until it has its 10,000: it
//! reads the breakers' count plus 10,000 records, whatever the buffers hold, in time
//! `O((breakers + 10,000)·log breakers)` and memory `O(breakers + 10,000)`, and answers what
//! sorting every event by time would, cut to the newest 10,000 (the bulkheads' and retries'
//! endpoints alike). For 10,000 breakers of 100 events (a million stored) that is about 7 ms
//! and 2.4 MiB to choose the events, against 180 ms and 115 MiB for the full sort
//! (docs/PERFORMANCE.md, "The operations surface under load").
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
//! [`Registry::on_retry_registry_event_for`]: a removed bulkhead (retry) leaves
//! `GET /actuator/bulkheads` (`/retries`) and its event list is empty at once, and one made
//! again under its name starts with no events.
//!
//! # Binding
//!
//! [`Admin::router`] binds nothing: the service serves it on its own listener, merged or nested
//! into its router, and chooses who can reach it. [`Admin::serve_local`] binds `127.0.0.1` and
//! nothing else; to expose the admin on another address, bind a listener there and serve
//! `router()` yourself, behind whatever authentication the network needs.
//!
//! A loopback address alone does not keep browsers out: a page on `evil.example` whose name the
//! attacker then resolves to 127.0.0.1 (DNS rebinding) sends its requests to a loopback admin
//! as same-origin ones. So [`Admin::serve_local`] answers only requests whose `Host` is one of
//! [`LOOPBACK_HOSTS`] (`127.0.0.1`, `localhost`, `[::1]`, any port) and any other with a 403
//! whose JSON names the `Host`, before any route runs (the write hook too).
//! [`Admin::allowed_hosts`] gives a router the same check with the names it is reached by.
//!
//! The dashboard page is sent with a `Content-Security-Policy` that lets it load only its own
//! script, style and data from its own origin, nothing inline and nothing framing it
//! (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for older browsers), with
//! `X-Content-Type-Options: nosniff` on the page and its assets and `Referrer-Policy:
//! no-referrer`.
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

mod availability;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals;
mod bulkheads;
mod event;
mod health;
mod hosts;
mod hub;
mod json;
mod lenient;
mod newest;
mod options;
mod retries;
mod ring;
#[cfg(test)]
mod ring_tests;
mod roster;
mod routes;
mod stream;
mod text;

/// The atomics the ring is made of: std's here; loom's where `tests/admin/ring_loom.rs` compiles
/// `ring.rs` into its model.
mod sync {
    pub(crate) use std::sync::atomic::{fence, AtomicU64};
}

pub use crate::availability::{Liveness, Readiness};
use crate::hosts::AllowedHosts;
use crate::hub::Hub;
pub use crate::options::{Authorization, Authorize};
use crate::options::{HealthShow, Options};
use crate::stream::StreamLimits;

/// The default stream ring: events of every breaker kept for the server-sent event clients.
pub const DEFAULT_STREAM_BUFFER_SIZE: usize = 4096;

/// The largest stream ring [`AdminBuilder::stream_buffer_size`] takes.
pub const MAX_STREAM_BUFFER_SIZE: usize = 1 << 20;

/// The names [`Admin::serve_local`] answers to, on any port: the loopback address in IPv4 and
/// IPv6 (in brackets, as a `Host` header carries it) and `localhost`.
pub const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The default number of event streams served at once: [`AdminBuilder::max_stream_clients`].
pub const DEFAULT_MAX_STREAM_CLIENTS: usize = 256;

/// The default time the stream's ring is still written after its last client left:
/// [`AdminBuilder::stream_linger`].
pub const DEFAULT_STREAM_LINGER: Duration = Duration::from_secs(10);

/// The default longest life of one event stream: [`Admin::stream_max_lifetime`].
pub const DEFAULT_STREAM_MAX_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// The default time an event stream may leave an event untaken: [`Admin::stream_stall_timeout`].
pub const DEFAULT_STREAM_STALL_TIMEOUT: Duration = Duration::from_secs(30);

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
    stream_limits: StreamLimits,
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

    /// How many event streams are served at once (default [`DEFAULT_MAX_STREAM_CLIENTS`], from
    /// 1 to 65,536; a value outside is clamped), counted over every router of the admin. The
    /// next client gets a 503 with a JSON error and `Retry-After: 5`. A slot is given back when
    /// its stream ends, and by a stream that stops being read, within
    /// [`Admin::stream_max_lifetime`] or [`Admin::stream_stall_timeout`].
    pub fn max_stream_clients(mut self, clients: usize) -> AdminBuilder {
        self.stream_limits.max_clients = clients.clamp(1, 1 << 16);
        self
    }

    /// How long the stream's ring is still written after its last client left (default
    /// [`DEFAULT_STREAM_LINGER`], at most 10 minutes; a longer one is clamped): a client that
    /// reconnects within it (an `EventSource` does a few seconds after its stream ends) resumes
    /// from its `Last-Event-ID` with nothing missing, while the ring holds it. After it, calls
    /// cost the stream nothing until a client connects again; one that resumes from before
    /// then is told how many events it missed. `Duration::ZERO` switches the ring off as the
    /// last client leaves.
    pub fn stream_linger(mut self, linger: Duration) -> AdminBuilder {
        self.stream_limits.linger = linger.min(Duration::from_secs(600));
        self
    }

    /// The admin, attached to the registry's breakers from now on.
    pub fn build(self) -> Admin {
        Admin {
            hub: Hub::attach(&self.registry, self.stream_buffer_size, self.stream_limits),
            options: Options {
                circuit_breakers: true,
                events: true,
                bulkheads: true,
                bulkhead_events: true,
                retries: true,
                retry_events: true,
                stream: true,
                health: true,
                index: true,
                health_show: HealthShow::default(),
                health_probes: true,
                readiness_includes_circuit_breakers: false,
                readiness: Readiness::default(),
                liveness: Liveness::default(),
                dashboard: true,
                write: None,
                prometheus: None,
                stream_interval: Duration::from_millis(100),
                stream_max_lifetime: DEFAULT_STREAM_MAX_LIFETIME,
                stream_stall_timeout: DEFAULT_STREAM_STALL_TIMEOUT,
                allowed_hosts: None,
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
            stream_limits: StreamLimits {
                max_clients: DEFAULT_MAX_STREAM_CLIENTS,
                linger: DEFAULT_STREAM_LINGER,
            },
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

    /// Serves `GET /actuator/health` and the paths below it: the probes
    /// `/actuator/health/liveness` and `/readiness`, and each component where components are
    /// shown (default on). See the crate's docs, "Health".
    pub fn health_endpoint(mut self, on: bool) -> Admin {
        self.options.health = on;
        self
    }

    /// Whether the health JSON shows each indicator's details: the breakers' statuses and
    /// metrics under `circuitBreakers` (Spring's `management.endpoint.health.show-details`,
    /// `always` or `never`; default off, as Spring's `never`). Components are shown with the
    /// details unless [`health_components`](Admin::health_components) says otherwise. The HTTP
    /// status is the same either way.
    pub fn health_details(mut self, on: bool) -> Admin {
        self.options.health_show.details = on;
        self
    }

    /// Whether the health JSON shows the components (`circuitBreakers`, `ping`, ...) with
    /// their statuses, and whether a component's own path (`/actuator/health/circuitBreakers`)
    /// answers rather than 404 (Spring's `show-components`). Without this call it follows
    /// [`health_details`](Admin::health_details), as Spring's unset `show-components` does;
    /// `health_components(true)` alone shows each component's status without the breakers'
    /// details.
    pub fn health_components(mut self, on: bool) -> Admin {
        self.options.health_show.components = Some(on);
        self
    }

    /// Serves the probe groups `/actuator/health/liveness` and `/actuator/health/readiness`,
    /// with their `livenessState` and `readinessState` components in the whole's health
    /// (default on, as Spring Boot 4 has them, and Spring Boot 3 on Kubernetes). Off, the root
    /// lists no `groups` and [`Admin::readiness`] and [`Admin::liveness`] change nothing.
    pub fn health_probes(mut self, on: bool) -> Admin {
        self.options.health_probes = on;
        self
    }

    /// Puts the `circuitBreakers` component into the readiness group, as Spring's
    /// `management.endpoint.health.group.readiness.include=readinessState,circuitBreakers`
    /// does (default off, as in Spring: the readiness probe then reads the service's own
    /// readiness only). On, a breaker allowed to fail that is OPEN makes the probe 503, and
    /// the group shows its components and details as the whole does (a group set up in
    /// Spring's properties inherits the endpoint's settings).
    pub fn readiness_includes_circuit_breakers(mut self, on: bool) -> Admin {
        self.options.readiness_includes_circuit_breakers = on;
        self
    }

    /// The handle to this admin's readiness state (the `readinessState` component and the
    /// readiness probe): [`Readiness::refuse_traffic`] during a graceful shutdown. Every
    /// router of this admin reads it, whenever it was made.
    pub fn readiness(&self) -> Readiness {
        self.options.readiness.clone()
    }

    /// The handle to this admin's liveness state (the `livenessState` component and the
    /// liveness probe): [`Liveness::mark_broken`] when the process cannot recover by itself.
    /// Every router of this admin reads it, whenever it was made.
    pub fn liveness(&self) -> Liveness {
        self.options.liveness.clone()
    }

    /// Serves `GET /actuator`, Spring Boot's links index over the endpoints this admin mounts
    /// (default on; Spring's `management.endpoints.web.discovery.enabled`). See the crate's
    /// docs, "The links index".
    pub fn index_endpoint(mut self, on: bool) -> Admin {
        self.options.index = on;
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

    /// How long one event stream lives (default [`DEFAULT_STREAM_MAX_LIFETIME`], from 1 second
    /// to 24 hours; a value outside is clamped). Then the server ends it and gives its slot back;
    /// an `EventSource` reconnects by itself with its `Last-Event-ID` and misses nothing the ring
    /// still holds ([`AdminBuilder::stream_linger`]). This is what frees the slot of a client
    /// that connected and never reads under light traffic: the kernel's socket buffers take its
    /// few events for hours, so no write ever blocks.
    pub fn stream_max_lifetime(mut self, lifetime: Duration) -> Admin {
        self.options.stream_max_lifetime =
            lifetime.clamp(Duration::from_secs(1), Duration::from_secs(24 * 3600));
        self
    }

    /// How long an event stream may leave an event untaken before the server gives its slot
    /// back (default [`DEFAULT_STREAM_STALL_TIMEOUT`], from 1 second to 1 hour; a value outside
    /// is clamped): the connection's buffers are full and the client is not reading, which under
    /// heavy traffic happens long before [`Admin::stream_max_lifetime`].
    pub fn stream_stall_timeout(mut self, stall: Duration) -> Admin {
        self.options.stream_stall_timeout =
            stall.clamp(Duration::from_secs(1), Duration::from_secs(3600));
        self
    }

    /// Answers only requests addressed to one of `hosts` (the `Host` header's name, on any
    /// port, in any case; an IPv6 address in brackets, `[::1]`); any other gets a 403 whose JSON
    /// names the `Host` it gave, and one without a `Host` a 400, before any route runs. This
    /// keeps a page on another site whose name an attacker resolves to this machine (DNS
    /// rebinding) from reaching the admin from a browser on it. [`Admin::serve_local`] checks
    /// [`LOOPBACK_HOSTS`] unless this was called; [`Admin::router`] checks nothing unless it was
    /// (`admin.allowed_hosts(LOOPBACK_HOSTS)` for a router served on loopback; the service's
    /// own names for one it serves elsewhere).
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Admin
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.options.allowed_hosts = Some(AllowedHosts::new(hosts));
        self
    }

    /// How many event streams hold a slot now (at most [`AdminBuilder::max_stream_clients`]).
    pub fn stream_clients(&self) -> usize {
        self.hub.stream.slots_taken()
    }

    /// The routes, to `merge` or `nest` into the service's router. It binds nothing.
    pub fn router(&self) -> Router {
        routes::router(Arc::new(routes::AppState {
            hub: Arc::clone(&self.hub),
            options: self.options.clone(),
        }))
    }

    /// Serves [`Admin::router`] on `127.0.0.1:port` until the listener fails; it never binds
    /// another address. It answers only requests addressed to [`LOOPBACK_HOSTS`] (or to the
    /// names given to [`Admin::allowed_hosts`]): see there. Port 0 picks a free port (which
    /// only the OS then knows; bind your own listener to learn it).
    pub async fn serve_local(mut self, port: u16) -> std::io::Result<()> {
        if self.options.allowed_hosts.is_none() {
            self.options.allowed_hosts = Some(AllowedHosts::new(LOOPBACK_HOSTS));
        }
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
            .field("index", &o.index)
            .field("health_probes", &o.health_probes)
            .field("readiness", &o.readiness)
            .field("liveness", &o.liveness)
            .field("dashboard", &o.dashboard)
            .field("allowed_hosts", &o.allowed_hosts)
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
