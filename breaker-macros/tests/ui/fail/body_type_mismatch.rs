// Characterization: a type error in the body stays in the body, and rustc's note points at the
// declared return type (the fake return edge), as it would without the attribute.
use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
async fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(format!("{id}"))
}

fn main() {}
