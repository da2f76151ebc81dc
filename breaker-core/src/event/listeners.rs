//! Listener lists: a breaker's own, or a registry's (which hears every breaker); the same for
//! bulkheads, whose lists carry their own event type (the list is generic over it, the
//! breaker's [`Event`] by default).
//!
//! Listeners are called on the thread that caused the event, after the breaker's state has
//! changed and with no lock of the breaker held. A listener that panics is logged and skipped;
//! it poisons nothing and the breaker goes on.
//!
//! # Why not a crate
//!
//! Every protected call asks both of its lists whether anyone listens (the lock-free CLOSED
//! completion and the OPEN rejection included), and the registry's list is read by every breaker of
//! the registry, on every thread. So reading the current list must be a plain load that writes
//! nothing shared, while a change (subscribe, unsubscribe) may be slow. arc-swap's
//! `ArcSwapOption<Vec<_>>` is this exact shape and frees the lists it replaces, which this one does
//! not, but each `load` stores the pointer into a thread-local debt slot with SeqCst and loads it
//! again to confirm (a full barrier on x86), and `load_full` instead increments the shared
//! reference count: a cost on every call to save memory on every subscription change. A
//! `RwLock<Vec<_>>` (std's, or parking_lot's) costs an atomic read-modify-write on the shared lock
//! word to take the read lock and another to release it, for each list, per call. Here a read is
//! one Acquire load (a plain load on x86). The price, kept because subscriptions change a few times
//! in a process's life: every list ever published is kept until the `Listeners` drops, so memory
//! grows with the number of changes times the list's length, and a listener's closure (with what it
//! captured) is freed only then, not when its `Subscription` is dropped (it stops being called at
//! once).

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::event::Event;
use crate::log_safe::LogSafe;
use crate::sync::{AtomicPtr, AtomicU64, Mutex, Published};

type Listener<E> = Arc<dyn Fn(&E) + Send + Sync>;
type List<E> = Vec<Entry<E>>;

/// One subscribed listener.
struct Entry<E> {
    id: u64,
    listener: Listener<E>,
    /// Whether it asked for the detailed event where there is one (a breaker's listener
    /// subscribed with error texts).
    detailed: bool,
}

impl<E> Clone for Entry<E> {
    fn clone(&self) -> Self {
        Entry {
            id: self.id,
            listener: Arc::clone(&self.listener),
            detailed: self.detailed,
        }
    }
}

/// An event a listener list carries: it writes the log line of a listener that panicked on
/// it, naming the instance it is about.
pub(crate) trait ListenedEvent: 'static {
    /// Logs that a listener panicked on this event.
    fn log_listener_panic(&self);
}

impl ListenedEvent for Event {
    fn log_listener_panic(&self) {
        tracing::error!(
            breaker = %LogSafe(self.breaker_name()),
            "breaker: an event listener panicked; the event was skipped for it"
        );
    }
}

/// A list of listeners: a breaker's own, or a registry's (which hears every breaker).
///
/// Publishing reads the current list with one atomic load and no lock: every change builds a
/// new list and publishes it, and old lists are kept until the `Listeners` is dropped, since a
/// publisher may still be reading one. Subscriptions change rarely, so that memory stays small.
pub(crate) struct Listeners<E: ListenedEvent = Event> {
    current: AtomicPtr<Published<List<E>>>,
    next_id: AtomicU64,
    /// Every list ever published (the current one last); freed on drop.
    lists: Mutex<Vec<OwnedList<E>>>,
}

/// A published list, owned through a raw pointer so that readers' shared references to it stay
/// valid while the owner moves around.
struct OwnedList<E>(*mut Published<List<E>>);

// SAFETY: an `OwnedList` is a `Box<Published<List>>` in raw form; `List` holds `Send + Sync`
// listeners, so sending or sharing the pointer is as safe as sending or sharing the box.
unsafe impl<E> Send for OwnedList<E> {}
// SAFETY: as above.
unsafe impl<E> Sync for OwnedList<E> {}

