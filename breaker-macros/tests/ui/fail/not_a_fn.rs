use breaker::circuit_breaker;

#[circuit_breaker(name = "products")]
struct Products;

fn main() {}
