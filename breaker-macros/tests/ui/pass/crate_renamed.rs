// `crate = "..."` for a renamed or re-exported `breaker`; nothing in the expansion is
// reachable through a path the user can shadow (tokio's `macros_rename_test`).
extern crate breaker as cb;

#[allow(unused_imports)]
use std as breaker;

mod reexport {
    pub(crate) use cb as inner;
}

#[cb::circuit_breaker(name = "pass:crate_renamed", crate = "cb", fallback = "fallback")]
fn get(n: u8) -> Result<u8, std::io::Error> {
    Ok(n)
}

fn fallback(n: u8, _err: cb::CallError<std::io::Error>) -> Result<u8, std::io::Error> {
    Ok(n)
}

#[cb::circuit_breaker(name = "pass:crate_renamed", crate = crate::reexport::inner)]
async fn fetch(n: u8) -> Result<u8, std::io::Error> {
    Ok(n)
}

fn main() {
    assert_eq!(get(1).unwrap(), 1);
    let _ = fetch(2);
}
