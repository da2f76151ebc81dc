//! `record`, `ignore` and `result` predicates, as paths, closures and strings.

use breaker::{circuit_breaker, CallError, CallNotPermitted, CallTimedOut};

#[derive(Debug)]
enum HttpError {
    Status(u16),
    Rejected,
}

impl From<CallNotPermitted> for HttpError {
    fn from(_: CallNotPermitted) -> Self {
        HttpError::Rejected
    }
}

impl From<CallTimedOut> for HttpError {
    fn from(_: CallTimedOut) -> Self {
        HttpError::Rejected
    }
}

struct Reply {
    status: u16,
}

fn is_server_error(e: &HttpError) -> bool {
    matches!(e, HttpError::Status(500..=599))
}

fn is_retry_later(r: &Reply) -> bool {
    r.status == 503
}

#[circuit_breaker(
    name = "pass:predicates",
    record = is_server_error,
    ignore = |e: &HttpError| matches!(e, HttpError::Status(400..=499)),
    result = is_retry_later,
)]
async fn call(status: u16) -> Result<Reply, HttpError> {
    if status >= 400 && status != 503 {
        return Err(HttpError::Status(status));
    }
    Ok(Reply { status })
}

#[circuit_breaker(
    name = "pass:predicates",
    fallback = "fallback",
    record = "is_server_error"
)]
fn call_sync(status: u16) -> Result<u16, HttpError> {
    Err(HttpError::Status(status))
}

fn fallback(status: u16, _err: CallError<HttpError>) -> Result<u16, HttpError> {
    Ok(status)
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(call(503)).unwrap().status, 503);
    assert!(matches!(
        rt.block_on(call(404)),
        Err(HttpError::Status(404))
    ));
    assert!(!matches!(rt.block_on(call(500)), Err(HttpError::Rejected)));
    assert_eq!(call_sync(500).unwrap(), 500);
}
