use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
fn ping() {}

fn main() {}
