//! The expansion adds no warning of its own to code that denies them all. CI lints the tests
//! (`cargo clippy --all-targets -- -D warnings`), so this module is linted on every run.
//! `missing_docs` is denied too: the module is `pub` in the crate root (`main.rs`), so its
//! `pub` fns are reachable and a missing doc on them, or on an item the expansion adds, would
//! be an error.
#![deny(warnings, clippy::all, missing_docs)]

use breaker::{circuit_breaker, CallError};

/// A guarded function.
#[circuit_breaker(name = "pass:clippy_clean", fallback = "fallback", ignore = is_not_found)]
pub async fn get(id: u32) -> Result<u32, std::io::Error> {
    if id == 0 {
        return Err(std::io::Error::other("zero"));
    }
    Ok(id)
}

fn is_not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

async fn fallback(id: u32, _err: CallError<std::io::Error>) -> Result<u32, std::io::Error> {
    Ok(id)
}

/// A guarded plain function.
#[circuit_breaker(name = "pass:clippy_clean")]
pub fn get_sync(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(get(1)).unwrap(), 1);
    assert_eq!(get_sync(1).unwrap(), 1);
}
