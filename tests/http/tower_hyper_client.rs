//! The tower layer on the client side: hyper's own client (a `tower::Service`) behind a
//! breaker per downstream host, against axum servers on loopback. A failing host opens its own
//! breaker and is then refused without a connection (the servers count their requests), the
//! other host is still served, a connection error is a failure, a dropped request gives its
//! HALF_OPEN trial back, and trials close the breaker again.
#![cfg(feature = "tower")]

use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use breaker::tower::{CallError, CircuitBreakerLayer, HostKey, HttpStatus};
use breaker::{Config, ManualClock, Registry, State};
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Notify;
use tower_layer::Layer;

/// An axum server that answers `status`, counts its requests, and (when `hold` is set) waits
/// for `release` before answering.
#[derive(Clone, Default)]
struct Server {
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
    hold: Arc<std::sync::atomic::AtomicBool>,
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl Server {
    async fn start(status: u16) -> (Server, String) {
        let server = Server::default();
        server.status.store(status, Ordering::SeqCst);
        let state = server.clone();
        let handler = move || {
            let state = state.clone();
            async move {
                state.hits.fetch_add(1, Ordering::SeqCst);
                if state.hold.load(Ordering::SeqCst) {
                    state.entered.notify_one();
                    state.release.notified().await;
                }
                StatusCode::from_u16(state.status.load(Ordering::SeqCst)).unwrap()
            }
        };
        let app = Router::new().route("/", get(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let authority = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (server, authority)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn registry(clock: &ManualClock) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .instance(
            "downstream",
            Config::builder()
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
                .failure_rate_threshold(50.0)
                .wait_duration_in_open_state(Duration::from_secs(30))
                .permitted_number_of_calls_in_half_open_state(1)
                .build()
                .unwrap(),
        )
        .build()
}

fn get_request(authority: &str) -> axum::http::Request<Empty<Bytes>> {
    axum::http::Request::get(format!("http://{authority}/"))
        .body(Empty::new())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hyper_client_behind_per_host_breakers_keeps_hosts_apart() {
    use tower_service::Service;

    let clock = ManualClock::new();
    let registry = registry(&clock);
    let (failing, failing_at) = Server::start(500).await;
    let (healthy, healthy_at) = Server::start(200).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut service = CircuitBreakerLayer::per_key(&registry, "downstream", HostKey)
        .classify(HttpStatus)
        .layer(client);
    let mut send = move |authority: &str| {
        let request = get_request(authority);
        // hyper's client is always ready.
        std::future::poll_fn(|cx| service.poll_ready(cx)).now_or_never_ready();
        service.call(request)
    };

    for _ in 0..4 {
        let response = send(&failing_at).await.unwrap();
        assert_eq!(response.status(), 500);
    }
    let group = registry.keyed("downstream");
    let failing_breaker = group.find(&failing_at).unwrap();
    assert_eq!(failing_breaker.state(), State::Open);
    assert_eq!(failing_breaker.name(), format!("downstream[{failing_at}]"));

    // The failing host is refused without a request; the other host is served.
    for _ in 0..5 {
        let error = send(&failing_at).await.unwrap_err();
        assert!(error.is_rejected(), "{error}");
        assert_eq!(send(&healthy_at).await.unwrap().status(), 200);
    }
    assert_eq!(
        failing.hits(),
        4,
        "no rejected request reached the failing host"
    );
    assert_eq!(healthy.hits(), 5);
    assert_eq!(group.find(&healthy_at).unwrap().state(), State::Closed);

    // After the wait one trial goes through; the host has recovered, and the breaker closes.
    failing.status.store(200, Ordering::SeqCst);
    clock.advance(Duration::from_millis(30_001));
    assert_eq!(send(&failing_at).await.unwrap().status(), 200);
    assert_eq!(failing_breaker.state(), State::Closed);
    assert_eq!(failing.hits(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_are_failures_and_a_dropped_request_gives_its_trial_back() {
    use tower_service::Service;

    let clock = ManualClock::new();
    let registry = registry(&clock);
    // A port nothing listens on: bound, read, closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_at = closed.local_addr().unwrap().to_string();
    drop(closed);
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut service = CircuitBreakerLayer::per_key(&registry, "downstream", HostKey)
        .classify(HttpStatus)
        .layer(client);

    for _ in 0..4 {
        let error = service.call(get_request(&closed_at)).await.unwrap_err();
        assert!(
            matches!(error, CallError::Inner(ref e) if e.is_connect()),
            "{error}"
        );
    }
    let breaker = registry.keyed("downstream").find(&closed_at).unwrap();
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(breaker.metrics().failed_calls, 4);

    // HALF_OPEN with one trial, against a server that holds its answer.
    let (server, server_at) = Server::start(200).await;
    server.hold.store(true, Ordering::SeqCst);
    let breaker = registry.keyed("downstream").get(&server_at);
    breaker.transition_to(State::Open).unwrap();
    clock.advance(Duration::from_millis(30_001));
    let entered = server.entered.notified();
    let mut trial = Box::pin(service.call(get_request(&server_at)));
    tokio::select! {
        _ = entered => {}
        _ = &mut trial => panic!("the held request finished"),
    }
    assert_eq!(breaker.state(), State::HalfOpen);
    // The trial is taken: a second request is refused.
    assert!(service
        .call(get_request(&server_at))
        .await
        .unwrap_err()
        .is_rejected());
    // Dropping the request records nothing: the breaker is still HALF_OPEN with an empty
    // window (a success recorded for it would have closed the breaker with its one trial).
    drop(trial);
    let metrics = breaker.metrics();
    assert_eq!(
        (metrics.state, metrics.buffered_calls),
        (State::HalfOpen, 0),
        "the dropped trial recorded nothing: {metrics:?}"
    );
    // And it gives the trial back: the next request is let through.
    server.hold.store(false, Ordering::SeqCst);
    server.release.notify_waiters();
    let response = service.call(get_request(&server_at)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(server.hits(), 2);
}

/// Polls a readiness future once and insists it is ready (the services here always are).
trait NowOrNeverReady {
    fn now_or_never_ready(self);
}

impl<F: std::future::Future<Output = Result<(), E>>, E: std::fmt::Debug> NowOrNeverReady for F {
    fn now_or_never_ready(self) {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::pin!(self).poll(&mut cx) {
            std::task::Poll::Ready(ready) => ready.unwrap(),
            std::task::Poll::Pending => panic!("the service was not ready"),
        }
    }
}
