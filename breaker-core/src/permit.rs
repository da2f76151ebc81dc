//! Permission to make one call, as a value.

use std::fmt;
use std::time::Duration;

use crate::breaker::Shared;
use crate::clock::Timestamp;

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
    done: bool,
}

impl<'a> Permit<'a> {
    pub(crate) fn new(breaker: &'a Shared, state_id: u64, start: Timestamp) -> Permit<'a> {
        Permit {
            breaker,
            state_id,
            start,
            done: false,
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
    pub fn record(mut self, outcome: Outcome, elapsed: Duration) {
        self.done = true;
        self.breaker.complete(self.state_id, outcome, elapsed);
    }

    /// Records a success that took the time since the permit was granted.
    pub fn success(self) {
        let elapsed = self.elapsed();
        self.record(Outcome::Success, elapsed);
    }

    /// Records a failure that took the time since the permit was granted.
    pub fn failure(self) {
        let elapsed = self.elapsed();
        self.record(Outcome::Failure, elapsed);
    }

    /// Records an ignored error: neither success nor failure.
    pub fn ignore(self) {
        let elapsed = self.elapsed();
        self.record(Outcome::Ignored, elapsed);
    }

    /// Gives the permit back without recording anything (what dropping it does).
    pub fn release(self) {}
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.breaker.release(self.state_id);
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("breaker", self.breaker.name())
            .field("started_at", &self.start)
            .finish_non_exhaustive()
    }
}
