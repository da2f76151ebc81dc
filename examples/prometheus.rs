//! Prometheus metrics for a few breakers under load, with Resilience4j's metric names.
//!
//! ```sh
//! cargo run --example prometheus              # serves for 20 s on a free port of 127.0.0.1
//! cargo run --example prometheus -- 60 9464   # 60 s on 127.0.0.1:9464
//! curl -s http://127.0.0.1:9464/metrics | grep 'resilience4j_circuitbreaker_state{'
//! ```
//!
//! Three breakers get steady traffic: `productService` (one call in ten fails),
//! `inventoryService` (healthy) and `creditBureau` (down: it opens within a few calls, then
//! probes again every two seconds). The registry carries two tags, `application` and `zone`
//! (Spring's `resilience4j.circuitbreaker.tags.*`), which every series carries. The metrics go
//! through the `metrics` facade to the `metrics-exporter-prometheus` recorder; an axum server
//! on 127.0.0.1 answers `GET /metrics` with the recorder's text (`PrometheusHandle::render`).
//! Nothing is refreshed by hand: the export re-reads every breaker each second on its own.
//! Everything stops after the given number of seconds.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use breaker::{Config, MetricsExport, Registry};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

/// The registry's tags, as in `application.properties`:
/// `resilience4j.circuitbreaker.tags.application=prometheus-demo`.
pub(crate) const TAGS: [(&str, &str); 2] = [("application", "prometheus-demo"), ("zone", "local")];

/// The exposition format's content type, as Prometheus expects it.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4";

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
    let registry = builder
        .instance("productService", config(20, 10).map_err(to_io)?)
        .instance("inventoryService", config(20, 10).map_err(to_io)?)
        .instance("creditBureau", config(10, 2).map_err(to_io)?)
        .build();
    // The recorder is installed: the export registers every breaker's series with it.
    MetricsExport::install(&registry);

    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();

    // Load: one task per breaker, about 500 calls a second each.
    for (name, fails_one_in) in [
        ("productService", 10),
        ("inventoryService", 0),
        ("creditBureau", 1),
    ] {
        let breaker = registry.breaker(name);
        let mut stopped = stopped.clone();
        tasks.spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(2));
            every.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let mut i: u64 = 0;
            loop {
                tokio::select! {
                    // Stopped, or the `Demo` dropped.
                    _ = stopped.changed() => return Ok(()),
                    _ = every.tick() => {}
                }
                i += 1;
                let fails = fails_one_in > 0 && i.is_multiple_of(fails_one_in);
                let _ = breaker
                    .call(async move {
                        if fails {
                            Err("downstream failed")
                        } else {
                            Ok(())
                        }
                    })
                    .await;
            }
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

/// `GET /metrics`: the recorder's text, rendered at each scrape.
async fn metrics(State(handle): State<PrometheusHandle>) -> impl IntoResponse {
    ([(CONTENT_TYPE, TEXT_FORMAT)], handle.render())
}

#[allow(dead_code)] // when this file is a module of tests/http/prometheus_scrape.rs
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let port: u16 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0);
    let handle = PrometheusBuilder::new().install_recorder()?;
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
