//! A registry's scheduler thread ends when the registry and its breakers are dropped.
//! (Alone in its test binary, so that no other test's scheduler thread is counted.)

use std::time::{Duration, Instant};

use breaker_core::{Config, Registry, State};

fn scheduler_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc is needed");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "breaker-schedul") // names are cut to 15 bytes
        .count()
}

/// Polls `cond` for up to 10 s (the thread starts and stops on its own time).
fn wait_until(cond: impl Fn() -> bool) -> bool {
    let since = Instant::now();
    while !cond() {
        if since.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

#[test]
fn dropping_a_registry_stops_its_scheduler_thread() {
    assert_eq!(scheduler_threads(), 0);
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .wait_duration_in_open_state(Duration::from_secs(3600))
                .automatic_transition_from_open_to_half_open_enabled(true)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("x");
    b.transition_to(State::Open).unwrap();
    // A new thread names itself as it starts: wait until it shows.
    assert!(
        wait_until(|| scheduler_threads() == 1),
        "the first timer starts the thread"
    );
    drop(b);
    drop(registry);
    assert!(
        wait_until(|| scheduler_threads() == 0),
        "the thread ended with its registry"
    );
}
