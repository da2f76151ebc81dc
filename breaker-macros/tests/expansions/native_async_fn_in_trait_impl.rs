//! An async fn in a trait impl and a guarded default method in the trait itself.

use breaker::{circuit_breaker, CallError};

trait ProductClient {
    async fn get(&self, id: u32) -> Result<String, std::io::Error>;

    // A default method with a body can be guarded in the trait itself.
    #[circuit_breaker(name = "pass:trait_default")]
    fn ping(&self) -> Result<(), std::io::Error> {
        Ok(())
    }
}

struct Http;

impl ProductClient for Http {
    #[circuit_breaker(name = "pass:native_async_fn_in_trait", fallback = "fallback")]
    async fn get(&self, id: u32) -> Result<String, std::io::Error> {
        Err(std::io::Error::other(format!("{id} down")))
    }
}

impl Http {
    async fn fallback(
        &self,
        id: u32,
        _err: CallError<std::io::Error>,
    ) -> Result<String, std::io::Error> {
        Ok(format!("cached {id}"))
    }
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    assert_eq!(rt.block_on(Http.get(3)).unwrap(), "cached 3");
    Http.ping().unwrap();
}
