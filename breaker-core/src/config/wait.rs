//! How long each OPEN lasts, and each wait before a retry: the wait interval that
//! Resilience4j's `IntervalFunction` computes from `wait-duration-in-open-state` (or the
//! retry's `wait-duration`) and the backoff keys.

use std::time::Duration;

/// How long each OPEN lasts, attempt after attempt: what
/// [`Config::wait_interval`](super::Config::wait_interval) makes of
/// `wait-duration-in-open-state`, `enable-exponential-backoff` (with
/// `exponential-backoff-multiplier` and `exponential-max-wait-duration-in-open-state`) and
/// `enable-randomized-wait` (with `randomized-wait-factor`).
///
/// Each variant is one of Resilience4j's `IntervalFunction` factories; the attempt counts the
/// OPEN states since the breaker was last CLOSED, from 1. A retry's waits are the same
/// computation ([`RetryConfig::wait_interval`](crate::RetryConfig::wait_interval), with
/// `wait-duration` as the base), the attempt being the failed attempts so far.
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
    /// The interval the backoff keys describe: `base` (`wait-duration-in-open-state`, or the
    /// retry's `wait-duration`), with `exponential` (multiplier and maximum) when
    /// `enable-exponential-backoff` is set and `randomized` (the factor) when
    /// `enable-randomized-wait` is.
    pub(crate) fn from_keys(
        base: Duration,
        exponential: Option<(f64, Option<Duration>)>,
        randomized: Option<f64>,
    ) -> WaitInterval {
        match (exponential, randomized) {
            (None, None) => WaitInterval::Fixed { wait: base },
            (Some((multiplier, max)), None) => WaitInterval::Exponential {
                initial: base,
                multiplier,
                max,
            },
            (None, Some(factor)) => WaitInterval::Randomized { wait: base, factor },
            (Some((multiplier, max)), Some(factor)) => WaitInterval::ExponentialRandomized {
                initial: base,
                multiplier,
                factor,
                max,
            },
        }
    }

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

impl WaitInterval {
    /// How long OPEN waits on `attempt` (1 for the first OPEN since the breaker was last
    /// CLOSED), with `uniform` a number drawn uniformly from `[0, 1)` for the randomized
    /// kinds.
    ///
    /// The backoff kinds compute in whole milliseconds as Resilience4j's `IntervalFunction`
    /// does: the exponential wait starts at the base and is multiplied and truncated once per
    /// attempt (`w(n+1) = floor(w(n) * multiplier)`); a randomized wait is drawn from
    /// `[w - factor * w, w + factor * w)` and truncated; the maximum bounds the result last.
    /// The fixed kind keeps the configured duration exactly.
    pub fn wait(&self, attempt: u32, uniform: f64) -> Duration {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let capped = |w: u64, max: Option<Duration>| max.map_or(w, |max| w.min(ms(max)));
        let millis = match *self {
            WaitInterval::Fixed { wait } => return wait,
            WaitInterval::Exponential {
                initial,
                multiplier,
                max,
            } => capped(
                exponential(ms(initial), multiplier, attempt, max.map(ms)),
                max,
            ),
            WaitInterval::Randomized { wait, factor } => randomize(ms(wait), factor, uniform),
            WaitInterval::ExponentialRandomized {
                initial,
                multiplier,
                factor,
                max,
            } => {
                let w = exponential(ms(initial), multiplier, attempt, None);
                capped(randomize(w, factor, uniform), max)
            }
        };
        Duration::from_millis(millis)
    }
}

/// The exponential wait of `attempt`: `initial` multiplied (and truncated) `attempt - 1` times.
/// Stops early once the wait no longer changes (every later one is the same) or, when waits
/// grow, once it reaches `stop` (a bound that caps every later one), so a breaker that has
/// cycled a million times does not loop a million times. Shrinking waits (a multiplier below 1)
/// never stop at the bound: they pass back under it.
fn exponential(initial: u64, multiplier: f64, attempt: u32, stop: Option<u64>) -> u64 {
    let grows = multiplier >= 1.0;
    let mut w = initial;
    for _ in 1..attempt.max(1) {
        // `as` saturates (and maps NaN to 0), as Java's cast of a double to a long does.
        let next = (w as f64 * multiplier) as u64;
        if next == w {
            break;
        }
        if grows && stop.is_some_and(|stop| next >= stop) {
            return next;
        }
        w = next;
    }
    w
}

