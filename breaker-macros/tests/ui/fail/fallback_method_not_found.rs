use breaker::{circuit_breaker, CallError};

struct Products;

impl Products {
    #[circuit_breaker(name = "products", fallback = "fallbak")]
    async fn get(&self, id: u32) -> Result<u32, std::io::Error> {
        Ok(id)
    }

    async fn fallback(&self, id: u32, _: CallError<std::io::Error>) -> Result<u32, std::io::Error> {
        Ok(id)
    }
}

fn main() {}
