use breaker::{circuit_breaker, CallError};

#[circuit_breaker(name = "products", fallback = "fallback")]
fn get((id, _verbose): (u32, bool)) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn fallback(pair: (u32, bool), _: CallError<std::io::Error>) -> Result<u32, std::io::Error> {
    Ok(pair.0)
}

fn main() {}