/// A wait drawn uniformly from `[w - factor * w, w + factor * w)`, truncated to milliseconds.
fn randomize(w: u64, factor: f64, uniform: f64) -> u64 {
    let current = w as f64;
    let delta = factor * current;
    let (min, max) = (current - delta, current + delta);
    (min + uniform * (max - min)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn exponential_waits_grow_truncate_and_stop_at_the_maximum() {
        let exp = WaitInterval::Exponential {
            initial: S,
            multiplier: 1.5,
            max: Some(Duration::from_secs(5)),
        };
        let waits: Vec<u64> = (1..=7)
            .map(|n| exp.wait(n, 0.0).as_millis() as u64)
            .collect();
        // 1000, 1500, 2250, 3375, 5062 -> capped at 5000.
        assert_eq!(waits, [1000, 1500, 2250, 3375, 5000, 5000, 5000]);
        // Truncated at every step, as Java's (long) cast: 7 * 1.5 = 10.5 -> 10 -> 15.
        let small = WaitInterval::Exponential {
            initial: Duration::from_millis(7),
            multiplier: 1.5,
            max: None,
        };
        assert_eq!(small.wait(3, 0.0), Duration::from_millis(15));
        // A million cycles in, without a maximum: saturates instead of looping forever.
        let unbounded = WaitInterval::Exponential {
            initial: S,
            multiplier: 2.0,
            max: None,
        };
        assert_eq!(
            unbounded.wait(1_000_000, 0.0).as_millis(),
            u128::from(u64::MAX)
        );
    }

    #[test]
    fn a_shrinking_wait_is_capped_only_while_it_is_above_the_maximum() {
        // A multiplier below 1 with a first wait above the maximum: each wait is the maximum
        // until the shrinking wait passes under it (Resilience4j takes the minimum of the two
        // at every attempt): 10000 -> 5000 (capped), 5000, 2500, 1250.
        let shrinking = WaitInterval::Exponential {
            initial: Duration::from_secs(10),
            multiplier: 0.5,
            max: Some(Duration::from_secs(5)),
        };
        let waits: Vec<u64> = (1..=4)
            .map(|n| shrinking.wait(n, 0.0).as_millis() as u64)
            .collect();
        assert_eq!(waits, [5000, 5000, 2500, 1250]);
    }

    #[test]
    fn randomized_waits_stay_within_the_factor() {
        let random = WaitInterval::Randomized {
            wait: Duration::from_secs(10),
            factor: 0.5,
        };
        assert_eq!(random.wait(1, 0.0), Duration::from_secs(5));
        assert_eq!(random.wait(9, 0.5), Duration::from_secs(10));
        assert!(random.wait(1, 0.999_999) < Duration::from_secs(15));
        let both = WaitInterval::ExponentialRandomized {
            initial: S,
            multiplier: 2.0,
            factor: 0.5,
            max: Some(Duration::from_secs(3)),
        };
        // Attempt 2: 2000 ms, randomized to [1000, 3000), then capped at 3000.
        assert_eq!(both.wait(2, 0.0), Duration::from_millis(1000));
        assert_eq!(both.wait(2, 0.75), Duration::from_millis(2500));
        assert_eq!(both.wait(3, 0.75), Duration::from_millis(3000));
    }

    #[test]
    fn a_fixed_wait_is_the_configured_duration() {
        let fixed = WaitInterval::Fixed {
            wait: Duration::from_micros(1_500),
        };
        assert_eq!(fixed.wait(4, 0.3), Duration::from_micros(1_500));
    }
}
