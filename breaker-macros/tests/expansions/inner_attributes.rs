//! Inner attributes of the body move onto the fn, where they still apply.
#![deny(unused_variables)]

use breaker::circuit_breaker;

#[circuit_breaker(name = "pass:inner_attributes")]
fn lenient(x: u32) -> Result<u32, std::io::Error> {
    #![allow(unused_variables)]
    let unused = x;
    Ok(1)
}

#[test]
fn compiles_and_runs() {
    assert_eq!(lenient(3).unwrap(), 1);
}
