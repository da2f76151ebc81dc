//! Sliding windows and the per-state metrics object.
//!
//! A window records each call as one of four outcomes (success, failure, slow success, slow
//! failure) in O(1) time and in memory fixed by its size: a count-based window keeps one byte
//! per call slot, a time-based one a few counters per second, whatever the call rate.

use std::sync::Arc;

use crate::config::{Config, SlidingWindowType};
use crate::state::StateId;
use crate::time::timestamp::{duration_nanos, Timestamp};
use crate::window::closed::{ClosedWindow, Recorded};
use crate::window::count::CountWindow;
use crate::window::time::TimeWindow;
use crate::window::totals::{Totals, FAILED, SLOW};

pub(crate) mod closed;
mod count;
mod time;
pub(crate) mod totals;

#[derive(Debug)]
enum Window {
    Count(CountWindow),
    Time(TimeWindow),
    /// The breaker's lock-free CLOSED window, as emptied for state `state`.
    Closed {
        window: Arc<ClosedWindow>,
        state: StateId,
    },
}

/// The result of checking the thresholds after a recorded call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// The window's totals did not change (a full count window evicted a call with the same
    /// outcome), so the last verdict stands; it was no reason to leave the state then either.
    Unchanged,
    /// Fewer calls than the minimum: no rate, no decision.
    BelowMinimumCalls,
    /// Rates computed, neither threshold reached.
    BelowThresholds,
    /// At least one threshold reached.
    Exceeded {
        failure_rate: Option<f32>,
        slow_call_rate: Option<f32>,
    },
}

/// The failure and slow-call rates of `totals`, in percent, or `None` below `minimum_calls`
/// calls (or with none at all): the one formula behind every decision and every snapshot.
#[inline]
pub(crate) fn rates(totals: &Totals, minimum_calls: u32) -> (Option<f32>, Option<f32>) {
    if totals.calls == 0 || totals.calls < minimum_calls {
        return (None, None);
    }
    let calls = totals.calls as f32;
    (
        Some(totals.failed as f32 * 100.0 / calls),
        Some(totals.slow as f32 * 100.0 / calls),
    )
}

/// What a state measures: its window and its minimum number of calls. (Its not-permitted count
/// lives beside it in the breaker, as an atomic that the OPEN fast path updates without a lock.)
///
/// Resilience4j gives every state its own metrics object, and some states inherit the previous
/// state's (OPEN keeps the window that tripped it); this type is that object.
#[derive(Debug)]
pub(crate) struct StateMetrics {
    window: Window,
    thresholds: Thresholds,
}

/// What turns recorded calls into a decision: the slow-call threshold, the minimum number of
/// calls and the two rate thresholds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    minimum_calls: u32,
    failure_threshold: f32,
    slow_threshold: f32,
    slow_nanos: u64,
}

impl Thresholds {
    /// Those of `config`, with `minimum_calls` calls needed before any rate exists.
    pub(crate) fn new(config: &Config, minimum_calls: u32) -> Thresholds {
        Thresholds {
            minimum_calls,
            failure_threshold: config.failure_rate_threshold(),
            slow_threshold: config.slow_call_rate_threshold(),
            slow_nanos: duration_nanos(config.slow_call_duration_threshold()),
        }
    }

    /// The outcome code of a call that took `elapsed` nanoseconds.
    #[inline]
    pub(crate) fn outcome(&self, failed: bool, elapsed: u64) -> u8 {
        let mut outcome = if failed { FAILED } else { 0 };
        if elapsed > self.slow_nanos {
            outcome |= SLOW;
        }
        outcome
    }

    /// The failure and slow-call rates, or `None` below the minimum number of calls.
    pub(crate) fn rates(&self, totals: &Totals) -> (Option<f32>, Option<f32>) {
        rates(totals, self.minimum_calls)
    }

    /// The number of calls needed before any rate exists.
    #[inline]
    pub(crate) fn minimum_calls(&self) -> u32 {
        self.minimum_calls
    }

    /// Whether `totals` reach a threshold.
    pub(crate) fn verdict(&self, totals: &Totals) -> Verdict {
        match self.rates(totals) {
            (Some(failure_rate), Some(slow_rate)) => {
                let failure = failure_rate >= self.failure_threshold;
                let slow = slow_rate >= self.slow_threshold;
                if failure || slow {
                    Verdict::Exceeded {
                        failure_rate: failure.then_some(failure_rate),
                        slow_call_rate: slow.then_some(slow_rate),
                    }
                } else {
                    Verdict::BelowThresholds
                }
            }
            _ => Verdict::BelowMinimumCalls,
        }
    }
}

