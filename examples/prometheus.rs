//! Prometheus metrics for a few breakers, a retry and a bulkhead under load, with
//! Resilience4j's metric names, ready for Resilience4j's own Grafana dashboard.
//!
//! ```sh
//! cargo run --example prometheus              # serves for 20 s on a free port of 127.0.0.1
//! cargo run --example prometheus -- 60 9464   # 60 s on 127.0.0.1:9464
//! curl -s http://127.0.0.1:9464/metrics | grep 'resilience4j_circuitbreaker_state{'
//! ```
//!
//! Three breakers get steady traffic, each call taking some milliseconds: `productService`
//! (behind a retry: one call in ten fails once and succeeds on its retry, one in twenty-five
//! fails every attempt), `inventoryService` (healthy, behind a bulkhead of 8 places that its
//! traffic keeps full, so some calls are refused) and `creditBureau` (down and slow: it opens
//! within a few calls, then probes again every two seconds). The registry carries two tags,
//! `application` and `zone` (Spring's `resilience4j.circuitbreaker.tags.*`), which every series
//! carries. The metrics go through the `metrics` facade to the `metrics-exporter-prometheus`
//! recorder, set up by [`recorder`] with buckets for the call timer so that the dashboard's
//! percentile panel has its `_bucket` series; an axum server on 127.0.0.1 answers
//! `GET /metrics` with the recorder's text (`PrometheusHandle::render`). Nothing is refreshed by
//! hand: the export re-reads every breaker, retry and bulkhead each second on its own.
//! Everything stops after the given number of seconds.
//!
//! Point a Prometheus at it (a `scrape_configs` entry with `targets: ['127.0.0.1:9464']`) and
//! import Resilience4j's `grafana_dashboard.json` into Grafana: its breaker, retry and bulkhead
//! rows fill in unchanged (README.md, "Metrics and logs", says which lines stay empty and why).

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use breaker::retry::Retry;
use breaker::{
    Bulkhead, BulkheadConfig, CircuitBreaker, Config, MetricsExport, Registry, RetryConfig,
};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

/// The registry's tags, as in `application.properties`:
/// `resilience4j.circuitbreaker.tags.application=prometheus-demo`.
pub(crate) const TAGS: [(&str, &str); 2] = [("application", "prometheus-demo"), ("zone", "local")];

/// The upper bounds, in seconds, of the buckets of `resilience4j_circuitbreaker_calls_seconds`:
/// 1 ms to 30 s, the range Micrometer gives a timer's histogram (the one Spring's
/// `management.metrics.distribution.percentiles-histogram` turns on), in steps of 2 to 2.5, so
/// a percentile read from them is off by at most its bucket's width. 14 bounds and `+Inf` make
/// 17 series per breaker and call kind with `_sum` and `_count` (Micrometer's ladder has about
/// 70 bounds for that range).
pub(crate) const CALL_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The exposition format's content type, as Prometheus expects it.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4";

/// The Prometheus recorder with [`CALL_BUCKETS`] for the breakers' call timer: it renders that
/// histogram with `_bucket` series (which `histogram_quantile` reads) instead of the summary it
/// renders by default. The export has no other histogram: the bulkheads' and retries' series
/// are gauges and counters.
pub(crate) fn recorder() -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new().set_buckets_for_metric(
        Matcher::Full(MetricsExport::CALLS.to_owned()),
        &CALL_BUCKETS,
    )
}

/// The running demo: breakers under load, and `/metrics` on `addr`.
#[derive(Debug)]
pub(crate) struct Demo {
    pub(crate) addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: JoinSet<io::Result<()>>,
}

impl Demo {
    /// Stops the load and the server (letting a scrape in progress finish) and waits for their
    /// tasks: the first error, if the server failed or a task panicked.
    pub(crate) async fn stop(mut self) -> io::Result<()> {
        self.stop.send_replace(true);
        let mut result = Ok(());
        while let Some(joined) = self.tasks.join_next().await {
            let ended = joined.map_err(io::Error::other).and_then(|r| r);
            if result.is_ok() {
                result = ended;
            }
        }
        result
    }
}

/// What stands in front of a breaker's calls.
#[derive(Clone)]
enum Guard {
    /// The breaker alone.
    None,
    /// A retry around the breaker: each attempt is a call of the breaker.
    Retry(Retry),
    /// A bulkhead around the breaker: a call without a place is refused before the breaker.
    Bulkhead(Bulkhead),
}

/// One breaker's traffic: its guard, how long its calls take (a spread over `millis`), and
/// which attempts fail (`fails(call, attempt)`, attempts counted from 1).
#[derive(Clone)]
struct Load {
    name: &'static str,
    guard: Guard,
    millis: (u64, u64),
    fails: fn(u64, u32) -> bool,
}

