// Every argument mistake is reported at once, each at its own token.
use breaker::circuit_breaker;

#[circuit_breaker(name = "", fallback = 1, retries = 3, record = "not a path", fallback = "fb")]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
