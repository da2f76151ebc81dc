//! What a breaker's handle says about itself: the clock it reads, its `Debug` text, and whether
//! it still belongs to the registry that made it.

use std::time::Duration;

use breaker_core::{CircuitBreaker, Config, State};

use crate::support::manual_registry;

/// A registry's breaker reads the registry's clock: the manual clock it was built on, moving
/// when that clock moves.
#[test]
fn a_breaker_reads_its_registrys_clock() {
    let (clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("accessors:clock");
    let manual = b
        .clock()
        .as_manual()
        .expect("the breaker reads the registry's manual clock");
    assert_eq!(manual.now(), clock.now());
    clock.advance(Duration::from_secs(7));
    assert_eq!(b.clock().now(), clock.now(), "the same clock, not a copy");
}

/// The `Debug` text names the breaker and its current state.
#[test]
fn debug_shows_the_name_and_the_current_state() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("accessors:debug");
    assert_eq!(
        format!("{b:?}"),
        r#"CircuitBreaker { name: "accessors:debug", state: Closed, .. }"#
    );
    b.transition_to(State::ForcedOpen).unwrap();
    assert_eq!(
        format!("{b:?}"),
        r#"CircuitBreaker { name: "accessors:debug", state: ForcedOpen, .. }"#
    );
}

/// A breaker of its own is never detached; a registry's is attached until it is removed.
#[test]
fn a_breaker_is_detached_only_once_it_leaves_its_registry() {
    let own = CircuitBreaker::new("accessors:own", Config::default());
    assert!(
        !own.is_detached(),
        "a breaker of its own has no registry to leave"
    );
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("accessors:member");
    assert!(!b.is_detached(), "in its registry");
    let removed = registry.remove("accessors:member").unwrap();
    assert!(removed.ptr_eq(&b) && b.is_detached(), "removed");
}
