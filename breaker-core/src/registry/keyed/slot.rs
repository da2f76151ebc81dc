//! One key's breaker in its group's map, with what eviction reads: the map and the
//! per-thread cache (`recent.rs`) both hold it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::breaker::CircuitBreaker;
use crate::state::State;
use crate::time::timestamp::Timestamp;

/// One key's breaker, with what eviction reads.
pub(super) struct Slot {
    pub(super) breaker: CircuitBreaker,
    /// A lookup used it since the last sweep.
    pub(super) used: AtomicBool,
    /// When a sweep last found it used (or it was made), in Unix nanoseconds.
    pub(super) seen: AtomicU64,
}

impl Slot {
    #[inline]
    pub(super) fn mark_used(&self) {
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
    }

    /// Whether evicting it loses nothing a caller relies on: it lets calls through as a fresh
    /// breaker would, or its OPEN wait is over.
    pub(super) fn may_evict(&self, now: Timestamp) -> bool {
        match self.breaker.state() {
            State::Closed | State::Disabled | State::MetricsOnly => true,
            State::Open => self.breaker.core.open_wait_elapsed(now),
            State::HalfOpen | State::ForcedOpen => false,
        }
    }
}
