//! Count windows at the size where CLOSED's window changes implementation, and far beyond it.
//!
//! A count window of up to 2,047 calls is recorded without the breaker's lock (12-bit packed
//! totals, `MAX_SIZE` in breaker-core/src/window/closed.rs); from 2,048 on, under the lock. Both
//! sides of the boundary, and each with the lock-free path switched off by the test knob, must
//! give exactly what a plain model of Resilience4j's count window gives for the same calls:
//! the same totals and binary32 rates after every call, and the same transition at the same
//! call. A window of 100,000 fills, evicts its oldest calls, and opens exactly at its minimum
//! number of calls and exactly at its threshold.

use std::collections::VecDeque;
use std::time::Duration;

use breaker_core::{CircuitBreaker, Config, ManualClock, Metrics, Outcome, Registry, State};

/// The largest window recorded without the lock.
const LOCK_FREE_MAX: u32 = 2_047;

const FAILURE_THRESHOLD: f32 = 50.0;
const SLOW_THRESHOLD: f32 = 60.0;
const SLOW_CALL: Duration = Duration::from_secs(1);

/// Resilience4j's count window, written as plainly as possible: the last `size` outcomes
/// and their totals (calls, failed, slow, slow and failed).
struct Model {
    size: usize,
    minimum: u32,
    calls: VecDeque<(bool, bool)>,
    totals: [u32; 4],
}

impl Model {
    fn new(size: u32, minimum: u32) -> Model {
        Model {
            size: size as usize,
            minimum,
            calls: VecDeque::new(),
            totals: [0; 4],
        }
    }

    fn count(&mut self, (failed, slow): (bool, bool), sign: i32) {
        let each = [true, failed, slow, failed && slow];
        for (total, counts) in self.totals.iter_mut().zip(each) {
            if counts {
                *total = total.checked_add_signed(sign).unwrap();
            }
        }
    }

    /// Records a call; whether the window now reaches a threshold.
    fn record(&mut self, failed: bool, elapsed: Duration) -> bool {
        if self.calls.len() == self.size {
            let evicted = self.calls.pop_front().unwrap();
            self.count(evicted, -1);
        }
        let call = (failed, elapsed > SLOW_CALL);
        self.calls.push_back(call);
        self.count(call, 1);
        let (failure, slow) = self.rates();
        failure.is_some_and(|r| r >= FAILURE_THRESHOLD) || slow.is_some_and(|r| r >= SLOW_THRESHOLD)
    }

    /// The rates as Resilience4j computes them: binary32, none below the minimum.
    fn rates(&self) -> (Option<f32>, Option<f32>) {
        let [calls, failed, slow, _] = self.totals;
        if calls == 0 || calls < self.minimum {
            return (None, None);
        }
        (
            Some(failed as f32 * 100.0 / calls as f32),
            Some(slow as f32 * 100.0 / calls as f32),
        )
    }

    fn assert_matches(&self, m: &Metrics, what: &str) {
        assert_eq!(
            [
                m.buffered_calls,
                m.failed_calls,
                m.slow_calls,
                m.slow_failed_calls
            ],
            self.totals,
            "{what}: totals"
        );
        assert_eq!(
            (m.failure_rate, m.slow_call_rate),
            self.rates(),
            "{what}: rates"
        );
    }

    fn clear(&mut self) {
        self.calls.clear();
        self.totals = [0; 4];
    }
}

/// Deterministic outcomes: failures and slow calls at the given percentages.
struct Mix(u64);

impl Mix {
    fn percent(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % 100) as u32
    }

    fn call(&mut self, fail_percent: u32, slow_percent: u32) -> (bool, Duration) {
        let failed = self.percent() < fail_percent;
        let slow = self.percent() < slow_percent;
        (failed, if slow { SLOW_CALL * 2 } else { SLOW_CALL / 2 })
    }
}

fn config(size: u32, minimum: u32) -> Config {
    Config::builder()
        .sliding_window_size(size)
        .minimum_number_of_calls(minimum)
        .failure_rate_threshold(FAILURE_THRESHOLD)
        .slow_call_rate_threshold(SLOW_THRESHOLD)
        .slow_call_duration_threshold(SLOW_CALL)
        .wait_duration_in_open_state(Duration::from_secs(3600))
        .build()
        .unwrap()
}

