use breaker::circuit_breaker;

fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

#[circuit_breaker(name = "products", record = is_timeout, ignore = is_timeout)]
fn get(id: u32) -> Result<u32, std::io::Error> {
    Ok(id)
}

fn main() {}
