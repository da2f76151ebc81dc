//! The `#[circuit_breaker]` attribute of the `breaker` crate.
//!
//! The attribute itself is not written yet; this crate is a placeholder so that the workspace
//! has its final layout.
