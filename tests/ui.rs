//! Compile-time behaviour of `#[circuit_breaker]`: every supported shape compiles
//! (`ui/pass`), every misuse fails with the error pinned in its `.stderr` (`ui/fail`).
//!
//! The snapshots are blessed with the toolchain pinned in `rust-toolchain.toml`:
//! `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr`.
//!
//! A binary of its own: trybuild builds every case with cargo, in a project of its own, and the
//! command above blesses the snapshots without running any other test.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
