//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset

pub(crate) mod logs;
pub(crate) mod redis_server;

use breaker_core::{Config, ManualClock, Registry};

/// A registry of its own on a manual clock (returned, to move time on), every breaker
/// configured by `config`.
pub(crate) fn manual_registry(config: Config) -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .default_config(config)
        .build();
    (clock, registry)
}

/// Until `done` holds, letting other threads run (no sleep: the condition is what is awaited);
/// fails the test after 30 s of real time.
pub(crate) fn spin_until(mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "gave up waiting"
        );
        std::thread::yield_now();
    }
}
