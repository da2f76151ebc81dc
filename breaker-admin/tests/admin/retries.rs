//! `GET /actuator/retries` and `GET /actuator/retryevents[/{name}[/{eventType}]]`:
//! Resilience4j's `RetryEndpointResponse` and `RetryEventDTO`s, byte for byte, on a manual
//! clock (the async waits between attempts end when the test advances it); each retry's newest
//! `event-consumer-buffer-size` events; retries that come and go through the registry; the
//! dashboard's retry counts beside the breaker of the same name.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use crate::support::{assert_turned_off, get_json, get_text, serve};
use breaker_admin::Admin;
use breaker_core::retry::Retry;
use breaker_core::{Classifier, ManualClock, Registry, RetryConfig};
use serde_json::json;

/// `max_attempts` attempts, `wait` between them, the budget off, `buffer` events kept.
fn attempts(max_attempts: u32, wait: Duration, buffer: u32) -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(max_attempts)
        .wait_duration(wait)
        .budget_enabled(false)
        .event_consumer_buffer_size(buffer)
        .build()
        .unwrap()
}

/// Two attempts at once, within a budget with no floor: a lone call's retry is refused.
fn budgeted() -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(2)
        .wait_duration(Duration::ZERO)
        .budget_min_retries_per_second(0)
        .build()
        .unwrap()
}

/// Polls `call` to its end, advancing `clock` by `wait` each time it waits: each of its waits
/// between attempts ends at once, on the clock.
async fn drive<F: Future>(clock: &ManualClock, wait: Duration, call: F) -> F::Output {
    let mut call = std::pin::pin!(call);
    loop {
        match std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
            Poll::Ready(output) => return output,
            Poll::Pending => clock.advance(wait),
        }
    }
}

/// An async call to `retry` whose first `failures` attempts fail and the next succeeds.
async fn succeed_after(clock: &ManualClock, wait: Duration, retry: &Retry, failures: u32) {
    let mut attempt = 0;
    let call = retry.call(|| {
        attempt += 1;
        let outcome = if attempt > failures {
            Ok(())
        } else {
            Err("down")
        };
        async move { outcome }
    });
    let _ = drive(clock, wait, call).await;
}

