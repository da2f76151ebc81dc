//! A free async fn with an async fallback (Resilience4j's `productService` example).

use breaker::{circuit_breaker, CallError};

#[derive(Debug)]
struct ProductError;

#[circuit_breaker(name = "productService", fallback = "fallback")]
async fn invoke_product_api(id: &str) -> Result<String, ProductError> {
    Ok(format!("product {id}"))
}

async fn fallback(id: &str, _err: CallError<ProductError>) -> Result<String, ProductError> {
    Ok(format!("not able to invoke product service for {id}"))
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(invoke_product_api("7")).unwrap(), "product 7");
}
