//! Behaviour through `#[circuit_breaker]`: what a user of the attribute sees at run time.
//!
//! The attribute resolves breakers from `Registry::global()`: the binary's [`init`] installs
//! one registry, with the instances of [`instances`], before any test touches it, and every
//! test uses breaker names of its own.

use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

use breaker::{
    circuit_breaker, CallError, CallNotPermitted, CallTimedOut, Config, KeyedCallSite, Registry,
    RegistryBuilder, State,
};

use crate::init;

/// This module's instances in the binary's global registry.
pub(crate) fn instances(mut registry: RegistryBuilder) -> RegistryBuilder {
    // Opens after 2 calls in a window of 4 if half of them failed; never moves to HALF_OPEN
    // on its own during a test; one trial call in HALF_OPEN.
    let small = || {
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(2)
            .failure_rate_threshold(50.0)
            .wait_duration_in_open_state(Duration::from_secs(3600))
            .permitted_number_of_calls_in_half_open_state(1)
    };
    for name in [
        "rt:shared",
        "rt:fallback",
        "rt:ignored",
        "rt:result",
        "rt:half-open",
        "rt:keyed",
        "rt:method",
        "rt:panic",
        "rt:io",
    ] {
        registry = registry.instance(name, small().build().unwrap());
    }
    for name in [
        "rt:timeout",
        "rt:timeout-fallback",
        "rt:timeout-typed",
        "rt:timeout-io",
    ] {
        let config = small()
            .timeout_duration(Some(Duration::from_millis(100)))
            .build()
            .unwrap();
        registry = registry.instance(name, config);
    }
    registry
}

#[derive(Debug, Clone, PartialEq)]
enum ApiError {
    Down,
    BadRequest,
    Rejected { breaker: String },
    TimedOut { breaker: String, after: Duration },
}

impl From<CallNotPermitted> for ApiError {
    fn from(e: CallNotPermitted) -> Self {
        ApiError::Rejected {
            breaker: e.breaker_name().to_owned(),
        }
    }
}

impl From<CallTimedOut> for ApiError {
    fn from(e: CallTimedOut) -> Self {
        ApiError::TimedOut {
            breaker: e.breaker_name().to_owned(),
            after: e.timeout(),
        }
    }
}

fn breaker(name: &str) -> breaker::CircuitBreaker {
    Registry::global().breaker(name)
}

/// What a fallback was called with.
fn describe(err: &CallError<ApiError>) -> String {
    match err {
        CallError::Inner(e) => format!("failed {e:?}"),
        CallError::Rejected(r) => format!("not permitted by {}", r.breaker_name()),
        CallError::TimedOut(t) => format!("timed out after {:?}", t.timeout()),
        other => format!("{other:?}"),
    }
}

// --- two functions, one name ------------------------------------------------------------

static SHARED_B_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "rt:shared")]
async fn shared_a(fail: bool) -> Result<&'static str, ApiError> {
    if fail {
        return Err(ApiError::Down);
    }
    Ok("a")
}

#[circuit_breaker(name = "rt:shared")]
fn shared_b() -> Result<&'static str, ApiError> {
    SHARED_B_RAN.fetch_add(1, Ordering::SeqCst);
    Ok("b")
}

#[tokio::test]
async fn two_functions_with_one_name_share_one_breaker() {
    init();
    assert_eq!(shared_b(), Ok("b"));
    assert_eq!(shared_a(true).await, Err(ApiError::Down));
    // 1 failure of 2 calls, both functions counted in one window: 50% opens it.
    assert_eq!(breaker("rt:shared").state(), State::Open);
    assert_eq!(breaker("rt:shared").metrics().buffered_calls, 2);

    // Both functions are now rejected, without a fallback: `Err(ApiError::from(..))`.
    let rejected = ApiError::Rejected {
        breaker: "rt:shared".into(),
    };
    assert_eq!(shared_a(false).await, Err(rejected.clone()));
    assert_eq!(shared_b(), Err(rejected));
    assert_eq!(
        SHARED_B_RAN.load(Ordering::SeqCst),
        1,
        "a rejected body never runs"
    );
    assert_eq!(breaker("rt:shared").metrics().not_permitted_calls, 2);
}

// --- the fallback gets the arguments and the right CallError -------------------------------

static FALLBACK_BODY_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "rt:fallback", fallback = "product_fallback")]
async fn get_product(id: u32, region: &str, verbose: bool) -> Result<String, ApiError> {
    FALLBACK_BODY_RAN.fetch_add(1, Ordering::SeqCst);
    let _ = (region, verbose);
    Err(ApiError::Down)
}

