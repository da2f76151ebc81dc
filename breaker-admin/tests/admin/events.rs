//! `GET /actuator/circuitbreakerevents[/{name}[/{eventType}]]`: Resilience4j's event DTOs,
//! oldest first, the newest `event-consumer-buffer-size` per breaker, filtered by type.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::support::{encode, fail, get_json, serve, small, succeed};
use breaker_admin::Admin;
use breaker_core::{ManualClock, Registry};
use serde_json::{json, Value};

fn events(body: &Value) -> &Vec<Value> {
    body["circuitBreakerEvents"]
        .as_array()
        .expect("circuitBreakerEvents")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_events_oldest_first_in_resilience4j_dtos() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("all", small().build().unwrap())
        .instance(
            "three",
            small().event_consumer_buffer_size(3).build().unwrap(),
        )
        .instance(
            "none",
            small().event_consumer_buffer_size(0).build().unwrap(),
        )
        .build();
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    for name in ["all", "three", "none"] {
        let breaker = registry.breaker(name);
        let _ = breaker.call_sync(|| {
            clock.advance(Duration::from_millis(250));
            Ok::<_, ()>(())
        });
        fail(&breaker);
        succeed(&breaker);
        fail(&breaker); // 2 of 4: OPEN
        succeed(&breaker); // rejected
    }
    clock.advance(Duration::from_millis(1500));
    let reset = registry.breaker("all");
    reset.reset();

    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/all")).await;
    assert_eq!(status, 200);
    // Every field of Resilience4j's DTO, `null` where the event has no value.
    let dto = |kind: &str, time: &str, ms: Option<u64>, transition: Option<&str>| {
        json!({
            "circuitBreakerName": "all",
            "type": kind,
            "creationTime": time,
            "errorMessage": null,
            "durationInMs": ms,
            "stateTransition": transition
        })
    };
    let event = |kind: &str, time: &str| dto(kind, time, None, None);
    let call = |kind: &str, time: &str, ms: u64| dto(kind, time, Some(ms), None);
    // `fail` returns `Err("down")`: the error's type name and its text.
    let error = |time: &str| {
        let mut error = dto("ERROR", time, Some(0), None);
        error["errorMessage"] = json!("&str: down");
        error
    };
    // The three breakers' 250 ms calls run one after the other on one clock.
    let t1 = "2023-11-14T22:13:20.250Z[UTC]";
    assert_eq!(
        body,
        json!({ "circuitBreakerEvents": [
            call("SUCCESS", t1, 250),
            error(t1),
            call("SUCCESS", t1, 0),
            error(t1),
            event("FAILURE_RATE_EXCEEDED", t1),
            dto("STATE_TRANSITION", t1, None, Some("CLOSED_TO_OPEN")),
            event("NOT_PERMITTED", t1),
            // `reset()` from OPEN: the transition, then the reset, as Resilience4j publishes them.
            dto(
                "STATE_TRANSITION",
                "2023-11-14T22:13:22.250Z[UTC]",
                None,
                Some("OPEN_TO_CLOSED")
            ),
            event("RESET", "2023-11-14T22:13:22.250Z[UTC]"),
        ] })
    );

    // `event-consumer-buffer-size = 3`: the newest three, still oldest first.
    let (_, three) = get_json(&format!("{base}/actuator/circuitbreakerevents/three")).await;
    let kinds: Vec<&str> = events(&three)
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["FAILURE_RATE_EXCEEDED", "STATE_TRANSITION", "NOT_PERMITTED"]
    );
    assert_eq!(
        events(&three)[2]["creationTime"],
        "2023-11-14T22:13:20.500Z[UTC]"
    );
    // 0 keeps none.
    let (status, none) = get_json(&format!("{base}/actuator/circuitbreakerevents/none")).await;
    assert_eq!(status, 200);
    assert_eq!(none, json!({ "circuitBreakerEvents": [] }));

    // The dashboard's timeline reads the same ring.
    let (_, same) = get_json(&format!("{base}/dashboard/api/breakers/all/events")).await;
    assert_eq!(same, body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_by_type_and_merged_by_time() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    let a = registry.breaker("a");
    let b = registry.keyed("b").get("k/1");
    succeed(&a);
    clock.advance(Duration::from_millis(1));
    fail(&b);
    clock.advance(Duration::from_millis(1));
    fail(&a);
    clock.advance(Duration::from_millis(1));
    succeed(&b);

    let (_, errors) = get_json(&format!("{base}/actuator/circuitbreakerevents/a/error")).await;
    assert_eq!(
        errors,
        json!({ "circuitBreakerEvents": [{
            "circuitBreakerName": "a",
            "type": "ERROR",
            "creationTime": "2023-11-14T22:13:20.002Z[UTC]",
            "errorMessage": "&str: down",
            "durationInMs": 0,
            "stateTransition": null
        }] })
    );
    let url = format!(
        "{base}/actuator/circuitbreakerevents/{}/SUCCESS",
        encode(b.name())
    );
    let (_, successes) = get_json(&url).await;
    assert_eq!(events(&successes).len(), 1);
    assert_eq!(events(&successes)[0]["circuitBreakerName"], "b[k/1]");
    let (status, none) = get_json(&format!(
        "{base}/actuator/circuitbreakerevents/a/FORCED_OPEN"
    ))
    .await;
    assert_eq!(
        (status, events(&none).len()),
        (200, 0),
        "a valid type that is never published"
    );

    // Every breaker's events, sorted by creation time as Resilience4j sorts them.
    let (_, all) = get_json(&format!("{base}/actuator/circuitbreakerevents")).await;
    let order: Vec<(&str, &str)> = events(&all)
        .iter()
        .map(|e| {
            (
                e["circuitBreakerName"].as_str().unwrap(),
                e["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("a", "SUCCESS"),
            ("b[k/1]", "ERROR"),
            ("a", "ERROR"),
            ("b[k/1]", "SUCCESS")
        ]
    );

    // An unknown type is a 400 listing the valid ones, whatever the name; an unknown name is
    // an empty list, as Resilience4j answers it.
    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/a/OPEN")).await;
    assert_eq!(status, 400);
    assert_eq!(body["eventType"], "OPEN");
    assert_eq!(
        body["message"],
        "unknown event type \"OPEN\": expected one of ERROR, IGNORED_ERROR, SUCCESS, \
         NOT_PERMITTED, STATE_TRANSITION, RESET, FORCED_OPEN, DISABLED, FAILURE_RATE_EXCEEDED, \
         SLOW_CALL_RATE_EXCEEDED"
    );
    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/zzz")).await;
    assert_eq!((status, body), (200, json!({ "circuitBreakerEvents": [] })));
    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/zzz/ERROR")).await;
    assert_eq!((status, body), (200, json!({ "circuitBreakerEvents": [] })));
    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/zzz/OPEN")).await;
    assert_eq!((status, &body["eventType"]), (400, &json!("OPEN")));
}

/// The reads of the events endpoint in the test below, for its writer threads to wait on.
#[derive(Default)]
struct Reads {
    /// (reads finished, those of them that ran inside the writes)
    counts: Mutex<(usize, usize)>,
    changed: Condvar,
}

impl Reads {
    /// A read finished; `inside` if it started after the first call and ended before the last.
    fn finished(&self, inside: bool) {
        let mut counts = self.counts.lock().unwrap();
        counts.0 += 1;
        counts.1 += usize::from(inside);
        self.changed.notify_all();
    }

    /// Blocks the calling thread until at least `all` reads have finished, `inside` of them
    /// inside the writes.
    fn wait_for(&self, all: usize, inside: usize) {
        let counts = self.counts.lock().unwrap();
        let _counts = self
            .changed
            .wait_while(counts, |&mut (a, i)| a < all || i < inside)
            .unwrap();
    }
}

/// Writers on four threads and the endpoint read over HTTP at the same time: every body read
/// is consistent (at most the buffer's 50 events, all of this breaker, each a 0 ms call, with
/// an error text only on a failure).
///
/// The reads provably overlap the writes: the writers start after the reader's first read,
/// and each writes in rounds, waiting before each round after the first for one more read
/// that started after the first call and ended before the last (so it ran while calls were
/// being made); the reader keeps reading until every call is made. However the threads are
/// scheduled, at least `ROUNDS - 1` reads ran inside the writes, and the test counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_many_threads_while_the_endpoint_reads() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 10;
    const CALLS_PER_ROUND: usize = 200;
    const CALLS: usize = THREADS * ROUNDS * CALLS_PER_ROUND;
    // A manual clock that never moves: every call takes 0 ms.
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance(
            "busy",
            breaker_core::Config::builder()
                .event_consumer_buffer_size(50)
                .build()
                .unwrap(),
        )
        .build();
    let breaker = registry.breaker("busy");
    let base = serve(Admin::new(&registry).router()).await;
    let url = format!("{base}/actuator/circuitbreakerevents/busy");
    let reads = Arc::new(Reads::default());
    let made = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (breaker, reads, made) = (breaker.clone(), reads.clone(), made.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    reads.wait_for(1, round);
                    for n in 0..CALLS_PER_ROUND {
                        if (n + i) % 3 == 0 {
                            fail(&breaker);
                        } else {
                            succeed(&breaker);
                        }
                        made.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    let check = |body: &Value| {
        let list = events(body);
        assert!(list.len() <= 50);
        for e in list {
            assert_eq!(e["circuitBreakerName"], "busy");
            let text = &e["errorMessage"];
            match e["type"].as_str() {
                Some("SUCCESS") => assert!(text.is_null(), "{e}"),
                // `fail`'s text, or none where the admin did not keep it (its texts' lock was
                // taken, or the text is older than the newest kept).
                Some("ERROR") => assert!(text.is_null() || text == "&str: down", "{e}"),
                _ => panic!("a call's event: {e}"),
            }
            assert_eq!(e["durationInMs"], 0);
        }
    };
    let mut inside = 0;
    loop {
        let before = made.load(Ordering::SeqCst);
        if before == CALLS {
            break;
        }
        let (status, body) = get_json(&url).await;
        let after = made.load(Ordering::SeqCst);
        assert_eq!(status, 200);
        check(&body);
        let during = before > 0 && after < CALLS;
        inside += usize::from(during);
        reads.finished(during);
    }
    for caller in callers {
        caller.join().unwrap();
    }
    assert!(
        inside >= ROUNDS - 1,
        "consistent bodies read while the calls were made: {inside}, expected at least {}",
        ROUNDS - 1
    );
    let (_, body) = get_json(&url).await;
    check(&body);
    assert_eq!(
        events(&body).len(),
        50,
        "the newest 50, once the writers are done"
    );
    // The cumulative counters saw every call.
    let (_, summary) = get_json(&format!("{base}/dashboard/api/breakers?q=busy")).await;
    assert_eq!(summary["breakers"][0]["calls"], CALLS as u64);
}

/// The time of an event's `creationTime` as a sortable key: every event of the test below is
/// on one day, so the time of day (seconds, then nanoseconds) orders them.
fn time_key(event: &Value) -> (String, u64) {
    let text = event["creationTime"].as_str().expect("creationTime");
    let time = text.split('T').nth(1).expect("a time of day");
    let time = time.split(['Z', '[']).next().unwrap();
    let (seconds, fraction) = time.split_once('.').unwrap_or((time, ""));
    let nanos = format!("{fraction:0<9}").parse().unwrap();
    (seconds.to_owned(), nanos)
}

/// More events than the cap (120 breakers of 100), many at the same instant and published in
/// another order than their breakers' names: the endpoint answers what Resilience4j's sort
/// would, cut to the newest 10,000: every breaker's own list (in name order) sorted stably by
/// time, events at the same instant in name order, then each breaker's own order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_ten_thousand_are_those_a_full_sort_keeps() {
    const BREAKERS: usize = 120;
    const CAP: usize = 10_000;
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let breakers: Vec<_> = (0..BREAKERS)
        .map(|i| registry.breaker(&format!("b-{i:03}")))
        .collect();
    let base = serve(Admin::new(&registry).router()).await;
    // A fixed shuffle per round, and a clock that moves after about one call in three.
    let mut random = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random % n
    };
    for _ in 0..100 {
        let mut order: Vec<usize> = (0..BREAKERS).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, next(i as u64 + 1) as usize);
        }
        for i in order {
            if next(10) == 0 {
                fail(&breakers[i]);
            } else {
                succeed(&breakers[i]);
            }
            if next(3) == 0 {
                clock.advance(Duration::from_millis(1));
            }
        }
    }

    let mut expected = Vec::new();
    for breaker in &breakers {
        let url = format!("{base}/actuator/circuitbreakerevents/{}", breaker.name());
        let (_, body) = get_json(&url).await;
        expected.extend(events(&body).iter().cloned());
    }
    assert_eq!(expected.len(), BREAKERS * 100);
    expected.sort_by_key(time_key);
    let expected = expected.split_off(expected.len() - CAP);

    let (status, all) = get_json(&format!("{base}/actuator/circuitbreakerevents")).await;
    assert_eq!(status, 200);
    assert_eq!(events(&all).len(), CAP);
    assert!(
        events(&all) == &expected,
        "the endpoint's list differs from the full sort's"
    );
}
