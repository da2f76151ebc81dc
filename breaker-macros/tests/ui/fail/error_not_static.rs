// The breaker matches a call's error against the configured error kinds (`record-exceptions`,
// `ignore-exceptions`) by its type, which needs the error type to be 'static: a generic error
// type without that bound is refused at the return type, with rustc's hint to add `'static`.
// An error type that borrows from an argument is refused where the body returns it (rustc's
// wording; characterised here).
use breaker::{circuit_breaker, CallNotPermitted, CallTimedOut};

#[circuit_breaker(name = "fail:error_not_static", fallback = "fallback")]
fn first<E: Default>() -> Result<u32, E> {
    Err(E::default())
}

fn fallback<E: Default>(_call: breaker::CallError<E>) -> Result<u32, E> {
    Err(E::default())
}

#[derive(Debug)]
struct Borrowed<'a>(&'a str);

impl From<CallNotPermitted> for Borrowed<'_> {
    fn from(_: CallNotPermitted) -> Self {
        Borrowed("rejected")
    }
}

impl From<CallTimedOut> for Borrowed<'_> {
    fn from(_: CallTimedOut) -> Self {
        Borrowed("timed out")
    }
}

#[circuit_breaker(name = "fail:error_not_static")]
fn borrowed(text: &str) -> Result<u32, Borrowed<'_>> {
    Err(Borrowed(text))
}

fn main() {}
