//! `GET /actuator/streamcircuitbreakerevents[/{name}[/{eventType}]]`: live events as
//! server-sent events, read with reqwest's `bytes_stream()`; a client that falls behind the
//! ring is told how many events it lost; `Last-Event-ID` resumes.

use std::pin::Pin;
use std::time::Duration;

use crate::support::{client, get_json, serve, succeed};
use breaker_admin::Admin;
use breaker_core::{ManualClock, Registry, State};
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

/// One server-sent event.
#[derive(Debug)]
struct SseEvent {
    id: Option<u64>,
    event: Option<String>,
    data: String,
}

impl SseEvent {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {:?}", self.data))
    }
}

type Bytes = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

struct SseReader {
    body: Bytes,
    buffer: String,
}

impl SseReader {
    async fn connect(url: &str, last_event_id: Option<u64>) -> SseReader {
        let mut request = client().get(url);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        // No overall timeout on a stream: each read below has its own.
        let response = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .execute(request.build().unwrap())
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        SseReader {
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
        }
    }

    /// The next event that is not the heartbeat (`event: ping`).
    async fn next(&mut self) -> SseEvent {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                for line in block.lines() {
                    match line.split_once(": ") {
                        Some(("id", v)) => event.id = Some(v.parse().unwrap()),
                        Some(("event", v)) => event.event = Some(v.to_owned()),
                        Some(("data", v)) => event.data.push_str(v),
                        _ => {}
                    }
                }
                if event.event.as_deref() == Some("ping") {
                    continue;
                }
                return event;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.body.next())
                .await
                .expect("an event within 5 s")
                .expect("the stream is open")
                .unwrap();
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_transition_reaches_the_stream_as_an_event_dto() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let other = registry.breaker("other");
    let base = serve(Admin::new(&registry).router()).await;

    let mut all =
        SseReader::connect(&format!("{base}/actuator/streamcircuitbreakerevents"), None).await;
    let mut one = SseReader::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/inventory"),
        None,
    )
    .await;
    let mut typed = SseReader::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/inventory/state_transition"),
        None,
    )
    .await;
    other.transition_to(State::Disabled).unwrap();
    succeed(&breaker);
    breaker.transition_to(State::ForcedOpen).unwrap();

    let first = all.next().await;
    assert_eq!(
        first.event.as_deref(),
        Some("STATE_TRANSITION"),
        "named by its type, as Resilience4j names it"
    );
    assert_eq!(first.id, Some(0));
    assert_eq!(
        first.json(),
        json!({
            "circuitBreakerName": "other",
            "type": "STATE_TRANSITION",
            "creationTime": "2023-11-14T22:13:20Z[UTC]",
            "errorMessage": null,
            "durationInMs": null,
            "stateTransition": "CLOSED_TO_DISABLED"
        })
    );
    let second = all.next().await;
    assert_eq!(second.id, Some(1));
    assert_eq!(second.event.as_deref(), Some("SUCCESS"));
    assert_eq!(
        second.json(),
        json!({
            "circuitBreakerName": "inventory",
            "type": "SUCCESS",
            "creationTime": "2023-11-14T22:13:20Z[UTC]",
            "errorMessage": null,
            "durationInMs": 0,
            "stateTransition": null
        })
    );
    let third = all.next().await;
    assert_eq!(third.json()["stateTransition"], "CLOSED_TO_FORCED_OPEN");

    // By name: not the other breaker's event.
    let mine = one.next().await;
    assert_eq!(
        (mine.id, mine.json()["type"].clone()),
        (Some(1), json!("SUCCESS"))
    );
    assert_eq!(
        one.next().await.json()["stateTransition"],
        "CLOSED_TO_FORCED_OPEN"
    );
    // By name and type.
    let transition = typed.next().await;
    assert_eq!(transition.id, Some(2));
    assert_eq!(
        transition.json()["stateTransition"],
        "CLOSED_TO_FORCED_OPEN"
    );

    let (status, body) = get_json(&format!(
        "{base}/actuator/streamcircuitbreakerevents/inventory/AJAR"
    ))
    .await;
    assert_eq!((status, &body["eventType"]), (400, &json!("AJAR")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_behind_the_ring_is_told_what_it_lost_and_can_resume() {
    const EVENTS: u64 = 50;
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("busy");
    let admin = Admin::builder(&registry)
        .stream_buffer_size(8)
        .build()
        .stream_interval(Duration::from_secs(1));
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");
    let mut reader = SseReader::connect(&url, None).await;
    // 50 events between two reads a second apart, into a ring of 8: whenever the reads fall,
    // one of them finds more than 8 new events.
    for _ in 0..EVENTS {
        succeed(&breaker);
    }
    let (mut lost, mut delivered, mut lagged) = (0, 0, 0);
    loop {
        let event = reader.next().await;
        if event.event.as_deref() == Some("lagged") {
            lagged += 1;
            let n = event.json()["lost"].as_u64().expect("lost is a number");
            assert!(n > 0);
            lost += n;
            continue;
        }
        assert_eq!(event.event.as_deref(), Some("SUCCESS"));
        assert_eq!(event.json()["type"], "SUCCESS");
        delivered += 1;
        if event.id == Some(EVENTS - 1) {
            break;
        }
    }
    assert!(lagged >= 1, "the client was told it fell behind");
    assert_eq!(
        lost + delivered,
        EVENTS,
        "every event is either delivered or counted lost"
    );
    assert!(delivered <= 16, "at most two ring's worth: {delivered}");

    // Reconnecting with Last-Event-ID 45 resumes at 46, still in the ring.
    let mut resumed = SseReader::connect(&url, Some(45)).await;
    for id in 46..EVENTS {
        assert_eq!(resumed.next().await.id, Some(id));
    }
    // Resuming from before the ring: told what was lost first.
    let mut late = SseReader::connect(&url, Some(9)).await;
    let first = late.next().await;
    assert_eq!(first.event.as_deref(), Some("lagged"));
    assert_eq!(first.json(), json!({ "lost": 32 }));
    assert_eq!(late.next().await.id, Some(42));
}
