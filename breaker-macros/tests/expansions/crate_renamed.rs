//! `crate = "..."` for a renamed or re-exported `breaker`; nothing in the expansion is
//! reachable through a path the user can shadow (tokio's `macros_rename_test`).

// In a module, an `extern crate` item is an item of that module (at a crate root it would
// also join the extern prelude): `pub(crate)` lets `reexport` re-export it.
pub(crate) extern crate breaker as cb;

#[allow(unused_imports)]
use std as breaker;

mod reexport {
    pub(crate) use super::cb as inner;
}

#[cb::circuit_breaker(name = "pass:crate_renamed", crate = "cb", fallback = "fallback")]
fn get(n: u8) -> Result<u8, std::io::Error> {
    Ok(n)
}

fn fallback(n: u8, _err: cb::CallError<std::io::Error>) -> Result<u8, std::io::Error> {
    Ok(n)
}

#[cb::circuit_breaker(name = "pass:crate_renamed", crate = crate::crate_renamed::reexport::inner)]
async fn fetch(n: u8) -> Result<u8, std::io::Error> {
    Ok(n)
}

#[test]
fn compiles_and_runs() {
    assert_eq!(get(1).unwrap(), 1);
    let rt = crate::runtime();
    assert_eq!(rt.block_on(fetch(2)).unwrap(), 2);
}
