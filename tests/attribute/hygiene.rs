//! The expansion only uses absolute paths: it compiles, and runs, under
//! `#![no_implicit_prelude]`, next to user items named `Result`, `Ok`, `Err` and `Option`,
//! with `std` imported as `breaker`, and with the crate renamed (`crate = "..."`; the binary's
//! `main.rs` declares `extern crate breaker as renamed`, which only the crate root can).

/// A module without the prelude: nothing the expansion names may come from it.
#[no_implicit_prelude]
mod no_prelude {
    use ::renamed::{circuit_breaker, CallError};

    #[circuit_breaker(
        name = "hygiene:no_prelude",
        crate = "::renamed",
        fallback = "fallback"
    )]
    pub(crate) async fn fetch(n: u8) -> ::std::result::Result<u8, ::std::io::Error> {
        if n == 0 {
            return ::std::result::Result::Err(::std::io::Error::other("zero"));
        }
        ::std::result::Result::Ok(n)
    }

    async fn fallback(
        n: u8,
        err: CallError<::std::io::Error>,
    ) -> ::std::result::Result<u8, ::std::io::Error> {
        ::std::assert!(::std::matches!(err, CallError::Inner(_)));
        ::std::result::Result::Ok(n + 100)
    }

    #[circuit_breaker(name = "hygiene:no_prelude_sync", crate = "::renamed", key = n % 2)]
    pub(crate) fn parity(n: u8) -> ::std::io::Result<u8> {
        ::std::result::Result::Ok(n % 2)
    }
}

/// User items with the names of std's, and `std` imported as `breaker`.
mod shadowing {
    #![allow(dead_code)]

    use renamed::circuit_breaker;
    #[allow(unused_imports)]
    use std as breaker;

    pub(crate) struct Result;
    pub(crate) struct Ok;
    pub(crate) struct Err;
    pub(crate) struct Option;
    pub(crate) struct CallSite;
    pub(crate) struct Classifier;

    #[circuit_breaker(name = "hygiene:shadowing", crate = "renamed", fallback = "fallback")]
    pub(crate) fn get(n: u8) -> std::result::Result<u8, std::io::Error> {
        let _shadowed = (Result, Ok, Err, Option, CallSite, Classifier);
        std::result::Result::Err(std::io::Error::other(n.to_string()))
    }

    fn fallback(
        n: u8,
        _err: renamed::CallError<std::io::Error>,
    ) -> std::result::Result<u8, std::io::Error> {
        std::result::Result::Ok(n * 2)
    }

    // The default `crate` path is `::breaker`, which `use std as breaker;` cannot shadow.
    #[renamed::circuit_breaker(name = "hygiene:default_path")]
    pub(crate) fn default_path(n: u8) -> std::io::Result<u8> {
        std::result::Result::Ok(n)
    }
}

#[tokio::test]
async fn expansion_without_prelude_runs() {
    crate::init();
    assert_eq!(no_prelude::fetch(1).await.unwrap(), 1);
    assert_eq!(no_prelude::fetch(0).await.unwrap(), 100);
    assert_eq!(no_prelude::parity(3).unwrap(), 1);
    let breaker = renamed::Registry::global().keyed("hygiene:no_prelude_sync");
    assert_eq!(breaker.get(&1).metrics().buffered_calls, 1);
}

#[test]
fn expansion_next_to_shadowing_items_runs() {
    crate::init();
    assert_eq!(shadowing::get(4).unwrap(), 8);
    assert_eq!(shadowing::default_path(4).unwrap(), 4);
    let b = renamed::Registry::global().breaker("hygiene:shadowing");
    assert_eq!(b.metrics().failed_calls, 1);
}
