//! `impl Trait` in argument position, on async and plain fns.

use breaker::{circuit_breaker, CallError};

#[circuit_breaker(name = "pass:impl_trait_arg", fallback = "fallback")]
async fn greet(
    who: impl AsRef<str>,
    times: impl Into<usize> + Copy,
) -> Result<String, std::io::Error> {
    Ok(who.as_ref().repeat(times.into()))
}

async fn fallback(
    _who: impl AsRef<str>,
    _times: impl Into<usize> + Copy,
    _err: CallError<std::io::Error>,
) -> Result<String, std::io::Error> {
    Ok(String::new())
}

#[circuit_breaker(name = "pass:impl_trait_arg")]
fn total(values: impl IntoIterator<Item = u32>) -> Result<u32, std::io::Error> {
    Ok(values.into_iter().sum())
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(greet("ab", 2u8)).unwrap(), "abab");
    assert_eq!(total(vec![1, 2, 3]).unwrap(), 6);
}
