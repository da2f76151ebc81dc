//! Compile-time behaviour of `#[circuit_breaker]`: every misuse fails with the error pinned in
//! its `.stderr` (`ui/fail`).
//!
//! Only failing cases are here. The shapes that compile are modules of an ordinary test binary
//! (`tests/expansions`), which builds and links once; with no passing case, trybuild checks
//! (`cargo check`) instead of building, linking and running each case.
//!
//! The snapshots are blessed with the toolchain pinned in `rust-toolchain.toml`:
//! `TRYBUILD=overwrite cargo test -p breaker-macros --test ui`, then read every changed
//! `.stderr`.
//!
//! In the macro's package, not the facade's: trybuild builds the cases in a project of its own,
//! with the dependencies and features of the package that runs it. The facade's (every feature
//! on, an HTTP stack, a browser driver) would all be built a second time just for these cases;
//! this package has the facade with its default features, and Tokio.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
}
