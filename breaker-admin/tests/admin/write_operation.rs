//! `POST /actuator/circuitbreakers/{name}` (Resilience4j's write operation): absent without a
//! hook, refused with 401/403 by the hook without changing anything, and with the hook's
//! permission Resilience4j's `CircuitBreakerUpdateStateResponse`. Bad bodies are 400s that
//! change nothing.

use crate::support::{client, encode, serve};
use axum::http::request::Parts;
use breaker_admin::{Admin, Authorization};
use breaker_core::{ManualClock, Registry, State};
use serde_json::{json, Value};

/// Allows `Bearer ops`, forbids `Bearer viewer`, and asks anything else for credentials.
fn hook(request: &Parts) -> Authorization {
    match request.headers.get("authorization").map(|v| v.as_bytes()) {
        Some(b"Bearer ops") => Authorization::Allow,
        Some(b"Bearer viewer") => Authorization::Forbidden,
        _ => Authorization::Unauthorized,
    }
}

async fn post(url: &str, token: Option<&str>, body: &str) -> (u16, Option<Value>) {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).ok())
}

fn registry() -> Registry {
    Registry::builder().clock(ManualClock::new()).build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_hook_there_is_no_write_route() {
    let registry = registry();
    let breaker = registry.breaker("inventory");
    let base = serve(Admin::new(&registry).router()).await;
    let (status, _) = post(
        &format!("{base}/actuator/circuitbreakers/inventory"),
        Some("ops"),
        r#"{"updateState":"FORCE_OPEN"}"#,
    )
    .await;
    assert_eq!(status, 405, "GET is there, POST is not");
    assert_eq!(breaker.state(), State::Closed);

    // Nor with the read endpoint off: no route at all.
    let base = serve(
        Admin::new(&registry)
            .circuit_breakers_endpoint(false)
            .router(),
    )
    .await;
    let (status, _) = post(
        &format!("{base}/actuator/circuitbreakers/inventory"),
        Some("ops"),
        r#"{"updateState":"FORCE_OPEN"}"#,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hook_refuses_with_401_or_403_and_nothing_changes() {
    let registry = registry();
    let breaker = registry.breaker("inventory");
    let base = serve(Admin::new(&registry).write_operations(hook).router()).await;
    let url = format!("{base}/actuator/circuitbreakers/inventory");
    for (token, expected, message) in [
        (None, 401, "this write operation needs credentials"),
        (
            Some("nobody"),
            401,
            "this write operation needs credentials",
        ),
        (
            Some("viewer"),
            403,
            "these credentials may not use this write operation",
        ),
    ] {
        let (status, body) = post(&url, token, r#"{"updateState":"FORCE_OPEN"}"#).await;
        assert_eq!(status, expected, "{token:?}");
        let body = body.unwrap();
        assert_eq!(body["status"], expected);
        assert_eq!(body["message"], message);
        assert_eq!(
            breaker.state(),
            State::Closed,
            "{token:?} changed the state"
        );
    }
    // Refused before the name is looked up: an unauthorized client learns no names.
    let (status, _) = post(
        &format!("{base}/actuator/circuitbreakers/unknown"),
        None,
        r#"{"updateState":"FORCE_OPEN"}"#,
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_requests_change_the_state_and_answer_as_resilience4j() {
    let registry = registry();
    let breaker = registry.breaker("inventory");
    let keyed = registry.keyed("tenant").get("a/b");
    let base = serve(Admin::new(&registry).write_operations(hook).router()).await;
    let url = format!("{base}/actuator/circuitbreakers/inventory");
    for (operation, state) in [
        ("FORCE_OPEN", "FORCED_OPEN"),
        ("DISABLE", "DISABLED"),
        ("METRICS_ONLY", "METRICS_ONLY"),
        ("CLOSE", "CLOSED"),
    ] {
        let (status, body) = post(
            &url,
            Some("ops"),
            &json!({ "updateState": operation }).to_string(),
        )
        .await;
        assert_eq!(status, 200, "{operation}");
        assert_eq!(
            body.unwrap(),
            json!({
                "circuitBreakerName": "inventory",
                "currentState": state,
                "message": "inventory state has been changed successfully"
            })
        );
        assert_eq!(breaker.state().as_str(), state);
    }
    let url = format!("{base}/actuator/circuitbreakers/{}", encode(keyed.name()));
    let (status, body) = post(&url, Some("ops"), r#"{"updateState":"FORCE_OPEN"}"#).await;
    assert_eq!(status, 200);
    assert_eq!(body.unwrap()["circuitBreakerName"], "tenant[a/b]");
    assert_eq!(keyed.state(), State::ForcedOpen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_named_and_change_nothing() {
    let registry = registry();
    let breaker = registry.breaker("inventory");
    let base = serve(Admin::new(&registry).write_operations(hook).router()).await;
    let url = format!("{base}/actuator/circuitbreakers/inventory");
    let cases = [
        ("{not json", 400, None),
        (
            r#"{"state":"FORCE_OPEN"}"#,
            400,
            Some(("field", "updateState")),
        ),
        (r#"{"updateState":7}"#, 400, Some(("field", "updateState"))),
        (
            r#"{"updateState":"OPEN"}"#,
            400,
            Some(("updateState", "OPEN")),
        ),
        (
            r#"{"updateState":"force_opened"}"#,
            400,
            Some(("updateState", "force_opened")),
        ),
        (r#"{"updateState":"  "}"#, 400, Some(("updateState", "  "))),
        (
            r#"{"updateState":"x\"\n\u001b[31m"}"#,
            400,
            Some(("updateState", "x\"\n\u{1b}[31m")),
        ),
    ];
    for (body, expected, field) in cases {
        let (status, answer) = post(&url, Some("ops"), body).await;
        assert_eq!(status, expected, "{body}");
        let answer = answer.unwrap();
        assert_eq!(answer["status"], expected);
        if let Some((key, value)) = field {
            assert_eq!(answer[key], value, "{body}");
        }
        assert_eq!(breaker.state(), State::Closed, "{body} changed the state");
    }
    let (status, answer) = post(&url, Some("ops"), r#"{"updateState":"NOPE"}"#).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer.unwrap()["message"],
        "unknown updateState \"NOPE\": expected one of CLOSE, FORCE_OPEN, DISABLE, METRICS_ONLY \
         (in any case, `_` or `-` between words)"
    );

    // Not JSON by its content type: 415.
    let response = client()
        .post(&url)
        .header("authorization", "Bearer ops")
        .header("content-type", "text/plain")
        .body(r#"{"updateState":"FORCE_OPEN"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 415);
    // Too large: 413.
    let big = format!(
        r#"{{"updateState":"FORCE_OPEN","pad":"{}"}}"#,
        "x".repeat(5000)
    );
    let (status, _) = post(&url, Some("ops"), &big).await;
    assert_eq!(status, 413);
    assert_eq!(breaker.state(), State::Closed);

    // An unknown name is a 404 that makes no breaker (Resilience4j would create it).
    let (status, answer) = post(
        &format!("{base}/actuator/circuitbreakers/typo"),
        Some("ops"),
        r#"{"updateState":"FORCE_OPEN"}"#,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(answer.unwrap()["name"], "typo");
    assert!(registry.find("typo").is_none());
}
