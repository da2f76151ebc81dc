//! Permission to make one call, as a value.

use std::fmt;
use std::time::Duration;

use crate::breaker::Shared;
use crate::clock::{duration_nanos, Timestamp};

/// How a call ended, as the breaker counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A success (slow if it took longer than `slow-call-duration-threshold`).
    Success,
    /// A failure (slow if it took longer than `slow-call-duration-threshold`).
    Failure,
    /// Neither: an error the breaker ignores (for example a 4xx caused by bad input). A trial
    /// permit in HALF_OPEN is given back.
    Ignored,
}

/// Permission to make one call, granted by [`CircuitBreaker::try_acquire`].
///
/// Complete it with the call's outcome ([`success`](Permit::success),
/// [`failure`](Permit::failure), [`ignore`](Permit::ignore), or [`record`](Permit::record) with
/// a measured duration). Dropping it without an outcome (a cancelled call) gives it back and
/// records nothing, so a future dropped mid-flight never keeps a half-open trial permit.
///
/// [`CircuitBreaker::try_acquire`]: crate::CircuitBreaker::try_acquire
#[must_use = "a permit that is dropped at once records nothing; complete it with the call's outcome"]
pub struct Permit<'a> {
    breaker: &'a Shared,
    state_id: u64,
    start: Timestamp,
}

impl<'a> Permit<'a> {
    pub(crate) fn new(breaker: &'a Shared, state_id: u64, start: Timestamp) -> Permit<'a> {
        Permit {
            breaker,
            state_id,
            start,
        }
    }

    /// When the permit was granted, on the breaker's clock.
    pub fn started_at(&self) -> Timestamp {
        self.start
    }

    /// Time since the permit was granted, on the breaker's clock.
    pub fn elapsed(&self) -> Duration {
        self.breaker
            .clock()
            .now()
            .saturating_duration_since(self.start)
    }

    /// Records the call's outcome with a duration measured by the caller.
    pub fn record(self, outcome: Outcome, elapsed: Duration) {
        let now = self.breaker.clock().now();
        self.complete(outcome, duration_nanos(elapsed), now);
    }

    /// Records the outcome of a call that took the time since the permit was granted (one
    /// clock read).
    #[inline]
    pub fn finish(self, outcome: Outcome) {
        let (breaker, state_id, start) = (self.breaker, self.state_id, self.start);
        std::mem::forget(self);
        breaker.finish(state_id, start, outcome);
    }

    /// Records a success that took the time since the permit was granted.
    pub fn success(self) {
        self.finish(Outcome::Success);
    }

    /// Records a failure that took the time since the permit was granted.
    pub fn failure(self) {
        self.finish(Outcome::Failure);
    }

    /// Records an ignored error: neither success nor failure.
    pub fn ignore(self) {
        self.finish(Outcome::Ignored);
    }

    #[inline]
    fn complete(self, outcome: Outcome, elapsed: u64, now: Timestamp) {
        // Completed: no give-back on drop.
        let (breaker, state_id) = (self.breaker, self.state_id);
        std::mem::forget(self);
        breaker.complete(state_id, outcome, elapsed, now);
    }

    /// Gives the permit back without recording anything (what dropping it does).
    pub fn release(self) {}
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.breaker.release(self.state_id);
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("breaker", &self.breaker.name())
            .field("started_at", &self.start)
            .finish_non_exhaustive()
    }
}
