// The user's own lints still see their code: an unused guarded fn is still dead code.
#![deny(dead_code)]

use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
fn never_called(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
