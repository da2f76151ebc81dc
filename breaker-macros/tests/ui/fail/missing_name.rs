use breaker::circuit_breaker;

#[circuit_breaker(fallback = "fallback")]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
