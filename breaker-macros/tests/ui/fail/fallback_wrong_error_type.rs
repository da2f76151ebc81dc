use breaker::circuit_breaker;

#[circuit_breaker(name = "products", fallback = "fallback")]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn fallback(id: u32, _: std::io::Error) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
