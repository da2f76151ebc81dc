//! Measures what the Redis advisory hint costs callers: per-call latency (p50, p99, p99.9,
//! max) of a breaker that keeps opening and closing, without the hint, with a no-op registry
//! listener only (the part of the hint's cost that is the event stream's), with the hint and a
//! healthy Redis, with Redis stalled (SIGSTOP), and with Redis killed.
//!
//! ```sh
//! cargo run --release --example redis_hint --features redis-hint
//! ```
//!
//! Needs `redis-server` on PATH (Debian package `redis-server`); it starts its own on a free
//! 127.0.0.1 port and kills it at the end.

#[path = "../breaker-core/tests/support/redis_server.rs"]
#[allow(unreachable_pub)]
mod redis_server;

use std::time::{Duration, Instant};

use breaker::hint::{HintHandle, RedisHint};
use breaker::{Config, Registry};
use redis_server::RedisServer;

const CALLS: usize = 300_000;

fn registry() -> Registry {
    Registry::builder()
        .default_config(
            Config::builder()
                .sliding_window_size(20)
                .minimum_number_of_calls(20)
                .wait_duration_in_open_state(Duration::from_millis(1))
                .permitted_number_of_calls_in_half_open_state(5)
                .build()
                .expect("valid config"),
        )
        .build()
}

/// Calls through breakers whose downstream fails in bursts, so that they open (and publish),
/// reject, half-open and close over and over; returns each call's latency in ns, sorted.
fn measure(registry: &Registry) -> Vec<u64> {
    let breakers: Vec<_> = (0..8)
        .map(|i| registry.breaker(&format!("svc-{i}")))
        .collect();
    let mut lat = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let b = &breakers[i % breakers.len()];
        let fail = (i / 2000) % 2 == 0;
        let start = Instant::now();
        let _ = std::hint::black_box(b.call_sync(|| if fail { Err(()) } else { Ok(i) }));
        lat.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    lat.sort_unstable();
    lat
}

fn report(phase: &str, lat: &[u64], hint: Option<&HintHandle>) {
    let q = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    let stats = hint.map(|h| {
        let s = h.stats();
        format!(
            "published {:>4}  checks {:>5}  redis errors {:>4}",
            s.published, s.checks, s.redis_errors
        )
    });
    println!(
        "{phase:<22} p50 {:>6} ns  p99 {:>6} ns  p99.9 {:>7} ns  max {:>9} ns   {}",
        q(0.50),
        q(0.99),
        q(0.999),
        lat[lat.len() - 1],
        stats.unwrap_or_default()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut server = RedisServer::start();
    println!("{CALLS} calls per phase, 8 flapping breakers, hint check every 1 ms\n");

    let plain = registry();
    report("no hint", &measure(&plain), None);
    // What any registry listener costs: every call then builds and delivers an event.
    let listened = registry();
    listened
        .subscribe(|e| {
            std::hint::black_box(e);
        })
        .forever();
    report("no-op listener only", &measure(&listened), None);

    type Fault = fn(&mut RedisServer);
    let phases: [(&str, Fault); 3] = [
        ("hint, Redis up", |_| {}),
        ("hint, Redis stalled", |s| s.pause()),
        ("hint, Redis killed", |s| {
            s.resume();
            s.kill();
        }),
    ];
    for (phase, fault) in phases {
        let registry = registry();
        let hint = {
            let _guard = rt.enter();
            RedisHint::builder(server.url())
                .check_interval(Duration::from_millis(1))
                .command_timeout(Duration::from_millis(100))
                .start(&registry)
                .expect("start the hint")
        };
        fault(&mut server);
        report(phase, &measure(&registry), Some(&hint));
        rt.block_on(hint.shutdown());
    }
}
