//! A file's `record-exceptions` and `ignore-exceptions` apply to every call path: the
//! attribute (sync and async), `call`, `call_sync` and `call_with`, as Spring applies them to
//! `@CircuitBreaker` methods.

use breaker::{
    circuit_breaker, CallError, CallNotPermitted, CallTimedOut, Classifier, ErrorKind, Format,
    Registry, RegistryBuilder, State,
};

use crate::init;

#[derive(Debug, PartialEq)]
enum HttpError {
    Status(u16),
    Timeout,
    Rejected,
}

impl From<CallNotPermitted> for HttpError {
    fn from(_: CallNotPermitted) -> Self {
        HttpError::Rejected
    }
}

impl From<CallTimedOut> for HttpError {
    fn from(_: CallTimedOut) -> Self {
        HttpError::Timeout
    }
}

/// A small window, so that a few failures open a breaker; ClientError ignored by the first
/// instance, only ServerError recorded by the second, both by the third.
const FILE: &str = "\
resilience4j.circuitbreaker.configs.default.sliding-window-size=4
resilience4j.circuitbreaker.configs.default.minimum-number-of-calls=2
resilience4j.circuitbreaker.configs.default.wait-duration-in-open-state=1h
resilience4j.circuitbreaker.instances.kinds-ignore.ignore-exceptions=ClientError
resilience4j.circuitbreaker.instances.kinds-record.record-exceptions=ServerError
resilience4j.circuitbreaker.instances.kinds-code.ignore-exceptions=ClientError
resilience4j.circuitbreaker.instances.kinds-async.ignore-exceptions=ClientError
resilience4j.circuitbreaker.instances.kinds-api.ignore-exceptions=ClientError
";

/// This module's error kinds and file in the binary's global registry.
pub(crate) fn instances(registry: RegistryBuilder) -> RegistryBuilder {
    registry
        .error_kind(ErrorKind::new("ClientError", |e: &HttpError| {
            matches!(e, HttpError::Status(400..=499))
        }))
        .error_kind(ErrorKind::new("ServerError", |e: &HttpError| {
            matches!(e, HttpError::Status(500..=599))
        }))
        .load_str(Format::Properties, "application.properties", FILE)
        .expect("the test's file loads")
}

fn state(name: &str) -> State {
    Registry::global().breaker(name).state()
}

#[circuit_breaker(name = "kinds-ignore")]
fn lookup(status: u16) -> Result<(), HttpError> {
    Err(HttpError::Status(status))
}

#[test]
fn an_ignored_kind_from_the_file_never_opens_the_breaker() {
    init();
    for _ in 0..20 {
        assert_eq!(lookup(404), Err(HttpError::Status(404)));
    }
    let m = Registry::global().breaker("kinds-ignore").metrics();
    assert_eq!((m.state, m.buffered_calls), (State::Closed, 0), "{m:?}");
    // A server error still counts.
    let _ = lookup(503);
    let _ = lookup(503);
    assert_eq!(state("kinds-ignore"), State::Open);
}

#[circuit_breaker(name = "kinds-record")]
fn fetch(error: HttpError) -> Result<(), HttpError> {
    Err(error)
}

#[test]
fn with_a_record_list_other_errors_are_successes() {
    init();
    for _ in 0..10 {
        let _ = fetch(HttpError::Timeout);
        let _ = fetch(HttpError::Status(404));
    }
    let m = Registry::global().breaker("kinds-record").metrics();
    assert_eq!(m.state, State::Closed);
    assert_eq!((m.failed_calls, m.successful_calls), (0, 4), "{m:?}");
    let _ = fetch(HttpError::Status(500));
    let _ = fetch(HttpError::Status(502));
    assert_eq!(state("kinds-record"), State::Open);
}

fn is_timeout(e: &HttpError) -> bool {
    *e == HttpError::Timeout
}

/// The code records only timeouts; the file ignores client errors: both apply.
#[circuit_breaker(name = "kinds-code", record = is_timeout)]
fn combined(error: HttpError) -> Result<(), HttpError> {
    Err(error)
}

#[test]
fn code_and_file_classification_combine() {
    init();
    let b = Registry::global().breaker("kinds-code");
    for _ in 0..3 {
        let _ = combined(HttpError::Status(404)); // the code says success; the file ignores it
    }
    assert_eq!(b.metrics().buffered_calls, 0, "the file's ignore wins");
    for _ in 0..2 {
        let _ = combined(HttpError::Status(500)); // not a timeout: a success by the code
    }
    let m = b.metrics();
    assert_eq!((m.successful_calls, m.failed_calls), (2, 0), "{m:?}");
    let _ = combined(HttpError::Timeout);
    let _ = combined(HttpError::Timeout);
    assert_eq!(b.state(), State::Open);
}

#[circuit_breaker(name = "kinds-async")]
async fn lookup_async(status: u16) -> Result<(), HttpError> {
    Err(HttpError::Status(status))
}

#[tokio::test]
async fn the_async_attribute_applies_the_files_kinds_too() {
    init();
    for _ in 0..20 {
        assert_eq!(lookup_async(400).await, Err(HttpError::Status(400)));
    }
    let breaker = Registry::global().breaker("kinds-async");
    let m = breaker.metrics();
    assert_eq!((m.state, m.buffered_calls), (State::Closed, 0), "{m:?}");
    // The calls went through the breaker: a server error is buffered as a failure, a second
    // one opens it (2 of the minimum 2), and the next call is refused by it.
    assert_eq!(lookup_async(503).await, Err(HttpError::Status(503)));
    let m = breaker.metrics();
    assert_eq!(
        (m.buffered_calls, m.failed_calls),
        (1, 1),
        "the async call went through the breaker: {m:?}"
    );
    assert_eq!(lookup_async(503).await, Err(HttpError::Status(503)));
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(lookup_async(503).await, Err(HttpError::Rejected));
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
}

#[tokio::test]
async fn call_call_sync_and_call_with_apply_the_files_kinds() {
    init();
    let b = Registry::global().breaker("kinds-api");
    for _ in 0..10 {
        let out = b.call_sync(|| Err::<(), _>(HttpError::Status(409)));
        assert!(matches!(out, Err(CallError::Inner(HttpError::Status(409)))));
        let out = b.call(async { Err::<(), _>(HttpError::Status(401)) }).await;
        assert!(matches!(out, Err(CallError::Inner(HttpError::Status(401)))));
        let code = Classifier::new().result(|v: &u16| *v == 503);
        let out = b
            .call_with(&code, async { Err::<u16, _>(HttpError::Status(403)) })
            .await;
        assert!(matches!(out, Err(CallError::Inner(_))));
    }
    let m = b.metrics();
    assert_eq!((m.state, m.buffered_calls), (State::Closed, 0), "{m:?}");
    // call_with's own classification still applies on top: an Ok(503) is a failure.
    let code = Classifier::new().result(|v: &u16| *v == 503);
    let _ = b
        .call_with(&code, async { Ok::<u16, HttpError>(503) })
        .await;
    let _ = b
        .call_with(&code, async { Ok::<u16, HttpError>(503) })
        .await;
    assert_eq!(b.state(), State::Open);
}
