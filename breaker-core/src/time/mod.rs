//! Time, injected: timestamps, the clocks, and the timer scheduler.
//!
//! `timestamp` is the leaf every other part reads; `clock` is the system or manual source;
//! `manual` is the test clock, which runs due timers through the small [`manual::DueTimers`]
//! trait; `scheduler` is one due-time queue per registry, which wakes its targets (breakers,
//! keyed groups' sweeps, the metrics export) through the [`scheduler::TimerTarget`] trait with
//! a token each target chose. Neither the clock nor the scheduler knows any of their types, so
//! another pattern sets its timers the same way.

pub(crate) mod clock;
pub(crate) mod manual;
pub(crate) mod scheduler;
pub(crate) mod timestamp;
