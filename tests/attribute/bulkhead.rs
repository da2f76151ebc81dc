//! `#[bulkhead]` at run time, alone and with `#[circuit_breaker]` in either order: at most
//! `max-concurrent-calls` calls run, the next is refused at once without running; an OPEN
//! breaker takes no place; a full bulkhead is a failure the breaker records unless its
//! `ignore-exceptions` names `BulkheadFullException`; fallbacks see the refusal; a dropped call
//! gives its place back.
//!
//! Calls are held inside the guarded function on a [`Gate`] and polled by hand, so that "N
//! calls in flight" is a fact of the test, not of timing. The binary's registry is on the
//! system clock (see `main.rs`), so waits for a place are ended by a place coming free, or by
//! the breaker's `timeout-duration` on Tokio's paused clock; the one wait that runs out does so
//! on the system clock, and the test asserts what happened, never how long it took.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use breaker::{
    bulkhead, circuit_breaker, Bulkhead, BulkheadConfig, BulkheadEventKind, BulkheadFull,
    CallError, CircuitBreaker, Config, ErrorKind, Format, Registry, RegistryBuilder, State,
};

use crate::init;
use crate::support::{full, poll_once, rejected, ApiError, Gate};

/// This module's breakers and bulkheads in the binary's global registry.
pub(crate) fn instances(mut registry: RegistryBuilder) -> RegistryBuilder {
    let one_place = || BulkheadConfig::builder().max_concurrent_calls(1);
    registry = registry
        .bulkhead_instance(
            "bh:limit",
            BulkheadConfig::builder()
                .max_concurrent_calls(2)
                .build()
                .unwrap(),
        )
        .bulkhead_instance(
            "bh:wait",
            one_place()
                .max_wait_duration(Duration::from_secs(3600))
                .build()
                .unwrap(),
        )
        .bulkhead_instance(
            "bh:wait-out",
            one_place()
                .max_wait_duration(Duration::from_millis(5))
                .build()
                .unwrap(),
        );
    for name in [
        "bh:dropped",
        "bh:fallback",
        "bh:sync",
        "bh:io",
        "bh:open-cb-first",
        "bh:open-bh-first",
        "bh:full-cb-first",
        "bh:full-bh-first",
        "bh:ignored",
        "bh-ignored-by-class",
        "bh:composed-fallback",
        "bh:composed-sync",
        "bh:predicate",
    ] {
        registry = registry.bulkhead_instance(name, one_place().build().unwrap());
    }
    registry = registry.bulkhead_instance(
        "bh:timeout",
        one_place()
            .max_wait_duration(Duration::from_secs(3600))
            .build()
            .unwrap(),
    );

    // Opens after 2 calls in a window of 4 if half of them failed; stays OPEN for the test.
    let small = || {
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(2)
            .failure_rate_threshold(50.0)
            .wait_duration_in_open_state(Duration::from_secs(3600))
    };
    for name in [
        "bh:open-cb-first",
        "bh:open-bh-first",
        "bh:full-cb-first",
        "bh:full-bh-first",
        "bh:composed-sync",
        "bh:predicate",
    ] {
        registry = registry.instance(name, small().build().unwrap());
    }
    // Opens on the third call if two failed.
    registry = registry.instance(
        "bh:composed-fallback",
        small()
            .minimum_number_of_calls(3)
            .failure_rate_threshold(60.0)
            .build()
            .unwrap(),
    );
    registry = registry.instance(
        "bh:ignored",
        small()
            .ignore_exceptions([ErrorKind::bulkhead_full()])
            .build()
            .unwrap(),
    );
    registry = registry.instance(
        "bh:timeout",
        small()
            .timeout_duration(Some(Duration::from_millis(100)))
            .build()
            .unwrap(),
    );
    // The same through a file, under Resilience4j's class name.
    registry
        .load_str(
            Format::Properties,
            "bulkhead.properties",
            "resilience4j.circuitbreaker.instances.bh-ignored-by-class.sliding-window-size=4\n\
             resilience4j.circuitbreaker.instances.bh-ignored-by-class.minimum-number-of-calls=2\n\
             resilience4j.circuitbreaker.instances.bh-ignored-by-class.ignore-exceptions=\
             io.github.resilience4j.bulkhead.BulkheadFullException\n",
        )
        .expect("the test's file loads")
}

