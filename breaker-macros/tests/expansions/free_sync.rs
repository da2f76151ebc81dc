//! A free plain fn with a fallback that gets the body's error as `CallError::Inner`.

use breaker::{circuit_breaker, CallError};

#[derive(Debug, PartialEq)]
struct ProductError;

#[circuit_breaker(name = "pass:free_sync", fallback = "fallback")]
fn get_product(id: u32) -> Result<String, ProductError> {
    if id == 0 {
        return Err(ProductError);
    }
    Ok(format!("product {id}"))
}

fn fallback(id: u32, err: CallError<ProductError>) -> Result<String, ProductError> {
    assert!(matches!(err, CallError::Inner(ProductError)));
    Ok(format!("fallback {id}"))
}

#[test]
fn compiles_and_runs() {
    assert_eq!(get_product(7).unwrap(), "product 7");
    assert_eq!(get_product(0).unwrap(), "fallback 0");
}
