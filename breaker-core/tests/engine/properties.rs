//! Property tests: random sequences of operations, with the breaker's invariants checked after
//! every step.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_core::{
    CircuitBreaker, Config, EventKind, ManualClock, Metrics, Outcome, Permit, Registry,
    SlidingWindowType, State,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    Complete(usize, Outcome, u64),
    Drop(usize),
    Call(Outcome, u64),
    Advance(u64),
    Transition(usize),
    Reset,
}

fn op() -> impl Strategy<Value = Op> {
    let outcome = prop_oneof![
        Just(Outcome::Success),
        Just(Outcome::Failure),
        Just(Outcome::Ignored)
    ];
    prop_oneof![
        4 => Just(Op::Acquire),
        4 => (any::<usize>(), outcome.clone(), 0..3_000u64).prop_map(|(i, o, d)| Op::Complete(i, o, d)),
        2 => any::<usize>().prop_map(Op::Drop),
        6 => (outcome, 0..3_000u64).prop_map(|(o, d)| Op::Call(o, d)),
        3 => (0..4_000u64).prop_map(Op::Advance),
        1 => (0..6usize).prop_map(Op::Transition),
        1 => Just(Op::Reset),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop_oneof![
            Just(SlidingWindowType::CountBased),
            Just(SlidingWindowType::TimeBased)
        ],
        1..8u32,
        1..10u32,
        1..=100u32,
        1..=100u32,
        1..5u32,
        any::<bool>(),
        0..3u64,
    )
        .prop_map(|(kind, size, min, fr, sr, permits, auto, max_wait)| {
            Config::builder()
                .sliding_window(kind, size, min)
                .failure_rate_threshold(fr as f32)
                .slow_call_rate_threshold(sr as f32)
                .slow_call_duration_threshold(Duration::from_millis(1_000))
                .wait_duration_in_open_state(Duration::from_millis(1_500))
                .permitted_number_of_calls_in_half_open_state(permits)
                .automatic_transition_from_open_to_half_open_enabled(auto)
                .max_wait_duration_in_half_open_state(Duration::from_millis(max_wait * 2_000))
                .build()
                .unwrap()
        })
}

fn check(m: &Metrics, config: &Config) {
    let capacity = match m.state {
        State::HalfOpen => config.permitted_number_of_calls_in_half_open_state(),
        State::Disabled | State::ForcedOpen => 0,
        _ => match config.sliding_window_type() {
            SlidingWindowType::CountBased => config
                .sliding_window_size()
                .max(config.permitted_number_of_calls_in_half_open_state()),
            // A time window holds any number of calls; the checks below still apply.
            SlidingWindowType::TimeBased => u32::MAX,
        },
    };
    assert!(m.buffered_calls <= capacity, "{m:?}");
    assert!(m.failed_calls <= m.buffered_calls, "{m:?}");
    assert!(m.slow_calls <= m.buffered_calls, "{m:?}");
    assert_eq!(m.successful_calls + m.failed_calls, m.buffered_calls);
    assert_eq!(m.slow_successful_calls + m.slow_failed_calls, m.slow_calls);
    for rate in [m.failure_rate, m.slow_call_rate].into_iter().flatten() {
        assert!((0.0..=100.0).contains(&rate), "{m:?}");
    }
    assert_eq!(m.failure_rate.is_some(), m.slow_call_rate.is_some());
}

/// A held permit and the half-open period that granted it (`None`: not granted in HALF_OPEN).
struct Held<'a> {
    permit: Permit<'a>,
    period: Option<u64>,
}

