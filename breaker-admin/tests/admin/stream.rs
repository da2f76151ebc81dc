//! `GET /actuator/streamcircuitbreakerevents[/{name}[/{eventType}]]`: live events as
//! server-sent events, read with `support::sse`'s client; a client that falls behind the
//! ring is told how many events it lost; `Last-Event-ID` resumes, losslessly within the linger
//! and with a count of what it missed after a time with nobody connected; an id the stream
//! cannot resume from is answered. The tests that wait for the server to do something run on
//! tokio's paused clock: the waits are virtual, and real loopback sockets keep the clock from
//! jumping past their IO (a ready socket counts as work).

use std::time::Duration;

use crate::support::sse::SseClient;
use crate::support::{get_json, serve, succeed};
use breaker_admin::{Admin, DEFAULT_STREAM_LINGER};
use breaker_core::{CircuitBreaker, ManualClock, Registry, State};
use serde_json::json;

/// The stream's first id: the admin's start time in microseconds since 1970, on the registry's
/// clock (a `ManualClock` starts at 1,700,000,000 s).
pub(crate) const FIRST_ID: u64 = 1_700_000_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_transition_reaches_the_stream_as_an_event_dto() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let other = registry.breaker("other");
    let base = serve(Admin::new(&registry).router()).await;

    let mut all =
        SseClient::connect(&format!("{base}/actuator/streamcircuitbreakerevents"), None).await;
    let mut one = SseClient::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/inventory"),
        None,
    )
    .await;
    let mut typed = SseClient::connect(
        &format!("{base}/actuator/streamcircuitbreakerevents/inventory/state_transition"),
        None,
    )
    .await;
    other.transition_to(State::Disabled).unwrap();
    succeed(&breaker);
    breaker.transition_to(State::ForcedOpen).unwrap();

    let first = all.next_not_ping().await;
    assert_eq!(
        first.event.as_deref(),
        Some("STATE_TRANSITION"),
        "named by its type, as Resilience4j names it"
    );
    assert_eq!(first.id, Some(FIRST_ID));
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
    let second = all.next_not_ping().await;
    assert_eq!(second.id, Some(FIRST_ID + 1));
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
    let third = all.next_not_ping().await;
    assert_eq!(third.json()["stateTransition"], "CLOSED_TO_FORCED_OPEN");

    // By name: not the other breaker's event.
    let mine = one.next_not_ping().await;
    assert_eq!(
        (mine.id, mine.json()["type"].clone()),
        (Some(FIRST_ID + 1), json!("SUCCESS"))
    );
    assert_eq!(
        one.next_not_ping().await.json()["stateTransition"],
        "CLOSED_TO_FORCED_OPEN"
    );
    // By name and type.
    let transition = typed.next_not_ping().await;
    assert_eq!(transition.id, Some(FIRST_ID + 2));
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
    let mut reader = SseClient::connect(&url, None).await;
    // 50 events between two reads a second apart, into a ring of 8: whenever the reads fall,
    // one of them finds more than 8 new events.
    for _ in 0..EVENTS {
        succeed(&breaker);
    }
    let (mut lost, mut delivered, mut lagged) = (0, 0, 0);
    loop {
        let event = reader.next_not_ping().await;
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
        if event.id == Some(FIRST_ID + EVENTS - 1) {
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

    // Reconnecting with the Last-Event-ID of event 45 resumes at 46, still in the ring.
    let mut resumed = SseClient::connect_after(&url, Some(FIRST_ID + 45)).await;
    for n in 46..EVENTS {
        assert_eq!(resumed.next_not_ping().await.id, Some(FIRST_ID + n));
    }
    // Resuming from before the ring: told what was lost first.
    let mut late = SseClient::connect_after(&url, Some(FIRST_ID + 9)).await;
    let first = late.next_not_ping().await;
    assert_eq!(first.event.as_deref(), Some("lagged"));
    assert_eq!(first.json(), json!({ "lost": 32 }));
    assert_eq!(late.next_not_ping().await.id, Some(FIRST_ID + 42));
}

/// Waits, on the paused clock, until the admin holds `n` stream slots: the server learns that a
/// client left when it next writes to it (the heartbeat, each second).
async fn until_clients(admin: &Admin, n: usize) {
    for _ in 0..600 {
        if admin.stream_clients() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} stream clients, not {n}", admin.stream_clients());
}

/// `calls` successes on `breaker`: one event each.
fn calls(breaker: &CircuitBreaker, calls: usize) {
    for _ in 0..calls {
        succeed(breaker);
    }
}

/// A client that leaves and comes back within the linger misses nothing: the ring is still
/// written while nobody is connected, for the linger.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_client_back_within_the_linger_misses_nothing() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");

    let mut reader = SseClient::connect(&url, None).await;
    calls(&breaker, 3);
    let mut last = None;
    for n in 0..3 {
        let event = reader.next_not_ping().await;
        assert_eq!(event.id, Some(FIRST_ID + n));
        last = event.id;
    }
    drop(reader);
    until_clients(&admin, 0).await;
    calls(&breaker, 5);
    tokio::time::sleep(DEFAULT_STREAM_LINGER / 2).await;

    let mut back = SseClient::connect_after(&url, last).await;
    for n in 3..8 {
        let event = back.next_not_ping().await;
        assert_eq!(
            event.event.as_deref(),
            Some("SUCCESS"),
            "no lagged notice: {event:?}"
        );
        assert_eq!(event.id, Some(FIRST_ID + n));
    }
}

