//! A client written from Resilience4j's Spring Boot sources, against this admin: what it reads
//! from the event stream (`CircuitBreakerServerSideEvent`: each message named by its event
//! type, its data the `CircuitBreakerEventDTO` written by a plain `ObjectMapper`, a `ping`
//! every second), from the event lists (`CircuitBreakerEventsEndpoint` and the bulkhead and
//! retry ones: an empty list for a name they have no events for), what it posts
//! (`UpdateState`, converted as Spring converts an enum), and each body's fields in the order
//! Jackson writes the Java classes' fields. Each test is named after the behaviour it checks;
//! the bodies are read with `support::ordered`, which keeps the keys in the text's order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::ordered::{self, Ordered};
use crate::support::sse::{SseClient, SseEvent};
use crate::support::{client, fail, get_text, serve, small, succeed};
use axum::http::request::Parts;
use breaker_admin::{Admin, Authorization};
use breaker_core::{ManualClock, Registry, RetryConfig, State};
use serde_json::{json, Value};

/// `CircuitBreakerEventDTO`'s fields, in its order.
const EVENT_DTO: [&str; 6] = [
    "circuitBreakerName",
    "type",
    "creationTime",
    "errorMessage",
    "durationInMs",
    "stateTransition",
];

/// `CircuitBreakerDetails`'s fields, in its order.
const DETAILS: [&str; 10] = [
    "failureRate",
    "slowCallRate",
    "failureRateThreshold",
    "slowCallRateThreshold",
    "bufferedCalls",
    "failedCalls",
    "slowCalls",
    "slowFailedCalls",
    "notPermittedCalls",
    "state",
];

/// The ManualClock's start, as `ZonedDateTime.toString()` prints it in a UTC JVM.
const T0: &str = "2023-11-14T22:13:20Z[UTC]";

/// GET `url`: the status and the body read in its keys' order.
async fn get_ordered(url: &str) -> (u16, Ordered) {
    let (status, text) = get_text(url).await;
    (status, ordered::parse(&text))
}

/// Allows every write.
fn allow(_: &Parts) -> Authorization {
    Authorization::Allow
}

/// POST `{"updateState": given}` to the write operation: the status and the body in order.
async fn update_state(base: &str, name: &str, given: &str) -> (u16, Ordered) {
    let response = client()
        .post(format!("{base}/actuator/circuitbreakers/{name}"))
        .header("content-type", "application/json")
        .body(json!({ "updateState": given }).to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, ordered::parse(&response.text().await.unwrap()))
}

/// A stream message's DTO, checked as a Resilience4j client reads it: named by its type, every
/// field of the DTO present in its order, and the message's `id` the stream's ticket.
fn stream_dto(message: &SseEvent) -> Value {
    let data = message.data.as_deref().expect("an event message has data");
    let dto = ordered::parse(data);
    assert_eq!(dto.keys(), EVENT_DTO, "{data}");
    let value = dto.value();
    assert_eq!(
        message.event.as_deref(),
        value["type"].as_str(),
        "the message is named by its event's type"
    );
    // The reader panics on an id that is not a number: the stream's ticket.
    assert!(message.id.is_some(), "each event has an id");
    value
}

/// Resilience4j's `CircuitBreakerServerSideEvent`: `event(type.name())`, `data(DTO)` with
/// `null` for what the event does not have (the stream's `ObjectMapper` writes nulls).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_names_each_message_by_its_type_and_writes_nulls() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("backendA", small().build().unwrap())
        .build();
    let breaker = registry.breaker("backendA");
    let base = serve(Admin::new(&registry).router()).await;
    let mut all =
        SseClient::connect(&format!("{base}/actuator/streamcircuitbreakerevents"), None).await;
    // The path's type in another spelling: Resilience4j upper-cases it.
    let mut transitions = SseClient::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/backendA/state_transition"),
        None,
    )
    .await;

    succeed(&breaker);
    fail(&breaker);
    succeed(&breaker);
    fail(&breaker); // 2 of 4: FAILURE_RATE_EXCEEDED, then CLOSED_TO_OPEN
    succeed(&breaker); // NOT_PERMITTED

    // `fail` returns `Err("down")`: an ERROR's `errorMessage` is its type and text.
    let call = |kind: &str| {
        let error = (kind == "ERROR").then_some("&str: down");
        json!({
            "circuitBreakerName": "backendA", "type": kind, "creationTime": T0,
            "errorMessage": error, "durationInMs": 0, "stateTransition": null
        })
    };
    let other = |kind: &str, transition: Option<&str>| {
        json!({
            "circuitBreakerName": "backendA", "type": kind, "creationTime": T0,
            "errorMessage": null, "durationInMs": null, "stateTransition": transition
        })
    };
    let expected = [
        call("SUCCESS"),
        call("ERROR"),
        call("SUCCESS"),
        call("ERROR"),
        other("FAILURE_RATE_EXCEEDED", None),
        other("STATE_TRANSITION", Some("CLOSED_TO_OPEN")),
        other("NOT_PERMITTED", None),
    ];
    let mut tickets = Vec::new();
    for want in &expected {
        let message = all.next_not_ping().await;
        assert_eq!(&stream_dto(&message), want);
        tickets.push(message.id.unwrap());
    }
    assert!(
        tickets.windows(2).all(|w| w[0] < w[1]),
        "tickets rise: {tickets:?}"
    );
    let message = transitions.next_not_ping().await;
    assert_eq!(message.event.as_deref(), Some("STATE_TRANSITION"));
    assert_eq!(stream_dto(&message)["stateTransition"], "CLOSED_TO_OPEN");
}

