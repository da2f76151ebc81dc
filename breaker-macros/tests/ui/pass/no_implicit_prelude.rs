// The expansion names nothing through the prelude.
#![no_implicit_prelude]

extern crate breaker;
extern crate std;

mod guarded {
    use ::breaker::{circuit_breaker, CallError};

    #[circuit_breaker(name = "pass:no_implicit_prelude", fallback = "fallback", record = is_bad, key = n % 2)]
    pub async fn get(n: u8) -> ::std::result::Result<u8, ::std::io::Error> {
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
    pub fn get_sync(n: u8) -> ::std::io::Result<u8> {
        ::std::result::Result::Ok(n)
    }
}

fn main() {
    let _ = guarded::get(1);
    let _ = guarded::get_sync(1);
}
