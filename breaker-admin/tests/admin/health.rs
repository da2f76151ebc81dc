//! `GET /actuator/health` and below as Spring Boot answers with Resilience4j's indicator: the
//! components `circuitBreakers` and `ping` (and `livenessState`, `readinessState` with the
//! probes), Resilience4j's per-state statuses, Spring's aggregation and HTTP codes, details and
//! components hidden by default, the probe groups with the readiness and liveness handles, and
//! the keys in Spring's order.

use std::time::Duration;

use crate::support::ordered::get_ordered;
use crate::support::{assert_turned_off, fail, serve, small};
use breaker_admin::Admin;
use breaker_core::{CircuitBreaker, Config, ManualClock, Registry, State};
use serde_json::{json, Value};

/// GET `url`: the status and the body as JSON.
async fn get(url: &str) -> (u16, Value) {
    let (status, body, _) = get_ordered(url).await;
    (status, body)
}

fn registered(allow_to_fail: bool) -> Config {
    small()
        .register_health_indicator(true)
        .allow_health_indicator_to_fail(allow_to_fail)
        .build()
        .unwrap()
}

/// Moves `breaker` to `state` by hand (HALF_OPEN through OPEN, the only way in).
fn put(breaker: &CircuitBreaker, state: State) {
    if state == State::HalfOpen {
        breaker.transition_to(State::Open).unwrap();
    }
    breaker.transition_to(state).unwrap();
    assert_eq!(breaker.state(), state);
}

