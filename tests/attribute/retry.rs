//! `#[retry]` at run time, alone and around `#[circuit_breaker]` and `#[bulkhead]` in any
//! written order: attempts counted in the function, the retry's predicates and configured
//! kinds, exhausted retries on an `Ok`, the budget refusing, and the composition: an OPEN
//! breaker makes one attempt and is not retried (unless `retry-exceptions` names it), every
//! attempt is recorded by the breaker and takes its own bulkhead place, and the one fallback
//! runs once, after the last attempt (Spring's trap, avoided).
//!
//! The binary's registry is on the system clock (see `main.rs`), so the retries here wait
//! `wait-duration` of 1 ms between attempts; the tests assert what happened (attempts,
//! results, metrics, events), never how long it took.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker::{
    bulkhead, circuit_breaker, retry, BulkheadConfig, BulkheadEventKind, CallError,
    CallNotPermitted, CircuitBreaker, Config, ErrorKind, Registry, RegistryBuilder, Retry,
    RetryConfig, RetryEventKind, State,
};

use crate::init;
use crate::support::{poll_once, rejected, ApiError, Gate};

/// This module's retries, breakers and bulkheads in the binary's global registry.
pub(crate) fn instances(mut registry: RegistryBuilder) -> RegistryBuilder {
    // Three attempts, 1 ms apart, and a budget that never refuses a test's few retries.
    let quick = || {
        RetryConfig::builder()
            .max_attempts(3)
            .wait_duration(Duration::from_millis(1))
            .budget_enabled(false)
    };
    for name in [
        "re:fail",
        "re:recover",
        "re:sync",
        "re:predicate",
        "re:ignored",
        "re:result",
        "re:own-fallback",
        "re:open",
        "re:recorded",
        "re:trap",
        "re:full",
        "re:order-a",
        "re:order-b",
        "re:order-c",
        "re:layered-sync",
        "re:layered-predicate",
    ] {
        registry = registry.retry_instance(name, quick().build().unwrap());
    }
    registry = registry
        .retry_instance(
            "re:exhausted",
            quick().fail_after_max_attempts(true).build().unwrap(),
        )
        .retry_instance(
            "re:open-named",
            quick()
                .retry_exceptions([ErrorKind::call_not_permitted()])
                .build()
                .unwrap(),
        )
        // A budget that allows no retry at all: one call is far too few to pay for one.
        .retry_instance(
            "re:budget",
            RetryConfig::builder()
                .max_attempts(3)
                .wait_duration(Duration::from_millis(1))
                .budget_ratio(0.001)
                .budget_min_retries_per_second(0)
                .build()
                .unwrap(),
        )
        // The configured kinds on top of the attribute's predicates.
        .retry_instance(
            "re:kinds",
            quick()
                .ignore_exceptions([ErrorKind::new("Fatal", |e: &ApiError| {
                    *e == ApiError::Fatal
                })])
                .build()
                .unwrap(),
        );

    // Large enough that a test's failures never open it by themselves.
    let patient = || {
        Config::builder()
            .sliding_window_size(100)
            .minimum_number_of_calls(100)
            .wait_duration_in_open_state(Duration::from_secs(3600))
    };
    for name in [
        "re:open",
        "re:open-named",
        "re:recorded",
        "re:trap",
        "re:full",
        "re:order-a",
        "re:order-b",
        "re:order-c",
        "re:layered-sync",
        "re:layered-predicate",
    ] {
        registry = registry.instance(name, patient().build().unwrap());
    }
    for name in ["re:full", "re:order-a", "re:order-b", "re:order-c"] {
        registry = registry.bulkhead_instance(
            name,
            BulkheadConfig::builder()
                .max_concurrent_calls(1)
                .build()
                .unwrap(),
        );
    }
    registry
}

fn retry_of(name: &str) -> Retry {
    Registry::global().retry(name)
}

fn breaker_of(name: &str) -> CircuitBreaker {
    Registry::global().breaker(name)
}

/// The kinds of the events `retry` publishes while it is alive.
fn record_events(retry: &Retry) -> (Arc<Mutex<Vec<RetryEventKind>>>, breaker::Subscription) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let subscription = retry.subscribe(move |e| seen.lock().unwrap().push(e.kind()));
    (events, subscription)
}

fn is_retry(kind: &RetryEventKind) -> bool {
    matches!(kind, RetryEventKind::Retry { .. })
}

