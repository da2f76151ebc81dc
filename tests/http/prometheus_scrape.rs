//! `examples/prometheus.rs`, scraped over HTTP on 127.0.0.1 as Prometheus would: the failing
//! breaker shows up as `resilience4j_circuitbreaker_state{...,name="creditBureau",state="open",...} 1`,
//! the series the credit-bureau alert reads (docs/CREDIT_BUREAU.md §7), with the call timers
//! beside it and the registry's tags on every series. Then a registry on a manual clock,
//! rendered by the same exporter with no `refresh()`: the decaying `calls_seconds_max` and a
//! time-based window that empties with no call are right at every scrape. Last, a bulkhead's
//! gauges and a retry's counts scraped over HTTP.
//!
//! The example's recorder has buckets for the call timer, so its scrape carries the `_bucket`
//! series of Resilience4j's Grafana dashboard's percentile panel; breaker-core's
//! `tests/metrics/grafana.rs` checks every panel of that dashboard against a scrape.

use std::sync::Arc;
use std::time::{Duration, Instant};

use breaker::{
    BulkheadConfig, Config, ManualClock, MetricsExport, Outcome, Registry, RetryConfig,
    SlidingWindowType,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;

#[path = "../../examples/prometheus.rs"]
mod demo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraping_the_example_finds_the_open_breaker() {
    let handle = demo::recorder()
        .and_then(|builder| builder.install_recorder())
        .expect("the only recorder of this test binary");
    let demo = demo::start(handle, 0).await.expect("bind 127.0.0.1:0");
    assert!(demo.addr.ip().is_loopback());
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a client");
    let get = |path: &str| {
        client
            .get(format!("http://{}{path}", demo.addr))
            .header(ACCEPT, "text/plain")
            .send()
    };

    // The demo's breakers run in real time: scrape until the failing one shows OPEN.
    let open = r#"resilience4j_circuitbreaker_state{application="prometheus-demo",name="creditBureau",state="open",zone="local"} 1"#;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    let mut scrapes = 0;
    while Instant::now() < deadline {
        let response = get("/metrics").await.expect("scrape");
        scrapes += 1;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers().get(CONTENT_TYPE).map(|v| v.as_bytes()),
            Some(&b"text/plain; version=0.0.4"[..])
        );
        let body = response.text().await.expect("the scrape's body");
        if body.lines().any(|l| l == open) {
            last = body;
            break;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let missing = get("/nothing").await.expect("second request").status();
    demo.stop().await.expect("the demo stops cleanly");

    assert!(
        last.lines().any(|l| l == open),
        "no `{open}` after {scrapes} scrapes; last one:\n{last}"
    );
    let tagged = |labels: &str| format!(r#"application="prometheus-demo",{labels},zone="local""#);
    for series in [
        format!(
            "resilience4j_circuitbreaker_state{{{}}} 0",
            tagged(r#"name="creditBureau",state="closed""#)
        ),
        format!(
            "resilience4j_circuitbreaker_state{{{}}} 1",
            tagged(r#"name="inventoryService",state="closed""#)
        ),
        format!(
            "resilience4j_circuitbreaker_calls_seconds_count{{{}}}",
            tagged(r#"kind="failed",name="creditBureau""#)
        ),
        format!(
            "resilience4j_circuitbreaker_calls_seconds_max{{{}}}",
            tagged(r#"kind="failed",name="creditBureau""#)
        ),
        format!(
            "resilience4j_circuitbreaker_not_permitted_calls_total{{{}}}",
            tagged(r#"kind="not_permitted",name="creditBureau""#)
        ),
        format!(
            "resilience4j_circuitbreaker_calls_seconds_count{{{}}}",
            tagged(r#"kind="successful",name="inventoryService""#)
        ),
        format!(
            "resilience4j_circuitbreaker_failure_rate{{{}}}",
            tagged(r#"name="creditBureau""#)
        ),
        format!(
            "resilience4j_circuitbreaker_buffered_calls{{{}}}",
            tagged(r#"kind="failed",name="creditBureau""#)
        ),
        // The buckets the example's recorder is given, for the percentile panel.
        format!(
            "resilience4j_circuitbreaker_calls_seconds_bucket{{{},le=\"+Inf\"}}",
            tagged(r#"kind="failed",name="creditBureau""#)
        ),
        format!(
            "resilience4j_retry_calls_total{{{}}}",
            tagged(r#"kind="successful_without_retry",name="productService""#)
        ),
        format!(
            "resilience4j_bulkhead_max_allowed_concurrent_calls{{{}}} 8",
            tagged(r#"name="inventoryService""#)
        ),
    ] {
        assert!(last.contains(&series), "no {series} in:\n{last}");
    }
    assert_every_series_is_tagged(&last, &demo::TAGS);
    assert_eq!(missing, StatusCode::NOT_FOUND);
}

/// Every `resilience4j_circuitbreaker_*` sample line of `text` carries every tag of `tags`, and
/// there are some.
fn assert_every_series_is_tagged(text: &str, tags: &[(&str, &str)]) {
    let samples: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("resilience4j_circuitbreaker_"))
        .collect();
    assert!(samples.len() > 20, "{text}");
    for line in samples {
        for (name, value) in tags {
            let label = format!(r#"{name}="{value}""#);
            assert!(line.contains(&label), "no {label} in `{line}`");
        }
    }
}

/// `registry` exported to a Prometheus recorder of its own (the binary's global one is the
/// example's), and the handle that renders it.
fn exported(registry: &Registry) -> PrometheusHandle {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    MetricsExport::install_with_recorder(registry, Arc::new(recorder));
    handle
}

/// The value of the series `series` (name and labels exactly as rendered).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

/// Issue 15, item 7, on a manual clock and with no `refresh()`: `calls_seconds_max` is the
/// longest call of the last 2 to 3 minutes (Micrometer's decaying max, rotated every minute),
/// and a time-based window that empties with time shows 0 buffered calls at the next scrape
/// after the registry's clock passes the window, with no call made. Tags on every series.
#[test]
fn scrapes_are_fresh_without_a_refresh() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .tag("application", "reports-service")
        .unwrap()
        .tag("zone", "eu-1")
        .unwrap()
        .default_config(
            Config::builder()
                .sliding_window(SlidingWindowType::TimeBased, 10, 100)
                .build()
                .unwrap(),
        )
        .build();
    let handle = exported(&registry);
    let reports = registry.breaker("reports");
    let record = |outcome, millis| {
        reports
            .try_acquire()
            .unwrap()
            .record(outcome, Duration::from_millis(millis));
    };
    let series = |metric: &str, kind: &str| {
        format!(
            r#"resilience4j_circuitbreaker_{metric}{{application="reports-service",kind="{kind}",name="reports",zone="eu-1"}}"#
        )
    };
    let buffered_failed = series("buffered_calls", "failed");
    let max_failed = series("calls_seconds_max", "failed");
    let max_successful = series("calls_seconds_max", "successful");

    record(Outcome::Failure, 2_500);
    record(Outcome::Failure, 800);
    record(Outcome::Success, 300);
    let text = handle.render();
    assert_every_series_is_tagged(
        &text,
        &[("application", "reports-service"), ("zone", "eu-1")],
    );
    assert!(
        text.contains("# TYPE resilience4j_circuitbreaker_calls_seconds_max gauge"),
        "{text}"
    );
    assert_eq!(value(&text, &buffered_failed), 2.0);
    assert_eq!(value(&text, &max_failed), 2.5);
    assert_eq!(value(&text, &max_successful), 0.3);

    // The 10 s window empties; no call, no refresh(): the next scrape shows it.
    clock.advance(Duration::from_secs(11));
    let text = handle.render();
    assert_eq!(value(&text, &buffered_failed), 0.0);
    assert_eq!(
        value(&text, &max_failed),
        2.5,
        "the max outlives the window"
    );

    // The max decays once its rotation leaves the ring: 3 rotations of 1 minute from creation.
    clock.advance(Duration::from_secs(168)); // 179 s
    assert_eq!(value(&handle.render(), &max_failed), 2.5);
    clock.advance(Duration::from_secs(1)); // 180 s
    let text = handle.render();
    assert_eq!(value(&text, &max_failed), 0.0);
    assert_eq!(value(&text, &max_successful), 0.0);
    assert_eq!(
        value(&text, &series("calls_seconds_count", "failed")),
        2.0,
        "the timer's count is cumulative"
    );
}

/// A bulkhead's two gauges scraped over HTTP as Prometheus would: the calls in flight are the
/// limit less the free places, with the registry's tags, fresh after the export's own refresh
/// on the registry's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraping_a_bulkhead_shows_its_free_places_and_limit() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .tag("application", "loans")
        .unwrap()
        .bulkhead_instance(
            "creditBureau",
            BulkheadConfig::builder()
                .max_concurrent_calls(10)
                .build()
                .unwrap(),
        )
        .build();
    let scrape = served(exported(&registry)).await;
    let bureau = registry.bulkhead("creditBureau");
    let available = r#"resilience4j_bulkhead_available_concurrent_calls{application="loans",name="creditBureau"}"#;
    let max = r#"resilience4j_bulkhead_max_allowed_concurrent_calls{application="loans",name="creditBureau"}"#;

    let text = scrape.get().await;
    assert_eq!((value(&text, available), value(&text, max)), (10.0, 10.0));
    let held: Vec<_> = (0..4).map(|_| bureau.try_acquire().unwrap()).collect();
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    let text = scrape.get().await;
    assert_eq!((value(&text, available), value(&text, max)), (6.0, 10.0));
    drop(held);
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(value(&scrape.get().await, available), 10.0);
}

/// A retry's four `resilience4j_retry_calls` gauges and the budget's refusals scraped over HTTP
/// as Prometheus would, with the registry's tags, fresh after the export's own refresh on the
/// registry's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraping_a_retry_shows_its_four_kinds_and_the_budgets_refusals() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .tag("application", "loans")
        .unwrap()
        .retry_instance(
            "creditBureau",
            RetryConfig::builder()
                .max_attempts(2)
                .wait_duration(Duration::ZERO)
                .budget_min_retries_per_second(0)
                .build()
                .unwrap(),
        )
        .build();
    let scrape = served(exported(&registry)).await;
    let bureau = registry.retry("creditBureau");
    let series = |kind: &str| {
        format!(
            r#"resilience4j_retry_calls{{application="loans",kind="{kind}",name="creditBureau"}}"#
        )
    };
    let refused =
        r#"resilience4j_retry_refused_by_budget_total{application="loans",name="creditBureau"}"#;

    let text = scrape.get().await;
    assert_eq!(value(&text, &series("successful_without_retry")), 0.0);
    assert_eq!(value(&text, refused), 0.0);
    // Five calls succeed at once; of three failing calls after them, the budget (0.2 retries a
    // call, no floor) lets the first retry and refuses a later one.
    for _ in 0..5 {
        let _ = bureau.call_sync(|| Ok::<_, &str>(()));
    }
    for _ in 0..3 {
        let _ = bureau.call_sync(|| Err::<(), _>("bureau down"));
    }
    let m = bureau.metrics();
    assert!(m.retries_refused_by_budget() > 0, "{m:?}");
    assert!(m.failed_calls_with_retry_attempt() > 0, "{m:?}");
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    let text = scrape.get().await;
    let scraped = [
        "successful_without_retry",
        "successful_with_retry",
        "failed_without_retry",
        "failed_with_retry",
    ]
    .map(|kind| value(&text, &series(kind)));
    let expected = [
        m.successful_calls_without_retry_attempt(),
        m.successful_calls_with_retry_attempt(),
        m.failed_calls_without_retry_attempt(),
        m.failed_calls_with_retry_attempt(),
    ]
    .map(|count| count as f64);
    assert_eq!(scraped, expected);
    assert_eq!(scraped[0], 5.0);
    assert_eq!(scraped.iter().sum::<f64>(), 8.0, "every call counted once");
    assert_eq!(value(&text, refused), m.retries_refused_by_budget() as f64);
}

/// `handle` served as `GET /metrics` on 127.0.0.1, and a client that scrapes it.
async fn served(handle: PrometheusHandle) -> Scrape {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            async move { handle.render() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("a client");
    Scrape { client, addr }
}

/// A client of a served `GET /metrics`.
struct Scrape {
    client: reqwest::Client,
    addr: std::net::SocketAddr,
}

impl Scrape {
    /// One scrape, as Prometheus makes it: the body of a 200.
    async fn get(&self) -> String {
        let response = self
            .client
            .get(format!("http://{}/metrics", self.addr))
            .header(ACCEPT, "text/plain")
            .send()
            .await
            .expect("scrape");
        assert_eq!(response.status(), StatusCode::OK);
        response.text().await.expect("the scrape's body")
    }
}
