//! What one bulkhead is made of, and the steps every way of taking a place shares.
//!
//! [`BulkheadCore`] is the bulkhead behind every [`Bulkhead`] handle: its name, what it shares
//! with its registry ([`Env`]), its places and waiters ([`Semaphore`]), its configuration and
//! its listeners. Its fields are private to this file. The steps here are the ones every path
//! ends with: turn a grant or a refusal into the call's result and its event, give a place
//! back, publish.
//!
//! This file uses no other file of the bulkhead but `semaphore.rs` and `event.rs`: the waits
//! (`acquire.rs`) and the permits (`permit.rs`) are built on it, and the public API (`mod.rs`)
//! on all three.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::bulkhead::event::{BulkheadEvent, BulkheadEventKind};
use crate::bulkhead::semaphore::Semaphore;
use crate::config::bulkhead::BulkheadConfig;
use crate::env::Env;
use crate::error::BulkheadFull;
use crate::event::audience::Audience;
use crate::event::listeners::Subscription;
use crate::sync::{AtomicU64, Mutex, MutexGuard};
use crate::time::timestamp::duration_nanos;

/// A bulkhead. Cloning gives another handle to the same bulkhead.
///
/// The semantics are Resilience4j's `SemaphoreBulkhead`, with one deliberate difference:
/// [`change_config`](Bulkhead::change_config) with a lower limit never blocks the caller (see
/// there).
#[derive(Clone)]
pub struct Bulkhead {
    pub(super) core: Arc<BulkheadCore>,
}

/// One bulkhead's state: its places and waiters, its configuration, its listeners.
///
/// A refusal without waiting reads the semaphore's word, asks the [`Audience`] whether anyone
/// listens (its own list and its registry's, both held here) and returns the name, interned
/// for the process: it touches no reference count, and when nobody listens it calls nothing.
pub(crate) struct BulkheadCore {
    name: &'static str,
    env: Arc<Env>,
    semaphore: Semaphore,
    /// The current configuration; its lock also orders configuration changes.
    config: Mutex<BulkheadConfig>,
    /// `max-wait-duration` in nanoseconds, read by every call that finds no free place.
    max_wait_nanos: AtomicU64,
    /// Its own listeners and its registry's.
    audience: Audience<BulkheadEvent>,
}

impl BulkheadCore {
    /// A bulkhead with every place free, on `env`'s clock, scheduler and listeners.
    pub(super) fn new(name: &str, config: BulkheadConfig, env: Arc<Env>) -> BulkheadCore {
        BulkheadCore {
            name: crate::name::intern_static(name),
            semaphore: Semaphore::new(
                config.max_concurrent_calls(),
                config.fair_call_handling_enabled(),
            ),
            max_wait_nanos: AtomicU64::new(duration_nanos(config.max_wait_duration())),
            config: Mutex::new(config),
            audience: Audience::new(Arc::clone(env.bulkhead_listeners())),
            env,
        }
    }

    pub(super) fn name(&self) -> &str {
        self.name
    }

    /// What the bulkhead shares with its registry: the clock, the scheduler, the listeners.
    pub(super) fn env(&self) -> &Env {
        &self.env
    }

    /// The places and the waiting calls.
    pub(super) fn semaphore(&self) -> &Semaphore {
        &self.semaphore
    }

    /// Adds a listener of the bulkhead's own.
    pub(super) fn subscribe(
        &self,
        listener: Arc<dyn Fn(&BulkheadEvent) + Send + Sync>,
    ) -> Subscription {
        self.audience.subscribe(listener)
    }

    pub(super) fn lock_config(&self) -> MutexGuard<'_, BulkheadConfig> {
        self.config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the configuration: the wait and the places first, then the stored config,
    /// all under the config's lock so that two changes apply in one order.
    pub(super) fn reconfigure(&self, config: BulkheadConfig) {
        let mut current = self.lock_config();
        self.max_wait_nanos.store(
            duration_nanos(config.max_wait_duration()),
            Ordering::Relaxed,
        );
        self.semaphore.reconfigure(
            config.max_concurrent_calls(),
            config.fair_call_handling_enabled(),
        );
        *current = config;
    }

    pub(super) fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.max_wait_nanos.load(Ordering::Relaxed))
    }

    /// Whether the bulkhead left the registry that made it.
    #[inline]
    pub(super) fn is_detached(&self) -> bool {
        self.audience.is_detached()
    }

    /// Stops the registry's listeners hearing this bulkhead.
    pub(super) fn detach(&self) {
        self.audience.detach();
    }

    /// A free place now, or a refusal.
    #[inline(always)]
    pub(super) fn try_acquire(&self) -> Result<(), BulkheadFull> {
        let granted = self.semaphore.try_acquire();
        self.conclude(granted)
    }

    /// Publishes the end of a wait, and turns it into the call's result. Inlined into every
    /// caller, down to the question whether anyone listens: a grant or a refusal nobody
    /// hears calls nothing.
    #[inline(always)]
    pub(super) fn conclude(&self, granted: bool) -> Result<(), BulkheadFull> {
        if granted {
            self.publish(BulkheadEventKind::CallPermitted);
            Ok(())
        } else {
            self.publish(BulkheadEventKind::CallRejected);
            Err(BulkheadFull::new(self.name))
        }
    }

    /// A permit is dropped: the place goes back, then `CALL_FINISHED` is published.
    #[inline(always)]
    pub(super) fn finish(&self) {
        self.semaphore.release();
        self.publish(BulkheadEventKind::CallFinished);
    }

    /// Publishes to the bulkhead's listeners, then its registry's; builds nothing when nobody
    /// listens.
    #[inline(always)]
    fn publish(&self, kind: BulkheadEventKind) {
        if self.audience.wants_call_events() {
            self.publish_to(kind);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_to(&self, kind: BulkheadEventKind) {
        let event = BulkheadEvent::new(self.name, self.env.clock().now(), kind);
        self.audience.deliver(&event);
    }
}
