//! The bounded cost of bad keys: 1,000,000 distinct keys (a tenant header an attacker fills
//! with a new value per request) through one keyed attribute, with eviction on (the default
//! `KeyedLimits`: 1,000 breakers per group) and the Prometheus recorder installed with an idle
//! timeout, scraped as a Prometheus server would. Prints the resident set's growth and the size
//! of one scrape as it goes and at the end.
//!
//! ```text
//! cargo bench -p breaker-bench --bench keys
//! BREAKER_KEYS=200000 cargo bench -p breaker-bench --bench keys   # fewer keys
//! ```
//!
//! The bound: the group holds at most its maximum (1,000) breakers, and so does the export;
//! the recorder also holds the series of breakers evicted within the last idle timeout plus
//! one scrape interval, so a scrape holds at most (maximum + keys made per idle timeout and
//! scrape interval) breakers' series. The run scrapes every `SCRAPE` and times series out
//! after `IDLE` of real time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use breaker::{circuit_breaker, KeyedLimits, MetricsExport, Registry};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;

const SCRAPE: Duration = Duration::from_millis(250);
const IDLE: Duration = Duration::from_millis(500);

#[circuit_breaker(name = "tenantProducts", key = tenant)]
fn products(tenant: &str) -> Result<usize, std::io::Error> {
    Ok(tenant.len())
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// One scrape, as a Prometheus server makes it: refresh, then render. Its size in bytes.
fn scrape(export: &MetricsExport, handle: &PrometheusHandle) -> usize {
    export.refresh();
    handle.render().len()
}

fn main() {
    let keys: usize = std::env::var("BREAKER_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let registry = Registry::builder()
        .keyed_limits(KeyedLimits::default())
        .build();
    Registry::install_global(registry).expect("the first use of the global registry");
    let recorder = PrometheusBuilder::new()
        .idle_timeout(MetricKindMask::ALL, Some(IDLE))
        .build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(Registry::global(), Arc::new(recorder));
    let group = Registry::global().keyed("tenantProducts");
    let limits = group.limits();
    println!(
        "{keys} distinct keys through #[circuit_breaker(name = \"tenantProducts\", key = tenant)]"
    );
    println!(
        "  limits: at most {:?} breakers, evicted after {:?} idle; recorder idle timeout {IDLE:?}, \
         a scrape every {SCRAPE:?}",
        limits.count_limit(),
        limits.idle_limit()
    );

    // Warm up: the first keys make the lazy statics, the thread's allocator arenas, the maps.
    let mut tenant = String::new();
    for i in 0..2_000 {
        tenant.clear();
        std::fmt::Write::write_fmt(&mut tenant, format_args!("warm-{i}")).unwrap();
        products(&tenant).unwrap();
    }
    scrape(&export, &handle);
    let rss0 = rss_bytes();
    let started = Instant::now();
    let mut last_scrape = Instant::now();
    let (mut max_scrape, mut max_rss, mut max_group) = (0, rss0, 0);
    for i in 0..keys {
        tenant.clear();
        std::fmt::Write::write_fmt(&mut tenant, format_args!("tenant-{i}")).unwrap();
        products(&tenant).unwrap();
        if i % 1024 == 0 {
            max_group = max_group.max(group.len());
            if last_scrape.elapsed() >= SCRAPE {
                max_scrape = max_scrape.max(scrape(&export, &handle));
                max_rss = max_rss.max(rss_bytes());
                last_scrape = Instant::now();
            }
        }
        if (i + 1) % (keys / 10).max(1) == 0 {
            println!(
                "  {:>9} keys  {:>6.1} s  group {:>5}  exported {:>5}  RSS +{}",
                i + 1,
                started.elapsed().as_secs_f64(),
                group.len(),
                export.len(),
                mib(rss_bytes().saturating_sub(rss0)),
            );
        }
    }
    let elapsed = started.elapsed();
    let end_scrape = scrape(&export, &handle);
    // Scrape on for the idle timeout, as a server would, so the evicted breakers' series go.
    let settle = Instant::now();
    let mut settled = end_scrape;
    while settle.elapsed() < IDLE * 3 {
        std::thread::sleep(SCRAPE);
        settled = scrape(&export, &handle);
    }
    let rss = rss_bytes();
    max_rss = max_rss.max(rss);
    println!(
        "  {keys} keys in {:.1} s ({:.0} keys/s): group {} breakers (max seen {max_group}), {} exported",
        elapsed.as_secs_f64(),
        keys as f64 / elapsed.as_secs_f64(),
        group.len(),
        export.len()
    );
    println!(
        "  RSS growth: {} at the end, {} at the peak (over {} after warm-up)",
        mib(rss.saturating_sub(rss0)),
        mib(max_rss.saturating_sub(rss0)),
        mib(rss0)
    );
    println!(
        "  scrape: {} bytes right after the last key, {} bytes at the largest, {} bytes once \
         the idle timeout has passed",
        end_scrape, max_scrape, settled
    );
}