fn record(b: &CircuitBreaker, (failed, elapsed): (bool, Duration)) {
    let outcome = if failed {
        Outcome::Failure
    } else {
        Outcome::Success
    };
    b.try_acquire().unwrap().record(outcome, elapsed);
}

/// One window size, with the lock-free path where it applies and without it, beside its model.
struct Pair {
    breakers: [CircuitBreaker; 2],
    model: Model,
    opened_at: Option<usize>,
}

impl Pair {
    fn new(name: &str, size: u32, minimum: u32) -> Pair {
        let default = config(size, minimum);
        let locked = breaker_core::testing::lock_free_window(default.to_builder(), false)
            .build()
            .unwrap();
        let (default_name, locked_name) = (format!("{name}-default"), format!("{name}-locked"));
        let registry = Registry::builder()
            .clock(ManualClock::new())
            .instance(&default_name, default)
            .instance(&locked_name, locked)
            .build();
        Pair {
            breakers: [
                registry.breaker(&default_name),
                registry.breaker(&locked_name),
            ],
            model: Model::new(size, minimum),
            opened_at: None,
        }
    }

    /// Records call number `index` in both breakers and the model, unless they opened already;
    /// checks both against the model.
    fn call(&mut self, call: (bool, Duration), index: usize) {
        if self.opened_at.is_some() {
            return;
        }
        let opens = self.model.record(call.0, call.1);
        let expected = if opens { State::Open } else { State::Closed };
        for b in &self.breakers {
            record(b, call);
            let m = b.metrics();
            let what = format!("{} after call {index}", b.name());
            assert_eq!(m.state, expected, "{what}: {m:?}");
            self.model.assert_matches(&m, &what);
        }
        if opens {
            self.opened_at = Some(index);
            for b in &self.breakers {
                assert!(b.try_acquire().is_err(), "{} is OPEN", b.name());
            }
        }
    }

    /// Closes both by hand: an empty window.
    fn close(&mut self) {
        for b in &self.breakers {
            b.transition_to(State::Closed).unwrap();
            assert_eq!(b.metrics().buffered_calls, 0);
        }
        self.model.clear();
        self.opened_at = None;
    }
}

/// Feeds the same calls to both pairs, `calls` of them or until both opened.
fn feed(pairs: &mut [Pair; 2], mix: &mut Mix, (fail, slow): (u32, u32), calls: usize) {
    for i in 1..=calls {
        let call = mix.call(fail, slow);
        for pair in pairs.iter_mut() {
            pair.call(call, i);
        }
        if pairs.iter().all(|p| p.opened_at.is_some()) {
            return;
        }
    }
}

