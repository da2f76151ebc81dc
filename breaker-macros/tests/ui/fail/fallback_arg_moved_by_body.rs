use breaker::{circuit_breaker, CallError};

#[circuit_breaker(name = "products", fallback = "fallback")]
fn get(id: String) -> Result<String, std::io::Error> {
    Ok(id)
}

fn fallback(id: String, _: CallError<std::io::Error>) -> Result<String, std::io::Error> {
    Ok(id)
}

fn main() {}
