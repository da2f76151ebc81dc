//! `self: Arc<Self>`, with fallbacks named bare (the method on `Self`) and by path.

use std::sync::Arc;

use breaker::{circuit_breaker, CallError};

struct Service {
    name: String,
}

impl Service {
    #[circuit_breaker(name = "pass:method_arc_self", fallback = "fallback")]
    async fn call(self: Arc<Self>, n: u8) -> Result<String, std::io::Error> {
        let _ = n;
        Err(std::io::Error::other(self.name.clone()))
    }

    async fn fallback(
        self: Arc<Self>,
        n: u8,
        err: CallError<std::io::Error>,
    ) -> Result<String, std::io::Error> {
        Ok(format!("{} {n} {}", self.name, err))
    }

    #[circuit_breaker(name = "pass:method_arc_self", fallback = "Self::by_path")]
    fn call_sync(self: &Arc<Self>, n: u8) -> Result<String, std::io::Error> {
        let _ = n;
        Err(std::io::Error::other("down"))
    }

    fn by_path(
        this: &Arc<Self>,
        n: u8,
        _err: CallError<std::io::Error>,
    ) -> Result<String, std::io::Error> {
        Ok(format!("{} by path {n}", this.name))
    }
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    let svc = Arc::new(Service { name: "svc".into() });
    assert_eq!(rt.block_on(svc.clone().call(1)).unwrap(), "svc 1 svc");
    assert_eq!(svc.call_sync(2).unwrap(), "svc by path 2");
}