impl<E: ListenedEvent> Drop for Listeners<E> {
    fn drop(&mut self) {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        for OwnedList(p) in lists.drain(..) {
            // SAFETY: each pointer came from `Box::into_raw` in `replace` and is freed once,
            // here; no reader is left, since we have `&mut self`.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl<E: ListenedEvent> Default for Listeners<E> {
    fn default() -> Self {
        Listeners {
            current: AtomicPtr::new(ptr::null_mut()),
            next_id: AtomicU64::new(0),
            lists: Mutex::new(Vec::new()),
        }
    }
}

impl<E: ListenedEvent> Listeners<E> {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    /// Whether a listener asked for detailed events.
    pub(crate) fn wants_detail(&self) -> bool {
        self.current().iter().any(|entry| entry.detailed)
    }

    #[inline]
    fn current(&self) -> &[Entry<E>] {
        let p = self.current.load(Ordering::Acquire);
        if p.is_null() {
            return &[];
        }
        // SAFETY: `p` came from `Box::into_raw` in `replace` and is kept in `lists`, which
        // frees it only when `self` is dropped, which cannot happen while `&self` is borrowed.
        // A list is never mutated after it is published (the Release store in `replace`).
        unsafe { (*p).get() }
    }

    fn replace(&self, change: impl FnOnce(&mut List<E>)) {
        let mut lists = self.lists.lock().unwrap_or_else(|e| e.into_inner());
        let mut next: List<E> = self.current().to_vec();
        change(&mut next);
        let p = Box::into_raw(Box::new(Published::new(next)));
        lists.push(OwnedList(p));
        self.current.store(p, Ordering::Release);
    }

    /// Subscribes `listener`; `detailed`: it gets the detailed event where there is one.
    pub(crate) fn add(self: &Arc<Self>, listener: Listener<E>, detailed: bool) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.replace(|list| {
            list.push(Entry {
                id,
                listener,
                detailed,
            })
        });
        let weak: Weak<Self> = Arc::downgrade(self);
        Subscription {
            listeners: weak,
            id,
        }
    }

    #[inline(always)]
    pub(crate) fn publish(&self, event: &E) {
        for entry in self.current() {
            call(&entry.listener, event);
        }
    }

    /// Publishes one event in two forms: `detailed` to the listeners that asked for it,
    /// `plain` to the others.
    pub(crate) fn publish_detailed(&self, plain: &E, detailed: &E) {
        for entry in self.current() {
            call(
                &entry.listener,
                if entry.detailed { detailed } else { plain },
            );
        }
    }
}

/// Calls one listener, catching (and logging) its panic.
#[inline]
fn call<E: ListenedEvent>(listener: &Listener<E>, event: &E) {
    if catch_unwind(AssertUnwindSafe(|| listener(event))).is_err() {
        event.log_listener_panic();
    }
}

/// What a [`Subscription`] knows of its list, whatever the list's event type.
trait Unsubscribe: Send + Sync {
    fn remove(&self, id: u64);
}

impl<E: ListenedEvent> Unsubscribe for Listeners<E> {
    fn remove(&self, id: u64) {
        self.replace(|list| list.retain(|entry| entry.id != id));
    }
}

impl<E: ListenedEvent> fmt::Debug for Listeners<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listeners")
            .field("count", &self.current().len())
            .finish()
    }
}

/// Keeps a listener subscribed; dropping it unsubscribes. [`Subscription::forever`] keeps the
/// listener for the life of the breaker or registry.
#[must_use = "dropping a Subscription unsubscribes its listener at once"]
pub struct Subscription {
    listeners: Weak<dyn Unsubscribe>,
    id: u64,
}

impl Subscription {
    /// Keeps the listener subscribed for as long as its breaker or registry lives.
    pub fn forever(mut self) {
        self.listeners = Weak::<Listeners>::new();
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(listeners) = self.listeners.upgrade() {
            listeners.remove(self.id);
        }
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::breaker::metrics::{EventMetrics, OpenView};
    use crate::event::EventKind;
    use crate::time::timestamp::Timestamp;

    fn event() -> Event {
        let at = Timestamp::from_unix_millis(0);
        Event::new(
            crate::event::EventName::of(&crate::name::intern("listeners-test")),
            at,
            EventKind::Reset,
            None,
            EventMetrics::Taken(OpenView::default().load(0)),
        )
    }

    #[test]
    fn publishing_while_listeners_come_and_go() {
        // Miri runs this too, so the loops stay short there.
        let rounds = if cfg!(miri) { 20 } else { 2_000 };
        let listeners = Arc::new(Listeners::default());
        let kept = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&kept);
        let keep = listeners.add(
            Arc::new(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
            }),
            false,
        );
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..rounds {
                    listeners.publish(&event());
                }
            });
            s.spawn(|| {
                for _ in 0..rounds {
                    let passing = listeners.add(Arc::new(|_| {}), true);
                    assert!(!listeners.is_empty());
                    drop(passing);
                }
            });
        });
        // The kept listener heard every event, whatever list each publish read.
        assert_eq!(kept.load(Ordering::Relaxed), rounds);
        drop(keep);
        assert!(listeners.is_empty());
        // The last handle: frees every list it published.
        drop(listeners);
    }
}
