//! Time, injected: timestamps, the clocks, and the timer scheduler.
//!
//! `timestamp` is the leaf every other part reads; `clock` is the system or manual source;
//! `manual` is the test clock, which runs due timers through the small [`manual::DueTimers`]
//! trait; `scheduler` is one due-time queue per registry, which acts on breakers through the
//! [`scheduler::TimerTarget`] trait. Neither the clock nor the scheduler knows the breaker's
//! type.

pub(crate) mod clock;
pub(crate) mod manual;
pub(crate) mod scheduler;
pub(crate) mod timestamp;
