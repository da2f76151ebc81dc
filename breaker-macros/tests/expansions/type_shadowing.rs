//! The body keeps its own scope: types and values named like the expansion's locals and like
//! std's items resolve to the user's (tracing #3306).

use breaker::circuit_breaker;

#[allow(dead_code)]
struct Ok;
#[allow(dead_code)]
struct Err;
#[allow(dead_code)]
struct Option;

type Result<T> = std::result::Result<T, std::io::Error>;

#[circuit_breaker(name = "pass:type_shadowing")]
fn get(n: u32) -> Result<u32> {
    #[allow(non_snake_case)]
    let __breaker_out = n;
    std::result::Result::Ok(__breaker_out)
}

#[test]
fn compiles_and_runs() {
    assert_eq!(get(4).unwrap(), 4);
}
