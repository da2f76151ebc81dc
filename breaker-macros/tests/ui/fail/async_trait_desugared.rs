// What `#[async_trait]` on an impl turns an `async fn` into, written out by hand: the attribute
// on the method sees this shape, because the impl's attribute expands first.
use std::future::Future;
use std::pin::Pin;

use breaker::circuit_breaker;

struct Products;

impl Products {
    #[circuit_breaker(name = "products")]
    fn get<'life0, 'async_trait>(
        &'life0 self,
        id: u32,
    ) -> Pin<Box<dyn Future<Output = Result<u32, std::io::Error>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { Ok(id) })
    }
}

fn main() {}