fn bulkhead_of(name: &str) -> Bulkhead {
    Registry::global().bulkhead(name)
}

fn breaker_of(name: &str) -> CircuitBreaker {
    Registry::global().breaker(name)
}

fn available(name: &str) -> u32 {
    bulkhead_of(name).metrics().available_concurrent_calls()
}

// --- the limit -------------------------------------------------------------------------------

static LIMIT: Gate = Gate::new();

#[bulkhead(name = "bh:limit")]
async fn limited(wait: bool) -> Result<u32, ApiError> {
    LIMIT.enter(wait).await;
    Ok(7)
}

#[tokio::test]
async fn a_call_past_the_limit_is_refused_at_once_without_running() {
    init();
    let mut first = Box::pin(limited(true));
    let mut second = Box::pin(limited(true));
    assert!(poll_once(&mut first).await.is_pending());
    assert!(poll_once(&mut second).await.is_pending());
    assert_eq!(LIMIT.entered(), 2);
    assert_eq!(available("bh:limit"), 0);

    // max-wait-duration 0: the third call is refused on its first poll, and never runs.
    let mut third = Box::pin(limited(false));
    assert_eq!(
        poll_once(&mut third).await,
        Poll::Ready(Err(full("bh:limit")))
    );
    assert_eq!(LIMIT.entered(), 2, "a refused call does not run");

    LIMIT.open(2);
    assert_eq!(first.await, Ok(7));
    assert_eq!(second.await, Ok(7));
    assert_eq!(available("bh:limit"), 2);
    assert_eq!(
        limited(false).await,
        Ok(7),
        "a freed place takes the next call"
    );
    assert_eq!(LIMIT.entered(), 3);
}

// --- a dropped call gives its place back -----------------------------------------------------

static DROPPED: Gate = Gate::new();

#[bulkhead(name = "bh:dropped")]
async fn droppable(wait: bool) -> Result<(), ApiError> {
    DROPPED.enter(wait).await;
    Ok(())
}

#[tokio::test]
async fn a_dropped_call_gives_its_place_back() {
    init();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let _subscription = bulkhead_of("bh:dropped").subscribe(move |e| {
        seen.lock().unwrap().push(e.kind());
    });

    let mut held = Box::pin(droppable(true));
    assert!(poll_once(&mut held).await.is_pending());
    assert_eq!(available("bh:dropped"), 0);
    assert_eq!(droppable(false).await, Err(full("bh:dropped")));

    drop(held);
    assert_eq!(available("bh:dropped"), 1);
    assert_eq!(droppable(false).await, Ok(()));
    assert_eq!(
        *events.lock().unwrap(),
        [
            BulkheadEventKind::CallPermitted,
            BulkheadEventKind::CallRejected,
            BulkheadEventKind::CallFinished,
            BulkheadEventKind::CallPermitted,
            BulkheadEventKind::CallFinished,
        ]
    );
}

// --- max-wait-duration -----------------------------------------------------------------------

static WAIT: Gate = Gate::new();

#[bulkhead(name = "bh:wait")]
async fn waiting(wait: bool) -> Result<u32, ApiError> {
    WAIT.enter(wait).await;
    Ok(1)
}

#[tokio::test]
async fn a_call_waits_for_a_place_up_to_max_wait_duration() {
    init();
    let mut holder = Box::pin(waiting(true));
    assert!(poll_once(&mut holder).await.is_pending());

    // The second call waits for the place instead of being refused, and has not run.
    let mut waiter = Box::pin(waiting(false));
    assert!(poll_once(&mut waiter).await.is_pending());
    assert_eq!(bulkhead_of("bh:wait").metrics().waiting_calls(), 1);
    assert_eq!(WAIT.entered(), 1);

    // The place comes free: the waiter gets it and runs.
    WAIT.open(1);
    assert_eq!(holder.await, Ok(1));
    assert_eq!(waiter.await, Ok(1));
    assert_eq!(WAIT.entered(), 2);
    assert_eq!(bulkhead_of("bh:wait").metrics().waiting_calls(), 0);
}