/// Starts the load and serves `handle`'s metrics on `127.0.0.1:port` (0: any free port), on
/// the current Tokio runtime. The `metrics` recorder behind `handle` must already be installed.
pub(crate) async fn start(handle: PrometheusHandle, port: u16) -> io::Result<Demo> {
    let config = |window: u32, wait_s: u64| {
        Config::builder()
            .sliding_window_size(window)
            .minimum_number_of_calls(5)
            .wait_duration_in_open_state(Duration::from_secs(wait_s))
            .automatic_transition_from_open_to_half_open_enabled(true)
            .permitted_number_of_calls_in_half_open_state(2)
            .build()
    };
    let to_io = |e: breaker::ConfigError| io::Error::new(io::ErrorKind::InvalidInput, e);
    let mut builder = Registry::builder();
    for (name, value) in TAGS {
        builder = builder.tag(name, value).map_err(to_io)?;
    }
    let retry = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(10))
        .build()
        .map_err(to_io)?;
    let places = BulkheadConfig::builder()
        .max_concurrent_calls(8)
        .build()
        .map_err(to_io)?;
    let registry = builder
        .instance("productService", config(20, 10).map_err(to_io)?)
        .instance("inventoryService", config(20, 10).map_err(to_io)?)
        .instance("creditBureau", config(10, 2).map_err(to_io)?)
        .retry_instance("productService", retry)
        .bulkhead_instance("inventoryService", places)
        .build();
    // The recorder is installed: the export registers every series with it.
    MetricsExport::install(&registry);

    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();

    let loads = [
        Load {
            name: "productService",
            guard: Guard::Retry(registry.retry("productService")),
            millis: (2, 30),
            fails: |call, attempt| call % 25 == 0 || (call % 10 == 0 && attempt == 1),
        },
        Load {
            name: "inventoryService",
            guard: Guard::Bulkhead(registry.bulkhead("inventoryService")),
            millis: (5, 40),
            fails: |_, _| false,
        },
        Load {
            name: "creditBureau",
            guard: Guard::None,
            millis: (80, 120),
            fails: |_, _| true,
        },
    ];
    // One task per breaker starts about 500 calls a second, each call in a task of its own, so
    // that slow calls overlap as they would in a server.
    for load in loads {
        let breaker = registry.breaker(load.name);
        let mut stopped = stopped.clone();
        tasks.spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(2));
            every.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let mut in_flight = JoinSet::new();
            let mut call: u64 = 0;
            loop {
                tokio::select! {
                    // Stopped, or the `Demo` dropped.
                    _ = stopped.changed() => break,
                    _ = every.tick() => {}
                }
                while in_flight.try_join_next().is_some() {}
                call += 1;
                in_flight.spawn(one_call(load.clone(), breaker.clone(), call));
            }
            in_flight.shutdown().await;
            Ok(())
        });
    }

    // The scrape endpoint; any other path is axum's empty 404.
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(handle);
    let mut server_stopped = stopped;
    tasks.spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = server_stopped.changed().await;
            })
            .await
    });
    Ok(Demo { addr, stop, tasks })
}

/// Call number `call` of `load`, through its guard and `breaker`; its result is only counted
/// by the metrics.
async fn one_call(load: Load, breaker: CircuitBreaker, call: u64) {
    let (low, high) = load.millis;
    // A spread of durations over [low, high] (7919 is prime, so the steps cover the range).
    let took = Duration::from_millis(low + call * 7_919 % (high - low + 1));
    let attempt = |n: u32| {
        let fails = (load.fails)(call, n);
        breaker.call(async move {
            tokio::time::sleep(took).await;
            if fails {
                Err("downstream failed")
            } else {
                Ok(())
            }
        })
    };
    match &load.guard {
        Guard::None => {
            let _ = attempt(1).await;
        }
        Guard::Retry(retry) => {
            let mut n = 0;
            let _ = retry
                .call(|| {
                    n += 1;
                    attempt(n)
                })
                .await;
        }
        Guard::Bulkhead(bulkhead) => {
            let _ = bulkhead.call(attempt(1)).await;
        }
    }
}

/// `GET /metrics`: the recorder's text, rendered at each scrape.
async fn metrics(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    ([(CONTENT_TYPE, TEXT_FORMAT)], handle.render())
}

#[allow(dead_code)] // when this file is a module of tests/http/prometheus_scrape.rs
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let port: u16 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0);
    let handle = recorder()?.install_recorder()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let demo = start(handle, port).await?;
        println!(
            "serving http://{}/metrics for {seconds} s (try: curl -s http://{}/metrics | grep state)",
            demo.addr, demo.addr
        );
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        demo.stop().await
    })?;
    Ok(())
}
