// Numbers are configuration under the breaker's name, never attribute options.
use breaker::circuit_breaker;

#[circuit_breaker(name = "products", timeout = "2500ms")]
async fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