async fn product_fallback(
    id: u32,
    region: &str,
    verbose: bool,
    err: CallError<ApiError>,
) -> Result<String, ApiError> {
    Ok(format!("{id} {region} {verbose}: {}", describe(&err)))
}

#[tokio::test]
async fn fallback_gets_the_arguments_and_what_went_wrong() {
    init();
    assert_eq!(
        get_product(7, "eu", true).await.unwrap(),
        "7 eu true: failed Down"
    );
    assert_eq!(
        get_product(8, "us", false).await.unwrap(),
        "8 us false: failed Down"
    );
    assert_eq!(breaker("rt:fallback").state(), State::Open);
    assert_eq!(
        get_product(9, "ap", true).await.unwrap(),
        "9 ap true: not permitted by rt:fallback"
    );
    assert_eq!(FALLBACK_BODY_RAN.load(Ordering::SeqCst), 2);
}

// --- the fallback also runs for errors the breaker does not count --------------------------

fn is_bad_request(e: &ApiError) -> bool {
    *e == ApiError::BadRequest
}

#[circuit_breaker(name = "rt:ignored", fallback = "ignored_fallback", ignore = is_bad_request)]
fn validate(input: &str) -> Result<String, ApiError> {
    if input.is_empty() {
        return Err(ApiError::BadRequest);
    }
    Ok(input.to_uppercase())
}

fn ignored_fallback(input: &str, err: CallError<ApiError>) -> Result<String, ApiError> {
    // A fallback that passes the caller's own mistakes through, as a user would write it.
    match err {
        CallError::Inner(ApiError::BadRequest) => Err(ApiError::BadRequest),
        other => Ok(format!("{input}: {}", describe(&other))),
    }
}

#[test]
fn fallback_runs_for_ignored_errors_which_are_not_counted() {
    init();
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let _events = breaker("rt:ignored").subscribe(|e| {
        SEEN.lock().unwrap().push(format!("{:?}", e.kind()));
    });
    for _ in 0..5 {
        assert_eq!(validate(""), Err(ApiError::BadRequest));
    }
    assert_eq!(validate("ok").unwrap(), "OK");
    let m = breaker("rt:ignored").metrics();
    assert_eq!(m.state, State::Closed);
    assert_eq!(m.buffered_calls, 1, "ignored errors are not in the window");
    let seen = SEEN.lock().unwrap();
    assert_eq!(
        seen.iter()
            .filter(|k| k.starts_with("IgnoredError"))
            .count(),
        5
    );
}

// --- an Ok can count as a failure -------------------------------------------------------------

fn is_retry_later(status: &u16) -> bool {
    *status == 503
}

#[circuit_breaker(name = "rt:result", result = is_retry_later, fallback = "status_fallback")]
async fn status(code: u16) -> Result<u16, ApiError> {
    Ok(code)
}

async fn status_fallback(_code: u16, err: CallError<ApiError>) -> Result<u16, ApiError> {
    assert!(err.is_rejected(), "only rejections reach the fallback here");
    Ok(0)
}

#[tokio::test]
async fn a_result_predicate_counts_an_ok_as_a_failure_and_returns_it() {
    init();
    assert_eq!(status(503).await, Ok(503), "the value is still returned");
    assert_eq!(status(200).await, Ok(200));
    let m = breaker("rt:result").metrics();
    assert_eq!((m.failed_calls, m.state), (1, State::Open));
    assert_eq!(
        status(200).await,
        Ok(0),
        "now rejected, through the fallback"
    );
}

// --- a dropped future gives its half-open permit back ----------------------------------------

static RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();
static TRIALS_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "rt:half-open")]
async fn trial(wait: bool) -> Result<(), ApiError> {
    TRIALS_RAN.fetch_add(1, Ordering::SeqCst);
    if wait {
        RELEASE.notified().await;
    }
    Ok(())
}

async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut *fut).poll(cx))).await
}