fn run(config: Config, ops: Vec<Op>) {
    let clock = ManualClock::new();
    let locked = breaker_core::testing::lock_free_window(config.to_builder(), false)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("prop", locked)
        .instance("prop-shadow", config.clone())
        .build();
    // `b` records every call under its lock in the plain ring window; `shadow`, which nobody
    // listens to, records CLOSED calls without the lock in the epoch-stamped window. Given the
    // same operations, they must agree on everything after every step.
    let b: CircuitBreaker = registry.breaker("prop");
    let shadow: CircuitBreaker = registry.breaker("prop-shadow");
    let mut shadow_held: Vec<Permit<'_>> = Vec::new();
    // Counts transitions so that each HALF_OPEN period has a number.
    let transitions = Arc::new(Mutex::new(0u64));
    let t = transitions.clone();
    let _sub = b.subscribe(move |e| {
        if let EventKind::StateTransition { .. } = e.kind() {
            *t.lock().unwrap() += 1;
        }
    });
    // A manual transition builds a new state object even to the same state (no event then),
    // and its trials are counted afresh, so it starts a new period too.
    let manual = std::cell::Cell::new(0u64);
    let period = || *transitions.lock().unwrap() + manual.get();
    let permits = config.permitted_number_of_calls_in_half_open_state() as usize;
    let mut held: Vec<Held<'_>> = Vec::new();
    let half_open_out = |held: &[Held<'_>], b: &CircuitBreaker, now: u64| {
        if b.state() == State::HalfOpen {
            held.iter().filter(|h| h.period == Some(now)).count()
        } else {
            0
        }
    };
    for op in ops {
        match op {
            Op::Acquire => {
                if let Ok(permit) = b.try_acquire() {
                    let p = (b.state() == State::HalfOpen).then(period);
                    held.push(Held { permit, period: p });
                }
                if let Ok(permit) = shadow.try_acquire() {
                    shadow_held.push(permit);
                }
            }
            Op::Complete(i, outcome, d) if !held.is_empty() => {
                let h = held.remove(i % held.len());
                h.permit.record(outcome, Duration::from_millis(d));
                let s = shadow_held.remove(i % shadow_held.len());
                s.record(outcome, Duration::from_millis(d));
            }
            Op::Drop(i) if !held.is_empty() => {
                drop(held.remove(i % held.len()));
                drop(shadow_held.remove(i % shadow_held.len()));
            }
            Op::Complete(..) | Op::Drop(_) => {}
            Op::Call(outcome, d) => {
                if let Ok(p) = b.try_acquire() {
                    p.record(outcome, Duration::from_millis(d));
                }
                if let Ok(p) = shadow.try_acquire() {
                    p.record(outcome, Duration::from_millis(d));
                }
            }
            Op::Advance(ms) => clock.advance(Duration::from_millis(ms)),
            Op::Transition(i) => {
                let moved = b.transition_to(State::ALL[i]).is_ok();
                assert_eq!(shadow.transition_to(State::ALL[i]).is_ok(), moved);
                if moved {
                    manual.set(manual.get() + 1);
                }
            }
            Op::Reset => {
                b.reset();
                shadow.reset();
                manual.set(manual.get() + 1);
            }
        }
        check(&b.metrics(), &config);
        assert_eq!(
            shadow.metrics(),
            b.metrics(),
            "the unobserved breaker went its own way"
        );
        assert_eq!(shadow_held.len(), held.len());
        assert!(
            half_open_out(&held, &b, period()) <= permits,
            "more than {permits} trials out"
        );
    }
    // Nothing leaked: with every permit back, HALF_OPEN grants what its results have not used.
    drop(held);
    drop(shadow_held);
    assert_no_permit_lost(&b, &config);
}

/// Once every permit is back, HALF_OPEN grants what its recorded results have not used.
fn assert_no_permit_lost(b: &CircuitBreaker, config: &Config) {
    if b.state() == State::HalfOpen {
        let permits = config.permitted_number_of_calls_in_half_open_state() as usize;
        let used = b.metrics().buffered_calls as usize;
        let again: Vec<_> = std::iter::from_fn(|| b.try_acquire().ok())
            .take(permits + 1)
            .collect();
        assert!(again.len() <= permits);
        assert!(again.len() + used >= permits, "a permit leaked");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_after_every_step(config in config(), ops in prop::collection::vec(op(), 1..120)) {
        run(config, ops);
    }
}

/// What one thread does in [`invariants_hold_under_threads`].
#[derive(Clone, Debug)]
enum ThreadOp {
    Call(Outcome, u64),
    AcquireAndDrop,
    Advance(u64),
    Transition(usize),
    Reset,
}

fn thread_op() -> impl Strategy<Value = ThreadOp> {
    let outcome = prop_oneof![
        Just(Outcome::Success),
        Just(Outcome::Failure),
        Just(Outcome::Ignored)
    ];
    prop_oneof![
        8 => (outcome, 0..3_000u64).prop_map(|(o, d)| ThreadOp::Call(o, d)),
        2 => Just(ThreadOp::AcquireAndDrop),
        2 => (0..4_000u64).prop_map(ThreadOp::Advance),
        1 => (0..6usize).prop_map(ThreadOp::Transition),
        1 => Just(ThreadOp::Reset),
    ]
}

/// Several threads run their own random operations on one breaker (nobody listening, so CLOSED
/// records without the lock); every metrics reading along the way, and the end state once all
/// are done, must satisfy the invariants, and no trial permit may be lost.
fn run_threads(config: Config, plans: Vec<Vec<ThreadOp>>) {
    let (clock, registry) = crate::support::manual_registry(config.clone());
    let b = registry.breaker("prop-threads");
    let start = std::sync::Barrier::new(plans.len());
    std::thread::scope(|s| {
        for plan in plans {
            let (b, clock, config, start) = (&b, &clock, &config, &start);
            s.spawn(move || {
                start.wait();
                for op in plan {
                    match op {
                        ThreadOp::Call(outcome, d) => {
                            if let Ok(p) = b.try_acquire() {
                                p.record(outcome, Duration::from_millis(d));
                            }
                        }
                        ThreadOp::AcquireAndDrop => drop(b.try_acquire()),
                        ThreadOp::Advance(ms) => clock.advance(Duration::from_millis(ms)),
                        ThreadOp::Transition(i) => drop(b.transition_to(State::ALL[i])),
                        ThreadOp::Reset => b.reset(),
                    }
                    check(&b.metrics(), config);
                }
            });
        }
    });
    check(&b.metrics(), &config);
    assert_no_permit_lost(&b, &config);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_threads(
        config in config(),
        plans in prop::collection::vec(prop::collection::vec(thread_op(), 1..80), 2..5),
    ) {
        run_threads(config, plans);
    }
}