// --- alone: attempts ---------------------------------------------------------------------------

static FAIL: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:fail")]
async fn always_down() -> Result<u32, ApiError> {
    FAIL.fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Down)
}

#[tokio::test]
async fn a_failing_call_is_made_max_attempts_times_and_ends_with_its_last_error() {
    init();
    let (events, _subscription) = record_events(&retry_of("re:fail"));
    assert_eq!(always_down().await, Err(ApiError::Down));
    assert_eq!(
        FAIL.load(Ordering::SeqCst),
        3,
        "max-attempts, the first included"
    );
    let m = retry_of("re:fail").metrics();
    assert_eq!(m.failed_calls_with_retry_attempt(), 1);
    assert_eq!(m.successful_calls_without_retry_attempt(), 0);
    let events = events.lock().unwrap();
    assert_eq!(events.iter().filter(|k| is_retry(k)).count(), 2);
    assert_eq!(events.last(), Some(&RetryEventKind::Error));
}

static RECOVER: AtomicUsize = AtomicUsize::new(0);

/// Fails on its first attempt of every two.
#[retry(name = "re:recover")]
async fn recovers(id: &str) -> Result<String, ApiError> {
    if RECOVER.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
        return Err(ApiError::Down);
    }
    Ok(format!("product {id}"))
}

#[tokio::test]
async fn a_call_that_recovers_returns_the_successful_attempt() {
    init();
    assert_eq!(recovers("7").await, Ok("product 7".to_owned()));
    assert_eq!(RECOVER.load(Ordering::SeqCst), 2);
    let m = retry_of("re:recover").metrics();
    assert_eq!(m.successful_calls_with_retry_attempt(), 1);
}

static SYNC: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:sync")]
fn sync_down(fail_first: usize) -> Result<usize, ApiError> {
    let attempt = SYNC.fetch_add(1, Ordering::SeqCst);
    if attempt < fail_first {
        return Err(ApiError::Down);
    }
    Ok(attempt)
}

#[test]
fn a_plain_fn_is_retried_on_its_thread() {
    init();
    assert_eq!(sync_down(2), Ok(2), "the third attempt succeeds");
    assert_eq!(sync_down(10), Err(ApiError::Down));
    assert_eq!(SYNC.load(Ordering::SeqCst), 6);
}

// --- the predicates and the configured kinds ------------------------------------------------

static PREDICATE: AtomicUsize = AtomicUsize::new(0);

fn is_down(e: &ApiError) -> bool {
    *e == ApiError::Down
}

#[retry(name = "re:predicate", retry = is_down)]
async fn only_down_is_retried(error: ApiError) -> Result<(), ApiError> {
    PREDICATE.fetch_add(1, Ordering::SeqCst);
    Err(error.clone())
}

#[tokio::test]
async fn retry_names_the_errors_to_retry_and_the_others_end_the_call() {
    init();
    let (events, _subscription) = record_events(&retry_of("re:predicate"));
    assert_eq!(
        only_down_is_retried(ApiError::Fatal).await,
        Err(ApiError::Fatal)
    );
    assert_eq!(PREDICATE.load(Ordering::SeqCst), 1, "not retried");
    assert_eq!(*events.lock().unwrap(), [RetryEventKind::IgnoredError]);
    assert_eq!(
        only_down_is_retried(ApiError::Down).await,
        Err(ApiError::Down)
    );
    assert_eq!(PREDICATE.load(Ordering::SeqCst), 4);
}

static IGNORED: AtomicUsize = AtomicUsize::new(0);

fn is_fatal(e: &ApiError) -> bool {
    *e == ApiError::Fatal
}

#[retry(name = "re:ignored", ignore = is_fatal)]
async fn fatal_is_ignored(error: ApiError) -> Result<(), ApiError> {
    IGNORED.fetch_add(1, Ordering::SeqCst);
    Err(error.clone())
}

static KINDS: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:kinds")]
async fn fatal_by_kind(error: ApiError) -> Result<(), ApiError> {
    KINDS.fetch_add(1, Ordering::SeqCst);
    Err(error.clone())
}

