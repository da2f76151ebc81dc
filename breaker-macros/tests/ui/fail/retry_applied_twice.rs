// A function has one retry; a second `#[retry]` is reported where it is written.
use breaker::{circuit_breaker, retry};

#[retry(name = "products")]
#[circuit_breaker(name = "products")]
#[retry(name = "orders")]
fn get(id: u32) -> std::io::Result<u32> {
    Ok(id)
}

fn main() {}
