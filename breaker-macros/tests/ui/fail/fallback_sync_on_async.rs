use breaker::{circuit_breaker, CallError};

#[circuit_breaker(name = "products", fallback = "fallback")]
async fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn fallback(id: u32, _: CallError<std::io::Error>) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
