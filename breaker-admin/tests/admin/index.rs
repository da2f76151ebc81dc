//! `GET /actuator`: Spring Boot's links index over the endpoints the admin mounts, with Spring's
//! link ids and templates, in order; hrefs absolute from the request's host and the path the
//! index was reached at, each one answering; a missing or malformed host a 400 that names it.

use axum::body::Body;
use axum::http::{header, Request};
use breaker_admin::{Admin, Authorization};
use breaker_core::{ManualClock, Registry};
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::support::ordered::{get_ordered, Ordered};
use crate::support::{assert_turned_off, client, serve};

/// Every link id the admin can list, in its order, when every endpoint is mounted.
const ALL: [&str; 20] = [
    "self",
    "circuitbreakers",
    "circuitbreakers-name",
    "circuitbreakerevents",
    "circuitbreakerevents-name",
    "circuitbreakerevents-name-eventType",
    "streamcircuitbreakerevents",
    "streamcircuitbreakerevents-name",
    "streamcircuitbreakerevents-name-eventType",
    "bulkheads",
    "bulkheadevents",
    "bulkheadevents-bulkheadName",
    "bulkheadevents-bulkheadName-eventType",
    "retries",
    "retryevents",
    "retryevents-name",
    "retryevents-name-eventType",
    "health",
    "health-path",
    "prometheus",
];

/// A registry with a breaker, a bulkhead and a retry, all named `inventory`.
fn registry() -> Registry {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    registry.breaker("inventory");
    registry.bulkhead("inventory");
    registry.retry("inventory");
    registry
}

/// The admin with every endpoint mounted.
fn everything(registry: &Registry) -> Admin {
    Admin::new(registry)
        .write_operations(|_: &_| Authorization::Forbidden)
        .prometheus(|| "resilience4j_circuitbreaker_state 1\n".to_owned())
}

/// `template` with each variable given a value that exists: the `inventory` instances, an event
/// type of the endpoint's kind, the liveness probe for a health path.
fn expand(id: &str, template: &str) -> String {
    let event_type = if id.starts_with("bulkhead") {
        "CALL_PERMITTED"
    } else if id.starts_with("retry") {
        "RETRY"
    } else {
        "SUCCESS"
    };
    template
        .replace("{name}", "inventory")
        .replace("{bulkheadName}", "inventory")
        .replace("{eventType}", event_type)
        .replace("{*path}", "liveness")
}

