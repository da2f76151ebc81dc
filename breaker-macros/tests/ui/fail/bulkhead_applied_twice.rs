// One function, one bulkhead; also when a `#[circuit_breaker]` is between the two.
use breaker::{bulkhead, circuit_breaker};

#[bulkhead(name = "products")]
#[bulkhead(name = "orders")]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

#[bulkhead(name = "products")]
#[circuit_breaker(name = "products")]
#[bulkhead(name = "orders")]
fn put(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
