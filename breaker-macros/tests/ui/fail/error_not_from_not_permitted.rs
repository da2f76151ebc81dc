use breaker::circuit_breaker;

#[derive(Debug)]
struct ProductError;

#[circuit_breaker(name = "products")]
async fn get(id: u32) -> Result<u32, ProductError> {
    Ok(id)
}

fn main() {}

// Both conversions are missing: one error for each, whose `help:` line names the one to add.