#[tokio::test]
async fn ignore_and_ignore_exceptions_end_the_call_at_once() {
    init();
    assert_eq!(
        fatal_is_ignored(ApiError::Fatal).await,
        Err(ApiError::Fatal)
    );
    assert_eq!(IGNORED.load(Ordering::SeqCst), 1);
    assert_eq!(fatal_is_ignored(ApiError::Down).await, Err(ApiError::Down));
    assert_eq!(IGNORED.load(Ordering::SeqCst), 4);

    assert_eq!(fatal_by_kind(ApiError::Fatal).await, Err(ApiError::Fatal));
    assert_eq!(
        KINDS.load(Ordering::SeqCst),
        1,
        "ignore-exceptions names it"
    );
    assert_eq!(fatal_by_kind(ApiError::Down).await, Err(ApiError::Down));
    assert_eq!(KINDS.load(Ordering::SeqCst), 4);
}

// --- a result predicate: an `Ok` retried ------------------------------------------------------

static RESULT: AtomicUsize = AtomicUsize::new(0);
static EXHAUSTED: AtomicUsize = AtomicUsize::new(0);

fn is_unavailable(status: &u16) -> bool {
    *status == 503
}

#[retry(name = "re:result", result = is_unavailable)]
async fn status(first: u16) -> Result<u16, ApiError> {
    let attempt = RESULT.fetch_add(1, Ordering::SeqCst);
    Ok(if attempt == 0 { first } else { 503 })
}

#[retry(name = "re:exhausted", result = is_unavailable)]
fn unavailable() -> Result<u16, ApiError> {
    EXHAUSTED.fetch_add(1, Ordering::SeqCst);
    Ok(503)
}

#[tokio::test]
async fn a_retried_ok_ends_with_the_last_value_or_max_retries_exceeded() {
    init();
    assert_eq!(status(200).await, Ok(200), "a 200 is not retried");
    assert_eq!(RESULT.load(Ordering::SeqCst), 1);
    assert_eq!(status(503).await, Ok(503), "the last 503, after 3 attempts");
    assert_eq!(RESULT.load(Ordering::SeqCst), 4);

    // fail-after-max-attempts: `Err(E::from(MaxRetriesExceeded))`, without a fallback.
    assert_eq!(
        unavailable(),
        Err(ApiError::Exhausted {
            retry: "re:exhausted".into(),
            attempts: 3
        })
    );
    assert_eq!(EXHAUSTED.load(Ordering::SeqCst), 3);
}

// --- a fallback on #[retry] alone --------------------------------------------------------------

static OWN: AtomicUsize = AtomicUsize::new(0);
static OWN_FALLBACK: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:own-fallback", fallback = "own_fallback")]
async fn with_own_fallback(id: u32) -> Result<String, ApiError> {
    OWN.fetch_add(1, Ordering::SeqCst);
    let _ = id;
    Err(ApiError::Down)
}

async fn own_fallback(id: u32, err: CallError<ApiError>) -> Result<String, ApiError> {
    OWN_FALLBACK.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{id}: {err:?}"))
}

#[tokio::test]
async fn the_retrys_fallback_runs_once_after_the_last_attempt() {
    init();
    assert_eq!(with_own_fallback(7).await.unwrap(), "7: Inner(Down)");
    assert_eq!(OWN.load(Ordering::SeqCst), 3);
    assert_eq!(OWN_FALLBACK.load(Ordering::SeqCst), 1);
}

// --- the budget ------------------------------------------------------------------------------

static BUDGET: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:budget")]
async fn over_budget() -> Result<(), ApiError> {
    BUDGET.fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Down)
}

#[tokio::test]
async fn a_retry_the_budget_refuses_ends_the_call_with_the_last_error() {
    init();
    let (events, _subscription) = record_events(&retry_of("re:budget"));
    assert_eq!(over_budget().await, Err(ApiError::Down));
    assert_eq!(BUDGET.load(Ordering::SeqCst), 1, "the retry was refused");
    assert_eq!(
        retry_of("re:budget").metrics().retries_refused_by_budget(),
        1
    );
    assert!(events
        .lock()
        .unwrap()
        .contains(&RetryEventKind::BudgetExhausted));
}

// --- around #[circuit_breaker] -------------------------------------------------------------------