static WAIT_OUT: Gate = Gate::new();

#[bulkhead(name = "bh:wait-out")]
async fn waiting_out(wait: bool) -> Result<u32, ApiError> {
    WAIT_OUT.enter(wait).await;
    Ok(1)
}

#[tokio::test]
async fn a_wait_that_runs_out_is_refused_without_running() {
    init();
    let mut holder = Box::pin(waiting_out(true));
    assert!(poll_once(&mut holder).await.is_pending());
    // No place comes free within max-wait-duration: refused, and the body never ran.
    assert_eq!(waiting_out(false).await, Err(full("bh:wait-out")));
    assert_eq!(WAIT_OUT.entered(), 1);
    assert_eq!(bulkhead_of("bh:wait-out").metrics().waiting_calls(), 0);
    WAIT_OUT.open(1);
    assert_eq!(holder.await, Ok(1));
}

// --- fallback ---------------------------------------------------------------------------------

static FALLBACK: Gate = Gate::new();

#[bulkhead(name = "bh:fallback", fallback = "fallback")]
async fn with_fallback(id: u32, wait: bool) -> Result<String, ApiError> {
    FALLBACK.enter(wait).await;
    Ok(format!("ran {id}"))
}

async fn fallback(id: u32, wait: bool, err: CallError<ApiError>) -> Result<String, ApiError> {
    let _ = wait;
    match err {
        CallError::BulkheadFull(full) => Ok(format!("{id}: {full}")),
        other => Ok(format!("{id}: not a refusal: {other:?}")),
    }
}

#[tokio::test]
async fn the_fallback_receives_the_refusal() {
    init();
    let mut held = Box::pin(with_fallback(1, true));
    assert!(poll_once(&mut held).await.is_pending());
    assert_eq!(
        with_fallback(2, false).await.unwrap(),
        "2: Bulkhead 'bh:fallback' is full and does not permit further calls"
    );
    FALLBACK.open(1);
    assert_eq!(held.await.unwrap(), "ran 1");
}

// --- a plain fn -------------------------------------------------------------------------------

static SYNC_RAN: AtomicUsize = AtomicUsize::new(0);

/// Holds the one place while it calls itself: the nested call finds the bulkhead full.
#[bulkhead(name = "bh:sync")]
fn nested(depth: u32) -> Result<u32, ApiError> {
    SYNC_RAN.fetch_add(1, Ordering::SeqCst);
    if depth > 0 {
        return nested(depth - 1).map(|n| n + 1);
    }
    Ok(0)
}

#[bulkhead(name = "bh:io")]
fn read_io(depth: u32) -> std::io::Result<u32> {
    if depth > 0 {
        return read_io(depth - 1);
    }
    Ok(0)
}

#[test]
fn a_plain_fn_is_refused_while_the_place_is_held() {
    init();
    assert_eq!(nested(0), Ok(0));
    assert_eq!(nested(1), Err(full("bh:sync")));
    assert_eq!(
        SYNC_RAN.load(Ordering::SeqCst),
        2,
        "the nested call did not run"
    );
    assert_eq!(available("bh:sync"), 1, "the place is given back");

    // io::Error has From<BulkheadFull>, with the refusal inside.
    let err = read_io(1).unwrap_err();
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<BulkheadFull>());
    assert_eq!(inner.map(BulkheadFull::bulkhead_name), Some("bh:io"));
}

// --- with #[circuit_breaker], in both orders -------------------------------------------------