/// A breaker's health details, as Resilience4j's indicator writes them.
fn details(state: &str, buffered: u32, failed: u32, rate: &str) -> Value {
    json!({
        "failureRate": rate,
        "failureRateThreshold": "50.0%",
        "slowCallRate": if rate == "-1.0%" { "-1.0%" } else { "0.0%" },
        "slowCallRateThreshold": "100.0%",
        "bufferedCalls": buffered,
        "slowCalls": 0,
        "slowFailedCalls": 0,
        "failedCalls": failed,
        "notPermittedCalls": 0,
        "state": state
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_the_box_the_service_is_up_and_shows_only_its_status_and_groups() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("notRegistered"); // register-health-indicator defaults to false
    let base = serve(Admin::new(&registry).router()).await;

    let (status, body, ordered) = get_ordered(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({ "status": "UP", "groups": ["liveness", "readiness"] })
    );
    assert_eq!(ordered.keys(), ["status", "groups"]);
    for probe in ["liveness", "readiness"] {
        let (status, body) = get(&format!("{base}/actuator/health/{probe}")).await;
        assert_eq!((status, body), (200, json!({ "status": "UP" })), "{probe}");
    }

    // With components hidden, Spring answers no component path (404), whatever it names.
    for path in [
        "circuitBreakers",
        "ping",
        "nothing",
        "liveness/livenessState",
    ] {
        let (status, body) = get(&format!("{base}/actuator/health/{path}")).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(body["path"], path);
        assert!(
            body["message"].as_str().unwrap().contains("not shown"),
            "{body}"
        );
    }
}

/// The root's and the component's statuses, and the HTTP code, for each mix of breaker states
/// (Resilience4j's per-state statuses aggregated twice by Spring's default order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mix_of_states_aggregates_as_spring_does() {
    use State::*;
    /// The breakers as (allow-to-fail, state), then `circuitBreakers`' status, the root's and
    /// the HTTP code.
    type Case = (&'static [(bool, State)], &'static str, &'static str, u16);
    let cases: &[Case] = &[
        (&[], "UNKNOWN", "UP", 200),
        (&[(false, Closed)], "UP", "UP", 200),
        (&[(true, Closed)], "UP", "UP", 200),
        (&[(false, Open)], "UNKNOWN", "UP", 200),
        (&[(false, Open), (false, Open)], "UNKNOWN", "UP", 200),
        (&[(false, Open), (false, Closed)], "UP", "UP", 200),
        (&[(true, Open)], "DOWN", "DOWN", 503),
        (&[(true, Open), (false, Closed)], "DOWN", "DOWN", 503),
        (&[(false, HalfOpen)], "UNKNOWN", "UP", 200),
        (&[(true, HalfOpen), (false, Closed)], "UP", "UP", 200),
        (&[(true, ForcedOpen)], "UNKNOWN", "UP", 200),
        (&[(true, Disabled)], "UNKNOWN", "UP", 200),
        (&[(true, MetricsOnly)], "UNKNOWN", "UP", 200),
        (&[(true, ForcedOpen), (false, Closed)], "UP", "UP", 200),
        (
            &[(true, Open), (true, ForcedOpen), (false, Open)],
            "DOWN",
            "DOWN",
            503,
        ),
    ];
    for (n, (breakers, component, root, code)) in cases.iter().enumerate() {
        let mut builder = Registry::builder().clock(ManualClock::new());
        for (i, (allow, _)) in breakers.iter().enumerate() {
            builder = builder.instance(&format!("b{i}"), registered(*allow));
        }
        let registry = builder.build();
        for (i, (_, state)) in breakers.iter().enumerate() {
            put(&registry.breaker(&format!("b{i}")), *state);
        }
        // A breaker without the indicator never counts, whatever its state.
        let outsider = registry.breaker("unregistered");
        put(&outsider, Open);

        let base = serve(Admin::new(&registry).health_details(true).router()).await;
        let (status, body) = get(&format!("{base}/actuator/health")).await;
        let case = format!("case {n}: {breakers:?}");
        assert_eq!(status, *code, "{case}");
        assert_eq!(body["status"], *root, "{case}");
        let breakers_health = &body["components"]["circuitBreakers"];
        assert_eq!(breakers_health["status"], *component, "{case}");
        assert_eq!(
            body["components"]["ping"],
            json!({ "status": "UP" }),
            "{case}"
        );
        let listed = breakers_health
            .get("details")
            .and_then(Value::as_object)
            .map_or(0, |d| d.len());
        // Spring leaves empty details out; the outsider is never listed.
        assert_eq!(listed, breakers.len(), "{case}");
        let (status, alone) = get(&format!("{base}/actuator/health/circuitBreakers")).await;
        assert_eq!(alone, *breakers_health, "{case}");
        let alone_code = if *component == "DOWN" { 503 } else { 200 };
        assert_eq!(status, alone_code, "{case}");

        // Hidden details change the body, never the status.
        let base = serve(Admin::new(&registry).router()).await;
        let (status, body) = get(&format!("{base}/actuator/health")).await;
        assert_eq!(status, *code, "{case}");
        assert_eq!(
            body,
            json!({ "status": root, "groups": ["liveness", "readiness"] }),
            "{case}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn details_name_each_breaker_with_resilience4j_fields_in_its_order() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("closed", registered(false))
        .instance("open", registered(false))
        .instance("mayFail", registered(true))
        .build();
    let open = registry.breaker("open");
    let may_fail = registry.breaker("mayFail");
    registry.breaker("closed");
    let base = serve(Admin::new(&registry).health_details(true).router()).await;
    let url = format!("{base}/actuator/health");

    for _ in 0..4 {
        fail(&open);
    }
    let (status, body, ordered) = get_ordered(&url).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "status": "UP",
            "components": {
                "circuitBreakers": {
                    "status": "UP",
                    "details": {
                        "closed": { "status": "UP", "details": details("CLOSED", 0, 0, "-1.0%") },
                        "mayFail": { "status": "UP", "details": details("CLOSED", 0, 0, "-1.0%") },
                        "open": { "status": "CIRCUIT_OPEN", "details": details("OPEN", 4, 4, "100.0%") }
                    }
                },
                "livenessState": { "status": "UP" },
                "ping": { "status": "UP" },
                "readinessState": { "status": "UP" }
            },
            "groups": ["liveness", "readiness"]
        })
    );
    // Spring's order: status first; components by name; groups last; each breaker's details
    // in the order Resilience4j's indicator adds them.
    assert_eq!(ordered.keys(), ["status", "components", "groups"]);
    let components = ordered.at("components");
    assert_eq!(
        components.keys(),
        ["circuitBreakers", "livenessState", "ping", "readinessState"]
    );
    let breakers = components.at("circuitBreakers");
    assert_eq!(breakers.keys(), ["status", "details"]);
    assert_eq!(breakers.at("details").keys(), ["closed", "mayFail", "open"]);
    let open_health = breakers.at("details").at("open");
    assert_eq!(open_health.keys(), ["status", "details"]);
    assert_eq!(
        open_health.at("details").keys(),
        [
            "failureRate",
            "failureRateThreshold",
            "slowCallRate",
            "slowCallRateThreshold",
            "bufferedCalls",
            "slowCalls",
            "slowFailedCalls",
            "failedCalls",
            "notPermittedCalls",
            "state"
        ]
    );

    // OPEN with allow-to-fail: DOWN, 503 at the root and at the component.
    for _ in 0..4 {
        fail(&may_fail);
    }
    let (status, body) = get(&url).await;
    assert_eq!((status, &body["status"]), (503, &json!("DOWN")));
    let (status, component) = get(&format!("{base}/actuator/health/circuitBreakers")).await;
    assert_eq!(status, 503);
    assert_eq!(component, body["components"]["circuitBreakers"]);
    assert_eq!(component["details"]["mayFail"]["status"], "DOWN");

    // HALF_OPEN after the wait: CIRCUIT_HALF_OPEN, which Spring does not rank: UP again.
    clock.advance(Duration::from_secs(31));
    let permit = may_fail.try_acquire().expect("the first trial");
    assert_eq!(may_fail.state(), State::HalfOpen);
    let (status, body) = get(&url).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "UP");
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["mayFail"]["status"],
        "CIRCUIT_HALF_OPEN"
    );
    drop(permit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_can_be_shown_without_details_and_details_without_components() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("payments", registered(true))
        .build();
    put(&registry.breaker("payments"), State::Open);

    // show-components without show-details: each component's status, no breaker named.
    let base = serve(Admin::new(&registry).health_components(true).router()).await;
    let (status, body) = get(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 503);
    assert_eq!(
        body,
        json!({
            "status": "DOWN",
            "components": {
                "circuitBreakers": { "status": "DOWN" },
                "livenessState": { "status": "UP" },
                "ping": { "status": "UP" },
                "readinessState": { "status": "UP" }
            },
            "groups": ["liveness", "readiness"]
        })
    );
    let at = |path: &str| format!("{base}/actuator/health/{path}");
    assert_eq!(
        get(&at("circuitBreakers")).await,
        (503, json!({ "status": "DOWN" }))
    );
    assert_eq!(get(&at("ping")).await, (200, json!({ "status": "UP" })));
    assert_eq!(
        get(&at("readinessState")).await,
        (200, json!({ "status": "UP" }))
    );
    // Nothing by that name, or below a single indicator: 404, saying so.
    for path in ["circuitBreakers/payments", "Ping", "nothing", "%22%3Cb%3E"] {
        let (status, body) = get(&at(path)).await;
        assert_eq!(status, 404, "{path}");
        assert!(body["message"]
            .as_str()
            .unwrap()
            .contains("no health group or component"));
    }
    let (_, body) = get(&at("%22%3Cb%3E")).await;
    assert_eq!(body["path"], "\"<b>", "the name comes back as JSON text");
    // Spring's probe groups show no components even then.
    let (status, _) = get(&at("liveness/livenessState")).await;
    assert_eq!(status, 404);

    // show-details with show-components off: the root's status and groups only, and no
    // component path (Spring's split).
    let admin = Admin::new(&registry)
        .health_details(true)
        .health_components(false);
    let base = serve(admin.router()).await;
    let (status, body) = get(&format!("{base}/actuator/health")).await;
    assert_eq!(status, 503);
    assert_eq!(
        body,
        json!({ "status": "DOWN", "groups": ["liveness", "readiness"] })
    );
    let (status, _) = get(&format!("{base}/actuator/health/circuitBreakers")).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readiness_handle_takes_the_service_out_of_rotation_and_back() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let admin = Admin::new(&registry);
    let before = admin.readiness();
    let base = serve(admin.router()).await;
    // A handle got after the router was made is the same state.
    let after = admin.readiness();
    let url = |path: &str| format!("{base}/actuator/health{path}");

    assert!(after.is_accepting_traffic());
    before.refuse_traffic();
    assert!(!after.is_accepting_traffic());
    assert_eq!(
        get(&url("/readiness")).await,
        (503, json!({ "status": "OUT_OF_SERVICE" }))
    );
    // The whole includes readinessState, so it is OUT_OF_SERVICE (503) too, as in Spring.
    let (status, body) = get(&url("")).await;
    assert_eq!((status, &body["status"]), (503, &json!("OUT_OF_SERVICE")));
    // Liveness is a separate state.
    assert_eq!(
        get(&url("/liveness")).await,
        (200, json!({ "status": "UP" }))
    );

    after.accept_traffic();
    assert_eq!(
        get(&url("/readiness")).await,
        (200, json!({ "status": "UP" }))
    );
    assert_eq!(get(&url("")).await.0, 200);

    // A broken liveness is DOWN, at the probe and at the root.
    let liveness = admin.liveness();
    liveness.mark_broken();
    assert_eq!(
        get(&url("/liveness")).await,
        (503, json!({ "status": "DOWN" }))
    );
    assert_eq!(
        get(&url("")).await,
        (
            503,
            json!({ "status": "DOWN", "groups": ["liveness", "readiness"] })
        )
    );
    assert_eq!(
        get(&url("/readiness")).await,
        (200, json!({ "status": "UP" }))
    );
    liveness.mark_correct();
    assert_eq!(get(&url("/liveness")).await.0, 200);
    assert_eq!(
        format!("{:?}", admin.readiness()),
        "Readiness { accepting_traffic: true }"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_breakers_join_the_readiness_group_only_when_asked() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("payments", registered(true))
        .build();
    put(&registry.breaker("payments"), State::Open);

    // Default, as Spring: readiness is the service's own state; the root is DOWN.
    let base = serve(Admin::new(&registry).router()).await;
    assert_eq!(get(&format!("{base}/actuator/health")).await.0, 503);
    for probe in ["readiness", "liveness"] {
        let answer = get(&format!("{base}/actuator/health/{probe}")).await;
        assert_eq!(answer, (200, json!({ "status": "UP" })), "{probe}");
    }

    // include=readinessState,circuitBreakers: the breaker allowed to fail fails the probe.
    let admin = Admin::new(&registry).readiness_includes_circuit_breakers(true);
    let base = serve(admin.router()).await;
    let url = |path: &str| format!("{base}/actuator/health/{path}");
    assert_eq!(
        get(&url("readiness")).await,
        (503, json!({ "status": "DOWN" }))
    );
    assert_eq!(
        get(&url("liveness")).await,
        (200, json!({ "status": "UP" }))
    );
    // Forced open is UNKNOWN: the readiness group is UP again.
    put(&registry.breaker("payments"), State::ForcedOpen);
    assert_eq!(
        get(&url("readiness")).await,
        (200, json!({ "status": "UP" }))
    );
    put(&registry.breaker("payments"), State::Open);

    // A configured group shows what the whole shows: here its members and their details.
    let admin = Admin::new(&registry)
        .readiness_includes_circuit_breakers(true)
        .health_details(true);
    let base = serve(admin.router()).await;
    let url = |path: &str| format!("{base}/actuator/health/{path}");
    let (status, body, ordered) = get_ordered(&url("readiness")).await;
    assert_eq!(status, 503);
    assert_eq!(
        ordered.keys(),
        ["status", "components"],
        "a group lists no groups"
    );
    assert_eq!(
        ordered.at("components").keys(),
        ["circuitBreakers", "readinessState"]
    );
    assert_eq!(
        body["components"]["circuitBreakers"]["details"]["payments"]["status"],
        "DOWN"
    );
    assert_eq!(get(&url("readiness/circuitBreakers")).await.0, 503);
    assert_eq!(get(&url("readiness/readinessState")).await.0, 200);
    // Not a member of the group: 404, though the whole has it.
    assert_eq!(get(&url("readiness/ping")).await.0, 404);
    assert_eq!(get(&url("ping")).await.0, 200);
    // The liveness group stays Spring's probe group: status only.
    assert_eq!(
        get(&url("liveness")).await,
        (200, json!({ "status": "UP" }))
    );
    assert_eq!(get(&url("liveness/livenessState")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_probes_the_root_is_bare_and_the_groups_are_gone() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let admin = Admin::new(&registry).health_probes(false);
    let readiness = admin.readiness();
    let base = serve(admin.router()).await;
    let url = |path: &str| format!("{base}/actuator/health{path}");
    assert_eq!(get(&url("")).await, (200, json!({ "status": "UP" })));
    for probe in ["/liveness", "/readiness"] {
        assert_eq!(get(&url(probe)).await.0, 404, "{probe}");
    }
    readiness.refuse_traffic();
    assert_eq!(get(&url("")).await, (200, json!({ "status": "UP" })));

    let base = serve(
        Admin::new(&registry)
            .health_probes(false)
            .health_details(true)
            .router(),
    )
    .await;
    let (_, body, ordered) = get_ordered(&format!("{base}/actuator/health")).await;
    assert_eq!(ordered.keys(), ["status", "components"]);
    assert_eq!(
        body["components"],
        json!({ "circuitBreakers": { "status": "UNKNOWN" }, "ping": { "status": "UP" } })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_endpoint_can_be_turned_off() {
    let registry = Registry::new();
    assert_turned_off(
        Admin::new(&registry).health_endpoint(false).router(),
        Admin::new(&registry).router(),
        &[
            "/actuator/health",
            "/actuator/health/liveness",
            "/actuator/health/readiness",
        ],
    )
    .await;
}