/// The index's links as `(id, href, templated)`, checking each link is `{"href", "templated"}`
/// in that order.
fn links(index: &Ordered) -> Vec<(String, String, bool)> {
    assert_eq!(index.keys(), ["_links"]);
    let links = index.at("_links");
    links
        .keys()
        .into_iter()
        .map(|id| {
            let link = links.at(id);
            assert_eq!(link.keys(), ["href", "templated"], "{id}");
            let value = link.value();
            let href = value["href"].as_str().unwrap().to_owned();
            let templated = value["templated"].as_bool().unwrap();
            (id.to_owned(), href, templated)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_lists_every_mounted_endpoint_and_each_href_answers() {
    let registry = registry();
    let base = serve(everything(&registry).router()).await;
    let (status, body, ordered) = get_ordered(&format!("{base}/actuator")).await;
    assert_eq!(status, 200);
    let links = links(&ordered);
    let ids: Vec<&str> = links.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ALL);
    assert_eq!(
        body["_links"]["self"],
        json!({ "href": format!("{base}/actuator"), "templated": false })
    );
    assert_eq!(
        body["_links"]["health-path"],
        json!({ "href": format!("{base}/actuator/health/{{*path}}"), "templated": true })
    );
    assert_eq!(
        body["_links"]["bulkheadevents-bulkheadName-eventType"]["href"],
        format!("{base}/actuator/bulkheadevents/{{bulkheadName}}/{{eventType}}")
    );

    // What Spring Boot Admin does with it: follow each link (a template with real values).
    for (id, href, templated) in &links {
        assert_eq!(*templated, href.contains('{'), "{id}");
        assert!(
            href.starts_with(&format!("{base}/actuator")),
            "{id}: {href}"
        );
        let url = expand(id, href);
        // The stream answers its head at once and never ends: only the status is read.
        let response = client().get(&url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{id}: {url}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_mounted_endpoints_are_listed() {
    let registry = registry();
    let ids = |admin: Admin| async move {
        let base = serve(admin.router()).await;
        let (status, _, ordered) = get_ordered(&format!("{base}/actuator")).await;
        assert_eq!(status, 200);
        ordered
            .at("_links")
            .keys()
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };

    // The defaults: no write operation, no Prometheus route; the GET of one breaker keeps
    // `circuitbreakers-name`.
    let defaults = ids(Admin::new(&registry)).await;
    let expected: Vec<&str> = ALL[..19].to_vec();
    assert_eq!(defaults, expected);

    let only_health = Admin::new(&registry)
        .circuit_breakers_endpoint(false)
        .events_endpoint(false)
        .stream_endpoint(false)
        .bulkheads_endpoint(false)
        .bulkhead_events_endpoint(false)
        .retries_endpoint(false)
        .retry_events_endpoint(false)
        .dashboard_endpoint(false);
    assert_eq!(ids(only_health).await, ["self", "health", "health-path"]);

    // The write operation alone still lives at `circuitbreakers/{name}`.
    let write_only = Admin::new(&registry)
        .circuit_breakers_endpoint(false)
        .health_endpoint(false)
        .events_endpoint(false)
        .stream_endpoint(false)
        .bulkheads_endpoint(false)
        .bulkhead_events_endpoint(false)
        .retries_endpoint(false)
        .retry_events_endpoint(false)
        .write_operations(|_: &_| Authorization::Allow);
    assert_eq!(ids(write_only).await, ["self", "circuitbreakers-name"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hrefs_follow_the_prefix_the_admin_is_nested_under_and_the_host_asked_for() {
    let registry = registry();
    let app = axum::Router::new().nest("/ops", Admin::new(&registry).router());
    let base = serve(app).await;

    // With and without the trailing slash, the links are the same (Spring's normalization).
    for index in ["/ops/actuator", "/ops/actuator/"] {
        let (status, body, _) = get_ordered(&format!("{base}{index}")).await;
        assert_eq!(status, 200, "{index}");
        assert_eq!(
            body["_links"]["self"]["href"],
            format!("{base}/ops/actuator")
        );
        let health = body["_links"]["health"]["href"].as_str().unwrap();
        assert_eq!(health, format!("{base}/ops/actuator/health"));
        let response = client().get(health).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }

    // The host is the one the client asked for (a proxy's, a Service's name), port included.
    for host in [
        "admin.example:8443",
        "[::1]:9090",
        "svc.ns.svc.cluster.local",
    ] {
        let response = client()
            .get(format!("{base}/ops/actuator"))
            .header(header::HOST, host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{host}");
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(
            body["_links"]["retries"]["href"],
            format!("http://{host}/ops/actuator/retries")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_malformed_host_is_a_400_that_names_the_header() {
    let registry = registry();
    let base = serve(Admin::new(&registry).router()).await;
    for host in ["evil\"><script>", "user@host:80", "host:port", "a b"] {
        let response = client()
            .get(format!("{base}/actuator"))
            .header(header::HOST, host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{host}");
        let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(body["header"], "Host", "{host}");
        assert_eq!(body["status"], 400);
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("Host header"), "{message}");
        assert!(
            !message.contains(host),
            "the bad host is not echoed: {message}"
        );
    }

    // No client sends a request without a Host: through the router directly.
    let router = Admin::new(&registry).router();
    let request = Request::get("/actuator").body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 400);
    let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("exactly one Host header"));

    // A request URI with its own scheme and host (HTTP/2, or HTTP/1's absolute form) is
    // answered from them, `https` included.
    let request = Request::get("https://svc.example/actuator")
        .body(Body::empty())
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        body["_links"]["health"]["href"],
        "https://svc.example/actuator/health"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_can_be_turned_off() {
    let registry = registry();
    assert_turned_off(
        Admin::new(&registry).index_endpoint(false).router(),
        Admin::new(&registry).router(),
        &["/actuator", "/actuator/"],
    )
    .await;
}
