// Without a fallback, a refused call converts into the function's error type.
use breaker::bulkhead;

#[derive(Debug)]
struct ProductError;

#[bulkhead(name = "products")]
async fn get(id: u32) -> Result<u32, ProductError> {
    Ok(id)
}

fn main() {}
