//! `#[circuit_breaker]` under a renamed dependency
//! (`renamed = { package = "resilience-breaker" }`), without `crate = ".."`: the expansion
//! names `::renamed`, found in this package's Cargo.toml.

use renamed::{circuit_breaker, CallError};

/// A guarded async fn with a fallback.
#[circuit_breaker(name = "rename-check:async", fallback = "fallback")]
pub async fn fetch(n: u8) -> std::io::Result<u8> {
    if n == 0 {
        return Err(std::io::Error::other("zero"));
    }
    Ok(n)
}

async fn fallback(n: u8, err: CallError<std::io::Error>) -> std::io::Result<u8> {
    assert!(matches!(err, CallError::Inner(_)));
    Ok(n + 100)
}

/// A guarded plain fn with one breaker per key.
#[renamed::circuit_breaker(name = "rename-check:sync", key = n % 2)]
pub fn parity(n: u8) -> std::io::Result<u8> {
    Ok(n % 2)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_renamed_dependency_needs_no_crate_option() {
        assert_eq!(super::fetch(7).await.unwrap(), 7);
        assert_eq!(super::fetch(0).await.unwrap(), 100);
        assert_eq!(super::parity(3).unwrap(), 1);
        let registry = renamed::Registry::global();
        assert!(registry.find("rename-check:async").is_some());
    }
}
