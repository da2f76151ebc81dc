//! `#[circuit_breaker]` at run time: behaviour (`runtime`), slow calls on the system clock
//! (`slow_calls`), a file's error kinds on every call path (`error_kinds`), the error texts its
//! breaker gives listeners that ask (`error_texts`), the expansion's
//! hygiene (`hygiene`), and the README's Rust blocks (`readme_examples`); `#[bulkhead]`, alone and
//! with `#[circuit_breaker]` (`bulkhead`); `#[retry]`, alone and around both (`retry`).
//!
//! The attribute resolves breakers from `Registry::global()`, which a process has one of:
//! [`init`] installs it once, on the system clock, with each module's instances, and every
//! test calls it before touching a breaker. Modules use breaker names of their own (`rt:`,
//! `slow:`, `kinds-`, `texts:`, `hygiene:`, `bh:`, `re:`). The file of `error_kinds` also sets the
//! registry's default config (a window of 4), which the `hygiene:` breakers get.

// For `hygiene`: the crate under another name, reachable as `::renamed` from every module.
extern crate breaker as renamed;

mod bulkhead;
mod error_kinds;
mod error_texts;
mod hygiene;
mod readme_examples;
mod retry;
mod runtime;
mod slow_calls;
mod support;

use std::sync::Once;

use breaker::{Clock, Registry};

/// Installs the global registry once for this test binary.
fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let registry = Registry::builder().clock(Clock::system());
        let registry = runtime::instances(registry);
        let registry = slow_calls::instances(registry);
        let registry = error_kinds::instances(registry);
        let registry = bulkhead::instances(registry);
        let registry = retry::instances(registry);
        Registry::install_global(registry.build()).expect("nothing used the global registry yet");
    });
}