impl StateMetrics {
    /// The window of CLOSED and METRICS_ONLY: `closed_window`, emptied for state `state`, if
    /// the breaker has a lock-free window, else a new one.
    pub(crate) fn closed(
        config: &Config,
        now: Timestamp,
        closed_window: Option<&Arc<ClosedWindow>>,
        state: StateId,
    ) -> StateMetrics {
        let window = match config.sliding_window_type() {
            SlidingWindowType::CountBased => match closed_window {
                Some(window) => {
                    window.reset(state);
                    Window::Closed {
                        window: Arc::clone(window),
                        state,
                    }
                }
                None => Window::Count(CountWindow::new(config.sliding_window_size())),
            },
            SlidingWindowType::TimeBased => {
                Window::Time(TimeWindow::new(config.sliding_window_size(), now))
            }
        };
        StateMetrics::with_window(config, window, config.minimum_number_of_calls())
    }

    /// The window of HALF_OPEN: count-based, one slot per trial permit.
    pub(crate) fn half_open(config: &Config) -> StateMetrics {
        let permits = config.permitted_number_of_calls_in_half_open_state();
        StateMetrics::with_window(
            config,
            Window::Count(CountWindow::new(permits)),
            config.minimum_number_of_calls().min(permits),
        )
    }

    /// The window of DISABLED and FORCED_OPEN: size 0, records nothing.
    pub(crate) fn empty(config: &Config) -> StateMetrics {
        StateMetrics::with_window(config, Window::Count(CountWindow::new(0)), 0)
    }

    fn with_window(config: &Config, window: Window, minimum_calls: u32) -> StateMetrics {
        StateMetrics {
            window,
            thresholds: Thresholds::new(config, minimum_calls),
        }
    }

    /// Records one call that took `elapsed` nanoseconds and checks the thresholds.
    #[cfg(test)]
    fn record(&mut self, failed: bool, elapsed: u64, now: Timestamp) -> Verdict {
        self.record_at(failed, elapsed, now, None)
    }

    /// Records one call that took `elapsed` nanoseconds and checks the thresholds; with the
    /// lock-free window, at ring position `position` if given (one the call took before it
    /// found its CLOSED state gone).
    #[inline]
    pub(crate) fn record_at(
        &mut self,
        failed: bool,
        elapsed: u64,
        now: Timestamp,
        position: Option<u32>,
    ) -> Verdict {
        let outcome = self.thresholds.outcome(failed, elapsed);
        match &mut self.window {
            Window::Count(w) => {
                if !w.record(outcome) {
                    return Verdict::Unchanged;
                }
            }
            Window::Time(w) => w.record(outcome, now),
            Window::Closed { window, state } => {
                let recorded = match position {
                    Some(position) => window.record_at(position, *state, outcome, true),
                    None => window.record(*state, outcome, true),
                };
                return match recorded {
                    Recorded::Changed(totals) => self.thresholds.verdict(&totals),
                    Recorded::Unchanged | Recorded::Stale(_) => Verdict::Unchanged,
                };
            }
        }
        self.verdict(now)
    }

    /// The window's totals as of `now` (a time-based window first drops expired seconds).
    pub(crate) fn totals(&mut self, now: Timestamp) -> Totals {
        match &mut self.window {
            Window::Count(w) => w.totals,
            Window::Time(w) => {
                w.advance_to(now);
                w.totals
            }
            // While calls are in flight the packed totals can be inconsistent for a moment
            // (see closed_window): then count the slots.
            Window::Closed { window, state } => window
                .totals(*state)
                .unwrap_or_else(|| window.recount(*state)),
        }
    }

    /// The failure and slow-call rates, or `None` below the minimum number of calls.
    pub(crate) fn rates(&self, totals: &Totals) -> (Option<f32>, Option<f32>) {
        self.thresholds.rates(totals)
    }

    /// The verdict on the window as it is at `now`.
    pub(crate) fn verdict(&mut self, now: Timestamp) -> Verdict {
        let totals = self.totals(now);
        self.thresholds.verdict(&totals)
    }