/// The same function under both attributes, written in both orders: `$cb_first` has
/// `#[circuit_breaker]` outside, `$bh_first` `#[bulkhead]`; each has breaker and bulkhead
/// named `$cb_name` and `$bh_name`.
macro_rules! both_orders {
    ($gate:ident, $cb_first:ident = $cb_name:literal, $bh_first:ident = $bh_name:literal) => {
        static $gate: Gate = Gate::new();

        #[circuit_breaker(name = $cb_name)]
        #[bulkhead(name = $cb_name)]
        async fn $cb_first(wait: bool) -> Result<u32, ApiError> {
            $gate.enter(wait).await;
            Ok(1)
        }

        #[bulkhead(name = $bh_name)]
        #[circuit_breaker(name = $bh_name)]
        async fn $bh_first(wait: bool) -> Result<u32, ApiError> {
            $gate.enter(wait).await;
            Ok(1)
        }
    };
}

both_orders!(
    OPEN_GATE,
    open_cb_first = "bh:open-cb-first",
    open_bh_first = "bh:open-bh-first"
);

#[tokio::test]
async fn an_open_breaker_takes_no_place_in_either_order() {
    init();
    for name in ["bh:open-cb-first", "bh:open-bh-first"] {
        breaker_of(name).transition_to(State::ForcedOpen).unwrap();
    }
    let acquires = Arc::new(AtomicUsize::new(0));
    let mut subscriptions = Vec::new();
    for name in ["bh:open-cb-first", "bh:open-bh-first"] {
        let acquires = Arc::clone(&acquires);
        subscriptions.push(bulkhead_of(name).subscribe(move |_| {
            acquires.fetch_add(1, Ordering::SeqCst);
        }));
    }

    assert_eq!(
        open_cb_first(false).await,
        Err(rejected("bh:open-cb-first"))
    );
    assert_eq!(
        open_bh_first(false).await,
        Err(rejected("bh:open-bh-first"))
    );
    assert_eq!(OPEN_GATE.entered(), 0);
    assert_eq!(
        acquires.load(Ordering::SeqCst),
        0,
        "no bulkhead event at all"
    );
    assert_eq!(available("bh:open-cb-first"), 1);
    assert_eq!(available("bh:open-bh-first"), 1);
}

both_orders!(
    FULL_GATE,
    full_cb_first = "bh:full-cb-first",
    full_bh_first = "bh:full-bh-first"
);

/// Fills the bulkhead `name` with one parked call of `call`, then makes refused calls until
/// the breaker opens: the same in both orders.
async fn check_refusals_open_the_breaker<F, Fut>(name: &str, call: F)
where
    F: Fn(bool) -> Fut,
    Fut: Future<Output = Result<u32, ApiError>>,
{
    let mut held = Box::pin(call(true));
    assert!(poll_once(&mut held).await.is_pending());
    let breaker = breaker_of(name);
    assert_eq!(
        breaker.metrics().buffered_calls,
        0,
        "the parked call has not ended"
    );

    // One refusal: recorded as a failure; with the parked call still running, 1 of 1.
    assert_eq!(call(false).await, Err(full(name)));
    assert_eq!(breaker.metrics().failed_calls, 1);
    assert_eq!(
        breaker.state(),
        State::Closed,
        "below minimum-number-of-calls"
    );
    // A second: 2 failures of 2, the breaker opens.
    assert_eq!(call(false).await, Err(full(name)));
    assert_eq!(breaker.state(), State::Open);
    // Now the breaker rejects, before the bulkhead: its place stays with the parked call.
    assert_eq!(call(false).await, Err(rejected(name)));
    assert_eq!(bulkhead_of(name).metrics().waiting_calls(), 0);
    assert_eq!(available(name), 0);
}

#[tokio::test]
async fn a_full_bulkhead_is_a_failure_that_opens_the_breaker_in_either_order() {
    init();
    check_refusals_open_the_breaker("bh:full-cb-first", full_cb_first).await;
    check_refusals_open_the_breaker("bh:full-bh-first", full_bh_first).await;
    assert_eq!(FULL_GATE.entered(), 2, "only the parked calls ran");
}

// --- ignore-exceptions naming BulkheadFullException ------------------------------------------

static IGNORED: Gate = Gate::new();

