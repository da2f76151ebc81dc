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

/// A permit says when it was granted, which breaker granted it and with what configuration,
/// and its `Debug` text names the breaker and when the call started; the timer of the call's
/// timeout shows its limit.
#[tokio::test(start_paused = true)]
async fn permits_name_their_breaker() {
    let (clock, registry) = manual_registry(
        Config::builder()
            .timeout_duration(Some(Duration::from_secs(3)))
            .build()
            .unwrap(),
    );
    let b = registry.breaker("accessors:permits");
    let permit = b.try_acquire().unwrap();
    let granted = clock.now();
    clock.advance(Duration::from_secs(2));
    assert_eq!(permit.started_at(), granted);
    assert_eq!(permit.elapsed(), Duration::from_secs(2));
    assert_eq!(
        format!("{permit:?}"),
        r#"Permit { breaker: "accessors:permits", started_at: Timestamp(1700000000000000000), .. }"#
    );
    assert_eq!(
        format!("{:?}", permit.start_timeout()),
        "Some(CallTimeout { limit: 3s, .. })"
    );
    permit.release();
    let owned = b.try_acquire_owned().unwrap();
    assert_eq!(owned.breaker_name(), "accessors:permits");
    assert_eq!(owned.config(), b.config());
    assert_eq!(
        owned.config().timeout_duration(),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        format!("{owned:?}"),
        r#"OwnedPermit { breaker: "accessors:permits", started_at: Some(Timestamp(1700000002000000000)), .. }"#
    );
}

/// A keyed group answers with its name and the configuration its keys get, and its `Debug`
/// text names it, counts its breakers and shows its limits.
#[test]
fn a_keyed_group_says_what_it_is() {
    let (_clock, registry) =
        manual_registry(Config::builder().sliding_window_size(7).build().unwrap());
    let tenants = registry.keyed("accessors:tenants");
    assert_eq!(tenants.name(), "accessors:tenants");
    assert_eq!(tenants.config().sliding_window_size(), 7);
    let _one = tenants.get(&1);
    assert_eq!(
        format!("{tenants:?}"),
        r#"Keyed { name: "accessors:tenants", breakers: 1, limits: KeyedLimits { max_idle: Some(600s), max_breakers: Some(1000) } }"#
    );
}

/// Only a manual clock is manual; each clock's `Debug` text says which it is (a manual one,
/// with its time).
#[test]
fn clocks_say_which_they_are() {
    use breaker_core::{Clock, ManualClock};
    assert!(Clock::system().as_manual().is_none());
    assert!(Clock::precise().as_manual().is_none());
    assert_eq!(format!("{:?}", Clock::system()), "Clock::System");
    assert_eq!(format!("{:?}", Clock::precise()), "Clock::Precise");
    assert_eq!(
        format!("{:?}", ManualClock::new()),
        "ManualClock { now: Timestamp(1700000000000000000) }"
    );
    let manual = Clock::from(ManualClock::new());
    assert_eq!(
        format!("{manual:?}"),
        "Clock::Manual(Timestamp(1700000000000000000))"
    );
}

/// A hint opens only a breaker with no history of its own: never one that a transition no
/// hint caused has moved, even when that left it CLOSED with an empty window, while a fresh
/// breaker opens, and a breaker the hint opened and closed again by hand does not.
#[test]
fn a_hint_opens_only_a_breaker_without_history() {
    let (_clock, registry) = manual_registry(Config::default());
    let moved = registry.breaker("accessors:hint-moved");
    moved.transition_to(State::Open).unwrap();
    moved.transition_to(State::Closed).unwrap();
    assert_eq!(moved.metrics().buffered_calls, 0);
    assert!(
        !moved.open_from_hint(),
        "moved by hand, yet opened by a hint"
    );
    assert_eq!(moved.state(), State::Closed);

    let fresh = registry.breaker("accessors:hint-fresh");
    assert!(fresh.open_from_hint());
    assert_eq!(fresh.state(), State::Open);
    fresh.transition_to(State::Closed).unwrap();
    assert!(
        !fresh.open_from_hint(),
        "closed by hand, yet opened by a hint"
    );
}
