//! No heap allocation per call through `#[circuit_breaker]`: plain and `async fn`s, with and
//! without a fallback, with an `ignore` predicate, a method, and `timeout-duration` under Tokio;
//! in CLOSED, OPEN and HALF_OPEN. The attribute resolves its breaker once per call site; after
//! the first call (the warm-up), a guarded call costs no allocation beyond what its body makes.
//!
//! A counting global allocator as in breaker-core's `tests/no_alloc/`, counting each thread's
//! allocations apart (the test harness's thread allocates while a test starts); everything
//! measured runs on the test's thread (a current-thread Tokio runtime, a manual clock). The
//! global registry is on a manual clock, so nothing moves on by itself.
//!
//! A binary of its own: the global registry here is on a manual clock, and the attribute
//! binary's is on the system clock (one global registry per process). The counting allocator
//! alone would not need it: its counts are per thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

use breaker::{
    circuit_breaker, CallError, CallNotPermitted, CallTimedOut, Config, ManualClock, Registry,
    State,
};

#[path = "../breaker-core/tests/support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, allocations_during, block_on};

const CALLS: u32 = 1_000;

fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let plain = || {
            Config::builder()
                .sliding_window_size(100)
                .minimum_number_of_calls(100)
                .failure_rate_threshold(100.0)
                .wait_duration_in_open_state(Duration::from_secs(3600))
                .permitted_number_of_calls_in_half_open_state(10)
        };
        let mut registry = Registry::builder().clock(ManualClock::new());
        for name in [
            "na:sync",
            "na:async",
            "na:fallback",
            "na:async-fallback",
            "na:method",
        ] {
            registry = registry.instance(name, plain().build().unwrap());
        }
        // Never evaluated before the window of 2,047 is full, and then under 100 % failures.
        let timed = plain()
            .sliding_window_size(2_047)
            .minimum_number_of_calls(2_047)
            .timeout_duration(Some(Duration::from_secs(1)))
            .build()
            .unwrap();
        registry = registry.instance("na:timeout", timed);
        Registry::install_global(registry.build()).expect("nothing used the global registry yet");
    });
}

/// An error type that allocates nothing itself.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ApiError {
    Down,
    BadRequest,
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

fn is_bad_request(e: &ApiError) -> bool {
    *e == ApiError::BadRequest
}

#[circuit_breaker(name = "na:sync", ignore = is_bad_request)]
fn plain(outcome: Result<u32, ApiError>) -> Result<u32, ApiError> {
    outcome
}

#[circuit_breaker(name = "na:async", ignore = is_bad_request)]
async fn asynchronous(outcome: Result<u32, ApiError>) -> Result<u32, ApiError> {
    outcome
}

#[circuit_breaker(name = "na:fallback", fallback = "answer_anyway")]
fn with_fallback(outcome: Result<u32, ApiError>) -> Result<u32, ApiError> {
    outcome
}

fn answer_anyway(
    _outcome: Result<u32, ApiError>,
    err: CallError<ApiError>,
) -> Result<u32, ApiError> {
    Ok(if err.is_rejected() { 1 } else { 2 })
}

#[circuit_breaker(name = "na:async-fallback", fallback = "answer_anyway_async")]
async fn async_with_fallback(outcome: Result<u32, ApiError>) -> Result<u32, ApiError> {
    outcome
}

async fn answer_anyway_async(
    _outcome: Result<u32, ApiError>,
    err: CallError<ApiError>,
) -> Result<u32, ApiError> {
    Ok(if err.is_rejected() { 1 } else { 2 })
}

struct Service {
    calls: AtomicUsize,
}

impl Service {
    #[circuit_breaker(name = "na:method")]
    fn serve(&self, outcome: Result<u32, ApiError>) -> Result<u32, ApiError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        outcome
    }
}

#[circuit_breaker(name = "na:timeout")]
async fn timed(delay: Duration) -> Result<u32, ApiError> {
    tokio::time::sleep(delay).await;
    Ok(3)
}

fn breaker(name: &str) -> breaker::CircuitBreaker {
    Registry::global().breaker(name)
}

