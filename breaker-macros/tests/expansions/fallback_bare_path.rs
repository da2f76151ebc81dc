//! `fallback` as a bare path (go-to-definition and rename work on it), and as a path to
//! another module, with a turbofish.

use breaker::{circuit_breaker, CallError};

mod fallbacks {
    use breaker::CallError;

    pub(super) fn zero<T: Default>(
        _n: u8,
        _err: CallError<std::io::Error>,
    ) -> Result<T, std::io::Error> {
        Ok(T::default())
    }
}

#[circuit_breaker(name = "pass:fallback_bare_path", fallback = fallback)]
fn get(n: u8) -> Result<u8, std::io::Error> {
    Err(std::io::Error::other(n.to_string()))
}

fn fallback(n: u8, _err: CallError<std::io::Error>) -> Result<u8, std::io::Error> {
    Ok(n + 1)
}

#[circuit_breaker(name = "pass:fallback_bare_path", fallback = "fallbacks::zero::<u32>")]
fn get_u32(n: u8) -> Result<u32, std::io::Error> {
    Err(std::io::Error::other(n.to_string()))
}

#[test]
fn compiles_and_runs() {
    assert_eq!(get(1).unwrap(), 2);
    assert_eq!(get_u32(1).unwrap(), 0);
}
