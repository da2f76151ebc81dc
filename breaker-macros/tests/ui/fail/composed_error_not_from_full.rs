// With both attributes and no fallback, the error type needs the bulkhead's conversion too.
use breaker::{bulkhead, circuit_breaker, CallNotPermitted, CallTimedOut};

#[derive(Debug)]
struct ProductError;

impl From<CallNotPermitted> for ProductError {
    fn from(_: CallNotPermitted) -> Self {
        ProductError
    }
}

impl From<CallTimedOut> for ProductError {
    fn from(_: CallTimedOut) -> Self {
        ProductError
    }
}

#[bulkhead(name = "products")]
#[circuit_breaker(name = "products")]
async fn get(id: u32) -> Result<u32, ProductError> {
    Ok(id)
}

fn main() {}