/// `i`-th outcome of a CLOSED loop: a success, a failure or an ignored error (the failure rate
/// stays below 100 %, so the breaker stays CLOSED).
fn outcome(i: u32) -> Result<u32, ApiError> {
    match i % 3 {
        0 => Ok(i),
        1 => Err(ApiError::Down),
        _ => Err(ApiError::BadRequest),
    }
}

#[test]
fn guarded_calls_allocate_nothing_in_closed_open_and_half_open() {
    init();
    let service = Service {
        calls: AtomicUsize::new(0),
    };
    let every_kind = |i: u32| {
        let _ = plain(outcome(i));
        let _ = block_on(asynchronous(outcome(i)));
        let _ = with_fallback(outcome(i));
        let _ = block_on(async_with_fallback(outcome(i)));
        let _ = service.serve(outcome(i));
    };
    for i in 0..100 {
        every_kind(i);
    }
    let names = [
        "na:sync",
        "na:async",
        "na:fallback",
        "na:async-fallback",
        "na:method",
    ];

    let closed = allocations_during(|| (0..CALLS).for_each(every_kind));
    for name in names {
        assert_eq!(breaker(name).state(), State::Closed, "{name}");
    }
    assert!(breaker("na:sync").metrics().failed_calls > 0);

    for name in names {
        breaker(name).transition_to(State::Open).unwrap();
    }
    let ran_before = service.calls.load(Ordering::SeqCst);
    let open = allocations_during(|| {
        for _ in 0..CALLS {
            assert_eq!(plain(Ok(0)), Err(ApiError::Rejected(State::Open)));
            assert_eq!(
                block_on(asynchronous(Ok(0))),
                Err(ApiError::Rejected(State::Open))
            );
            assert_eq!(with_fallback(Ok(0)), Ok(1), "the fallback answers");
            assert_eq!(block_on(async_with_fallback(Ok(0))), Ok(1));
            assert_eq!(service.serve(Ok(0)), Err(ApiError::Rejected(State::Open)));
        }
    });
    assert_eq!(
        service.calls.load(Ordering::SeqCst),
        ran_before,
        "nothing ran"
    );

    // Ignored errors give their trial permit back, so HALF_OPEN lasts the whole loop.
    breaker("na:sync").transition_to(State::HalfOpen).unwrap();
    breaker("na:async").transition_to(State::HalfOpen).unwrap();
    let half_open = allocations_during(|| {
        for _ in 0..CALLS {
            assert_eq!(plain(Err(ApiError::BadRequest)), Err(ApiError::BadRequest));
            assert_eq!(
                block_on(asynchronous(Err(ApiError::BadRequest))),
                Err(ApiError::BadRequest)
            );
        }
    });
    assert_eq!(breaker("na:sync").state(), State::HalfOpen);

    assert_eq!(
        (closed, open, half_open),
        (0, 0, 0),
        "allocations in (CLOSED, OPEN, HALF_OPEN)"
    );
}

/// `timeout-duration` through the attribute on a current-thread Tokio runtime (paused time):
/// a call that completes in time, and one that times out and returns `E::from(CallTimedOut)`.
#[test]
fn guarded_calls_with_a_tokio_timeout_allocate_nothing() {
    init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let (in_time, timed_out) = runtime.block_on(async {
        let fast = Duration::from_millis(10);
        let slow = Duration::from_secs(3600);
        for _ in 0..100 {
            assert_eq!(timed(fast).await, Ok(3));
            let _ = timed(slow).await;
        }
        let before = allocations();
        for _ in 0..CALLS {
            assert_eq!(timed(fast).await, Ok(3));
        }
        let in_time = allocations() - before;
        let before = allocations();
        for _ in 0..CALLS {
            assert_eq!(
                timed(slow).await,
                Err(ApiError::TimedOut(Duration::from_secs(1)))
            );
        }
        (in_time, allocations() - before)
    });
    let m = breaker("na:timeout").metrics();
    assert_eq!(m.state, State::Closed, "{m:?}");
    assert!(m.failed_calls >= CALLS, "the timeouts are failures: {m:?}");
    assert_eq!(
        (in_time, timed_out),
        (0, 0),
        "allocations (completed in time, timed out)"
    );
}
