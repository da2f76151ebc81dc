//! A `&mut self` method with a `&self` fallback: the body's unique borrow ends before the
//! fallback runs.

use breaker::{circuit_breaker, CallError};

struct Counter {
    calls: u32,
}

impl Counter {
    #[circuit_breaker(name = "pass:method_mut_self", fallback = "fallback")]
    fn bump(&mut self, by: u32) -> Result<u32, std::io::Error> {
        self.calls += by;
        if self.calls > 2 {
            return Err(std::io::Error::other("too many"));
        }
        Ok(self.calls)
    }

    fn fallback(&self, by: u32, _err: CallError<std::io::Error>) -> Result<u32, std::io::Error> {
        Ok(self.calls * 100 + by)
    }

    #[circuit_breaker(name = "pass:method_mut_self_async", fallback = "fallback_async")]
    async fn bump_async(&mut self, by: u32) -> Result<u32, std::io::Error> {
        self.calls += by;
        Err(std::io::Error::other("down"))
    }

    async fn fallback_async(
        &mut self,
        by: u32,
        _err: CallError<std::io::Error>,
    ) -> Result<u32, std::io::Error> {
        self.calls += by;
        Ok(self.calls)
    }
}

#[test]
fn compiles_and_runs() {
    let mut c = Counter { calls: 0 };
    assert_eq!(c.bump(1).unwrap(), 1);
    assert_eq!(c.bump(2).unwrap(), 302);
    let rt = crate::runtime();
    assert_eq!(rt.block_on(c.bump_async(1)).unwrap(), 5);
}
