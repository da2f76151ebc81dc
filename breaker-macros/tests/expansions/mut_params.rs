//! `mut` parameters are mutated in place by the body; the fallback gets them as they were left.
//! Without a fallback, the body may consume its arguments.

use breaker::{circuit_breaker, CallError};

#[circuit_breaker(name = "pass:mut_params", fallback = "fallback")]
fn push_all(mut items: Vec<u8>, mut extra: u8) -> Result<Vec<u8>, std::io::Error> {
    extra += 1;
    items.push(extra);
    Err(std::io::Error::other("down"))
}

fn fallback(
    items: Vec<u8>,
    extra: u8,
    _err: CallError<std::io::Error>,
) -> Result<Vec<u8>, std::io::Error> {
    let mut items = items;
    items.push(extra * 10);
    Ok(items)
}

#[circuit_breaker(name = "pass:mut_params")]
async fn consume(items: Vec<String>, mut sep: String) -> Result<String, std::io::Error> {
    sep.push(' ');
    Ok(items.join(&sep))
}

#[test]
fn compiles_and_runs() {
    assert_eq!(push_all(vec![1], 1).unwrap(), [1, 2, 20]);
    let rt = crate::runtime();
    assert_eq!(
        rt.block_on(consume(vec!["a".into(), "b".into()], ",".into()))
            .unwrap(),
        "a, b"
    );
}