/// Stops the traffic thread of a test when dropped.
struct Traffic(Arc<AtomicBool>);

impl Drop for Traffic {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `Flux.merge(events, Flux.interval(1 s).map(ping))`: a `ping` (a name, no data) every second
/// however many events flow, which a client filters out by its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_comes_every_second_whatever_the_traffic() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("busy");
    let base = serve(Admin::new(&registry).router()).await;
    let mut stream =
        SseClient::connect(&format!("{base}/actuator/streamcircuitbreakerevents"), None).await;
    // An event every 10 ms: the stream never has a quiet second. It stops when the test ends,
    // however it ends.
    let traffic = Traffic(Arc::new(AtomicBool::new(false)));
    {
        let stop = Arc::clone(&traffic.0);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                succeed(&breaker);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    }
    let mut events_before = 0;
    let mut pings = 0;
    // Events alone would keep the loop going: it has a deadline of its own.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while pings < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no two pings within 10 s while events flowed ({events_before} before any ping)"
        );
        let message = stream.next_within(Duration::from_secs(5)).await;
        if message.event.as_deref() == Some("ping") {
            assert_eq!(
                message,
                SseEvent {
                    id: None,
                    event: Some("ping".to_owned()),
                    data: None
                },
                "a ping is its name only, as Resilience4j builds it"
            );
            pings += 1;
        } else {
            assert_eq!(stream_dto(&message)["type"], "SUCCESS");
            if pings == 0 {
                events_before += 1;
            }
        }
    }
    drop(traffic);
    assert!(
        events_before > 0,
        "events flowed before the first ping, and did not hold it back"
    );
}

/// `registry.circuitBreaker(name)` makes an unknown name's breaker, so Resilience4j's stream of
/// a name is never an error. Here no request makes a breaker: the stream of a name follows the
/// name, and a breaker made later under it (as an attribute makes one on its first call)
/// streams its events to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_of_a_name_no_breaker_has_yet_gets_the_events_of_one_made_later() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let base = serve(Admin::new(&registry).router()).await;
    let mut by_name = SseClient::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/later"),
        None,
    )
    .await;
    let mut by_type = SseClient::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/later/Success"),
        None,
    )
    .await;
    assert!(
        registry.find("later").is_none(),
        "opening a stream makes no breaker"
    );

    succeed(&registry.breaker("earlier"));
    let later = registry.breaker("later");
    fail(&later);
    succeed(&later);
    let first = stream_dto(&by_name.next_not_ping().await);
    assert_eq!(
        (&first["circuitBreakerName"], &first["type"]),
        (&json!("later"), &json!("ERROR"))
    );
    assert_eq!(
        stream_dto(&by_name.next_not_ping().await)["type"],
        "SUCCESS"
    );
    let only = stream_dto(&by_type.next_not_ping().await);
    assert_eq!(
        (&only["circuitBreakerName"], &only["type"]),
        (&json!("later"), &json!("SUCCESS"))
    );
}

/// `CircuitBreakerEventsEndpoint` and the bulkhead and retry ones answer an empty list for a
/// name they have no events for, and read the type upper-cased.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_lists_answer_an_empty_list_for_a_name_with_no_events() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let base = serve(Admin::new(&registry).router()).await;
    for (path, envelope) in [
        ("circuitbreakerevents", "circuitBreakerEvents"),
        ("bulkheadevents", "bulkheadEvents"),
        ("retryevents", "retryEvents"),
    ] {
        for suffix in ["", "/error", "/Call_Permitted", "/retry"] {
            let valid = match path {
                "circuitbreakerevents" => suffix != "/Call_Permitted" && suffix != "/retry",
                "bulkheadevents" => suffix != "/error" && suffix != "/retry",
                _ => suffix != "/Call_Permitted",
            };
            let url = format!("{base}/actuator/{path}/backendB{suffix}");
            let (status, body) = get_ordered(&url).await;
            if valid {
                assert_eq!(status, 200, "{url}");
                assert_eq!(body.keys(), [envelope], "{url}");
                assert!(body.at(envelope).items().is_empty(), "{url}");
            } else {
                assert_eq!(status, 400, "{url}: a type that list has not");
            }
        }
    }
    assert!(
        registry.find("backendB").is_none(),
        "reading makes no breaker"
    );
}

