//! The stream's slots under clients that connect and never read: 1,000 of them leave the admin
//! answering every other endpoint, the 257th and later get a clear JSON 503, and every slot is
//! free again within the bound: the lifetime under light traffic (the kernel's socket buffers
//! take a never-reading client's heartbeats and few events, so no write ever blocks), the stall
//! bound under heavy traffic (once the buffers are full). A client that reads keeps its slot.
//!
//! On tokio's paused clock: the bounds are waited out in virtual time, and the real loopback
//! sockets keep the clock from jumping past their IO. Each never-reading client is a reqwest
//! `Response` held without reading its body: reqwest's connection reads no further than the
//! little it buffers for a body nobody polls, so the server's writes pile up in the sockets.

use std::time::Duration;

use crate::support::sse::SseClient;
use crate::support::{get_json, serve, succeed};
use breaker_admin::{Admin, DEFAULT_MAX_STREAM_CLIENTS};
use breaker_core::{ManualClock, Registry};
use serde_json::{json, Value};

const CLIENTS: usize = 1_000;

/// A client with no timeout and a connection of its own per request (the pool never reuses a
/// connection whose body is unread).
fn plain_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Every read endpoint but the stream answers 200.
async fn every_other_endpoint_answers(base: &str) {
    for path in [
        "/actuator/circuitbreakers",
        "/actuator/circuitbreakers/inventory",
        "/actuator/circuitbreakerevents",
        "/actuator/circuitbreakerevents/inventory",
        "/actuator/bulkheads",
        "/actuator/retries",
        "/actuator/health",
        "/dashboard/api/breakers",
        "/dashboard/api/breakers/inventory/states",
    ] {
        let (status, _) = get_json(&format!("{base}{path}")).await;
        assert_eq!(status, 200, "{path}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_thousand_clients_that_never_read_free_their_slots_within_the_lifetime() {
    const LIFETIME: Duration = Duration::from_secs(120);
    const STALL: Duration = Duration::from_secs(10);
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::new(&registry)
        .stream_max_lifetime(LIFETIME)
        .stream_stall_timeout(STALL);
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");
    let started = tokio::time::Instant::now();

    let client = plain_client();
    let mut held = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        held.push(client.get(&url).send().await.unwrap());
    }
    let streams = held.iter().filter(|r| r.status() == 200).count();
    assert_eq!(streams, DEFAULT_MAX_STREAM_CLIENTS);
    assert_eq!(admin.stream_clients(), DEFAULT_MAX_STREAM_CLIENTS);
    // The 257th and every later one: a JSON 503 that says why, and when to come back.
    let refused: Vec<reqwest::Response> = held.drain(DEFAULT_MAX_STREAM_CLIENTS..).collect();
    assert_eq!(refused.len(), CLIENTS - DEFAULT_MAX_STREAM_CLIENTS);
    for response in refused.into_iter().take(3) {
        assert_eq!(response.status().as_u16(), 503);
        assert_eq!(response.headers()["retry-after"], "5");
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(
            body,
            json!({
                "status": 503,
                "error": "Service Unavailable",
                "message": "at most 256 event streams are served at once, and 256 are open: \
                            try again later"
            })
        );
    }

    // Light traffic: a few events a second, and the admin answers meanwhile.
    while started.elapsed() < STALL * 3 {
        for _ in 0..5 {
            succeed(&breaker);
        }
        every_other_endpoint_answers(&base).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // Past the stall bound three times over, nobody has stalled: the sockets take it all.
    assert_eq!(admin.stream_clients(), DEFAULT_MAX_STREAM_CLIENTS);

    // The lifetime ends every stream and gives every slot back.
    tokio::time::sleep_until(started + LIFETIME).await;
    for _ in 0..20 {
        if admin.stream_clients() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(admin.stream_clients(), 0, "every slot free at the lifetime");
    every_other_endpoint_answers(&base).await;
    // A new client gets a stream, though the never-reading ones still hold their connections.
    let fresh = client.get(&url).send().await.unwrap();
    assert_eq!(fresh.status().as_u16(), 200);
    assert_eq!(admin.stream_clients(), 1);
    drop(held);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn under_heavy_traffic_a_client_that_stops_reading_loses_its_slot_at_the_stall_bound() {
    const STALL: Duration = Duration::from_secs(5);
    const LIFETIME: Duration = Duration::from_secs(3600);
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::builder(&registry)
        .stream_buffer_size(1 << 18)
        .build()
        .stream_max_lifetime(LIFETIME)
        .stream_stall_timeout(STALL);
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");

    let stuck = plain_client().get(&url).send().await.unwrap();
    assert_eq!(stuck.status().as_u16(), 200);
    let mut reader = SseClient::connect(&url, None).await;
    let started = tokio::time::Instant::now();
    let mut read = 0usize;
    // 10,000 events each half second (about 2 MB of JSON): a client that reads keeps up, the
    // one that does not fills its connection's buffers within seconds.
    while admin.stream_clients() == 2 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no stall seen in 2 minutes"
        );
        for _ in 0..10_000 {
            succeed(&breaker);
        }
        for _ in 0..10_000 {
            reader.next_not_ping().await;
            read += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Long before the lifetime, the stalled client's slot is back; the reader's is not.
    assert_eq!(admin.stream_clients(), 1);
    assert!(started.elapsed() < LIFETIME);
    assert!(read >= 10_000);
    succeed(&breaker);
    assert_eq!(
        reader.next_not_ping().await.event.as_deref(),
        Some("SUCCESS"),
        "the reader reads on"
    );
    drop(stuck);
}
