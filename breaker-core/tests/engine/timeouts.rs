//! `timeout-duration` where it cannot be enforced: a Tokio runtime without its time driver, no
//! runtime at all, a synchronous call. None of them may fail a call or flood the log: the call
//! runs without a timeout and the breaker says so once.

use crate::support::logs;

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Once;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::{CircuitBreaker, Config, ManualClock, Registry};

fn breaker(name: &str) -> (Registry, CircuitBreaker) {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(
            Config::builder()
                .timeout_duration(Some(Duration::from_secs(1)))
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker(name);
    (registry, b)
}

fn warnings_about(name: &str) -> Vec<String> {
    logs::lines_with(&["WARN", &format!("breaker={name}"), "timeout-duration"])
}

thread_local! {
    /// The panics this thread has raised, caught or not (see [`count_panics`]).
    static PANICS: Cell<u32> = const { Cell::new(0) };
}

/// Counts every panic in the thread that raises it, then lets the hook that was there print it
/// as before. Installed once for the whole test binary.
fn count_panics() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|n| n.set(n.get() + 1));
            previous(info);
        }));
    });
}

#[test]
fn a_runtime_without_timers_runs_the_call_untimed_and_says_so_once() {
    logs::capture();
    count_panics();
    let (_registry, b) = breaker("timeouts:no-time-driver");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime without the time driver");
    let panics_before = PANICS.with(Cell::get);
    for i in 0..100u32 {
        let out = runtime.block_on(b.call(async move { Ok::<_, ()>(i) }));
        assert_eq!(out.unwrap(), i, "call {i} must run and succeed");
    }
    assert_eq!(b.metrics().successful_calls, 100);
    // Tokio panics when a timer is made without the time driver; the breaker finds out once
    // (that panic, caught) and then stops trying, so the panic hook does not print it per call.
    assert_eq!(
        PANICS.with(Cell::get) - panics_before,
        1,
        "the missing time driver was tried more than once"
    );
    let warned = warnings_about("timeouts:no-time-driver");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert!(warned[0].contains("enable_time"), "{}", warned[0]);
}

#[test]
fn outside_any_runtime_the_warning_is_written_once() {
    logs::capture();
    let (_registry, b) = breaker("timeouts:no-runtime");
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..1_000u32 {
        let call = pin!(b.call(async move { Ok::<_, ()>(i) }));
        match call.poll(&mut cx) {
            Poll::Ready(out) => assert_eq!(out.unwrap(), i),
            Poll::Pending => panic!("the call has no await point"),
        }
    }
    assert_eq!(warnings_about("timeouts:no-runtime").len(), 1);
}

#[test]
fn a_sync_call_says_once_that_it_cannot_be_timed_out() {
    logs::capture();
    let (_registry, b) = breaker("timeouts:sync");
    for i in 0..100u32 {
        assert_eq!(b.call_sync(|| Ok::<_, ()>(i)).unwrap(), i);
    }
    let warned = warnings_about("timeouts:sync");
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert!(warned[0].contains("synchronous"), "{}", warned[0]);
}