static OPEN: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:open")]
#[circuit_breaker(name = "re:open")]
async fn behind_open_breaker() -> Result<(), ApiError> {
    OPEN.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

static OPEN_NAMED: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "re:open-named")]
#[retry(name = "re:open-named")]
async fn behind_open_breaker_named() -> Result<(), ApiError> {
    OPEN_NAMED.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[tokio::test]
async fn an_open_breaker_is_asked_once_and_not_retried_unless_named() {
    init();
    breaker_of("re:open")
        .transition_to(State::ForcedOpen)
        .unwrap();
    assert_eq!(behind_open_breaker().await, Err(rejected("re:open")));
    assert_eq!(OPEN.load(Ordering::SeqCst), 0);
    assert_eq!(
        breaker_of("re:open").metrics().not_permitted_calls,
        1,
        "one attempt, not retried"
    );

    // retry-exceptions names CallNotPermittedException: every attempt asks the breaker.
    breaker_of("re:open-named")
        .transition_to(State::ForcedOpen)
        .unwrap();
    assert_eq!(
        behind_open_breaker_named().await,
        Err(rejected("re:open-named"))
    );
    assert_eq!(OPEN_NAMED.load(Ordering::SeqCst), 0);
    assert_eq!(breaker_of("re:open-named").metrics().not_permitted_calls, 3);
}

static RECORDED: AtomicUsize = AtomicUsize::new(0);

fn every_error(_: &ApiError) -> bool {
    true
}

#[retry(name = "re:recorded")]
#[circuit_breaker(name = "re:recorded", ignore = every_error)]
async fn recorded(ignored_by_breaker: bool) -> Result<(), ApiError> {
    RECORDED.fetch_add(1, Ordering::SeqCst);
    let _ = ignored_by_breaker;
    Err(ApiError::Down)
}

#[retry(name = "re:layered-predicate", retry = is_down)]
#[circuit_breaker(name = "re:layered-predicate")]
async fn layered_predicate(error: ApiError) -> Result<(), ApiError> {
    Err(error.clone())
}

#[tokio::test]
async fn every_attempt_is_a_call_the_breaker_records() {
    init();
    // The breaker's own `ignore` keeps its window clean; the retry still retries.
    assert_eq!(recorded(true).await, Err(ApiError::Down));
    assert_eq!(RECORDED.load(Ordering::SeqCst), 3);
    assert_eq!(breaker_of("re:recorded").metrics().buffered_calls, 0);

    // The retry's `retry` sees the function's own error; each attempt is one recorded call.
    assert_eq!(
        layered_predicate(ApiError::Fatal).await,
        Err(ApiError::Fatal)
    );
    let m = breaker_of("re:layered-predicate").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (1, 1));
    assert_eq!(layered_predicate(ApiError::Down).await, Err(ApiError::Down));
    let m = breaker_of("re:layered-predicate").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (4, 4));
}

// --- Spring's trap: the fallback is outside the retry ----------------------------------------

static TRAP: AtomicUsize = AtomicUsize::new(0);
static TRAP_FALLBACK: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// In Spring, `@Retry` outside `@CircuitBreaker(fallbackMethod = ..)` never retries: the
/// breaker's fallback turns the first failure into a success. Here the fallback written on
/// `#[circuit_breaker]` is outermost.
#[retry(name = "re:trap")]
#[circuit_breaker(name = "re:trap", fallback = "trap_fallback")]
async fn trapped(id: u32) -> Result<String, ApiError> {
    TRAP.fetch_add(1, Ordering::SeqCst);
    let _ = id;
    Err(ApiError::Down)
}

async fn trap_fallback(id: u32, err: CallError<ApiError>) -> Result<String, ApiError> {
    let seen = format!(
        "{id}: {err:?} after {} attempts",
        TRAP.load(Ordering::SeqCst)
    );
    TRAP_FALLBACK.lock().unwrap().push(seen.clone());
    Ok(seen)
}

#[tokio::test]
async fn the_fallback_runs_once_after_every_attempt_not_inside_the_retry() {
    init();
    let (events, _subscription) = record_events(&retry_of("re:trap"));
    assert_eq!(trapped(7).await.unwrap(), "7: Inner(Down) after 3 attempts");
    assert_eq!(TRAP.load(Ordering::SeqCst), 3, "retried max-attempts times");
    assert_eq!(TRAP_FALLBACK.lock().unwrap().len(), 1, "one fallback");
    assert_eq!(breaker_of("re:trap").metrics().failed_calls, 3);
    let events = events.lock().unwrap();
    assert_eq!(events.iter().filter(|k| is_retry(k)).count(), 2);
    assert_eq!(events.last(), Some(&RetryEventKind::Error));
}

// --- around #[bulkhead]: a refusal is retried, each attempt takes its own place -----------

static FULL: Gate = Gate::new();

