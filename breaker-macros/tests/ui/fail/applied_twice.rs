use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
#[circuit_breaker(name = "orders")]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