#[circuit_breaker(name = "bh:ignored")]
#[bulkhead(name = "bh:ignored")]
async fn ignored(wait: bool) -> Result<(), ApiError> {
    IGNORED.enter(wait).await;
    Ok(())
}

static IGNORED_BY_CLASS: Gate = Gate::new();

#[bulkhead(name = "bh-ignored-by-class")]
#[circuit_breaker(name = "bh-ignored-by-class")]
async fn ignored_by_class(wait: bool) -> Result<(), ApiError> {
    IGNORED_BY_CLASS.enter(wait).await;
    Ok(())
}

#[tokio::test]
async fn ignore_exceptions_naming_bulkhead_full_keeps_the_breaker_closed() {
    init();
    let mut held = Box::pin(ignored(true));
    assert!(poll_once(&mut held).await.is_pending());
    let mut held_by_class = Box::pin(ignored_by_class(true));
    assert!(poll_once(&mut held_by_class).await.is_pending());
    for _ in 0..4 {
        assert_eq!(ignored(false).await, Err(full("bh:ignored")));
        assert_eq!(
            ignored_by_class(false).await,
            Err(full("bh-ignored-by-class"))
        );
    }
    for name in ["bh:ignored", "bh-ignored-by-class"] {
        let m = breaker_of(name).metrics();
        assert_eq!(
            (m.state, m.buffered_calls, m.failed_calls),
            (State::Closed, 0, 0)
        );
    }
    IGNORED.open(1);
    IGNORED_BY_CLASS.open(1);
    assert_eq!(held.await, Ok(()));
    assert_eq!(held_by_class.await, Ok(()));
    assert_eq!(breaker_of("bh:ignored").metrics().buffered_calls, 1);
}

// --- one fallback, on the breaker, catches everything ----------------------------------------

static COMPOSED: Gate = Gate::new();

#[bulkhead(name = "bh:composed-fallback")]
#[circuit_breaker(name = "bh:composed-fallback", fallback = "composed_fallback")]
async fn composed(wait: bool, fail: bool) -> Result<String, ApiError> {
    COMPOSED.enter(wait).await;
    if fail {
        return Err(ApiError::Down);
    }
    Ok("ran".into())
}

async fn composed_fallback(
    wait: bool,
    fail: bool,
    err: CallError<ApiError>,
) -> Result<String, ApiError> {
    let _ = (wait, fail);
    Ok(match err {
        CallError::BulkheadFull(f) => format!("full: {}", f.bulkhead_name()),
        CallError::Rejected(r) => format!("rejected: {}", r.breaker_name()),
        CallError::Inner(e) => format!("failed: {e:?}"),
        other => format!("{other:?}"),
    })
}

#[tokio::test]
async fn the_breakers_fallback_catches_refusals_rejections_and_errors() {
    init();
    let places = Arc::new(AtomicUsize::new(0));
    let taken = Arc::clone(&places);
    let _subscription = bulkhead_of("bh:composed-fallback").subscribe(move |e| {
        if e.kind() == BulkheadEventKind::CallPermitted {
            taken.fetch_add(1, Ordering::SeqCst);
        }
    });
    let mut held = Box::pin(composed(true, false));
    assert!(poll_once(&mut held).await.is_pending());
    assert_eq!(places.load(Ordering::SeqCst), 1, "one place per call");
    assert_eq!(
        composed(false, false).await.unwrap(),
        "full: bh:composed-fallback"
    );
    COMPOSED.open(1);
    assert_eq!(held.await.unwrap(), "ran");
    assert_eq!(
        breaker_of("bh:composed-fallback").metrics().buffered_calls,
        2
    );
    assert_eq!(composed(false, true).await.unwrap(), "failed: Down");
    // 2 failures (the refusal, the error) of 3: OPEN, and then the fallback sees rejections.
    assert_eq!(breaker_of("bh:composed-fallback").state(), State::Open);
    assert_eq!(
        composed(false, false).await.unwrap(),
        "rejected: bh:composed-fallback"
    );
}

// --- the attribute's predicates see the function's own errors only ----------------------------

static PREDICATE: Gate = Gate::new();

