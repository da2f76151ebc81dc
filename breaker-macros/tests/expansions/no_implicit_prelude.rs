//! The expansion names nothing through the prelude: this module and the ones in it have no
//! std prelude, no extern prelude and no `macro_use` prelude (`#![no_implicit_prelude]` on a
//! module does to it what it does to a crate), so only `::`-rooted paths resolve.
#![no_implicit_prelude]

mod guarded {
    use ::breaker::{circuit_breaker, CallError};

    #[circuit_breaker(name = "pass:no_implicit_prelude", fallback = "fallback", record = is_bad, key = n % 2)]
    pub(super) async fn get(n: u8) -> ::std::result::Result<u8, ::std::io::Error> {
        ::std::result::Result::Ok(n)
    }

    fn is_bad(_: &::std::io::Error) -> bool {
        true
    }

    async fn fallback(
        n: u8,
        _err: CallError<::std::io::Error>,
    ) -> ::std::result::Result<u8, ::std::io::Error> {
        ::std::result::Result::Ok(n)
    }

    #[circuit_breaker(name = "pass:no_implicit_prelude")]
    pub(super) fn get_sync(n: u8) -> ::std::io::Result<u8> {
        ::std::result::Result::Ok(n)
    }
}

#[test]
fn compiles_and_runs() {
    let rt = crate::runtime();
    ::std::assert_eq!(rt.block_on(guarded::get(1)).unwrap(), 1);
    ::std::assert_eq!(guarded::get_sync(1).unwrap(), 1);
}
