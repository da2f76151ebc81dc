use breaker::circuit_breaker;

#[circuit_breaker(name = productService)]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
