//! Type and const generics with `where` clauses, on async and plain fns.

use std::fmt::Display;

use breaker::{circuit_breaker, CallError, CallNotPermitted, CallTimedOut};

#[derive(Debug)]
struct GenericError<T>(Option<T>);

impl<T> From<CallNotPermitted> for GenericError<T> {
    fn from(_: CallNotPermitted) -> Self {
        GenericError(None)
    }
}

impl<T> From<CallTimedOut> for GenericError<T> {
    fn from(_: CallTimedOut) -> Self {
        GenericError(None)
    }
}

// The error type must be 'static (the breaker matches it against configured error kinds), so
// a generic error type carries that bound.
#[circuit_breaker(name = "pass:generics_where")]
async fn render<T, const N: usize>(items: [T; N]) -> Result<String, GenericError<T>>
where
    T: Display + Send + 'static,
{
    Ok(items
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(","))
}

#[circuit_breaker(name = "pass:generics_where", fallback = "fallback")]
fn first<T: Clone, E>(items: &[T], err: E) -> Result<T, E>
where
    E: std::fmt::Debug + Clone + 'static,
{
    items.first().cloned().ok_or_else(|| err.clone())
}

fn fallback<T: Clone, E>(items: &[T], err: E, _call: CallError<E>) -> Result<T, E>
where
    E: std::fmt::Debug + Clone + 'static,
{
    items.last().cloned().ok_or(err)
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(render([1, 2, 3])).unwrap(), "1,2,3");
    assert_eq!(first(&[1, 2], "none").unwrap(), 1);
    assert!(first::<u8, _>(&[], "none").is_err());
}
