//! How long each OPEN lasts: the wait interval that Resilience4j's `IntervalFunction` computes
//! from `wait-duration-in-open-state` and the backoff keys.

use std::time::Duration;

/// How long each OPEN lasts, attempt after attempt: what
/// [`Config::wait_interval`](super::Config::wait_interval) makes of
/// `wait-duration-in-open-state`, `enable-exponential-backoff` (with
/// `exponential-backoff-multiplier` and `exponential-max-wait-duration-in-open-state`) and
/// `enable-randomized-wait` (with `randomized-wait-factor`).
///
/// Each variant is one of Resilience4j's `IntervalFunction` factories; the attempt counts the
/// OPEN states since the breaker was last CLOSED, from 1.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum WaitInterval {
    /// Every OPEN waits `wait` (`IntervalFunction.of`): the default.
    Fixed {
        /// `wait-duration-in-open-state`.
        wait: Duration,
    },
    /// Each OPEN waits `multiplier` times as long as the one before, from `initial`, at most
    /// `max` (`IntervalFunction.ofExponentialBackoff`).
    Exponential {
        /// `wait-duration-in-open-state`: the first wait.
        initial: Duration,
        /// `exponential-backoff-multiplier` (default 1.5).
        multiplier: f64,
        /// `exponential-max-wait-duration-in-open-state` (default: no bound).
        max: Option<Duration>,
    },
    /// Each OPEN waits a time drawn uniformly within `factor` of `wait` on either side
    /// (`IntervalFunction.ofRandomized`).
    Randomized {
        /// `wait-duration-in-open-state`.
        wait: Duration,
        /// `randomized-wait-factor` (default 0.5).
        factor: f64,
    },
    /// Both at once: the exponential wait of the attempt, drawn at random within `factor` of
    /// itself, then bounded by `max` (`IntervalFunction.ofExponentialRandomBackoff`). Spring
    /// Boot refuses a file that enables both; breaker's files and builder accept it.
    ExponentialRandomized {
        /// `wait-duration-in-open-state`: the first wait, before randomizing.
        initial: Duration,
        /// `exponential-backoff-multiplier` (default 1.5).
        multiplier: f64,
        /// `randomized-wait-factor` (default 0.5).
        factor: f64,
        /// `exponential-max-wait-duration-in-open-state` (default: no bound).
        max: Option<Duration>,
    },
}

impl WaitInterval {
    /// `wait-duration-in-open-state`: the wait of every OPEN, or of the first before backoff
    /// and randomizing.
    pub fn base(&self) -> Duration {
        match *self {
            WaitInterval::Fixed { wait } | WaitInterval::Randomized { wait, .. } => wait,
            WaitInterval::Exponential { initial, .. }
            | WaitInterval::ExponentialRandomized { initial, .. } => initial,
        }
    }

    /// Whether every OPEN waits the same: no backoff and no randomizing.
    pub fn is_fixed(&self) -> bool {
        matches!(self, WaitInterval::Fixed { .. })
    }
}