/// The text of one `RetryEventDTO`, in Resilience4j's field order, a missing `errorMessage`
/// written as `null` as Jackson writes it.
fn dto(name: &str, kind: &str, time: &str, message: Option<&str>, attempts: u32) -> String {
    let message = message.map_or_else(|| "null".to_owned(), |m| format!(r#""{m}""#));
    format!(
        r#"{{"retryName":"{name}","type":"{kind}","creationTime":"{time}","errorMessage":{message},"numberOfAttempts":{attempts}}}"#
    )
}

fn events(list: &[String]) -> String {
    format!(r#"{{"retryEvents":[{}]}}"#, list.join(","))
}

const RETRY_500: &str = "the attempt failed; the next one starts in 500 ms";
const GAVE_UP: &str = "every attempt failed: the retry gave up";
const IGNORED: &str = "the error is ignored: the retry does not retry it";
const REFUSED: &str = "the attempt failed and the retry budget refused the next one";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_events_in_resilience4j_json() {
    let clock = ManualClock::new();
    let half = Duration::from_millis(500);
    let registry = Registry::builder()
        .clock(clock.clone())
        .retry_instance("inventory", attempts(3, half, 100))
        .retry_instance("ledger", budgeted())
        .build();
    let inventory = registry.retry("inventory");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    // Made after the admin: followed through the registry's hook.
    let ledger = registry.retry("ledger");

    // t0: the first attempt fails (RETRY), the second, 500 ms later, succeeds (SUCCESS).
    succeed_after(&clock, half, &inventory, 1).await;
    // t0 + 500 ms: the budget refuses the lone call's retry.
    let _ = ledger.call_sync(|| Err::<(), _>("down"));
    clock.advance(half);
    // t0 + 1 s: an ignored error ends its call at once.
    let ignore = Classifier::new().ignore(|_: &&str| true);
    let _ = inventory.call_sync_with(&ignore, || Err::<(), _>("bad request"));
    // t0 + 1 s, 1.5 s, 2 s: three failed attempts, two RETRYs and the ERROR.
    succeed_after(&clock, half, &inventory, 3).await;

    let (status, body) = get_text(&format!("{base}/actuator/retries")).await;
    assert_eq!(status, 200);
    assert_eq!(body, r#"{"retries":["inventory","ledger"]}"#);

    let (t0, t1, t2, t3, t4) = (
        "2023-11-14T22:13:20Z[UTC]",
        "2023-11-14T22:13:20.500Z[UTC]",
        "2023-11-14T22:13:21Z[UTC]",
        "2023-11-14T22:13:21.500Z[UTC]",
        "2023-11-14T22:13:22Z[UTC]",
    );
    let inv = |kind, time, message, attempts| dto("inventory", kind, time, message, attempts);
    let (status, body) = get_text(&format!("{base}/actuator/retryevents/inventory")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        events(&[
            inv("RETRY", t0, Some(RETRY_500), 1),
            inv("SUCCESS", t1, None, 1),
            inv("IGNORED_ERROR", t2, Some(IGNORED), 0),
            inv("RETRY", t2, Some(RETRY_500), 1),
            inv("RETRY", t3, Some(RETRY_500), 2),
            inv("ERROR", t4, Some(GAVE_UP), 3),
        ])
    );

    // By type, in any case, as Resilience4j upper-cases it.
    let (_, body) = get_text(&format!("{base}/actuator/retryevents/inventory/retry")).await;
    assert_eq!(
        body,
        events(&[
            inv("RETRY", t0, Some(RETRY_500), 1),
            inv("RETRY", t2, Some(RETRY_500), 1),
            inv("RETRY", t3, Some(RETRY_500), 2),
        ])
    );
    let (_, body) = get_text(&format!(
        "{base}/actuator/retryevents/ledger/BUDGET_EXHAUSTED"
    ))
    .await;
    let refused = dto("ledger", "BUDGET_EXHAUSTED", t1, Some(REFUSED), 1);
    assert_eq!(body, events(std::slice::from_ref(&refused)));

    // Every retry's, sorted by creation time; at a tie, by retry name.
    let (_, body) = get_text(&format!("{base}/actuator/retryevents")).await;
    assert_eq!(
        body,
        events(&[
            inv("RETRY", t0, Some(RETRY_500), 1),
            inv("SUCCESS", t1, None, 1),
            refused,
            inv("IGNORED_ERROR", t2, Some(IGNORED), 0),
            inv("RETRY", t2, Some(RETRY_500), 1),
            inv("RETRY", t3, Some(RETRY_500), 2),
            inv("ERROR", t4, Some(GAVE_UP), 3),
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_are_empty_and_unknown_types_errors_that_say_which() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.retry("inventory");
    let base = serve(Admin::new(&registry).router()).await;

    // As Resilience4j answers a name it has no events for.
    let (status, body) = get_json(&format!("{base}/actuator/retryevents/zzz")).await;
    assert_eq!((status, body), (200, json!({ "retryEvents": [] })));
    let (status, body) = get_json(&format!("{base}/actuator/retryevents/zzz/Retry")).await;
    assert_eq!((status, body), (200, json!({ "retryEvents": [] })));
    // The type is checked whatever the name.
    let (status, body) = get_json(&format!("{base}/actuator/retryevents/zzz/OPEN")).await;
    assert_eq!((status, &body["eventType"]), (400, &json!("OPEN")));
    let (status, body) = get_json(&format!(
        "{base}/actuator/retryevents/inventory/CALL_PERMITTED"
    ))
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({
            "status": 400,
            "error": "Bad Request",
            "message": "unknown retry event type \"CALL_PERMITTED\": expected one of RETRY, \
                        ERROR, SUCCESS, IGNORED_ERROR, BUDGET_EXHAUSTED",
            "eventType": "CALL_PERMITTED"
        })
    );
    // A breaker's or a bulkhead's name is not a retry's: their events are not listed here.
    let payments = registry.breaker("payments");
    let _ = payments.call_sync(|| Ok::<_, ()>(()));
    drop(registry.bulkhead("reports").try_acquire().unwrap());
    for name in ["payments", "reports"] {
        let (status, body) = get_json(&format!("{base}/actuator/retryevents/{name}")).await;
        assert_eq!(
            (status, body),
            (200, json!({ "retryEvents": [] })),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_retry_keeps_its_newest_events_and_leaves_with_the_registry() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .retry_instance("three", attempts(1, Duration::ZERO, 3))
        .retry_instance("none", attempts(1, Duration::ZERO, 0))
        .build();
    let base = serve(Admin::new(&registry).router()).await;
    let ignore = Classifier::new().ignore(|_: &&str| true);
    for name in ["three", "none"] {
        let retry = registry.retry(name);
        for _ in 0..4 {
            clock.advance(Duration::from_millis(1));
            // One attempt, ignored: IGNORED_ERROR.
            let _ = retry.call_sync_with(&ignore, || Err::<(), _>("bad request"));
        }
    }
    // `event-consumer-buffer-size = 3`: the newest three of four, oldest first.
    let (_, body) = get_text(&format!("{base}/actuator/retryevents/three")).await;
    let ignored = |time| dto("three", "IGNORED_ERROR", time, Some(IGNORED), 0);
    assert_eq!(
        body,
        events(&[
            ignored("2023-11-14T22:13:20.002Z[UTC]"),
            ignored("2023-11-14T22:13:20.003Z[UTC]"),
            ignored("2023-11-14T22:13:20.004Z[UTC]"),
        ])
    );
    // 0 keeps none.
    let (status, body) = get_text(&format!("{base}/actuator/retryevents/none")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"retryEvents":[]}"#));

    // A removed retry leaves the endpoints; one made again under its name starts afresh.
    let removed = registry.remove_retry("three").expect("in the registry");
    let _ = removed.call_sync(|| Ok::<_, ()>(()));
    let (status, body) = get_text(&format!("{base}/actuator/retryevents/three")).await;
    assert_eq!((status, body.as_str()), (200, r#"{"retryEvents":[]}"#));
    let (_, body) = get_text(&format!("{base}/actuator/retries")).await;
    assert_eq!(body, r#"{"retries":["none"]}"#);
    let again = registry.retry("three");
    clock.advance(Duration::from_millis(1));
    let _ = again.call_sync_with(&ignore, || Err::<(), _>("bad request"));
    let (_, body) = get_text(&format!("{base}/actuator/retryevents/three")).await;
    assert_eq!(body, events(&[ignored("2023-11-14T22:13:20.009Z[UTC]")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_routes_can_be_turned_off() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.retry("inventory");
    let off = Admin::new(&registry)
        .retries_endpoint(false)
        .retry_events_endpoint(false);
    let paths = [
        "/actuator/retries",
        "/actuator/retryevents",
        "/actuator/retryevents/inventory",
        "/actuator/retryevents/inventory/RETRY",
    ];
    assert_turned_off(off.router(), Admin::new(&registry).router(), &paths).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_a_retrys_counts_beside_its_breaker() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .retry_instance("payments", attempts(2, Duration::ZERO, 100))
        .build();
    registry.breaker("payments");
    registry.breaker("search");
    let payments = registry.retry("payments");
    let base = serve(Admin::new(&registry).router()).await;
    let _ = payments.call_sync(|| Ok::<_, &str>(()));
    let mut attempt = 0;
    let _ = payments.call_sync(|| {
        attempt += 1;
        if attempt == 1 {
            Err("down")
        } else {
            Ok(())
        }
    });
    for _ in 0..3 {
        let _ = payments.call_sync(|| Err::<(), _>("down"));
    }

    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers")).await;
    assert_eq!(status, 200);
    let breakers = body["breakers"].as_array().unwrap();
    assert_eq!(breakers[0]["name"], "payments");
    assert_eq!(
        breakers[0]["retry"],
        json!({
            "successfulWithoutRetry": 1,
            "successfulWithRetry": 1,
            "failedWithoutRetry": 0,
            "failedWithRetry": 3,
            "refusedByBudget": 0
        })
    );
    assert_eq!(breakers[1]["name"], "search");
    assert!(breakers[1].get("retry").is_none(), "no retry has its name");
}
