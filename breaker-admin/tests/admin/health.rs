//! `GET /actuator/health`: Spring's health JSON with Resilience4j's `circuitBreakers`
//! component, its per-state statuses, Spring's aggregation, and 503 only for DOWN.

use std::time::Duration;

use crate::support::{fail, get_json, serve, small};
use breaker_admin::Admin;
use breaker_core::{Config, ManualClock, Registry, State};
use serde_json::json;

fn registered(allow_to_fail: bool) -> Config {
    small()
        .register_health_indicator(true)
        .allow_health_indicator_to_fail(allow_to_fail)
        .build()
        .unwrap()
}

fn details(state: &str, buffered: u32, failed: u32, rate: &str) -> serde_json::Value {
    json!({
        "failureRate": rate,
        "slowCallRate": if rate == "-1.0%" { "-1.0%" } else { "0.0%" },
        "failureRateThreshold": "50.0%",
        "slowCallRateThreshold": "100.0%",
        "bufferedCalls": buffered,
        "failedCalls": failed,
        "slowCalls": 0,
        "slowFailedCalls": 0,
        "notPermittedCalls": 0,
        "state": state
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_registered_breaker_is_unknown() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("notRegistered"); // register-health-indicator defaults to false
    let base = serve(Admin::new(&registry).router()).await;
    let (status, body) = get_json(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({ "status": "UNKNOWN", "components": { "circuitBreakers": { "status": "UNKNOWN" } } })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_is_circuit_open_and_the_service_stays_up_unless_allowed_to_fail() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("closed", registered(false))
        .instance("open", registered(false))
        .instance("mayFail", registered(true))
        .build();
    let closed = registry.breaker("closed");
    let open = registry.breaker("open");
    let may_fail = registry.breaker("mayFail");
    registry.breaker("unregistered");
    let base = serve(Admin::new(&registry).router()).await;
    let url = format!("{base}/actuator/health");

    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "status": "UP",
            "components": { "circuitBreakers": {
                "status": "UP",
                "details": {
                    "closed": { "status": "UP", "details": details("CLOSED", 0, 0, "-1.0%") },
                    "mayFail": { "status": "UP", "details": details("CLOSED", 0, 0, "-1.0%") },
                    "open": { "status": "UP", "details": details("CLOSED", 0, 0, "-1.0%") }
                }
            } }
        })
    );

    // OPEN without allow-to-fail: CIRCUIT_OPEN, a status Spring does not rank, so UP wins.
    for _ in 0..4 {
        fail(&open);
    }
    assert_eq!(open.state(), State::Open);
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "UP");
    let breakers = &body["components"]["circuitBreakers"];
    assert_eq!(breakers["status"], "UP");
    assert_eq!(
        breakers["details"]["open"],
        json!({ "status": "CIRCUIT_OPEN", "details": details("OPEN", 4, 4, "100.0%") })
    );

    // OPEN with allow-to-fail: DOWN, and 503 for a readiness probe.
    for _ in 0..4 {
        fail(&may_fail);
    }
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 503);
    assert_eq!(body["status"], "DOWN");
    assert_eq!(body["components"]["circuitBreakers"]["status"], "DOWN");
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["mayFail"]["status"],
        "DOWN"
    );
    let (status, component) = get_json(&format!("{base}/actuator/health/circuitBreakers")).await;
    assert_eq!(status, 503);
    assert_eq!(component, body["components"]["circuitBreakers"]);

    // HALF_OPEN after the wait: CIRCUIT_HALF_OPEN, and the service is UP again.
    clock.advance(Duration::from_secs(31));
    let permit = may_fail.try_acquire().expect("the first trial");
    assert_eq!(may_fail.state(), State::HalfOpen);
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "UP");
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["mayFail"]["status"],
        "CIRCUIT_HALF_OPEN"
    );
    drop(permit);

    // FORCED_OPEN is UNKNOWN; with it, CIRCUIT_OPEN and CIRCUIT_HALF_OPEN left, Spring ranks
    // only UNKNOWN, so the service is UNKNOWN (still 200).
    closed.transition_to(State::ForcedOpen).unwrap();
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["closed"]["status"],
        "UNKNOWN"
    );
    assert_eq!(body["components"]["circuitBreakers"]["status"], "UNKNOWN");
    assert_eq!(body["status"], "UNKNOWN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_open_disabled_and_metrics_only_are_unknown_and_details_can_be_hidden() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("a", registered(true))
        .instance("b", registered(true))
        .instance("c", registered(true))
        .build();
    for (name, state) in [
        ("a", State::ForcedOpen),
        ("b", State::Disabled),
        ("c", State::MetricsOnly),
    ] {
        registry.breaker(name).transition_to(state).unwrap();
    }
    let base = serve(Admin::new(&registry).router()).await;
    let (status, body) = get_json(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "UNKNOWN");
    for name in ["a", "b", "c"] {
        assert_eq!(
            body["components"]["circuitBreakers"]["details"][name]["status"],
            "UNKNOWN"
        );
    }

    // Without details: only the status, with the same HTTP status.
    let may_fail = registry.breaker("a");
    may_fail.transition_to(State::Closed).unwrap();
    for _ in 0..4 {
        fail(&may_fail);
    }
    let base = serve(Admin::new(&registry).health_details(false).router()).await;
    let (status, body) = get_json(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 503);
    assert_eq!(body, json!({ "status": "DOWN" }));
}
