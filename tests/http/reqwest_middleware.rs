//! The reqwest middleware against real axum servers on loopback, through a real reqwest client:
//! 5xx and connect errors open a host's breaker, OPEN fails fast without sending (the server
//! counts its hits), 4xx is ignored, hosts keep their own breakers, HALF_OPEN trials close the
//! breaker again, a dropped request gives its trial back, and the configured timeout, slow-call
//! threshold and error kinds apply.
#![cfg(feature = "reqwest")]

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use breaker::reqwest::{rejected, timed_out, CircuitBreakerMiddleware, StatusClassifier};
use breaker::{
    CallNotPermitted, CallTimedOut, CircuitBreaker, Classify, Config, ErrorKind, ManualClock,
    Outcome, Registry, State,
};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::sync::Notify;

/// A server's behaviour, set by the test, and what it saw.
#[derive(Clone)]
struct Upstream {
    status: Arc<AtomicU16>,
    hits: Arc<AtomicUsize>,
    /// While set, a request waits for `release` before it is answered.
    hold: Arc<AtomicBool>,
    /// Notified (one permit) when a held request has arrived.
    arrived: Arc<Notify>,
    release: Arc<Notify>,
}

impl Upstream {
    fn answering(status: u16) -> Upstream {
        Upstream {
            status: Arc::new(AtomicU16::new(status)),
            hits: Arc::default(),
            hold: Arc::default(),
            arrived: Arc::default(),
            release: Arc::default(),
        }
    }

    fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    fn hold(&self, hold: bool) {
        self.hold.store(hold, Ordering::SeqCst);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    async fn handle(&self) -> StatusCode {
        self.hits.fetch_add(1, Ordering::SeqCst);
        if self.hold.load(Ordering::SeqCst) {
            self.arrived.notify_one();
            self.release.notified().await;
        }
        StatusCode::from_u16(self.status.load(Ordering::SeqCst)).unwrap()
    }
}

/// Serves `upstream` on 127.0.0.1 and returns its base URL and port.
async fn serve(upstream: &Upstream) -> (String, u16) {
    let state = upstream.clone();
    let app = Router::new().route(
        "/",
        get(move || {
            let state = state.clone();
            async move { state.handle().await }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://127.0.0.1:{port}/"), port)
}

/// A port on 127.0.0.1 that nothing listens on: bound, then freed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn client<C>(middleware: CircuitBreakerMiddleware<C>) -> ClientWithMiddleware
where
    C: Classify<reqwest::Response, reqwest_middleware::Error> + Send + Sync + 'static,
{
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    ClientBuilder::new(client).with(middleware).build()
}

/// A registry on a manual clock with `config` for the breakers named `name`.
fn registry(clock: &ManualClock, name: &str, config: Config) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .instance(name, config)
        .build()
}

/// Opens after `calls` calls that all fail; 30 s in OPEN; `trials` trials in HALF_OPEN.
fn opens_after(calls: u32, trials: u32) -> Config {
    Config::builder()
        .sliding_window_size(calls)
        .minimum_number_of_calls(calls)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(30))
        .permitted_number_of_calls_in_half_open_state(trials)
        .build()
        .unwrap()
}

/// The per-host breaker of `port` on 127.0.0.1 in the group `name`.
fn host_breaker(registry: &Registry, name: &str, port: u16) -> CircuitBreaker {
    registry
        .keyed(name)
        .find(&format!("127.0.0.1:{port}"))
        .expect("the host has a breaker")
}

async fn status(client: &ClientWithMiddleware, url: &str) -> u16 {
    let response = client.get(url).send().await.expect("a response");
    response.status().as_u16()
}

/// The breaker's rejection of a request to `url`; fails if the request was not rejected.
async fn rejection(client: &ClientWithMiddleware, url: &str) -> CallNotPermitted {
    let error = client.get(url).send().await.expect_err("a rejection");
    assert!(timed_out(&error).is_none(), "a rejection is no timeout");
    let reqwest_middleware::Error::Middleware(inner) = &error else {
        panic!("a rejection is a middleware error, got {error:?}");
    };
    let by_downcast = inner.downcast_ref::<CallNotPermitted>().cloned();
    let rejection = rejected(&error).cloned().expect("rejected by the breaker");
    assert_eq!(by_downcast.as_ref(), Some(&rejection));
    rejection
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_open_the_breaker_which_fails_fast_without_sending_and_recovers() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "upstream", opens_after(4, 2));
    let upstream = Upstream::answering(200);
    let (url, port) = serve(&upstream).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    assert_eq!(status(&client, &url).await, 200);
    assert_eq!(status(&client, &url).await, 200);
    upstream.answer(500);
    // A 5xx is the server's response, returned as it is, and recorded as a failure.
    assert_eq!(status(&client, &url).await, 500);
    let breaker = host_breaker(&registry, "upstream", port);
    assert_eq!(breaker.name(), format!("upstream[127.0.0.1:{port}]"));
    assert_eq!(breaker.state(), State::Closed, "3 of the 4 minimum calls");
    assert_eq!(status(&client, &url).await, 500);
    assert_eq!(breaker.state(), State::Open, "2 failures of 4: 50%");
    assert_eq!(upstream.hits(), 4);

    // OPEN: rejected at once, and nothing reaches the server.
    upstream.answer(200);
    for _ in 0..5 {
        let rejection = rejection(&client, &url).await;
        assert_eq!(rejection.state(), State::Open);
        assert_eq!(rejection.breaker_name(), breaker.name());
    }
    assert_eq!(upstream.hits(), 4, "rejected requests are not sent");
    assert_eq!(breaker.metrics().not_permitted_calls, 5);

    // Still OPEN at the end of the wait; just past it, two HALF_OPEN trials go through.
    clock.advance(Duration::from_secs(30));
    rejection(&client, &url).await;
    assert_eq!(upstream.hits(), 4);
    clock.advance(Duration::from_millis(1));
    assert_eq!(status(&client, &url).await, 200);
    assert_eq!(breaker.state(), State::HalfOpen);
    assert_eq!(status(&client, &url).await, 200);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(upstream.hits(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_errors_are_ignored() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "upstream", opens_after(2, 1));
    let upstream = Upstream::answering(404);
    let (url, port) = serve(&upstream).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    for code in [404, 400, 429, 404, 401, 404] {
        upstream.answer(code);
        assert_eq!(status(&client, &url).await, code);
    }
    let breaker = host_breaker(&registry, "upstream", port);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.metrics().buffered_calls, 0, "4xx is not counted");
    assert_eq!(upstream.hits(), 6);

    // The same breaker does count server errors.
    upstream.answer(503);
    assert_eq!(status(&client, &url).await, 503);
    assert_eq!(status(&client, &url).await, 503);
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_error_is_a_failure() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "upstream", opens_after(2, 1));
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    let error = client.get(&url).send().await.unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    assert!(
        rejected(&error).is_none(),
        "a connect error is no rejection"
    );
    let breaker = host_breaker(&registry, "upstream", port);
    let metrics = breaker.metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (1, 1));

    assert!(client.get(&url).send().await.unwrap_err().is_connect());
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(rejection(&client, &url).await.state(), State::Open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_has_its_own_breaker() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "upstream", opens_after(2, 1));
    let failing = Upstream::answering(500);
    let healthy = Upstream::answering(200);
    let (failing_url, failing_port) = serve(&failing).await;
    let (healthy_url, healthy_port) = serve(&healthy).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    assert_eq!(status(&client, &failing_url).await, 500);
    assert_eq!(status(&client, &healthy_url).await, 200);
    assert_eq!(status(&client, &failing_url).await, 500);
    assert_eq!(
        host_breaker(&registry, "upstream", failing_port).state(),
        State::Open
    );

    rejection(&client, &failing_url).await;
    for _ in 0..3 {
        assert_eq!(status(&client, &healthy_url).await, 200);
    }
    let healthy_breaker = host_breaker(&registry, "upstream", healthy_port);
    assert_eq!(healthy_breaker.state(), State::Closed);
    assert_eq!(
        healthy_breaker.metrics().successful_calls,
        2,
        "a window of 2"
    );
    assert_eq!((failing.hits(), healthy.hits()), (2, 4));
    assert_eq!(registry.keyed("upstream").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_breaker_guards_every_host() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "everything", opens_after(2, 1));
    let failing = Upstream::answering(500);
    let healthy = Upstream::answering(200);
    let (failing_url, _) = serve(&failing).await;
    let (healthy_url, _) = serve(&healthy).await;
    let middleware = CircuitBreakerMiddleware::new(registry.breaker("everything"));
    let breaker = middleware.breaker().unwrap().clone();
    let client = client(middleware);

    assert_eq!(status(&client, &failing_url).await, 500);
    assert_eq!(status(&client, &failing_url).await, 500);
    assert_eq!(breaker.state(), State::Open);
    let rejection = rejection(&client, &healthy_url).await;
    assert_eq!(rejection.breaker_name(), "everything");
    assert_eq!(healthy.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_by_picks_the_breaker_from_the_request() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "tenants", opens_after(2, 1));
    let upstream = Upstream::answering(500);
    let (url, _) = serve(&upstream).await;
    let by_tenant = |request: &reqwest::Request| {
        let tenant = request
            .headers()
            .get("x-tenant")
            .map(|v| v.to_str().unwrap());
        tenant.unwrap_or("none").to_owned()
    };
    let client = client(CircuitBreakerMiddleware::keyed_by(
        &registry, "tenants", by_tenant,
    ));
    let send = |tenant: &str| {
        let mut headers = HeaderMap::new();
        headers.insert("x-tenant", tenant.parse().unwrap());
        client.get(&url).headers(headers).send()
    };

    for _ in 0..2 {
        assert_eq!(send("acme").await.unwrap().status(), 500);
    }
    let error = send("acme").await.unwrap_err();
    assert_eq!(rejected(&error).unwrap().breaker_name(), "tenants[acme]");
    assert_eq!(send("globex").await.unwrap().status(), 500);
    assert_eq!(upstream.hits(), 3, "the other tenant is still sent");
    let keyed = registry.keyed("tenants");
    assert_eq!(keyed.find("acme").unwrap().state(), State::Open);
    assert_eq!(keyed.find("globex").unwrap().state(), State::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_request_gives_its_half_open_trial_back() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "upstream", opens_after(2, 1));
    let upstream = Upstream::answering(500);
    let (url, port) = serve(&upstream).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));
    assert_eq!(status(&client, &url).await, 500);
    assert_eq!(status(&client, &url).await, 500);
    let breaker = host_breaker(&registry, "upstream", port);
    assert_eq!(breaker.state(), State::Open);
    clock.advance(Duration::from_millis(30_001));

    // The one trial reaches the server and waits there.
    upstream.answer(200);
    upstream.hold(true);
    {
        let mut trial = std::pin::pin!(client.get(&url).send());
        tokio::select! {
            () = upstream.arrived.notified() => {}
            response = &mut trial => panic!("a held request was answered: {response:?}"),
        }
        assert_eq!(breaker.state(), State::HalfOpen);
        let second = rejection(&client, &url).await;
        assert_eq!(second.state(), State::HalfOpen, "the only trial is taken");
        // The trial's future is dropped here, before it is answered.
    }

    // A dropped request is no outcome: the breaker is still HALF_OPEN with nothing recorded
    // (a success recorded for it would have closed the breaker with its one trial).
    let metrics = breaker.metrics();
    assert_eq!(
        (metrics.state, metrics.buffered_calls),
        (State::HalfOpen, 0),
        "the dropped trial recorded nothing: {metrics:?}"
    );
    // Its permit came back: the next request is the trial, and closes the breaker.
    upstream.hold(false);
    assert_eq!(status(&client, &url).await, 200);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(upstream.hits(), 4);
    upstream.release.notify_waiters();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_classifier_counts_429_as_a_failure() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("plain", opens_after(2, 1))
        .instance("overload", opens_after(2, 1))
        .build();
    let upstream = Upstream::answering(429);
    let (url, port) = serve(&upstream).await;
    let overload = |result: &Result<reqwest::Response, reqwest_middleware::Error>| match result {
        Ok(response) if response.status() == StatusCode::TOO_MANY_REQUESTS => Outcome::Failure,
        other => StatusClassifier.classify(other),
    };
    let plain = client(CircuitBreakerMiddleware::per_host(&registry, "plain"));
    let counting =
        client(CircuitBreakerMiddleware::per_host(&registry, "overload").classify(overload));

    for _ in 0..3 {
        assert_eq!(status(&plain, &url).await, 429);
    }
    let plain_breaker = host_breaker(&registry, "plain", port);
    assert_eq!(
        plain_breaker.state(),
        State::Closed,
        "4xx is ignored by default"
    );
    assert_eq!(plain_breaker.metrics().buffered_calls, 0);

    assert_eq!(status(&counting, &url).await, 429);
    assert_eq!(status(&counting, &url).await, 429);
    assert_eq!(
        host_breaker(&registry, "overload", port).state(),
        State::Open
    );
    rejection(&counting, &url).await;
    assert_eq!(upstream.hits(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_duration_cancels_a_request_that_is_not_answered() {
    let clock = ManualClock::new();
    // The handler answers only when released, which this test never does before the timeout:
    // however long the machine takes, the request can only end by timing out.
    let timeout = Duration::from_millis(50);
    let config = Config::builder()
        .timeout_duration(Some(timeout))
        .build()
        .unwrap();
    let registry = registry(&clock, "upstream", config);
    let upstream = Upstream::answering(200);
    upstream.hold(true);
    let (url, port) = serve(&upstream).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    let sent = client.get(&url).send();
    let error = tokio::time::timeout(Duration::from_secs(30), sent)
        .await
        .expect("timeout-duration ends the request")
        .unwrap_err();
    let timed_out: &CallTimedOut = timed_out(&error).expect("the breaker's timeout");
    assert_eq!(timed_out.timeout(), timeout);
    assert_eq!(
        timed_out.breaker_name(),
        format!("upstream[127.0.0.1:{port}]")
    );
    assert!(rejected(&error).is_none(), "a timeout is no rejection");
    let metrics = host_breaker(&registry, "upstream", port).metrics();
    assert_eq!((metrics.buffered_calls, metrics.failed_calls), (1, 1));
    upstream.release.notify_waiters();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_response_is_a_slow_call_on_the_registry_clock() {
    let clock = ManualClock::new();
    let config = Config::builder()
        .slow_call_duration_threshold(Duration::from_secs(1))
        .build()
        .unwrap();
    let registry = registry(&clock, "upstream", config);
    let upstream = Upstream::answering(200);
    upstream.hold(true);
    let (url, port) = serve(&upstream).await;
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    let mut request = std::pin::pin!(client.get(&url).send());
    tokio::select! {
        () = upstream.arrived.notified() => {}
        response = &mut request => panic!("a held request was answered: {response:?}"),
    }
    clock.advance(Duration::from_secs(2));
    upstream.release.notify_one();
    assert_eq!(request.await.unwrap().status(), 200);
    let metrics = host_breaker(&registry, "upstream", port).metrics();
    assert_eq!(
        (metrics.successful_calls, metrics.slow_successful_calls),
        (1, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_error_kinds_apply_to_request_errors() {
    let clock = ManualClock::new();
    let connect = ErrorKind::new("ConnectError", |e: &reqwest_middleware::Error| {
        e.is_connect()
    });
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .ignore_exceptions([connect])
        .build()
        .unwrap();
    let registry = registry(&clock, "upstream", config);
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "upstream"));

    for _ in 0..3 {
        assert!(client.get(&url).send().await.unwrap_err().is_connect());
    }
    let breaker = host_breaker(&registry, "upstream", port);
    assert_eq!(
        breaker.state(),
        State::Closed,
        "ignore-exceptions names them"
    );
    assert_eq!(breaker.metrics().buffered_calls, 0);
}

/// A failed request's error reaches the listeners that asked for error texts as
/// `reqwest_middleware::Error`'s type and `Display` text (the operations surface's
/// `errorMessage`); a 5xx counted as a failure is the response's type, said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_requests_error_text_is_its_display() {
    let clock = ManualClock::new();
    let registry = registry(&clock, "texts", opens_after(10, 1));
    let texts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&texts);
    let _listener = registry.subscribe_with_error_texts(move |e| {
        if let Some(error) = e.error() {
            sink.lock().unwrap().push(error.clone());
        }
    });
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let client = client(CircuitBreakerMiddleware::per_host(&registry, "texts"));
    let error = client.get(&url).send().await.unwrap_err();
    let upstream = Upstream::answering(503);
    let (base, _) = serve(&upstream).await;
    assert_eq!(status(&client, &base).await, 503);

    let texts = texts.lock().unwrap();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[0].type_name(), "reqwest_middleware::error::Error");
    assert_eq!(texts[0].text(), Some(error.to_string().as_str()));
    assert!(
        texts[1].type_name().ends_with("Response"),
        "{}",
        texts[1].type_name()
    );
    assert_eq!(
        texts[1].text(),
        Some("the call's result was recorded as a failure")
    );
}