#[bulkhead(name = "re:full")]
#[circuit_breaker(name = "re:full")]
#[retry(name = "re:full")]
async fn full_bulkhead(wait: bool) -> Result<(), ApiError> {
    FULL.enter(wait).await;
    Ok(())
}

#[tokio::test]
async fn a_full_bulkhead_is_retried_and_each_attempt_asks_for_a_place() {
    init();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let _subscription = Registry::global()
        .bulkhead("re:full")
        .subscribe(move |e| seen.lock().unwrap().push(e.kind()));
    let mut held = Box::pin(full_bulkhead(true));
    assert!(poll_once(&mut held).await.is_pending());

    assert_eq!(
        full_bulkhead(false).await,
        Err(ApiError::Full {
            bulkhead: "re:full".into()
        })
    );
    assert_eq!(FULL.entered(), 1, "no refused attempt ran");
    let rejections = events
        .lock()
        .unwrap()
        .iter()
        .filter(|k| **k == BulkheadEventKind::CallRejected)
        .count();
    assert_eq!(rejections, 3, "one place asked for per attempt");
    assert_eq!(breaker_of("re:full").metrics().failed_calls, 3);
    FULL.open(1);
    assert_eq!(held.await, Ok(()));
}

// --- any written order is one expansion --------------------------------------------------------

static ORDER: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

#[circuit_breaker(name = "re:order-a")]
#[retry(name = "re:order-a")]
#[bulkhead(name = "re:order-a")]
async fn order_a() -> Result<(), ApiError> {
    ORDER[0].fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Down)
}

#[bulkhead(name = "re:order-b")]
#[retry(name = "re:order-b")]
#[circuit_breaker(name = "re:order-b")]
async fn order_b() -> Result<(), ApiError> {
    ORDER[1].fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Down)
}

#[retry(name = "re:order-c")]
#[bulkhead(name = "re:order-c")]
#[circuit_breaker(name = "re:order-c")]
async fn order_c() -> Result<(), ApiError> {
    ORDER[2].fetch_add(1, Ordering::SeqCst);
    Err(ApiError::Down)
}

#[tokio::test]
async fn in_any_written_order_the_retry_is_outermost() {
    init();
    assert_eq!(order_a().await, Err(ApiError::Down));
    assert_eq!(order_b().await, Err(ApiError::Down));
    assert_eq!(order_c().await, Err(ApiError::Down));
    for (i, name) in ["re:order-a", "re:order-b", "re:order-c"]
        .into_iter()
        .enumerate()
    {
        assert_eq!(ORDER[i].load(Ordering::SeqCst), 3, "{name}: three attempts");
        let m = breaker_of(name).metrics();
        assert_eq!(m.failed_calls, 3, "{name}: each attempt recorded");
        let bulkhead = Registry::global().bulkhead(name).metrics();
        assert_eq!(
            bulkhead.available_concurrent_calls(),
            1,
            "{name}: places given back"
        );
        assert_eq!(
            retry_of(name).metrics().failed_calls_with_retry_attempt(),
            1,
            "{name}: one call"
        );
    }
}

// --- a plain fn under all three ----------------------------------------------------------------

static LAYERED_SYNC: AtomicUsize = AtomicUsize::new(0);

#[retry(name = "re:layered-sync")]
#[circuit_breaker(name = "re:layered-sync")]
fn layered_sync(fail_first: usize) -> std::io::Result<usize> {
    let attempt = LAYERED_SYNC.fetch_add(1, Ordering::SeqCst);
    if attempt < fail_first {
        return Err(std::io::Error::other("down"));
    }
    Ok(attempt)
}

#[test]
fn a_plain_fn_around_a_breaker_is_retried_attempt_by_attempt() {
    init();
    assert_eq!(layered_sync(1).unwrap(), 1);
    let m = breaker_of("re:layered-sync").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (2, 1));
    breaker_of("re:layered-sync")
        .transition_to(State::ForcedOpen)
        .unwrap();
    let err = layered_sync(0).unwrap_err();
    let inner = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<CallNotPermitted>());
    assert_eq!(inner.map(|r| r.breaker_name()), Some("re:layered-sync"));
    assert_eq!(LAYERED_SYNC.load(Ordering::SeqCst), 2, "not run while OPEN");
    assert_eq!(
        breaker_of("re:layered-sync").metrics().not_permitted_calls,
        1
    );
}
