//! `#[retry]` around `#[circuit_breaker]` and `#[bulkhead]`: Retry(Breaker(Bulkhead(fn))),
//! and the one fallback outside the retry.
//!
//! ```text
//! cargo run --example retry_attribute
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use breaker::{bulkhead, circuit_breaker, retry, CallError, Registry, RetryConfig};

#[derive(Debug)]
enum QuoteError {
    /// The pricing service answered 5xx: worth another try.
    Unavailable,
    /// The request itself was wrong: asking again gets the same answer.
    BadRequest,
}

fn is_transient(e: &QuoteError) -> bool {
    !matches!(e, QuoteError::BadRequest)
}

static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

// Written in any order, the three expand once into Retry(Breaker(Bulkhead(fn))): every attempt
// takes its own breaker permit and bulkhead place, and the breaker records each attempt. A
// rejection by an OPEN breaker is not retried. The fallback, written on the breaker, runs once,
// after the last attempt. With it, `QuoteError` needs no conversions from the guards' errors.
#[retry(name = "pricing", retry = is_transient)]
#[circuit_breaker(name = "pricing", fallback = "list_price")]
#[bulkhead(name = "pricing")]
async fn quote(sku: &str) -> Result<u32, QuoteError> {
    if sku.is_empty() {
        return Err(QuoteError::BadRequest);
    }
    let attempt = ATTEMPTS.fetch_add(1, Ordering::SeqCst) + 1;
    println!("attempt {attempt} for {sku}");
    Err(QuoteError::Unavailable)
}

async fn list_price(sku: &str, err: CallError<QuoteError>) -> Result<u32, QuoteError> {
    println!("fallback for {sku} after {err:?}");
    match err {
        CallError::Inner(QuoteError::BadRequest) => Err(QuoteError::BadRequest),
        _ => Ok(100),
    }
}

#[tokio::main]
async fn main() {
    let retry = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(10))
        .build()
        .unwrap();
    let registry = Registry::builder().retry_instance("pricing", retry).build();
    Registry::install_global(registry).unwrap();

    assert_eq!(quote("sku-7").await.unwrap(), 100);
    // Three attempts, then the fallback, once.
    assert_eq!(ATTEMPTS.load(Ordering::SeqCst), 3);
    // Not retried: `is_transient` says asking again gets the same answer.
    assert!(matches!(quote("").await, Err(QuoteError::BadRequest)));
}