/// Resilience4j's DTOs and responses, each body's fields in the Java class's order (Jackson's
/// order), the breakers' map in name order: the order a client sees does not depend on
/// serde_json's `preserve_order`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_body_keeps_resilience4j_field_order() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("backendA", small().build().unwrap())
        .retry_instance(
            "backendA",
            RetryConfig::builder()
                .max_attempts(2)
                .wait_duration(Duration::ZERO)
                .budget_enabled(false)
                .build()
                .unwrap(),
        )
        .build();
    // Made out of name order: the map lists them in it.
    let c = registry.breaker("c");
    let a = registry.breaker("backendA");
    registry.breaker("b");
    let admin = Admin::new(&registry).write_operations(allow);
    let base = serve(admin.router()).await;
    succeed(&a);
    clock.advance(Duration::from_millis(250));
    fail(&c);
    drop(registry.bulkhead("backendA").try_acquire().unwrap());
    let mut attempt = 0;
    let _ = registry.retry("backendA").call_sync(|| {
        attempt += 1;
        if attempt == 1 {
            Err("down")
        } else {
            Ok(())
        }
    });

    // CircuitBreakerEndpointResponse of CircuitBreakerDetails.
    let (_, body) = get_ordered(&format!("{base}/actuator/circuitbreakers")).await;
    assert_eq!(body.keys(), ["circuitBreakers"]);
    let breakers = body.at("circuitBreakers");
    assert_eq!(breakers.keys(), ["b", "backendA", "c"]);
    for name in ["b", "backendA", "c"] {
        assert_eq!(breakers.at(name).keys(), DETAILS, "{name}");
    }
    let (_, one) = get_ordered(&format!("{base}/actuator/circuitbreakers/backendA")).await;
    assert_eq!(one.at("circuitBreakers").keys(), ["backendA"]);
    assert_eq!(one.at("circuitBreakers").at("backendA").keys(), DETAILS);

    // CircuitBreakerEventsEndpointResponse of CircuitBreakerEventDTO, every field present.
    let (_, body) = get_ordered(&format!("{base}/actuator/circuitbreakerevents")).await;
    assert_eq!(body.keys(), ["circuitBreakerEvents"]);
    let events = body.at("circuitBreakerEvents").items();
    assert_eq!(events.len(), 2);
    for event in events {
        assert_eq!(event.keys(), EVENT_DTO);
    }
    assert_eq!(
        events[1].value(),
        json!({
            "circuitBreakerName": "c", "type": "ERROR",
            "creationTime": "2023-11-14T22:13:20.250Z[UTC]",
            "errorMessage": "&str: down", "durationInMs": 0, "stateTransition": null
        })
    );

    // BulkheadEndpointResponse, BulkheadEventsEndpointResponse of BulkheadEventDTO.
    let (_, body) = get_ordered(&format!("{base}/actuator/bulkheads")).await;
    assert_eq!(body.keys(), ["bulkheads"]);
    let (_, body) = get_ordered(&format!("{base}/actuator/bulkheadevents/backendA")).await;
    assert_eq!(body.keys(), ["bulkheadEvents"]);
    for event in body.at("bulkheadEvents").items() {
        assert_eq!(event.keys(), ["bulkheadName", "type", "creationTime"]);
    }

    // RetryEndpointResponse, RetryEventsEndpointResponse of RetryEventDTO: a SUCCESS's
    // errorMessage is there, null.
    let (_, body) = get_ordered(&format!("{base}/actuator/retries")).await;
    assert_eq!(body.keys(), ["retries"]);
    let (_, body) = get_ordered(&format!("{base}/actuator/retryevents/backendA")).await;
    assert_eq!(body.keys(), ["retryEvents"]);
    let retry_events = body.at("retryEvents").items();
    let types: Vec<Value> = retry_events.iter().map(|e| e.at("type").value()).collect();
    assert_eq!(types, [json!("RETRY"), json!("SUCCESS")]);
    for event in retry_events {
        assert_eq!(
            event.keys(),
            [
                "retryName",
                "type",
                "creationTime",
                "errorMessage",
                "numberOfAttempts"
            ]
        );
    }
    assert_eq!(retry_events[1].at("errorMessage"), &Ordered::Null);

    // CircuitBreakerUpdateStateResponse.
    let (status, body) = update_state(&base, "b", "FORCE_OPEN").await;
    assert_eq!(status, 200);
    assert_eq!(
        body.keys(),
        ["circuitBreakerName", "currentState", "message"]
    );

    // The error body: status, error, message, then the field at fault.
    let (status, body) = update_state(&base, "b", "OPEN").await;
    assert_eq!(status, 400);
    assert_eq!(body.keys(), ["status", "error", "message", "updateState"]);
    let (status, body) = get_ordered(&format!("{base}/actuator/circuitbreakers/zzz")).await;
    assert_eq!(status, 404);
    assert_eq!(body.keys(), ["status", "error", "message", "name"]);

    // The dashboard's own bodies keep their declared order too.
    let (_, body) = get_ordered(&format!("{base}/dashboard/api/breakers")).await;
    assert_eq!(
        body.keys(),
        [
            "total",
            "matched",
            "states",
            "now",
            "breakers",
            "bulkheads",
            "bulkheadsMatched"
        ]
    );
    let (_, body) = get_ordered(&format!("{base}/dashboard/api/breakers/b/states")).await;
    assert_eq!(
        body.keys(),
        ["name", "since", "initialState", "dropped", "transitions"]
    );
    assert_eq!(
        body.at("transitions").items()[0].keys(),
        ["type", "creationTime", "stateTransition", "from", "to"]
    );
}