#[tokio::test]
async fn a_dropped_future_releases_its_half_open_permit() {
    init();
    let b = breaker("rt:half-open");
    b.transition_to(State::Open).unwrap();
    b.transition_to(State::HalfOpen).unwrap();

    // The first call takes the only trial permit and waits.
    let mut first = Box::pin(trial(true));
    assert!(poll_once(&mut first).await.is_pending());
    assert_eq!(TRIALS_RAN.load(Ordering::SeqCst), 1);

    // While it holds the permit, a second caller is rejected at once.
    let rejected = trial(false).await.unwrap_err();
    assert!(
        matches!(rejected, ApiError::Rejected { .. }),
        "{rejected:?}"
    );
    assert_eq!(TRIALS_RAN.load(Ordering::SeqCst), 1);

    // Cancelled: dropping the future gives the permit back and records nothing.
    drop(first);
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.metrics().buffered_calls, 0);

    // So the next caller is the trial, and its success closes the breaker.
    assert_eq!(trial(false).await, Ok(()));
    assert_eq!(TRIALS_RAN.load(Ordering::SeqCst), 2);
    assert_eq!(b.state(), State::Closed);
}

// --- timeout-duration: cancelled, a failure, an error of its own ------------------------------

#[circuit_breaker(name = "rt:timeout")]
async fn slow(delay_ms: u64) -> Result<u64, ApiError> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok(delay_ms)
}

#[circuit_breaker(name = "rt:timeout-fallback", fallback = "slow_fallback")]
async fn slow_with_fallback(delay_ms: u64) -> Result<String, ApiError> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok("in time".into())
}

async fn slow_fallback(delay_ms: u64, err: CallError<ApiError>) -> Result<String, ApiError> {
    Ok(format!("{delay_ms}: {}", describe(&err)))
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_the_call_and_counts_as_a_failure() {
    init();
    let start = tokio::time::Instant::now();
    assert_eq!(slow(10).await, Ok(10));
    assert_eq!(
        slow(5_000).await,
        Err(ApiError::TimedOut {
            breaker: "rt:timeout".into(),
            after: Duration::from_millis(100),
        }),
        "without a fallback, a timeout converts through From<CallTimedOut>"
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "the slow call was cut"
    );
    let m = breaker("rt:timeout").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (2, 1));
    assert_eq!(m.state, State::Open);

    assert_eq!(
        slow_with_fallback(5_000).await.unwrap(),
        "5000: timed out after 100ms"
    );
    assert_eq!(breaker("rt:timeout-fallback").metrics().failed_calls, 1);
}

/// An error type that tells a timeout from a rejection.
#[derive(Debug, PartialEq)]
enum TimingError {
    Rejected(String),
    TimedOut(Duration),
}

impl From<CallNotPermitted> for TimingError {
    fn from(e: CallNotPermitted) -> Self {
        TimingError::Rejected(e.breaker_name().to_owned())
    }
}

impl From<breaker::CallTimedOut> for TimingError {
    fn from(e: breaker::CallTimedOut) -> Self {
        TimingError::TimedOut(e.timeout())
    }
}

#[circuit_breaker(name = "rt:timeout-typed")]
async fn slow_typed(delay_ms: u64) -> Result<u64, TimingError> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok(delay_ms)
}

#[circuit_breaker(name = "rt:timeout-io")]
async fn slow_io(delay_ms: u64) -> std::io::Result<u64> {
    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    Ok(delay_ms)
}

#[tokio::test(start_paused = true)]
async fn a_timeout_uses_the_error_types_own_conversion_when_it_has_one() {
    init();
    assert_eq!(
        slow_typed(5_000).await,
        Err(TimingError::TimedOut(Duration::from_millis(100))),
        "with From<CallTimedOut>, a timeout is not reported as a rejection"
    );
    let err = slow_io(5_000).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    let inner = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<breaker::CallTimedOut>());
    assert_eq!(inner.map(|t| t.breaker_name()), Some("rt:timeout-io"));
}

// --- keyed breakers ----------------------------------------------------------------------

static KEYED_RAN: AtomicUsize = AtomicUsize::new(0);

#[circuit_breaker(name = "rt:keyed", key = tenant.clone())]
async fn for_tenant(tenant: String, fail: bool) -> Result<String, ApiError> {
    KEYED_RAN.fetch_add(1, Ordering::SeqCst);
    if fail {
        return Err(ApiError::Down);
    }
    Ok(tenant)
}

#[tokio::test]
async fn keyed_breakers_are_independent() {
    init();
    for _ in 0..2 {
        assert_eq!(for_tenant("a".into(), true).await, Err(ApiError::Down));
    }
    let keyed = Registry::global().keyed("rt:keyed");
    assert_eq!(keyed.get("a").state(), State::Open);
    assert_eq!(keyed.get("a").name(), "rt:keyed[a]");

    // Tenant b has a breaker of its own, still closed.
    assert_eq!(for_tenant("b".into(), false).await.unwrap(), "b");
    assert_eq!(keyed.get("b").state(), State::Closed);

    // Tenant a is rejected without running the body, and its name says which breaker.
    let before = KEYED_RAN.load(Ordering::SeqCst);
    assert_eq!(
        for_tenant("a".into(), false).await,
        Err(ApiError::Rejected {
            breaker: "rt:keyed[a]".into(),
        })
    );
    assert_eq!(KEYED_RAN.load(Ordering::SeqCst), before);
    assert!(
        Registry::global().find("rt:keyed").is_none(),
        "no unkeyed breaker was made"
    );
}

