//! `GET /actuator/bulkheads` and `GET /actuator/bulkheadevents[/{name}[/{eventType}]]`:
//! Resilience4j's `BulkheadEndpointResponse` and `BulkheadEventDTO`s, byte for byte, on a
//! manual clock; each bulkhead's newest `event-consumer-buffer-size` events; bulkheads that
//! come and go through the registry; the dashboard's bulkhead fields; calls on many threads
//! while the endpoint reads.

use std::time::Duration;

use crate::support::{assert_turned_off, get_json, get_text, serve, succeed};
use breaker_admin::Admin;
use breaker_core::{BulkheadConfig, ManualClock, Registry, State};
use serde_json::json;

fn limit(max: u32, buffer: u32) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .event_consumer_buffer_size(buffer)
        .build()
        .unwrap()
}

/// The text of one `BulkheadEventDTO`, in Resilience4j's field order.
fn dto(name: &str, kind: &str, time: &str) -> String {
    format!(r#"{{"bulkheadName":"{name}","type":"{kind}","creationTime":"{time}"}}"#)
}

fn events(list: &[String]) -> String {
    format!(r#"{{"bulkheadEvents":[{}]}}"#, list.join(","))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_events_in_resilience4j_json() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance("inventory", limit(2, 100))
        .bulkhead_instance("ledger", limit(1, 100))
        .build();
    let inventory = registry.bulkhead("inventory");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    // Made after the admin: followed through the registry's hook.
    let ledger = registry.bulkhead("ledger");

    let first = inventory.try_acquire().unwrap(); // t0: CALL_PERMITTED
    clock.advance(Duration::from_millis(250));
    let in_ledger = ledger.try_acquire().unwrap(); // t0 + 250 ms: ledger's CALL_PERMITTED
    let second = inventory.try_acquire().unwrap(); // CALL_PERMITTED
    clock.advance(Duration::from_millis(250));
    assert!(inventory.try_acquire().is_err()); // t0 + 500 ms: CALL_REJECTED
    assert!(ledger.try_acquire().is_err()); // ledger's CALL_REJECTED
    clock.advance(Duration::from_secs(1));
    drop(first); // t0 + 1.5 s: CALL_FINISHED
    drop((second, in_ledger));

    let (status, body) = get_text(&format!("{base}/actuator/bulkheads")).await;
    assert_eq!(status, 200);
    assert_eq!(body, r#"{"bulkheads":["inventory","ledger"]}"#);

    let (t0, t1, t2, t3) = (
        "2023-11-14T22:13:20Z[UTC]",
        "2023-11-14T22:13:20.250Z[UTC]",
        "2023-11-14T22:13:20.500Z[UTC]",
        "2023-11-14T22:13:21.500Z[UTC]",
    );
    let inv = |kind, time| dto("inventory", kind, time);
    let led = |kind, time| dto("ledger", kind, time);
    let (status, body) = get_text(&format!("{base}/actuator/bulkheadevents/inventory")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        events(&[
            inv("CALL_PERMITTED", t0),
            inv("CALL_PERMITTED", t1),
            inv("CALL_REJECTED", t2),
            inv("CALL_FINISHED", t3),
            inv("CALL_FINISHED", t3),
        ])
    );

    // By type, in any case, as Resilience4j upper-cases it.
    let (_, body) = get_text(&format!(
        "{base}/actuator/bulkheadevents/inventory/call_permitted"
    ))
    .await;
    assert_eq!(
        body,
        events(&[inv("CALL_PERMITTED", t0), inv("CALL_PERMITTED", t1)])
    );
    let (_, body) = get_text(&format!(
        "{base}/actuator/bulkheadevents/ledger/CALL_REJECTED"
    ))
    .await;
    assert_eq!(body, events(&[led("CALL_REJECTED", t2)]));

    // Every bulkhead's, sorted by creation time; at a tie, by bulkhead name.
    let (_, body) = get_text(&format!("{base}/actuator/bulkheadevents")).await;
    assert_eq!(
        body,
        events(&[
            inv("CALL_PERMITTED", t0),
            inv("CALL_PERMITTED", t1),
            led("CALL_PERMITTED", t1),
            inv("CALL_REJECTED", t2),
            led("CALL_REJECTED", t2),
            inv("CALL_FINISHED", t3),
            inv("CALL_FINISHED", t3),
            led("CALL_FINISHED", t3),
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_are_empty_and_unknown_types_errors_that_say_which() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.bulkhead("inventory");
    let base = serve(Admin::new(&registry).router()).await;

    // As Resilience4j answers a name it has no events for.
    let (status, body) = get_text(&format!("{base}/actuator/bulkheadevents/zzz")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"bulkheadEvents":[]}"#));
    let (status, body) = get_text(&format!(
        "{base}/actuator/bulkheadevents/zzz/call-permitted"
    ))
    .await;
    assert_eq!((status, body.as_str()), (200, r#"{"bulkheadEvents":[]}"#));
    // The type is checked whatever the name.
    let (status, body) = get_json(&format!("{base}/actuator/bulkheadevents/zzz/SUCCESS")).await;
    assert_eq!((status, &body["eventType"]), (400, &json!("SUCCESS")));
    let (status, body) =
        get_json(&format!("{base}/actuator/bulkheadevents/inventory/SUCCESS")).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({
            "status": 400,
            "error": "Bad Request",
            "message": "unknown bulkhead event type \"SUCCESS\": expected one of CALL_PERMITTED, \
                        CALL_REJECTED, CALL_FINISHED",
            "eventType": "SUCCESS"
        })
    );
    // A breaker's name is not a bulkhead's: its events are not listed here.
    let payments = registry.breaker("payments");
    succeed(&payments);
    let (status, body) = get_text(&format!("{base}/actuator/bulkheadevents/payments")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"bulkheadEvents":[]}"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bulkhead_keeps_its_newest_events_and_leaves_with_the_registry() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance("three", limit(1, 3))
        .bulkhead_instance("none", limit(1, 0))
        .build();
    let base = serve(Admin::new(&registry).router()).await;
    for name in ["three", "none"] {
        let bulkhead = registry.bulkhead(name);
        for _ in 0..4 {
            clock.advance(Duration::from_millis(1));
            drop(bulkhead.try_acquire().unwrap()); // CALL_PERMITTED, CALL_FINISHED
        }
    }
    // `event-consumer-buffer-size = 3`: the newest three of eight, oldest first.
    let (_, body) = get_text(&format!("{base}/actuator/bulkheadevents/three")).await;
    assert_eq!(
        body,
        events(&[
            dto("three", "CALL_FINISHED", "2023-11-14T22:13:20.003Z[UTC]"),
            dto("three", "CALL_PERMITTED", "2023-11-14T22:13:20.004Z[UTC]"),
            dto("three", "CALL_FINISHED", "2023-11-14T22:13:20.004Z[UTC]"),
        ])
    );
    // 0 keeps none.
    let (status, body) = get_text(&format!("{base}/actuator/bulkheadevents/none")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"bulkheadEvents":[]}"#));

    // A removed bulkhead leaves the endpoints; one made again under its name starts afresh.
    let removed = registry.remove_bulkhead("three").expect("in the registry");
    drop(removed.try_acquire().unwrap());
    let (status, body) = get_text(&format!("{base}/actuator/bulkheadevents/three")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"bulkheadEvents":[]}"#));
    let (_, body) = get_text(&format!("{base}/actuator/bulkheads")).await;
    assert_eq!(body, r#"{"bulkheads":["none"]}"#);
    let again = registry.bulkhead("three");
    clock.advance(Duration::from_millis(1));
    let _permit = again.try_acquire().unwrap();
    let (_, body) = get_text(&format!("{base}/actuator/bulkheadevents/three")).await;
    assert_eq!(
        body,
        events(&[dto(
            "three",
            "CALL_PERMITTED",
            "2023-11-14T22:13:20.009Z[UTC]"
        )])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bulkhead_routes_can_be_turned_off() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.bulkhead("inventory");
    let off = Admin::new(&registry)
        .bulkheads_endpoint(false)
        .bulkhead_events_endpoint(false);
    let paths = [
        "/actuator/bulkheads",
        "/actuator/bulkheadevents",
        "/actuator/bulkheadevents/inventory",
        "/actuator/bulkheadevents/inventory/CALL_PERMITTED",
    ];
    assert_turned_off(off.router(), Admin::new(&registry).router(), &paths).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_each_bulkhead_beside_its_breaker_or_alone() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .bulkhead_instance("payments", limit(4, 100))
        .bulkhead_instance("reports", limit(2, 100))
        .build();
    registry.breaker("payments");
    registry.breaker("search");
    let payments = registry.bulkhead("payments");
    let reports = registry.bulkhead("reports");
    let base = serve(Admin::new(&registry).router()).await;
    let _held = [
        payments.try_acquire().unwrap(),
        payments.try_acquire().unwrap(),
        payments.try_acquire().unwrap(),
        reports.try_acquire().unwrap(),
    ];

    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers")).await;
    assert_eq!(status, 200);
    let breakers = body["breakers"].as_array().unwrap();
    assert_eq!(breakers[0]["name"], "payments");
    assert_eq!(
        breakers[0]["bulkhead"],
        json!({
            "maxAllowedConcurrentCalls": 4,
            "availableConcurrentCalls": 1,
            "inFlightCalls": 3,
            "waitingCalls": 0
        })
    );
    assert_eq!(breakers[1]["name"], "search");
    assert!(
        breakers[1].get("bulkhead").is_none(),
        "no bulkhead has its name"
    );
    assert_eq!(
        body["bulkheads"],
        json!([{
            "name": "reports",
            "maxAllowedConcurrentCalls": 2,
            "availableConcurrentCalls": 1,
            "inFlightCalls": 1,
            "waitingCalls": 0
        }])
    );
    assert_eq!(body["bulkheadsMatched"], 1);

    // The search filters the lone bulkheads too; a state filter leaves them out.
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?q=pay")).await;
    assert_eq!(
        (
            body["bulkheads"].as_array().unwrap().len(),
            &body["bulkheadsMatched"]
        ),
        (0, &json!(0))
    );
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?q=REP")).await;
    assert_eq!(body["bulkheads"][0]["name"], "reports");
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?state=CLOSED")).await;
    assert_eq!(body["bulkheads"], json!([]));
    assert_eq!(body["matched"], 2);
    registry
        .breaker("payments")
        .transition_to(State::ForcedOpen)
        .unwrap();
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?state=FORCED_OPEN")).await;
    assert_eq!(body["breakers"][0]["bulkhead"]["inFlightCalls"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_many_threads_while_the_endpoint_reads() {
    const THREADS: usize = 4;
    const CALLS: usize = 2_000;
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .bulkhead_instance("busy", limit(2, 50))
        .build();
    let bulkhead = registry.bulkhead("busy");
    let base = serve(Admin::new(&registry).router()).await;
    let url = format!("{base}/actuator/bulkheadevents/busy");
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let bulkhead = bulkhead.clone();
            std::thread::spawn(move || {
                for _ in 0..CALLS {
                    // Refused when the two places are taken: CALL_REJECTED.
                    drop(bulkhead.try_acquire());
                }
            })
        })
        .collect();
    let check = |body: &serde_json::Value| {
        let list = body["bulkheadEvents"].as_array().expect("bulkheadEvents");
        assert!(list.len() <= 50, "{}", list.len());
        for e in list {
            assert_eq!(e["bulkheadName"], "busy");
            assert!(
                matches!(
                    e["type"].as_str(),
                    Some("CALL_PERMITTED" | "CALL_REJECTED" | "CALL_FINISHED")
                ),
                "{e}"
            );
        }
        list.len()
    };
    while !callers.iter().all(|c| c.is_finished()) {
        let (status, body) = get_json(&url).await;
        assert_eq!(status, 200);
        check(&body);
    }
    for caller in callers {
        caller.join().unwrap();
    }
    let (_, body) = get_json(&url).await;
    assert_eq!(check(&body), 50, "the newest 50, once the callers are done");
}
