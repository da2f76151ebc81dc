//! The attribute's breaker describes its function's errors by their `Display` where the error
//! type has one (found by the expansion), for the listeners that asked for error texts: sync
//! and async, an `io::Result<impl Trait>` alias, and an error type without `Display`, which is
//! named by its type alone.

use std::fmt;
use std::sync::{Arc, Mutex};

use breaker::{circuit_breaker, CallNotPermitted, CallTimedOut, ErrorText, Registry};

use crate::init;

#[derive(Debug)]
enum BureauError {
    Down(u16),
    Rejected,
}

impl fmt::Display for BureauError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BureauError::Down(status) => write!(f, "the bureau answered {status}"),
            BureauError::Rejected => f.write_str("rejected"),
        }
    }
}

impl From<CallNotPermitted> for BureauError {
    fn from(_: CallNotPermitted) -> Self {
        BureauError::Rejected
    }
}

impl From<CallTimedOut> for BureauError {
    fn from(_: CallTimedOut) -> Self {
        BureauError::Rejected
    }
}

/// No `Display`.
#[derive(Debug)]
struct Silent;

impl From<CallNotPermitted> for Silent {
    fn from(_: CallNotPermitted) -> Self {
        Silent
    }
}

impl From<CallTimedOut> for Silent {
    fn from(_: CallTimedOut) -> Self {
        Silent
    }
}

#[circuit_breaker(name = "texts:sync")]
fn score(status: u16) -> Result<u32, BureauError> {
    Err(BureauError::Down(status))
}

#[circuit_breaker(name = "texts:async")]
async fn report(status: u16) -> Result<u32, BureauError> {
    Err(BureauError::Down(status))
}

#[circuit_breaker(name = "texts:silent")]
fn silent() -> Result<u32, Silent> {
    Err(Silent)
}

#[circuit_breaker(name = "texts:impl")]
fn lines() -> std::io::Result<impl Iterator<Item = u32>> {
    Err::<std::iter::Empty<u32>, _>(std::io::Error::other("no lines"))
}

#[circuit_breaker(name = "texts:written")]
fn digits() -> Result<impl Iterator<Item = u32>, BureauError> {
    Err::<std::iter::Empty<u32>, _>(BureauError::Down(418))
}

/// The texts `name`'s breaker publishes while `run` runs.
fn texts_of(name: &str, run: impl FnOnce()) -> Vec<ErrorText> {
    init();
    let texts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&texts);
    let _subscription = Registry::global()
        .breaker(name)
        .subscribe_with_error_texts(move |e| {
            if let Some(error) = e.error() {
                sink.lock().unwrap().push(error.clone());
            }
        });
    run();
    let texts = texts.lock().unwrap().clone();
    texts
}

#[test]
fn a_display_error_is_described_by_its_text() {
    let texts = texts_of("texts:sync", || {
        let _ = score(503);
    });
    let bureau = std::any::type_name::<BureauError>();
    assert_eq!(
        texts,
        [ErrorText::new(bureau, Some("the bureau answered 503"))]
    );

    let texts = texts_of("texts:async", || {
        let _ = futures_executor_block_on(report(500));
    });
    assert_eq!(
        texts,
        [ErrorText::new(bureau, Some("the bureau answered 500"))]
    );

    // `Result<impl Trait, E>` written out: its `E` is still found.
    let texts = texts_of("texts:written", || {
        let _ = digits().map(|d| d.count());
    });
    assert_eq!(
        texts,
        [ErrorText::new(bureau, Some("the bureau answered 418"))]
    );
}

#[test]
fn an_error_without_display_is_named_by_its_type() {
    let texts = texts_of("texts:silent", || {
        let _ = silent();
    });
    assert_eq!(texts.len(), 1);
    assert!(texts[0].type_name().ends_with("Silent"), "{}", texts[0]);
    assert_eq!(texts[0].text(), None);
    // An alias with `impl Trait` names no error type the expansion can see; `io::Error` is one
    // the breaker knows on its own.
    let texts = texts_of("texts:impl", || {
        let _ = lines().map(|l| l.count());
    });
    assert_eq!(
        texts,
        [ErrorText::new("std::io::error::Error", Some("no lines"))]
    );
}

/// Polls a future that never waits (the attribute's call on a breaker with no timeout).
fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