/// After a time with nobody connected, longer than the linger, a client resuming from the last
/// id it saw is told exactly how many events were published meanwhile, then reads on.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_client_back_after_a_gap_is_told_how_many_events_it_missed() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let other = registry.breaker("other");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");

    let mut reader = SseClient::connect(&url, None).await;
    calls(&breaker, 2);
    reader.next_not_ping().await;
    let last = reader.next_not_ping().await.id.expect("an id");
    assert_eq!(last, FIRST_ID + 1);
    drop(reader);
    until_clients(&admin, 0).await;
    tokio::time::sleep(DEFAULT_STREAM_LINGER + Duration::from_secs(1)).await;

    // Nobody listens: 20 events of one breaker, 5 of another, and a state change.
    calls(&breaker, 20);
    calls(&other, 5);
    other.transition_to(State::ForcedOpen).unwrap();

    let mut back = SseClient::connect_after(&url, Some(last)).await;
    calls(&breaker, 1);
    let notice = back.next_not_ping().await;
    assert_eq!(notice.event.as_deref(), Some("lagged"));
    assert_eq!(notice.json(), json!({ "lost": 26 }));
    let next = back.next_not_ping().await;
    assert_eq!(next.event.as_deref(), Some("SUCCESS"));
    assert_eq!(
        next.id,
        Some(last + 27),
        "ids go on past what was missed: one id per event"
    );
    assert_eq!(next.json()["circuitBreakerName"], "inventory");

    // A client filtered to one breaker counts every event it missed, as a lagged client does.
    let mut one = SseClient::connect_after(&format!("{url}/other"), Some(last)).await;
    let notice = one.next_not_ping().await;
    assert_eq!(notice.json(), json!({ "lost": 26 }));
}

/// A gap longer than the ring: the client is told the whole count, once.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_gap_longer_than_the_ring_is_counted_whole() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::builder(&registry)
        .stream_buffer_size(8)
        .stream_linger(Duration::ZERO)
        .build();
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");
    let mut reader = SseClient::connect(&url, None).await;
    calls(&breaker, 1);
    let last = reader.next_not_ping().await.id;
    drop(reader);
    until_clients(&admin, 0).await;
    calls(&breaker, 100);
    let mut back = SseClient::connect_after(&url, last).await;
    calls(&breaker, 1);
    assert_eq!(back.next_not_ping().await.json(), json!({ "lost": 100 }));
    assert_eq!(back.next_not_ping().await.id, last.map(|l| l + 101));
}

/// A `Last-Event-ID` the stream cannot resume from gets a notice saying why (`lost` unknown),
/// then the stream goes on from the newest event.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_id_from_another_run_or_not_an_id_is_answered() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");
    // Keeps the ring on, with a few events in it.
    let mut keeper = SseClient::connect(&url, None).await;
    calls(&breaker, 3);
    assert_eq!(keeper.next_not_ping().await.id, Some(FIRST_ID));

    let cases = [
        // An id from a run of the service that started earlier.
        (
            "1699999999000000".to_owned(),
            "Last-Event-ID 1699999999000000 is from before this stream started: its ids start \
             at 1700000000000000, the admin's start time in microseconds since 1970; what was \
             published before now is not known",
        ),
        // An id this stream has not given yet: another process's.
        (
            (FIRST_ID + 1_000).to_string(),
            "Last-Event-ID 1700000000001000 is beyond this stream's newest event \
             (1700000000000003): it is not an id this stream gave (another process?); what was \
             published before now is not known",
        ),
        // Resilience4j's stream sends the breaker's name as the id.
        (
            "inventory".to_owned(),
            "Last-Event-ID \"inventory\" is not an id of this stream (a number of at least \
             1700000000000000); what was published before now is not known",
        ),
    ];
    for (n, (id, message)) in cases.into_iter().enumerate() {
        let mut reader = SseClient::connect(&url, Some(&id)).await;
        let notice = reader.next_not_ping().await;
        assert_eq!(notice.event.as_deref(), Some("lagged"));
        assert_eq!(notice.json(), json!({ "lost": null, "message": message }));
        calls(&breaker, 1);
        assert_eq!(
            reader.next_not_ping().await.id,
            Some(FIRST_ID + 3 + n as u64),
            "from the newest on"
        );
    }
}

/// At the end of its lifetime the server ends a stream and gives its slot back; the client
/// reconnects with its `Last-Event-ID` and misses nothing (the ring is still on, for the
/// linger), as an `EventSource` does by itself.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stream_ends_at_its_lifetime_and_resumes_without_loss() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker("inventory");
    let admin = Admin::new(&registry).stream_max_lifetime(Duration::from_secs(60));
    let base = serve(admin.router()).await;
    let url = format!("{base}/actuator/streamcircuitbreakerevents");
    let mut reader = SseClient::connect(&url, None).await;
    calls(&breaker, 2);
    reader.next_not_ping().await;
    let last = reader.next_not_ping().await.id;
    let opened = tokio::time::Instant::now();
    // Heartbeats only, until the server ends the stream.
    assert!(reader.next_or_end().await.is_none());
    assert!(opened.elapsed() >= Duration::from_secs(59));
    until_clients(&admin, 0).await;

    calls(&breaker, 3);
    let mut back = SseClient::connect_after(&url, last).await;
    for n in 2..5 {
        let event = back.next_not_ping().await;
        assert_eq!(
            (event.event.as_deref(), event.id),
            (Some("SUCCESS"), Some(FIRST_ID + n))
        );
    }
}
