//! Rejected calls in the log, without flooding it: at most one DEBUG line per breaker per
//! second of the breaker's clock, saying how many calls were rejected since the previous line.
//!
//! An OPEN breaker under load rejects thousands of calls a second; one line each would drown
//! the log (and cost more than the rejection). The first rejection is logged at once
//! (`rejected=1`); later ones are counted, and the first rejection a second or more after the
//! last line writes the count (`rejected=N`, this call included). Rejections in the last
//! second before a breaker stops rejecting are not written (the `not_permitted` metrics count
//! every one). Nothing is done unless DEBUG is enabled for this target.
//!
//! Two atomics per breaker, no lock: the winner of a compare-exchange on the time of the last
//! line writes the next one.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::log_safe::LogSafe;
use crate::state::State;
use crate::time::clock::Clock;

/// The target of the lines, kept stable for log filters.
const TARGET: &str = "breaker_core::breaker";
const INTERVAL_NANOS: u64 = 1_000_000_000;

/// One breaker's rejection log.
#[derive(Debug, Default)]
pub(crate) struct RejectLog {
    /// The breaker clock's time of the last line, in Unix nanoseconds; 0 before the first.
    last_line: AtomicU64,
    /// Rejections since the last line.
    pending: AtomicU64,
}

impl RejectLog {
    /// Logs (or counts) one rejected call of the breaker `name`, which was in `state`.
    #[inline]
    pub(crate) fn note(&self, name: &str, state: State, clock: &Clock) {
        if tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
            self.log(name, state, clock);
        }
    }

    #[cold]
    fn log(&self, name: &str, state: State, clock: &Clock) {
        let now = clock.now().unix_nanos().max(1);
        self.pending.fetch_add(1, Ordering::Relaxed);
        let last = self.last_line.load(Ordering::Relaxed);
        let due = last == 0 || now >= last.saturating_add(INTERVAL_NANOS);
        if !due
            || self
                .last_line
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return; // counted; this second's line is written (or being written) by another call
        }
        let rejected = self.pending.swap(0, Ordering::Relaxed).max(1);
        tracing::debug!(
            target: TARGET,
            breaker = %LogSafe(name),
            state = %state,
            rejected,
            "calls not permitted"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use crate::{ManualClock, Registry, State};

    #[test]
    fn nothing_is_counted_when_debug_is_off() {
        // No subscriber on this thread: DEBUG is disabled, and nothing is counted.
        let registry = Registry::builder().clock(ManualClock::new()).build();
        let b = registry.breaker("reject-log-quiet");
        b.transition_to(State::ForcedOpen).unwrap();
        for _ in 0..10 {
            assert!(b.try_acquire().is_err());
        }
        let log = b.core.reject_log();
        assert_eq!(log.pending.load(Ordering::Relaxed), 0);
        assert_eq!(log.last_line.load(Ordering::Relaxed), 0);
    }
}
