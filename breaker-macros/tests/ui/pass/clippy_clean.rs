// The expansion adds no warning of its own to a crate that denies them all.
#![deny(warnings, clippy::all, missing_docs)]
//! A crate with strict lints.

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

fn main() {
    let _ = get(1);
    let _ = get_sync(1);
}
