//! Any alias of `Result` counts; `io::Error` holds a rejection and a timeout
//! (`From<CallNotPermitted>`, `From<CallTimedOut>`).

use std::io;

use breaker::circuit_breaker;

type ApiResult<T> = Result<T, io::Error>;

#[circuit_breaker(name = "pass:io_result_alias")]
fn read(n: u8) -> io::Result<u8> {
    Ok(n)
}

#[circuit_breaker(name = "pass:io_result_alias")]
async fn fetch(n: u8) -> ApiResult<u8> {
    Ok(n)
}

#[test]
fn compiles_and_runs() {
    assert_eq!(read(1).unwrap(), 1);
    let rt = crate::runtime();
    assert_eq!(rt.block_on(fetch(2)).unwrap(), 2);
}