/// `AbstractCircuitBreakerEvent`'s `ZonedDateTime.now()`, written with `toString()`: in a UTC
/// JVM, `...Z[UTC]`, the seconds left out when they and the fraction are 0, the fraction in 3,
/// 6 or 9 digits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creation_time_is_a_zoned_date_time_of_a_utc_jvm() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let breaker = registry.breaker("backendA");
    let base = serve(Admin::new(&registry).router()).await;
    for step in [0, 40_000, 250, 1_000, 123_456] {
        clock.advance(Duration::from_micros(step));
        succeed(&breaker);
    }
    let (_, body) = get_ordered(&format!("{base}/actuator/circuitbreakerevents/backendA")).await;
    let times: Vec<Value> = body
        .at("circuitBreakerEvents")
        .items()
        .iter()
        .map(|e| e.at("creationTime").value())
        .collect();
    assert_eq!(
        times,
        [
            json!("2023-11-14T22:13:20Z[UTC]"),
            json!("2023-11-14T22:13:20.040Z[UTC]"),
            json!("2023-11-14T22:13:20.040250Z[UTC]"),
            json!("2023-11-14T22:13:20.041250Z[UTC]"),
            json!("2023-11-14T22:13:20.164706Z[UTC]"),
        ]
    );
}

/// Spring converts `updateState` to `UpdateState` with its lenient converter: trimmed, then
/// any case, letters and digits only (`force_open`, `Force-Open`, ` FORCE_OPEN `,
/// `forceOpen`). A value that converts to no constant is a 400 before the operation runs,
/// which names the value and lists the valid ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_state_is_converted_as_spring_converts_an_enum() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("backendA");
    let base = serve(Admin::new(&registry).write_operations(allow).router()).await;
    for (given, state) in [
        ("force_open", "FORCED_OPEN"),
        ("Close", "CLOSED"),
        ("Force-Open", "FORCED_OPEN"),
        (" CLOSE ", "CLOSED"),
        ("forceOpen", "FORCED_OPEN"),
        ("disable", "DISABLED"),
        ("metrics-only", "METRICS_ONLY"),
        ("CLOSE", "CLOSED"),
    ] {
        let (status, body) = update_state(&base, "backendA", given).await;
        assert_eq!(status, 200, "{given:?}: {body:?}");
        assert_eq!(
            body.value(),
            json!({
                "circuitBreakerName": "backendA",
                "currentState": state,
                "message": "backendA state has been changed successfully"
            }),
            "{given:?}"
        );
    }
    for given in ["FORCED_OPEN", "open", "", "  "] {
        let (status, body) = update_state(&base, "backendA", given).await;
        assert_eq!(status, 400, "{given:?}");
        let body = body.value();
        assert_eq!(body["updateState"], given);
        let message = body["message"].as_str().unwrap();
        assert!(
            message.ends_with(
                "expected one of CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY \
                 (in any case, `_` or `-` between words)"
            ),
            "{message}"
        );
        if !given.trim().is_empty() {
            assert!(message.contains(&format!("\"{given}\"")), "{message}");
        }
        assert_eq!(breaker.state(), State::Closed, "{given:?} changed nothing");
    }
}
