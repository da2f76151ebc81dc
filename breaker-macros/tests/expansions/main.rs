//! Every shape `#[circuit_breaker]`, `#[bulkhead]` and `#[retry]` take compiles and runs: one
//! module per shape, each with the assertions that show the guarded fn returns what its body or
//! fallback does. The misuses, which must not compile, are trybuild cases (`tests/ui.rs`):
//! cases that compile need no process of their own, and in one binary they link once, where
//! trybuild would build its own project and link and run each case.
//!
//! What a crate root would prove is proved on a module: `#![no_implicit_prelude]`,
//! `extern crate ... as ...`, `#![deny(...)]` all apply to a module and what is in it. Breaker
//! names start with `pass:` and are each module's own, so the tests share
//! `Registry::global()` without meeting.

mod bulkhead_alone;
mod bulkhead_with_breaker;
pub mod clippy_clean;
mod crate_renamed;
mod fallback_bare_path;
mod free_async;
mod free_sync;
mod future_is_send;
mod generics_where;
mod impl_trait_arg;
mod impl_trait_return;
mod inner_attributes;
mod io_result_alias;
mod key_borrowed;
mod keyed;
mod lifetimes_ref_args;
mod method_arc_self;
mod method_mut_self;
mod method_ref_self;
mod mut_params;
mod native_async_fn_in_trait_impl;
mod no_implicit_prelude;
mod predicates;
mod question_mark;
mod retry_stack;
mod type_shadowing;

/// The runtime each async shape's test runs its calls on: one thread, time and I/O enabled.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
