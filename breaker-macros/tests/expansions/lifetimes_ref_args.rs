//! Named lifetimes and borrowed arguments in the return type, on a method and a free async fn.

use breaker::{circuit_breaker, CallError};

struct Parser<'s> {
    source: &'s str,
}

impl<'s> Parser<'s> {
    #[circuit_breaker(name = "pass:lifetimes", fallback = "whole")]
    fn word<'a>(&'a self, index: usize, sep: &str) -> Result<&'s str, std::io::Error> {
        self.source
            .split(sep)
            .nth(index)
            .ok_or_else(|| std::io::Error::other("no such word"))
    }

    fn whole(
        &self,
        _index: usize,
        _sep: &str,
        _err: CallError<std::io::Error>,
    ) -> Result<&'s str, std::io::Error> {
        Ok(self.source)
    }
}

#[circuit_breaker(name = "pass:lifetimes", fallback = "first_or_empty")]
async fn longest<'a>(a: &'a str, b: &'a str) -> Result<&'a str, std::io::Error> {
    Ok(if a.len() >= b.len() { a } else { b })
}

async fn first_or_empty<'a>(
    a: &'a str,
    _b: &'a str,
    _err: CallError<std::io::Error>,
) -> Result<&'a str, std::io::Error> {
    Ok(a)
}

#[test]
fn compiles_and_runs() {
    let p = Parser { source: "a b c" };
    assert_eq!(p.word(1, " ").unwrap(), "b");
    assert_eq!(p.word(9, " ").unwrap(), "a b c");
    let rt = crate::runtime();
    assert_eq!(rt.block_on(longest("ab", "c")).unwrap(), "ab");
}
