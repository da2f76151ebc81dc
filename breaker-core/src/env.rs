//! What the members of one registry share: its clock, its timer queue, the listeners of its
//! breakers', bulkheads' and retries' events, and the seed of their random draws.
//!
//! A registry makes one [`Env`] and hands it to every breaker it builds (plain or keyed) and to
//! the exporters; a breaker built alone gets a process-wide one on the system clock. Nothing
//! here knows a pattern's state: a second pattern (a bulkhead, a retry) reads the same clock,
//! schedules on the same queue with a token of its own (`time::scheduler`), and keeps the
//! listeners of its own events beside `breaker_listeners`.

use std::sync::Arc;

use crate::bulkhead::event::BulkheadEvent;
use crate::event::listeners::Listeners;
use crate::retry::event::RetryEvent;
use crate::time::clock::Clock;
use crate::time::scheduler::Scheduler;

/// What the members of one registry share.
#[derive(Debug)]
pub(crate) struct Env {
    clock: Clock,
    scheduler: Scheduler,
    breaker_listeners: Arc<Listeners>,
    bulkhead_listeners: Arc<Listeners<BulkheadEvent>>,
    retry_listeners: Arc<Listeners<RetryEvent>>,
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
            retry_listeners: Arc::default(),
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

    /// The registry's listeners of its retries' events.
    #[inline]
    pub(crate) fn retry_listeners(&self) -> &Arc<Listeners<RetryEvent>> {
        &self.retry_listeners
    }

    /// The start of the random sequence of the member called `name`: the registry's seed
    /// mixed with the name (FNV-1a), so that members of one registry do not draw the same
    /// waits, and a fixed seed gives each member the same draws in every run.
    pub(crate) fn sequence_start(&self, name: &str) -> u64 {
        name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        }) ^ self.seed
    }
}

/// The next number of a SplitMix64 sequence whose state was advanced to `state`, as a
/// fraction drawn uniformly from `[0, 1)`.
pub(crate) fn uniform_at(state: u64) -> f64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits, as a fraction of 2^53.
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The step a SplitMix64 sequence's state advances by at each draw.
pub(crate) const SEQUENCE_STEP: u64 = 0x9E37_79B9_7F4A_7C15;
