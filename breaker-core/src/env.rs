//! What the members of one registry share: its clock, its timer queue, the listeners of its
//! breakers' and bulkheads' events, and the seed of their random draws.
//!
//! A registry makes one [`Env`] and hands it to every breaker it builds (plain or keyed) and to
//! the exporters; a breaker built alone gets a process-wide one on the system clock. Nothing
//! here knows a pattern's state: a second pattern (a bulkhead, a retry) reads the same clock,
//! schedules on the same queue with a token of its own (`time::scheduler`), and keeps the
//! listeners of its own events beside `breaker_listeners`.

use std::sync::Arc;

use crate::bulkhead::event::BulkheadEvent;
use crate::event::listeners::Listeners;
use crate::time::clock::Clock;
use crate::time::scheduler::Scheduler;

/// What the members of one registry share.
#[derive(Debug)]
pub(crate) struct Env {
    clock: Clock,
    scheduler: Scheduler,
    breaker_listeners: Arc<Listeners>,
    bulkhead_listeners: Arc<Listeners<BulkheadEvent>>,
    /// The seed of the members' random draws (randomized waits in OPEN).
    seed: u64,
}

impl Env {
    /// A registry's environment; without a seed, a different one in every process.
    pub(crate) fn new(clock: Clock, seed: Option<u64>) -> Arc<Env> {
        let seed = seed.unwrap_or_else(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        });
        Arc::new(Env {
            scheduler: Scheduler::new(clock.clone()),
            clock,
            breaker_listeners: Arc::default(),
            bulkhead_listeners: Arc::default(),
            seed,
        })
    }

    /// The environment of the breakers and bulkheads made outside any registry: the system
    /// clock, and one scheduler for all of them.
    pub(crate) fn standalone() -> Arc<Env> {
        static STANDALONE: once_cell::sync::Lazy<Arc<Env>> =
            once_cell::sync::Lazy::new(|| Env::new(Clock::system(), None));
        Arc::clone(&STANDALONE)
    }

    /// The registry's clock.
    #[inline]
    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The registry's timer queue.
    #[inline]
    pub(crate) fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The registry's listeners of its breakers' events.
    #[inline]
    pub(crate) fn breaker_listeners(&self) -> &Arc<Listeners> {
        &self.breaker_listeners
    }

    /// The registry's listeners of its bulkheads' events.
    #[inline]
    pub(crate) fn bulkhead_listeners(&self) -> &Arc<Listeners<BulkheadEvent>> {
        &self.bulkhead_listeners
    }

    /// The seed of the members' random draws.
    #[inline]
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }
}
