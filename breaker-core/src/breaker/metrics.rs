//! A breaker's metrics: the public snapshot, and OPEN's copy of it in atomics.

use std::sync::atomic::Ordering;

use crate::state::State;
use crate::sync::AtomicU64;
use crate::window::rates;
use crate::window::totals::Totals;

/// A point-in-time view of a breaker's metrics: those of its current state, as Resilience4j's
/// `getMetrics()` reports them.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Metrics {
    /// The state.
    pub state: State,
    /// Failed calls in percent of buffered calls; `None` below the minimum number of calls.
    pub failure_rate: Option<f32>,
    /// Slow calls in percent of buffered calls; `None` below the minimum number of calls.
    pub slow_call_rate: Option<f32>,
    /// Calls in the window (successes and failures; ignored calls never count).
    pub buffered_calls: u32,
    /// Failed calls in the window (slow or not).
    pub failed_calls: u32,
    /// Successful calls in the window (slow or not).
    pub successful_calls: u32,
    /// Slow calls in the window (successes and failures).
    pub slow_calls: u32,
    /// Slow successful calls in the window.
    pub slow_successful_calls: u32,
    /// Slow failed calls in the window.
    pub slow_failed_calls: u32,
    /// Calls rejected since this state's metrics began (OPEN continues the count of the state
    /// it came from).
    pub not_permitted_calls: u64,
}

/// The public snapshot of a state's window totals and rates.
pub(crate) fn metrics_of(
    state: State,
    totals: &Totals,
    (failure_rate, slow_call_rate): (Option<f32>, Option<f32>),
    not_permitted: u64,
) -> Metrics {
    Metrics {
        state,
        failure_rate,
        slow_call_rate,
        buffered_calls: totals.calls,
        failed_calls: totals.failed,
        successful_calls: totals.calls - totals.failed,
        slow_calls: totals.slow,
        slow_successful_calls: totals.slow - totals.slow_failed,
        slow_failed_calls: totals.slow_failed,
        not_permitted_calls: not_permitted,
    }
}

/// The metrics an event carries: taken whole under the lock, or, for a call recorded in CLOSED's
/// lock-free window, that window's totals right after the call, from which the rates are
/// computed only when a listener asks (two divisions a call that most listeners never read).
#[derive(Clone, Copy, Debug)]
pub(crate) enum EventMetrics {
    /// A snapshot taken under the lock, or OPEN's lock-free view.
    Taken(Metrics),
    /// CLOSED's lock-free window after the call: its totals packed in one word
    /// ([`Totals::pack`]), its minimum number of calls, the not-permitted count.
    Closed {
        totals: u64,
        minimum_calls: u32,
        not_permitted: u64,
    },
    /// A rejection in OPEN while OPEN carries on CLOSED's lock-free window: that window's
    /// totals packed, as they were when the rejection was made, its minimum number of calls, the
    /// not-permitted count.
    Open {
        totals: u64,
        minimum_calls: u32,
        not_permitted: u64,
    },
}

impl EventMetrics {
    /// The metrics.
    #[inline]
    pub(crate) fn get(&self) -> Metrics {
        match *self {
            EventMetrics::Taken(metrics) => metrics,
            EventMetrics::Closed {
                totals,
                minimum_calls,
                not_permitted,
            } => of_window(State::Closed, totals, minimum_calls, not_permitted),
            EventMetrics::Open {
                totals,
                minimum_calls,
                not_permitted,
            } => of_window(State::Open, totals, minimum_calls, not_permitted),
        }
    }
}

/// The metrics of `state` from a lock-free window's packed `totals` ([`Totals::pack`]), with
/// the rates worked out now.
fn of_window(state: State, totals: u64, minimum_calls: u32, not_permitted: u64) -> Metrics {
    let totals = Totals::unpack(totals);
    let rates = rates(&totals, minimum_calls);
    metrics_of(state, &totals, rates, not_permitted)
}

/// OPEN's metrics in atomics: written under the lock, read by the lock-free rejection path.
/// (Each word is consistent in itself; a reader racing a late result may mix two snapshots,
/// which an event about a rejection can afford.)
#[derive(Default)]
pub(crate) struct OpenView {
    /// Failure rate and slow-call rate as `f32` bits (`u32::MAX`: no rate).
    rates: AtomicU64,
    /// Buffered and failed calls.
    calls: AtomicU64,
    /// Slow calls and slow failed calls.
    slow: AtomicU64,
}

impl OpenView {
    pub(crate) fn store(&self, m: &Metrics) {
        let bits = |r: Option<f32>| u64::from(r.map_or(u32::MAX, f32::to_bits));
        let pair = |a: u32, b: u32| u64::from(a) << 32 | u64::from(b);
        self.rates.store(
            bits(m.failure_rate) << 32 | bits(m.slow_call_rate),
            Ordering::Relaxed,
        );
        self.calls
            .store(pair(m.buffered_calls, m.failed_calls), Ordering::Relaxed);
        self.slow
            .store(pair(m.slow_calls, m.slow_failed_calls), Ordering::Relaxed);
    }

    pub(crate) fn load(&self, not_permitted: u64) -> Metrics {
        let rate = |b: u64| {
            let b = b as u32;
            (b != u32::MAX).then(|| f32::from_bits(b))
        };
        let (rates, calls, slow) = (
            self.rates.load(Ordering::Relaxed),
            self.calls.load(Ordering::Relaxed),
            self.slow.load(Ordering::Relaxed),
        );
        let (buffered, failed) = ((calls >> 32) as u32, calls as u32);
        let (slow_calls, slow_failed) = ((slow >> 32) as u32, slow as u32);
        Metrics {
            state: State::Open,
            failure_rate: rate(rates >> 32),
            slow_call_rate: rate(rates),
            buffered_calls: buffered,
            failed_calls: failed,
            successful_calls: buffered.saturating_sub(failed),
            slow_calls,
            slow_successful_calls: slow_calls.saturating_sub(slow_failed),
            slow_failed_calls: slow_failed,
            not_permitted_calls: not_permitted,
        }
    }
}
