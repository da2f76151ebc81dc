//! The dashboard's JSON (`GET /dashboard/api/breakers` and a breaker's state history,
//! `.../{name}/states`), its page and assets, the Prometheus route, turning endpoints off, and
//! `serve_local`.

use std::time::Duration;

use crate::support::{client, encode, fail, get_json, serve, small, succeed};
use breaker_admin::Admin;
use breaker_core::{ManualClock, Registry, State};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_filters_pages_and_counts() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance(
            "payments",
            small()
                .slow_call_duration_threshold(Duration::from_millis(100))
                .build()
                .unwrap(),
        )
        .build();
    let payments = registry.breaker("payments");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    for tenant in ["acme", "Globex", "initech"] {
        registry.keyed("Tenant").get(tenant);
    }
    registry
        .breaker("search")
        .transition_to(State::ForcedOpen)
        .unwrap();

    let _ = payments.call_sync(|| {
        clock.advance(Duration::from_millis(150)); // slow
        Ok::<_, ()>(())
    });
    succeed(&payments);
    fail(&payments);
    fail(&payments); // 2 of 4: OPEN
    succeed(&payments); // rejected
    succeed(&payments); // rejected

    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers")).await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], 5);
    assert_eq!(body["matched"], 5);
    assert_eq!(
        body["states"],
        json!({ "CLOSED": 3, "OPEN": 1, "HALF_OPEN": 0, "FORCED_OPEN": 1, "DISABLED": 0, "METRICS_ONLY": 0 })
    );
    assert_eq!(
        body["now"], 1_700_000_000_150u64,
        "unix ms on the registry's clock"
    );
    let names: Vec<&str> = body["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Tenant[Globex]",
            "Tenant[acme]",
            "Tenant[initech]",
            "payments",
            "search"
        ],
        "sorted by name"
    );
    assert_eq!(
        body["breakers"][3],
        json!({
            "name": "payments",
            "state": "OPEN",
            "failureRate": 50.0,
            "slowCallRate": 25.0,
            "failureRateThreshold": 50.0,
            "slowCallRateThreshold": 100.0,
            "bufferedCalls": 4,
            "failedCalls": 2,
            "slowCalls": 1,
            "notPermittedCalls": 2,
            "calls": 4,
            "failures": 2,
            "slow": 1,
            "rejected": 2
        })
    );
    assert_eq!(body["breakers"][0]["failureRate"], -1.0);

    // q: a case-insensitive substring; state; offset and limit page the matches.
    let (_, body) = get_json(&format!(
        "{base}/dashboard/api/breakers?q=TENANT&offset=1&limit=1"
    ))
    .await;
    assert_eq!(
        (body["total"].clone(), body["matched"].clone()),
        (json!(5), json!(3))
    );
    assert_eq!(body["breakers"].as_array().unwrap().len(), 1);
    assert_eq!(body["breakers"][0]["name"], "Tenant[acme]");
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?state=FORCED_OPEN")).await;
    assert_eq!(body["matched"], 1);
    assert_eq!(body["breakers"][0]["name"], "search");
    assert_eq!(body["states"]["CLOSED"], 3, "states count every breaker");
    let (_, body) = get_json(&format!("{base}/dashboard/api/breakers?offset=10")).await;
    assert_eq!(
        (body["matched"].clone(), body["breakers"].clone()),
        (json!(5), json!([]))
    );

    // Bad values: 400 naming the parameter.
    for (query, parameter) in [
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("offset=-1", "offset"),
        ("state=AJAR", "state"),
    ] {
        let (status, body) = get_json(&format!("{base}/dashboard/api/breakers?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert_eq!(body["parameter"], parameter, "{query}");
    }
    let long = "x".repeat(300);
    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers?q={long}")).await;
    assert_eq!((status, body["parameter"].clone()), (400, json!("q")));
}

/// A STATE_TRANSITION in the state history.
fn transition(time: &str, from: &str, to: &str) -> Value {
    json!({
        "type": "STATE_TRANSITION",
        "creationTime": time,
        "stateTransition": format!("{from}_TO_{to}"),
        "from": from,
        "to": to
    })
}

/// The ManualClock's start (2023-11-14T22:13:20Z) plus `seconds`, as `creationTime` is written
/// (no seconds when they are 0), for `seconds` below 40 minutes.
fn at_seconds(seconds: u64) -> String {
    let (minute, second) = (13 + (20 + seconds) / 60, (20 + seconds) % 60);
    if second == 0 {
        format!("2023-11-14T22:{minute:02}Z[UTC]")
    } else {
        format!("2023-11-14T22:{minute:02}:{second:02}Z[UTC]")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_history_keeps_every_transition_a_busy_breaker_had() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("payments", small().build().unwrap())
        .build();
    let payments = registry.breaker("payments");
    assert_eq!(payments.config().event_consumer_buffer_size(), 100);
    let admin = Admin::new(&registry); // follows it from 22:13:20Z
    let base = serve(admin.router()).await;

    // CLOSED -> OPEN after 150 successes, then OPEN -> HALF_OPEN -> CLOSED through ten trials,
    // then 150 more successes: 313 events, the last 150 of them calls.
    clock.advance(Duration::from_secs(1));
    for _ in 0..150 {
        succeed(&payments);
    }
    fail(&payments);
    fail(&payments); // [S, S, F, F]: 50 %
    assert_eq!(payments.state(), State::Open);
    clock.advance(Duration::from_millis(30_250)); // past the 30 s wait
    succeed(&payments); // the first trial
    assert_eq!(payments.state(), State::HalfOpen);
    clock.advance(Duration::from_millis(500));
    for _ in 0..9 {
        succeed(&payments);
    }
    assert_eq!(payments.state(), State::Closed);
    for _ in 0..150 {
        succeed(&payments);
    }

    // Why: the events endpoint holds the newest 100 events, all of them SUCCESS now.
    let (status, events) =
        get_json(&format!("{base}/dashboard/api/breakers/payments/events")).await;
    assert_eq!(status, 200);
    let events = events["circuitBreakerEvents"].as_array().unwrap();
    assert_eq!(events.len(), 100);
    assert!(
        events.iter().all(|e| e["type"] == "SUCCESS"),
        "the transitions are gone from the events: {events:?}"
    );

    // The state history has every transition since the admin started following the breaker.
    let url = format!("{base}/dashboard/api/breakers/payments/states");
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "name": "payments",
            "since": "2023-11-14T22:13:20Z[UTC]",
            "initialState": "CLOSED",
            "dropped": 0,
            "transitions": [
                transition("2023-11-14T22:13:21Z[UTC]", "CLOSED", "OPEN"),
                transition("2023-11-14T22:13:51.250Z[UTC]", "OPEN", "HALF_OPEN"),
                transition("2023-11-14T22:13:51.750Z[UTC]", "HALF_OPEN", "CLOSED"),
            ]
        })
    );

    // A manual transition and a reset: a reset from FORCED_OPEN is the transition to CLOSED,
    // then the RESET (which has no `from`), at the same instant.
    clock.advance(Duration::from_millis(8250));
    payments.transition_to(State::ForcedOpen).unwrap();
    clock.advance(Duration::from_secs(1));
    payments.reset();
    let (_, body) = get_json(&url).await;
    assert_eq!(
        body["transitions"].as_array().unwrap()[3..],
        [
            transition("2023-11-14T22:14Z[UTC]", "CLOSED", "FORCED_OPEN"),
            transition("2023-11-14T22:14:01Z[UTC]", "FORCED_OPEN", "CLOSED"),
            json!({ "type": "RESET", "creationTime": "2023-11-14T22:14:01Z[UTC]", "to": "CLOSED" }),
        ]
    );
    assert_eq!(body["dropped"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_history_keeps_the_newest_32_transitions() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let flappy = registry.breaker("flappy");
    flappy.transition_to(State::ForcedOpen).unwrap();
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;

    // 40 transitions, one a second: FORCED_OPEN -> CLOSED at +1 s, back at +2 s, ...
    for i in 1..=40u64 {
        clock.advance(Duration::from_secs(1));
        let to = if i % 2 == 1 {
            State::Closed
        } else {
            State::ForcedOpen
        };
        flappy.transition_to(to).unwrap();
    }
    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers/flappy/states")).await;
    assert_eq!(status, 200);
    // The newest 32 (+9 s to +40 s), oldest first; the first 8 dropped. `since` and
    // `initialState` are still when and how the admin found the breaker.
    let newest: Vec<Value> = (9..=40u64)
        .map(|i| {
            let (from, to) = if i % 2 == 1 {
                ("FORCED_OPEN", "CLOSED")
            } else {
                ("CLOSED", "FORCED_OPEN")
            };
            transition(&at_seconds(i), from, to)
        })
        .collect();
    assert_eq!(
        body,
        json!({
            "name": "flappy",
            "since": "2023-11-14T22:13:20Z[UTC]",
            "initialState": "FORCED_OPEN",
            "dropped": 8,
            "transitions": newest
        })
    );

    // A breaker made after the admin: followed from when it was added, in its first state.
    clock.advance(Duration::from_millis(500));
    registry.keyed("Tenant").get("acme");
    let (status, body) = get_json(&format!(
        "{base}/dashboard/api/breakers/{}/states",
        encode("Tenant[acme]")
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "name": "Tenant[acme]",
            "since": "2023-11-14T22:14:00.500Z[UTC]",
            "initialState": "CLOSED",
            "dropped": 0,
            "transitions": []
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_history_of_an_unknown_name_is_a_404() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("payments");
    let base = serve(Admin::new(&registry).router()).await;
    let (status, body) = get_json(&format!("{base}/dashboard/api/breakers/paymentz/states")).await;
    assert_eq!(status, 404);
    assert_eq!(
        body,
        json!({
            "status": 404,
            "error": "Not Found",
            "message": "no circuit breaker is named \"paymentz\"",
            "name": "paymentz"
        })
    );
    // As the events route answers the same name.
    let (status, events) =
        get_json(&format!("{base}/dashboard/api/breakers/paymentz/events")).await;
    assert_eq!((status, events), (404, body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_its_assets_and_prometheus_have_their_content_types() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let admin =
        Admin::new(&registry).prometheus(|| "resilience4j_circuitbreaker_state 1\n".to_owned());
    let base = serve(admin.router()).await;
    let expected = [
        (
            "/dashboard",
            "text/html; charset=utf-8",
            include_str!("../../assets/dashboard.html"),
        ),
        (
            "/dashboard/dashboard.js",
            "text/javascript; charset=utf-8",
            include_str!("../../assets/dashboard.js"),
        ),
        (
            "/dashboard/dashboard.css",
            "text/css; charset=utf-8",
            include_str!("../../assets/dashboard.css"),
        ),
        (
            "/actuator/prometheus",
            "text/plain; version=0.0.4; charset=utf-8",
            "resilience4j_circuitbreaker_state 1\n",
        ),
    ];
    for (path, content_type, body) in expected {
        let response = client().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], content_type, "{path}");
        assert_eq!(response.text().await.unwrap(), body, "{path}");
    }
    // Without a render function there is no Prometheus route.
    let base = serve(Admin::new(&registry).router()).await;
    let response = client()
        .get(format!("{base}/actuator/prometheus"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_endpoints_can_be_turned_off() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("a");
    let paths = [
        "/actuator/circuitbreakers",
        "/actuator/circuitbreakers/a",
        "/actuator/circuitbreakerevents",
        "/actuator/circuitbreakerevents/a",
        "/actuator/streamcircuitbreakerevents/a/ERROR",
        "/actuator/health",
        "/actuator/health/liveness",
        "/dashboard",
        "/dashboard/api/breakers",
        "/dashboard/api/breakers/a/events",
        "/dashboard/api/breakers/a/states",
    ];
    let on = serve(Admin::new(&registry).router()).await;
    for path in paths {
        let response = client().get(format!("{on}{path}")).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
    }
    let off = Admin::new(&registry)
        .circuit_breakers_endpoint(false)
        .events_endpoint(false)
        .stream_endpoint(false)
        .health_endpoint(false)
        .dashboard_endpoint(false);
    let off = serve(off.router()).await;
    for path in paths {
        let response = client().get(format!("{off}{path}")).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 404, "{path}");
    }
}

/// `serve_local` answers on the port it is given with this registry's admin: the answer names
/// a breaker only this test registers, so another server on the port (one that took it between
/// the test freeing it and `serve_local` binding it) cannot pass for it, and a failed bind
/// fails the test with its error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_local_answers_on_loopback() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("serve-local-only");
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let serving = Admin::new(&registry).serve_local(port);
    let mut serving = std::pin::pin!(serving);
    // Polled first (`biased`), `serving` binds at its first poll (tokio binds a `SocketAddr`
    // without waiting): by the time the request is sent, it listens on the port or has ended
    // with the bind's error. It is polled until the answer comes, in this task.
    let url = format!("http://127.0.0.1:{port}/dashboard/api/breakers");
    let (status, body) = tokio::select! {
        biased;
        ended = &mut serving => panic!("serve_local ended before it answered: {ended:?}"),
        answer = get_json(&url) => answer,
    };
    assert_eq!(status, 200);
    let names: Vec<&str> = body["breakers"]
        .as_array()
        .expect("breakers")
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["serve-local-only"], "this registry's breakers");
}
