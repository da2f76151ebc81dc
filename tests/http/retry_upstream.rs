//! The upstream of the retry's HTTP tests: an axum server on loopback that answers each request
//! with the next status of its script (200 once the script is spent) and records what it
//! received, so that a test counts the attempts where they arrive; and the retry they use.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::routing::any;
use axum::Router;
use breaker::{ManualClock, Registry, RetryConfig, RetryConfigBuilder};

/// Three attempts with no wait between them (the waits on a clock are the layer tests'), and a
/// budget that does not refuse.
pub(crate) fn config() -> RetryConfigBuilder {
    RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
}

/// A registry whose retry `name` has `config`.
pub(crate) fn registry(name: &str, config: RetryConfigBuilder) -> Registry {
    Registry::builder()
        .clock(ManualClock::new())
        .retry_instance(name, config.build().unwrap())
        .build()
}

/// The server's script and what it received: one `(method, body)` per request.
#[derive(Clone, Default)]
pub(crate) struct Upstream {
    script: Arc<Mutex<VecDeque<u16>>>,
    received: Arc<Mutex<Vec<(Method, Bytes)>>>,
}

impl Upstream {
    /// Serves an upstream that answers `script`, then 200; returns it and its `host:port`.
    pub(crate) async fn start(script: &[u16]) -> (Upstream, String) {
        let upstream = Upstream::default();
        upstream.script(script);
        let state = upstream.clone();
        let handler = move |method: Method, body: Bytes| {
            let state = state.clone();
            async move {
                state.received.lock().unwrap().push((method, body));
                let status = state.script.lock().unwrap().pop_front().unwrap_or(200);
                StatusCode::from_u16(status).unwrap()
            }
        };
        let app = Router::new().route("/", any(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (upstream, authority)
    }

    /// Answers the next requests with `statuses`, then 200.
    pub(crate) fn script(&self, statuses: &[u16]) {
        *self.script.lock().unwrap() = statuses.iter().copied().collect();
    }

    /// How many requests arrived.
    pub(crate) fn hits(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    /// What arrived, in order.
    pub(crate) fn received(&self) -> Vec<(Method, Bytes)> {
        self.received.lock().unwrap().clone()
    }
}