fn every_error(_: &ApiError) -> bool {
    true
}

#[circuit_breaker(name = "bh:predicate", ignore = every_error)]
#[bulkhead(name = "bh:predicate")]
async fn ignoring(wait: bool, fail: bool) -> Result<(), ApiError> {
    PREDICATE.enter(wait).await;
    if fail {
        return Err(ApiError::Down);
    }
    Ok(())
}

#[tokio::test]
async fn the_attributes_ignore_does_not_see_a_refusal() {
    init();
    // The function's own errors are ignored, as `ignore` says.
    for _ in 0..2 {
        assert_eq!(ignoring(false, true).await, Err(ApiError::Down));
    }
    assert_eq!(breaker_of("bh:predicate").metrics().buffered_calls, 0);
    // A refusal is not the function's error: it is recorded, and two open the breaker.
    let mut held = Box::pin(ignoring(true, false));
    assert!(poll_once(&mut held).await.is_pending());
    for _ in 0..2 {
        assert_eq!(ignoring(false, true).await, Err(full("bh:predicate")));
    }
    assert_eq!(breaker_of("bh:predicate").state(), State::Open);
}

// --- the breaker's timeout covers the wait for a place ---------------------------------------

static TIMEOUT: Gate = Gate::new();

#[circuit_breaker(name = "bh:timeout")]
#[bulkhead(name = "bh:timeout")]
async fn timed(wait: bool) -> Result<(), ApiError> {
    TIMEOUT.enter(wait).await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_breakers_timeout_covers_the_wait_for_a_place() {
    init();
    let mut held = Box::pin(timed(true));
    assert!(poll_once(&mut held).await.is_pending());
    // The bulkhead would wait an hour for the place; the breaker's 100 ms cut the wait.
    assert_eq!(
        timed(false).await,
        Err(ApiError::TimedOut {
            breaker: "bh:timeout".into()
        })
    );
    assert_eq!(
        bulkhead_of("bh:timeout").metrics().waiting_calls(),
        0,
        "the cancelled waiter left the queue"
    );
    assert_eq!(breaker_of("bh:timeout").metrics().failed_calls, 1);
    TIMEOUT.open(1);
    assert_eq!(held.await, Ok(()));
}

// --- a plain fn under both -------------------------------------------------------------------

static COMPOSED_SYNC_RAN: AtomicUsize = AtomicUsize::new(0);
static NESTED: Mutex<Option<Result<u32, ApiError>>> = Mutex::new(None);

/// With `nest`, calls itself while it holds the one place, and keeps what the nested call got.
#[bulkhead(name = "bh:composed-sync")]
#[circuit_breaker(name = "bh:composed-sync")]
fn composed_sync(nest: bool) -> Result<u32, ApiError> {
    COMPOSED_SYNC_RAN.fetch_add(1, Ordering::SeqCst);
    if nest {
        *NESTED.lock().unwrap() = Some(composed_sync(false));
    }
    Ok(0)
}

#[test]
fn a_plain_fn_under_both_takes_one_permit_and_one_place() {
    init();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let _subscription = bulkhead_of("bh:composed-sync").subscribe(move |e| {
        seen.lock().unwrap().push(e.kind());
    });
    assert_eq!(composed_sync(false), Ok(0));
    let m = breaker_of("bh:composed-sync").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (1, 0), "one permit");
    assert_eq!(
        *events.lock().unwrap(),
        [
            BulkheadEventKind::CallPermitted,
            BulkheadEventKind::CallFinished
        ],
        "one place"
    );

    // The outer call holds the place: the nested one is refused without running, a failure
    // the breaker records beside the outer call's success.
    assert_eq!(composed_sync(true), Ok(0));
    assert_eq!(*NESTED.lock().unwrap(), Some(Err(full("bh:composed-sync"))));
    let m = breaker_of("bh:composed-sync").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (3, 1));
    assert_eq!(COMPOSED_SYNC_RAN.load(Ordering::SeqCst), 2);
    assert_eq!(available("bh:composed-sync"), 1);
}
