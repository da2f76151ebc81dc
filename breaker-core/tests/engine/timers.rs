//! The scheduler's queue holds only the timers of states that are still current: a timer
//! cancelled by a transition or a reset leaves the queue at once, so the queue never holds
//! more than two timers per breaker, however often breakers cycle.

use std::time::Duration;

use breaker_core::{Config, ManualClock, Registry, State};

fn registry() -> Registry {
    Registry::builder()
        .clock(ManualClock::new())
        .default_config(
            Config::builder()
                .wait_duration_in_open_state(Duration::from_secs(3600))
                .automatic_transition_from_open_to_half_open_enabled(true)
                .max_wait_duration_in_half_open_state(Duration::from_secs(3600))
                .build()
                .unwrap(),
        )
        .build()
}

#[test]
fn cancelled_timers_leave_the_queue_at_once() {
    let registry = registry();
    let b = registry.breaker("timers:cycle");
    for _ in 0..200_000 {
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        b.transition_to(State::Closed).unwrap();
    }
    assert_eq!(registry.pending_timers(), 0, "CLOSED has no timer");
    b.transition_to(State::Open).unwrap();
    assert_eq!(registry.pending_timers(), 1, "OPEN's wait");
    b.reset();
    assert_eq!(registry.pending_timers(), 0, "reset cancels OPEN's wait");
    b.transition_to(State::Open).unwrap();
    b.transition_to(State::HalfOpen).unwrap();
    assert_eq!(registry.pending_timers(), 1, "HALF_OPEN's max wait only");
    b.transition_to(State::ForcedOpen).unwrap();
    assert_eq!(registry.pending_timers(), 0);
}

#[test]
fn a_timer_that_fires_is_gone_too() {
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .wait_duration_in_open_state(Duration::from_secs(10))
            .automatic_transition_from_open_to_half_open_enabled(true)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("timers:fire");
    b.transition_to(State::Open).unwrap();
    assert_eq!(registry.pending_timers(), 1);
    clock.advance(Duration::from_secs(10));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(registry.pending_timers(), 0);
}

/// HALF_OPEN's `max-wait-duration-in-half-open-state` ends it even with no trial finished: to
/// OPEN by default, or to the state `transition-to-state-after-wait-duration` names; not an
/// instant before.
#[test]
fn half_open_s_max_wait_moves_it_on() {
    for (after, to) in [(None, State::Open), (Some(State::Closed), State::Closed)] {
        let mut config = Config::builder()
            .max_wait_duration_in_half_open_state(Duration::from_secs(5))
            .permitted_number_of_calls_in_half_open_state(2);
        if let Some(after) = after {
            config = config.transition_to_state_after_wait_duration(after);
        }
        let (clock, registry) = crate::support::manual_registry(config.build().unwrap());
        let b = registry.breaker("timers:half-open-max-wait");
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        let _trial = b.try_acquire().unwrap();
        clock.advance(Duration::from_millis(4_999));
        assert_eq!(b.state(), State::HalfOpen);
        clock.advance(Duration::from_millis(1));
        assert_eq!(b.state(), to, "after {after:?}");
    }
}
