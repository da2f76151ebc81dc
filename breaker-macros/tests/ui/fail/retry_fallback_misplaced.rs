// One fallback, outside every guard: on `#[circuit_breaker]` when it is there, else on
// `#[retry]`.
use breaker::{bulkhead, circuit_breaker, retry, CallError};

#[retry(name = "products", fallback = "fallback")]
#[circuit_breaker(name = "products")]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = "products", fallback = "fallback")]
#[retry(name = "products")]
fn put(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

#[bulkhead(name = "products", fallback = "fallback")]
#[circuit_breaker(name = "products")]
#[retry(name = "products")]
fn post(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn fallback(_id: u32, _err: CallError<std::io::Error>) -> std::io::Result<u32> {
    Ok(0)
}

fn main() {}
