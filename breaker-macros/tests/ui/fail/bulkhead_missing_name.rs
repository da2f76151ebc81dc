// The attribute taken over reports its own mistakes, where it is written.
use breaker::{bulkhead, circuit_breaker};

#[circuit_breaker(name = "products")]
#[bulkhead]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(fallback = "fb")]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
