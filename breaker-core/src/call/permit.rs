//! Permission to make one call, as a value, and the one way every call path gets it.

use std::any::Any;
use std::fmt;
use std::panic::resume_unwind;
use std::time::Duration;

use crate::breaker::shared::Shared;
use crate::classify::Outcome;
use crate::error::CallNotPermitted;
use crate::state::State;
use crate::time::timestamp::{duration_nanos, Timestamp};

impl Shared {
    /// Asks for permission to make one call: the step every call path takes (`try_acquire`,
    /// the sync call, the async call's first poll, the attribute).
    ///
    /// CLOSED, DISABLED and METRICS_ONLY permit without a lock; OPEN rejects without a lock
    /// until its wait is over; everything else (HALF_OPEN's trials, FORCED_OPEN, OPEN at the
    /// end of its wait) asks the state machine. Inlined into every caller: the two lock-free
    /// cases are the protected call's whole cost in the common states.
    #[inline(always)]
    pub(crate) fn acquire(&self) -> Result<Permit<'_>, CallNotPermitted> {
        if let Some((state_id, start)) = self.begin_unlimited() {
            return Ok(Permit::new(self, state_id, start));
        }
        if self.reject_while_open() {
            return Err(self.not_permitted_error(State::Open));
        }
        self.acquire_slow()
    }
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

    /// The call panicked: records a failure, then lets the panic go on. Every call path
    /// catches a panic of the protected code and hands it here.
    #[cold]
    pub(crate) fn panicked(self, payload: Box<dyn Any + Send>) -> ! {
        self.failure();
        resume_unwind(payload)
    }
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