// --- a method, its fallback method on Self ------------------------------------------------

struct Inventory {
    stock: Mutex<u32>,
}

impl Inventory {
    #[circuit_breaker(name = "rt:method", fallback = "last_known")]
    fn reserve(&self, sku: &str, n: u32) -> Result<u32, ApiError> {
        let _ = sku;
        let mut stock = self.stock.lock().unwrap();
        if *stock < n {
            return Err(ApiError::Down);
        }
        *stock -= n;
        Ok(*stock)
    }

    fn last_known(&self, sku: &str, n: u32, err: CallError<ApiError>) -> Result<u32, ApiError> {
        let stock = *self.stock.lock().unwrap();
        Err(ApiError::Rejected {
            breaker: format!("{sku} x{n} ({stock} left): {}", describe(&err)),
        })
    }
}

#[test]
fn a_method_falls_back_to_a_method_on_self() {
    init();
    let inventory = Inventory {
        stock: Mutex::new(3),
    };
    assert_eq!(inventory.reserve("x", 2), Ok(1));
    let Err(ApiError::Rejected { breaker: text, .. }) = inventory.reserve("x", 5) else {
        panic!("the fallback answers");
    };
    assert_eq!(text, "x x5 (1 left): failed Down");
    assert_eq!(breaker("rt:method").state(), State::Open);
    let Err(ApiError::Rejected { breaker: text, .. }) = inventory.reserve("y", 1) else {
        panic!("the fallback answers");
    };
    assert_eq!(text, "y x1 (1 left): not permitted by rt:method");
}

// --- a panicking body is a failure, and the panic goes on -------------------------------------

#[circuit_breaker(name = "rt:panic")]
fn explode(boom: bool) -> Result<(), ApiError> {
    if boom {
        panic!("boom");
    }
    Ok(())
}

#[test]
fn a_panicking_body_records_a_failure_and_keeps_panicking() {
    init();
    let caught = std::panic::catch_unwind(|| explode(true));
    assert!(caught.is_err());
    let m = breaker("rt:panic").metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (1, 1));
}

// --- io::Result without a fallback ------------------------------------------------------------

#[circuit_breaker(name = "rt:io")]
fn read_config(fail: bool) -> std::io::Result<u8> {
    if fail {
        return Err(std::io::Error::other("disk"));
    }
    Ok(1)
}

#[test]
fn an_io_result_gets_the_rejection_as_an_io_error() {
    init();
    assert!(read_config(true).is_err());
    assert!(read_config(true).is_err());
    let err = read_config(false).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
    let rejected = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<CallNotPermitted>())
        .expect("the rejection is inside");
    assert_eq!(rejected.breaker_name(), "rt:io");
}

// A call site's keyed lease, as the attribute's expansion takes one: lent out of the thread's
// cache for the call, so a nested lookup of the same key goes to the group's map.
#[test]
fn a_lent_keyed_breaker_is_the_one_a_nested_lookup_of_its_key_finds() {
    init();
    static SITE: KeyedCallSite = KeyedCallSite::new("rt:keyed-lease");
    let outer = SITE.lease("k");
    // Lent out of this thread's cache: the nested lookups go to the map, and find the same.
    let inner = SITE.lease("k");
    assert!(inner.breaker().ptr_eq(outer.breaker()));
    assert!(SITE.breaker("k").ptr_eq(outer.breaker()));
    let other = SITE.lease("other");
    assert!(!other.breaker().ptr_eq(outer.breaker()));
    let _ = outer.breaker().call_sync(|| Ok::<_, ()>(1));
    inner.give_back();
    other.give_back();
    let kept = outer.breaker().clone();
    outer.give_back();
    drop(SITE.lease("k")); // dropped, not given back: the next lookup goes to the map
    let again = SITE.lease("k");
    assert!(again.breaker().ptr_eq(&kept));
    assert_eq!(again.breaker().metrics().successful_calls, 1);
    let group = Registry::global().keyed("rt:keyed-lease");
    assert!(group.find("k").unwrap().ptr_eq(&kept));
    assert_eq!(group.len(), 2);
}
