//! `?` and early `return` in the body behave as in any function: the body's block is typed by
//! the declared return type (the fake return edge), so `?` knows the error to convert into.

use std::num::ParseIntError;

use breaker::{circuit_breaker, CallNotPermitted, CallTimedOut};

#[derive(Debug)]
enum AppError {
    Parse(ParseIntError),
    Rejected,
}

impl From<ParseIntError> for AppError {
    fn from(e: ParseIntError) -> Self {
        AppError::Parse(e)
    }
}

impl From<CallNotPermitted> for AppError {
    fn from(_: CallNotPermitted) -> Self {
        AppError::Rejected
    }
}

impl From<CallTimedOut> for AppError {
    fn from(_: CallTimedOut) -> Self {
        AppError::Rejected
    }
}

#[circuit_breaker(name = "pass:question_mark")]
async fn parse_sum(a: &str, b: &str) -> Result<u32, AppError> {
    let a: u32 = a.parse()?;
    if a == 0 {
        return Ok(0);
    }
    let b: u32 = async { b.parse() }.await?;
    Ok(a + b)
}

#[circuit_breaker(name = "pass:question_mark")]
fn parse_one(a: &str) -> Result<u32, AppError> {
    Ok(a.trim().parse()?)
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(parse_sum("1", "2")).unwrap(), 3);
    assert!(matches!(
        rt.block_on(parse_sum("x", "2")),
        Err(AppError::Parse(e)) if e.to_string() == "invalid digit found in string"
    ));
    assert_eq!(parse_one(" 4 ").unwrap(), 4);
    let _ = AppError::Rejected;
}
