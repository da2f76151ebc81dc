//! What every test of the admin shares: a real server on 127.0.0.1:0, a client without proxies,
//! breakers that open after a few calls, the capture of log lines, a server-sent event client
//! (`sse`) and JSON read in its keys' order (`ordered`).
#![allow(dead_code, unreachable_pub)]

// The log capture breaker-core's tests use, written once for both crates.
#[path = "../../../breaker-core/tests/support/logs.rs"]
pub mod logs;
/// JSON read with its keys in the text's order.
pub mod ordered;
/// A server-sent event client.
pub mod sse;

use std::time::Duration;

use axum::Router;
use breaker_core::{CircuitBreaker, Config, ConfigBuilder};
use serde_json::Value;

/// Serves `router` on a fresh loopback port; returns `http://127.0.0.1:port`.
pub async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

/// A client that never goes through a proxy.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// GET `url`: the status and the body as JSON.
pub async fn get_json(url: &str) -> (u16, Value) {
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text:?}"));
    (status, body)
}

/// GET `url`: the status and the body as text, exactly as sent.
pub async fn get_text(url: &str) -> (u16, String) {
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Each of `paths` is a 404 from `off` (an admin with their routes turned off), and the first
/// one a 200 from `on` (the same admin with the defaults).
pub async fn assert_turned_off(off: Router, on: Router, paths: &[&str]) {
    let base = serve(off).await;
    for path in paths {
        let (status, _) = get_text(&format!("{base}{path}")).await;
        assert_eq!(status, 404, "{path}");
    }
    let base = serve(on).await;
    let (status, _) = get_text(&format!("{base}{}", paths[0])).await;
    assert_eq!(status, 200, "{}: on by default", paths[0]);
}

/// A window of 4 calls, all counted: 2 failures of 4 open the breaker.
pub fn small() -> ConfigBuilder {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(30))
}

pub fn fail(breaker: &CircuitBreaker) {
    let _ = breaker.call_sync(|| Err::<(), _>("down"));
}

pub fn succeed(breaker: &CircuitBreaker) {
    let _ = breaker.call_sync(|| Ok::<_, ()>(()));
}

/// `text` percent-encoded for one path segment (every byte but the unreserved ones).
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