/// The same call sequence through windows of 2,047 (lock-free) and 2,048 (locked), each also
/// with the lock-free path off: identical totals, rates and transitions to the model's, call
/// for call; and identical to each other while both windows still hold every call made.
#[test]
fn windows_on_both_sides_of_the_lock_free_boundary_agree_call_for_call() {
    let mut pairs = [
        Pair::new("below", LOCK_FREE_MAX, 100),
        Pair::new("above", LOCK_FREE_MAX + 1, 100),
    ];
    let mut mix = Mix(0x2545_f491_4f6c_dd1d);

    // Healthy traffic, 30 % failures and 30 % slow calls: as long as both windows hold every
    // call, the two sizes report the same figures.
    for i in 1..=LOCK_FREE_MAX as usize {
        let call = mix.call(30, 30);
        pairs.iter_mut().for_each(|p| p.call(call, i));
        let [below, above] = &pairs;
        assert_eq!(
            below.breakers[0].metrics(),
            above.breakers[0].metrics(),
            "call {i}"
        );
    }
    // On past the point where they fill and evict: still below both thresholds.
    feed(&mut pairs, &mut mix, (30, 30), 2 * LOCK_FREE_MAX as usize);
    for pair in &pairs {
        assert_eq!(
            pair.opened_at, None,
            "healthy traffic opened {}",
            pair.model.size
        );
        assert_eq!(
            pair.model.calls.len(),
            pair.model.size,
            "the window is full"
        );
    }

    // Then mostly failures: each opens on the failure rate at exactly the model's call.
    feed(&mut pairs, &mut mix, (90, 30), 10_000);
    for pair in &pairs {
        assert!(pair.opened_at.is_some(), "{} never opened", pair.model.size);
        let m = pair.breakers[0].metrics();
        assert!(m.failure_rate.unwrap() >= FAILURE_THRESHOLD, "{m:?}");
    }

    // Closed by hand (an empty window), filled again, then mostly slow calls: each opens on
    // the slow-call rate at exactly the model's call.
    pairs.iter_mut().for_each(Pair::close);
    feed(&mut pairs, &mut mix, (10, 40), LOCK_FREE_MAX as usize + 500);
    assert!(pairs.iter().all(|p| p.opened_at.is_none()));
    feed(&mut pairs, &mut mix, (10, 95), 10_000);
    for pair in &pairs {
        assert!(pair.opened_at.is_some(), "{} never opened", pair.model.size);
        let m = pair.breakers[0].metrics();
        assert!(
            m.slow_call_rate.unwrap() >= SLOW_THRESHOLD
                && m.failure_rate.unwrap() < FAILURE_THRESHOLD,
            "opened on slow calls: {m:?}"
        );
    }
}

fn large(name: &str, size: u32, minimum: u32) -> CircuitBreaker {
    Registry::builder()
        .clock(ManualClock::new())
        .default_config(config(size, minimum))
        .build()
        .breaker(name)
}

/// A window of 100,000 calls: no rate before the 100,000th call, then a failure rate that
/// opens the breaker at exactly that call.
#[test]
fn a_large_window_opens_exactly_at_its_minimum_number_of_calls() {
    let size = 100_000;
    let b = large("large-minimum", size, size);
    for i in 1..size {
        record(&b, (true, Duration::ZERO));
        if i % 10_000 == 0 {
            let m = b.metrics();
            assert_eq!(
                (m.state, m.buffered_calls, m.failure_rate),
                (State::Closed, i, None)
            );
        }
    }
    let m = b.metrics();
    assert_eq!(
        (m.state, m.buffered_calls, m.failed_calls, m.failure_rate),
        (State::Closed, size - 1, size - 1, None),
        "one call short of the minimum"
    );
    record(&b, (true, Duration::ZERO));
    let m = b.metrics();
    assert_eq!(
        (m.state, m.buffered_calls, m.failure_rate),
        (State::Open, size, Some(100.0))
    );
}

/// A full window of 100,000 successes, then failures: each failure evicts the oldest success,
/// the window stays at 100,000 calls, and the breaker opens at exactly the 50,000th failure
/// (50.0 %), not one call earlier.
#[test]
fn a_large_window_fills_evicts_and_opens_exactly_at_its_threshold() {
    let size = 100_000u32;
    let b = large("large", size, 100);
    for _ in 0..size {
        record(&b, (false, Duration::ZERO));
    }
    let m = b.metrics();
    assert_eq!(
        (m.state, m.buffered_calls, m.failure_rate),
        (State::Closed, size, Some(0.0))
    );
    let threshold_failures = size / 2;
    for k in 1..threshold_failures {
        record(&b, (true, Duration::ZERO));
        assert_eq!(b.state(), State::Closed, "after {k} failures");
        if k % 10_000 == 0 || k == threshold_failures - 1 {
            let m = b.metrics();
            assert_eq!(
                (m.buffered_calls, m.failed_calls, m.successful_calls),
                (size, k, size - k),
                "the oldest successes were evicted"
            );
            assert_eq!(m.failure_rate, Some(k as f32 * 100.0 / size as f32));
        }
    }
    record(&b, (true, Duration::ZERO));
    let m = b.metrics();
    assert_eq!(
        (m.state, m.buffered_calls, m.failed_calls, m.failure_rate),
        (State::Open, size, threshold_failures, Some(50.0))
    );
}
