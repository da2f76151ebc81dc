use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
fn get(id: u32) -> Option<u32> {
    Some(id)
}

fn main() {}
