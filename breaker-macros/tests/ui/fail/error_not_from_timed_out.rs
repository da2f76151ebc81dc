// A rejection and a timeout are different errors: holding one is not enough.
use breaker::{circuit_breaker, CallNotPermitted};

#[derive(Debug)]
struct ProductError;

impl From<CallNotPermitted> for ProductError {
    fn from(_: CallNotPermitted) -> Self {
        ProductError
    }
}

#[circuit_breaker(name = "products")]
async fn get(id: u32) -> Result<u32, ProductError> {
    Ok(id)
}

fn main() {}
