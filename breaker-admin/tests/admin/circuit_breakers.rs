//! `GET /actuator/circuitbreakers` and `/{name}`: Resilience4j's `CircuitBreakerEndpointResponse`
//! and `CircuitBreakerDetails`, field by field, for breakers that existed before the admin and
//! breakers made after it, plain and keyed; removed and replaced breakers; unknown names.

use crate::support::{encode, fail, get_json, serve, small, succeed};
use breaker_admin::Admin;
use breaker_core::{Config, ManualClock, Registry};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_breaker_in_resilience4j_details() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("productService", small().build().unwrap())
        .instance(
            "thirds",
            Config::builder()
                .sliding_window_size(3)
                .minimum_number_of_calls(3)
                .failure_rate_threshold(50.0)
                .slow_call_rate_threshold(12.5)
                .build()
                .unwrap(),
        )
        .build();
    // Made before the admin: attached when it is built.
    let product = registry.breaker("productService");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    // Made after: attached through the registry's hook.
    let thirds = registry.breaker("thirds");
    let inventory = registry.breaker("inventory");

    succeed(&product);
    succeed(&product);
    fail(&product);
    fail(&product); // 2 of 4 failed: 50% >= 50%, OPEN
    succeed(&product); // rejected
    succeed(&thirds);
    succeed(&thirds);
    fail(&thirds); // 1 of 3: 33.333332%, stays CLOSED
    let _ = inventory;

    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakers")).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "circuitBreakers": {
                "inventory": {
                    "failureRate": "-1.0%",
                    "slowCallRate": "-1.0%",
                    "failureRateThreshold": "50.0%",
                    "slowCallRateThreshold": "100.0%",
                    "bufferedCalls": 0,
                    "failedCalls": 0,
                    "slowCalls": 0,
                    "slowFailedCalls": 0,
                    "notPermittedCalls": 0,
                    "state": "CLOSED"
                },
                "productService": {
                    "failureRate": "50.0%",
                    "slowCallRate": "0.0%",
                    "failureRateThreshold": "50.0%",
                    "slowCallRateThreshold": "100.0%",
                    "bufferedCalls": 4,
                    "failedCalls": 2,
                    "slowCalls": 0,
                    "slowFailedCalls": 0,
                    "notPermittedCalls": 1,
                    "state": "OPEN"
                },
                "thirds": {
                    "failureRate": "33.333332%",
                    "slowCallRate": "0.0%",
                    "failureRateThreshold": "50.0%",
                    "slowCallRateThreshold": "12.5%",
                    "bufferedCalls": 3,
                    "failedCalls": 1,
                    "slowCalls": 0,
                    "slowFailedCalls": 0,
                    "notPermittedCalls": 0,
                    "state": "CLOSED"
                }
            }
        })
    );
    // Sorted by name, as Resilience4j sorts them.
    let names: Vec<&String> = body["circuitBreakers"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["inventory", "productService", "thirds"]);

    let (status, one) = get_json(&format!("{base}/actuator/circuitbreakers/productService")).await;
    assert_eq!(status, 200);
    assert_eq!(
        one,
        json!({ "circuitBreakers": { "productService": body["circuitBreakers"]["productService"] } })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_names_are_found_percent_decoded_and_unknown_names_are_404() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    let keyed = registry.keyed("tenantProducts").get("acme/eu");
    assert_eq!(keyed.name(), "tenantProducts[acme/eu]");
    fail(&keyed);

    let url = format!("{base}/actuator/circuitbreakers/{}", encode(keyed.name()));
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["circuitBreakers"]["tenantProducts[acme/eu]"]["failedCalls"],
        1
    );
    assert_eq!(
        body["circuitBreakers"]["tenantProducts[acme/eu]"]["bufferedCalls"],
        1
    );

    // The plain name of a keyed group is no breaker; nor is a name with a quote and a newline,
    // which comes back escaped in the JSON (parsed here) and not made into a breaker.
    for name in ["tenantProducts", "no \"such\"\nbreaker", "<script>"] {
        let (status, body) =
            get_json(&format!("{base}/actuator/circuitbreakers/{}", encode(name))).await;
        assert_eq!(status, 404, "{name:?}");
        assert_eq!(body["status"], 404);
        assert_eq!(body["error"], "Not Found");
        assert_eq!(body["name"], name);
        assert_eq!(
            body["message"],
            format!("no circuit breaker is named \"{name}\"").as_str()
        );
    }
    assert_eq!(registry.breakers().len(), 1, "a lookup makes no breaker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_and_replaced_breakers_follow_the_registry() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let gone = registry.breaker("gone");
    let swapped = registry.breaker("swapped");
    let admin = Admin::new(&registry);
    let base = serve(admin.router()).await;
    fail(&gone);
    fail(&swapped);

    registry.remove("gone");
    let (status, _) = get_json(&format!("{base}/actuator/circuitbreakers/gone")).await;
    assert_eq!(status, 404);

    registry.replace("swapped", small().build().unwrap());
    let (_, body) = get_json(&format!("{base}/actuator/circuitbreakers")).await;
    assert_eq!(
        body["circuitBreakers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["swapped"]
    );
    // The new breaker: a fresh window, its own config.
    assert_eq!(body["circuitBreakers"]["swapped"]["bufferedCalls"], 0);
    let new = registry.find("swapped").unwrap();
    fail(&new);
    let (_, body) = get_json(&format!("{base}/actuator/circuitbreakers/swapped")).await;
    assert_eq!(body["circuitBreakers"]["swapped"]["failedCalls"], 1);
    // The detached old breaker is not shown, whatever it does.
    fail(&swapped);
    let (_, body) = get_json(&format!("{base}/actuator/circuitbreakers/swapped")).await;
    assert_eq!(body["circuitBreakers"]["swapped"]["failedCalls"], 1);
}
