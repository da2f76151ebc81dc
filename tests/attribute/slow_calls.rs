//! Slow calls through `#[circuit_breaker]`, on the production clock: a guarded function that
//! takes longer than `slow-call-duration-threshold` counts as slow, and two of them open the
//! breaker on the slow-call rate alone; instant calls do not.
//!
//! The system clock's measurement is the thing under test, so the slow bodies really take
//! 60 ms (`std::thread::sleep` in a plain fn, Tokio's real-time sleep in an `async fn`): four
//! slow calls in all. The assertions are on what the breaker decided, never on how long
//! anything took.
//!
//! The attribute resolves breakers from `Registry::global()`: the binary's [`init`] installs
//! one registry, on `Clock::system()`, with the instances of [`instances`], before any test
//! touches it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker::{
    circuit_breaker, CallNotPermitted, CallTimedOut, Config, Registry, RegistryBuilder, State,
};

use crate::init;

const THRESHOLD: Duration = Duration::from_millis(20);
/// Three times the threshold: the coarse clock's tick (1 to 4 ms) cannot hide it.
const SLOW: Duration = Duration::from_millis(60);

/// This module's instances in the binary's global registry.
pub(crate) fn instances(mut registry: RegistryBuilder) -> RegistryBuilder {
    // Opens when both calls of a window of 2 are slow; every call here succeeds.
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .slow_call_duration_threshold(THRESHOLD)
        .slow_call_rate_threshold(100.0)
        .wait_duration_in_open_state(Duration::from_secs(3600))
        .build()
        .unwrap();
    for name in ["slow:sync", "slow:async"] {
        registry = registry.instance(name, config.clone());
    }
    registry
}

#[derive(Debug, PartialEq)]
enum ApiError {
    Rejected(State),
    TimedOut(Duration),
}

impl From<CallNotPermitted> for ApiError {
    fn from(e: CallNotPermitted) -> Self {
        ApiError::Rejected(e.state())
    }
}

impl From<CallTimedOut> for ApiError {
    fn from(e: CallTimedOut) -> Self {
        ApiError::TimedOut(e.timeout())
    }
}

static SYNC_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "slow:sync")]
fn lookup(slow: bool) -> Result<u32, ApiError> {
    SYNC_RAN.fetch_add(1, Ordering::SeqCst);
    if slow {
        std::thread::sleep(SLOW);
    }
    Ok(7)
}

static ASYNC_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "slow:async")]
async fn fetch(slow: bool) -> Result<u32, ApiError> {
    ASYNC_RAN.fetch_add(1, Ordering::SeqCst);
    if slow {
        tokio::time::sleep(SLOW).await;
    }
    Ok(8)
}

fn assert_opened_on_slow_calls(name: &str) {
    let m = Registry::global().breaker(name).metrics();
    assert_eq!(m.state, State::Open, "{name}: {m:?}");
    assert_eq!(
        (m.buffered_calls, m.slow_successful_calls, m.failed_calls),
        (2, 2, 0),
        "{name}: {m:?}"
    );
    assert_eq!(m.slow_call_rate, Some(100.0));
}

#[test]
fn a_plain_fn_slower_than_the_threshold_opens_the_breaker() {
    init();
    assert_eq!(lookup(false), Ok(7));
    assert_eq!(lookup(false), Ok(7));
    // Both would have to take longer than 20 ms to open it.
    assert_eq!(
        Registry::global().breaker("slow:sync").state(),
        State::Closed
    );
    assert_eq!(lookup(true), Ok(7));
    assert_eq!(lookup(true), Ok(7));
    assert_opened_on_slow_calls("slow:sync");
    assert_eq!(lookup(false), Err(ApiError::Rejected(State::Open)));
    assert_eq!(
        SYNC_RAN.load(Ordering::SeqCst),
        4,
        "a rejected body never runs"
    );
}

/// Tokio's real time (not paused): the sleep takes 60 ms of the system clock.
#[tokio::test]
async fn an_async_fn_slower_than_the_threshold_opens_the_breaker() {
    init();
    assert_eq!(fetch(false).await, Ok(8));
    assert_eq!(fetch(false).await, Ok(8));
    assert_eq!(
        Registry::global().breaker("slow:async").state(),
        State::Closed
    );
    assert_eq!(fetch(true).await, Ok(8));
    assert_eq!(fetch(true).await, Ok(8));
    assert_opened_on_slow_calls("slow:async");
    assert_eq!(fetch(false).await, Err(ApiError::Rejected(State::Open)));
    assert_eq!(ASYNC_RAN.load(Ordering::SeqCst), 4);
}
