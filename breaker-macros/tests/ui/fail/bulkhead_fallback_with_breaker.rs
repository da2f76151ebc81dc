// With both attributes there is one fallback, on `#[circuit_breaker]`, in either order.
use breaker::{bulkhead, circuit_breaker, CallError};

#[circuit_breaker(name = "products")]
#[bulkhead(name = "products", fallback = "fallback")]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = "products", fallback = "fallback")]
#[circuit_breaker(name = "products", fallback = "fallback")]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn fallback(_id: u32, _err: CallError<std::io::Error>) -> std::io::Result<u32> {
    Ok(0)
}

fn main() {}
