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
use crate::event::listeners::Listeners;
use crate::name::Name;
use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard};
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
pub(crate) struct BulkheadCore {
    name: Name,
    env: Arc<Env>,
    semaphore: Semaphore,
    /// The current configuration; its lock also orders configuration changes.
    config: Mutex<BulkheadConfig>,
    /// `max-wait-duration` in nanoseconds, read by every call that finds no free place.
    max_wait_nanos: AtomicU64,
    listeners: Arc<Listeners<BulkheadEvent>>,
    /// Removed from its registry: the registry's listeners no longer hear it.
    detached: AtomicBool,
}

impl BulkheadCore {
    /// A bulkhead with every place free, on `env`'s clock, scheduler and listeners.
    pub(super) fn new(name: &str, config: BulkheadConfig, env: Arc<Env>) -> BulkheadCore {
        BulkheadCore {
            name: crate::name::intern(name),
            semaphore: Semaphore::new(
                config.max_concurrent_calls(),
                config.fair_call_handling_enabled(),
            ),
            max_wait_nanos: AtomicU64::new(duration_nanos(config.max_wait_duration())),
            config: Mutex::new(config),
            env,
            listeners: Arc::default(),
            detached: AtomicBool::new(false),
        }
    }

    pub(super) fn name(&self) -> &str {
        self.name.as_str()
    }

    /// What the bulkhead shares with its registry: the clock, the scheduler, the listeners.
    pub(super) fn env(&self) -> &Env {
        &self.env
    }

    /// The places and the waiting calls.
    pub(super) fn semaphore(&self) -> &Semaphore {
        &self.semaphore
    }

    /// The bulkhead's own listeners.
    pub(super) fn listeners(&self) -> &Arc<Listeners<BulkheadEvent>> {
        &self.listeners
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
        self.detached.load(Ordering::Relaxed)
    }

    /// Stops the registry's listeners hearing this bulkhead.
    pub(super) fn detach(&self) {
        self.detached.store(true, Ordering::Relaxed);
    }

    /// A free place now, or a refusal.
    #[inline]
    pub(super) fn try_acquire(&self) -> Result<(), BulkheadFull> {
        let granted = self.semaphore.try_acquire();
        self.conclude(granted)
    }

    /// Publishes the end of a wait, and turns it into the call's result.
    #[inline]
    pub(super) fn conclude(&self, granted: bool) -> Result<(), BulkheadFull> {
        if granted {
            self.publish(BulkheadEventKind::CallPermitted);
            Ok(())
        } else {
            Err(self.refuse())
        }
    }

    /// Publishes a refusal, and returns its error.
    #[inline]
    fn refuse(&self) -> BulkheadFull {
        self.publish(BulkheadEventKind::CallRejected);
        BulkheadFull::new(self.name.clone())
    }

    /// A permit is dropped: the place goes back, then `CALL_FINISHED` is published.
    #[inline]
    pub(super) fn finish(&self) {
        self.semaphore.release();
        self.publish(BulkheadEventKind::CallFinished);
    }

    /// Publishes to the bulkhead's listeners, then its registry's; builds nothing when nobody
    /// listens.
    #[inline]
    fn publish(&self, kind: BulkheadEventKind) {
        let registry = self.env.bulkhead_listeners();
        let to_registry = !registry.is_empty() && !self.is_detached();
        if to_registry || !self.listeners.is_empty() {
            self.publish_to(kind, to_registry.then_some(registry));
        }
    }

    #[cold]
    fn publish_to(&self, kind: BulkheadEventKind, registry: Option<&Listeners<BulkheadEvent>>) {
        let event = BulkheadEvent::new(self.name.clone(), self.env.clock().now(), kind);
        self.listeners.publish(&event);
        if let Some(registry) = registry {
            registry.publish(&event);
        }
    }
}
