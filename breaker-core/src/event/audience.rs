//! Who hears one instance's events (a breaker's or a bulkhead's): its own listeners, and its
//! registry's while it is in the registry.
//!
//! Every call asks whether anyone listens before it builds an event, so the question is kept
//! to the fewest loads: both lists are held here directly (the registry's without going
//! through the registry's environment), and a list nobody ever subscribed to answers with one
//! load of a null pointer.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::event::listeners::{ListenedEvent, Listeners, Subscription};
use crate::event::Event;
use crate::sync::AtomicBool;

/// Who hears one instance's events: its own listeners, and its registry's while it is in the
/// registry.
pub(crate) struct Audience<E: ListenedEvent = Event> {
    listeners: Arc<Listeners<E>>,
    /// The registry's listeners, held here so that the hot path reaches them with one pointer
    /// less than through the registry.
    registry: Arc<Listeners<E>>,
    /// Removed from its registry (removed, replaced or evicted): the instance goes on working
    /// for the handles that hold it, but the registry's listeners no longer hear it.
    detached: AtomicBool,
}

impl<E: ListenedEvent> Audience<E> {
    /// An instance's audience: no listener of its own yet, and `registry`'s.
    pub(crate) fn new(registry: Arc<Listeners<E>>) -> Audience<E> {
        Audience {
            listeners: Arc::default(),
            registry,
            detached: AtomicBool::new(false),
        }
    }

    /// Adds a listener of the instance's own.
    pub(crate) fn subscribe(&self, listener: Arc<dyn Fn(&E) + Send + Sync>) -> Subscription {
        self.listeners.add(listener, false)
    }

    /// Adds a listener of the instance's own that gets the detailed event where there is one
    /// (a breaker's error texts).
    pub(crate) fn subscribe_detailed(
        &self,
        listener: Arc<dyn Fn(&E) + Send + Sync>,
    ) -> Subscription {
        self.listeners.add(listener, true)
    }

    /// Whether the instance was removed from its registry.
    #[inline]
    pub(crate) fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Relaxed)
    }

    /// The instance left its registry: the registry's listeners stop hearing it.
    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Relaxed);
    }

    /// Whether anyone hears a call's event, so that it is worth building.
    #[inline(always)]
    pub(crate) fn wants_call_events(&self) -> bool {
        !self.listeners.is_empty() || self.registry_hears()
    }

    /// Whether the registry's listeners hear this instance: someone listens, and the instance
    /// is still in its registry.
    #[inline(always)]
    fn registry_hears(&self) -> bool {
        !self.registry.is_empty() && !self.is_detached()
    }

    /// Whether a listener that hears the instance asked for detailed events: asked on the
    /// path of a failed call only, before the breaker builds the error's text.
    pub(crate) fn wants_detail(&self) -> bool {
        self.listeners.wants_detail() || (self.registry_hears() && self.registry.wants_detail())
    }

    /// Hands `event` to the instance's listeners, then to the registry's if they hear it.
    #[inline(always)]
    pub(crate) fn deliver(&self, event: &E) {
        self.listeners.publish(event);
        if self.registry_hears() {
            self.registry.publish(event);
        }
    }

    /// [`deliver`](Audience::deliver) in two forms: `detailed` to the listeners that asked
    /// for it, `plain` to the others.
    pub(crate) fn deliver_detailed(&self, plain: &E, detailed: &E) {
        self.listeners.publish_detailed(plain, detailed);
        if self.registry_hears() {
            self.registry.publish_detailed(plain, detailed);
        }
    }
}