    /// The CLOSED state this is the breaker's lock-free window of, if it is that window.
    pub(crate) fn closed_window_state(&self) -> Option<StateId> {
        match &self.window {
            Window::Closed { state, .. } => Some(*state),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const T0: Timestamp = Timestamp::from_unix_millis(1_700_000_000_000);

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_unix_millis(1_700_000_000_000 + ms)
    }

    fn config(kind: SlidingWindowType, size: u32, min: u32) -> Config {
        Config::builder()
            .sliding_window(kind, size, min)
            .slow_call_duration_threshold(Duration::from_millis(100))
            .build()
            .unwrap()
    }

    #[test]
    fn count_window_keeps_the_last_n_outcomes() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::CountBased, 3, 1),
            T0,
            None,
            StateId::FIRST,
        );
        let ms = |n: u64| n * 1_000_000;
        m.record(true, ms(0), T0);
        m.record(false, ms(500), T0);
        m.record(true, ms(500), T0);
        assert_eq!(
            m.totals(T0),
            Totals {
                calls: 3,
                failed: 2,
                slow: 2,
                slow_failed: 1
            }
        );
        // The fourth call evicts the first (a fast failure).
        m.record(false, ms(0), T0);
        assert_eq!(
            m.totals(T0),
            Totals {
                calls: 3,
                failed: 1,
                slow: 2,
                slow_failed: 1
            }
        );
        for _ in 0..3 {
            m.record(false, ms(0), T0);
        }
        assert_eq!(
            m.totals(T0),
            Totals {
                calls: 3,
                ..Totals::default()
            }
        );
    }

    #[test]
    fn slow_means_strictly_longer_than_the_threshold() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::CountBased, 2, 1),
            T0,
            None,
            StateId::FIRST,
        );
        m.record(false, 100_000_000, T0);
        assert_eq!(m.totals(T0).slow, 0);
        m.record(false, 100_000_001, T0);
        assert_eq!(m.totals(T0).slow, 1);
    }

    #[test]
    fn time_window_evicts_by_epoch_second() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::TimeBased, 10, 1),
            T0,
            None,
            StateId::FIRST,
        );
        m.record(true, 0, at(999));
        m.record(true, 0, at(1000));
        assert_eq!(m.totals(at(9_999)).calls, 2);
        // t=999 lives in second 0 and leaves when second 10 starts; t=1000 a second later.
        assert_eq!(m.totals(at(10_000)).calls, 1);
        assert_eq!(m.totals(at(10_999)).calls, 1);
        assert_eq!(m.totals(at(11_000)).calls, 0);
    }

    #[test]
    fn time_window_memory_does_not_grow_with_calls() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::TimeBased, 60, 1),
            T0,
            None,
            StateId::FIRST,
        );
        for i in 0..100_000u64 {
            m.record(i % 2 == 0, 0, at(i / 100));
        }
        match &m.window {
            Window::Time(w) => assert_eq!(w.buckets.len(), 60),
            Window::Count(_) | Window::Closed { .. } => unreachable!(),
        }
        assert_eq!(m.totals(at(999)).calls, 100_000);
        assert_eq!(m.totals(at(1_000 + 59_000)).calls, 0);
    }

    #[test]
    fn a_large_gap_clears_everything() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::TimeBased, 5, 1),
            T0,
            None,
            StateId::FIRST,
        );
        m.record(true, 0, T0);
        m.record(true, 0, at(2_000));
        assert_eq!(m.totals(at(1_000_000_000)).calls, 0);
        m.record(false, 0, at(1_000_000_000));
        assert_eq!(m.totals(at(1_000_000_000)).calls, 1);
    }

    #[test]
    fn rates_need_the_minimum_and_use_binary32() {
        let mut m = StateMetrics::closed(
            &config(SlidingWindowType::CountBased, 10, 3),
            T0,
            None,
            StateId::FIRST,
        );
        assert_eq!(m.record(true, 0, T0), Verdict::BelowMinimumCalls);
        assert_eq!(m.record(false, 0, T0), Verdict::BelowMinimumCalls);
        let totals = {
            m.record(false, 0, T0);
            m.totals(T0)
        };
        let (fr, sr) = m.rates(&totals);
        assert_eq!(fr, Some(1.0f32 * 100.0 / 3.0));
        assert_eq!(format!("{:.2}", fr.unwrap()), "33.33");
        assert_eq!(sr, Some(0.0));
    }

    #[test]
    fn empty_window_records_nothing() {
        let mut m = StateMetrics::empty(&Config::default());
        assert_eq!(m.record(true, 0, T0), Verdict::Unchanged);
        assert_eq!(m.totals(T0), Totals::default());
    }
}
