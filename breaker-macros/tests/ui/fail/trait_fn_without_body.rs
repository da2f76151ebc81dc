use breaker::circuit_breaker;

trait Products {
    #[circuit_breaker(name = "products")]
    fn get(&self, id: u32) -> Result<u32, std::io::Error>;
}

fn main() {}
