//! `impl Trait` inside the return type: erased to `_` where the expansion names the type.

use std::fmt::Display;

use breaker::circuit_breaker;

#[circuit_breaker(name = "pass:impl_trait_return")]
fn evens(limit: u32) -> Result<impl Iterator<Item = u32>, std::io::Error> {
    Ok((0..limit).filter(|n| n % 2 == 0))
}

#[circuit_breaker(name = "pass:impl_trait_return")]
async fn label(n: u32) -> Result<(impl Display, Vec<impl Display>), std::io::Error> {
    Ok((n, vec![n + 1]))
}

// A fallback returns the same type; with `impl Trait` in it, that means the concrete type.
#[circuit_breaker(name = "pass:impl_trait_return", fallback = "no_names")]
fn names(csv: &str) -> Result<impl Iterator<Item = String>, std::io::Error> {
    if csv.is_empty() {
        return Err(std::io::Error::other("empty"));
    }
    Ok(csv
        .split(',')
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .into_iter())
}

fn no_names(
    _csv: &str,
    _err: breaker::CallError<std::io::Error>,
) -> Result<std::vec::IntoIter<String>, std::io::Error> {
    Ok(Vec::new().into_iter())
}

#[test]
fn compiles_and_runs() {
    assert_eq!(names("a,b").unwrap().count(), 2);
    assert_eq!(names("").unwrap().count(), 0);
    assert_eq!(evens(5).unwrap().collect::<Vec<_>>(), [0, 2, 4]);
    let rt = crate::runtime();
    let (a, b) = rt.block_on(label(1)).unwrap();
    assert_eq!(format!("{a} {}", b[0]), "1 2");
}

// Both sides erased: no error type can be named, so no listener gets the error's text from its
// `Display`, and the expansion must not try to name one.
#[circuit_breaker(name = "pass:impl_trait_return")]
fn parsed(text: &str) -> Result<impl Display, impl std::error::Error> {
    text.parse::<u32>().map_err(std::io::Error::other)
}

#[test]
fn both_sides_erased() {
    assert_eq!(parsed("7").unwrap().to_string(), "7");
    assert!(parsed("x").is_err());
}

/// A `Result` under another name, its parameters the other way round.
type Flipped<E, T> = Result<T, E>;

// The expansion finds `E` only in a `Result` written as such: here the second parameter is
// the `Ok` type, and naming it as the error would not compile.
#[circuit_breaker(name = "pass:impl_trait_return")]
fn flipped(text: &str) -> Flipped<impl std::error::Error, u32> {
    text.parse::<u32>().map_err(std::io::Error::other)
}

#[test]
fn a_result_alias_in_another_order() {
    assert_eq!(flipped("7").unwrap(), 7);
    assert!(flipped("x").is_err());
}

// `impl Trait` bound to an associated type inside the return type.
#[circuit_breaker(name = "pass:impl_trait_return")]
fn boxed(limit: u32) -> Result<Box<dyn Iterator<Item = impl Display>>, std::io::Error> {
    Ok(Box::new(0..limit))
}

#[test]
fn an_erased_associated_type() {
    let shown: Vec<String> = boxed(3).unwrap().map(|n| n.to_string()).collect();
    assert_eq!(shown, ["0", "1", "2"]);
}
