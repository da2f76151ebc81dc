//! The event stream: every transition, every recorded or rejected call.
//!
//! Listeners are called on the thread that caused the event, after the breaker's state has
//! changed and with no lock of the breaker held. A listener that panics is logged and skipped;
//! it poisons nothing and the breaker goes on. Nothing is built when nobody listens.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use crate::clock::Timestamp;
use crate::state::State;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// The state changed (never published for a state to itself).
    StateTransition {
        /// The state left.
        from: State,
        /// The state entered.
        to: State,
    },
    /// A call was recorded as a success.
    Success {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call was recorded as a failure.
    Error {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call ended with an error that the breaker ignores: neither success nor failure.
    IgnoredError {
        /// How long it took.
        elapsed: Duration,
    },
    /// A call was rejected.
    NotPermitted,
    /// The failure rate reached its threshold.
    FailureRateExceeded {
        /// The rate, in percent.
        rate: f32,
    },
    /// The slow-call rate reached its threshold.
    SlowCallRateExceeded {
        /// The rate, in percent.
        rate: f32,
    },
    /// The breaker was reset to a fresh CLOSED state.
    Reset,
}

/// One event of one breaker.
#[derive(Clone, Debug)]
pub struct Event {
    name: Arc<str>,
    at: Timestamp,
    kind: EventKind,
}

impl Event {
    pub(crate) fn new(name: Arc<str>, at: Timestamp, kind: EventKind) -> Event {
        Event { name, at, kind }
    }

    /// The breaker's name.
    pub fn breaker_name(&self) -> &str {
        &self.name
    }

    /// When it happened, on the breaker's clock.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// What happened.
    pub fn kind(&self) -> EventKind {
        self.kind
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CircuitBreaker '{}': ", self.name)?;
        match self.kind {
            EventKind::StateTransition { from, to } => {
                write!(f, "state changed from {from} to {to}")
            }
            EventKind::Success { elapsed } => {
                write!(f, "recorded a successful call in {elapsed:?}")
            }
            EventKind::Error { elapsed } => write!(f, "recorded a failed call in {elapsed:?}"),
            EventKind::IgnoredError { elapsed } => {
                write!(f, "ignored an error after {elapsed:?}")
            }
            EventKind::NotPermitted => f.write_str("did not permit a call"),
            EventKind::FailureRateExceeded { rate } => {
                write!(f, "failure rate {rate:.2}% reached its threshold")
            }
            EventKind::SlowCallRateExceeded { rate } => {
                write!(f, "slow-call rate {rate:.2}% reached its threshold")
            }
            EventKind::Reset => f.write_str("was reset"),
        }
    }
}

type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// A list of listeners: a breaker's own, or a registry's (which hears every breaker).
#[derive(Default)]
pub(crate) struct Listeners {
    any: AtomicBool,
    next_id: AtomicU64,
    list: RwLock<Vec<(u64, Listener)>>,
}

impl Listeners {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    pub(crate) fn add(self: &Arc<Self>, listener: Listener) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut list = self.list.write().unwrap_or_else(|e| e.into_inner());
        list.push((id, listener));
        self.any.store(true, Ordering::Release);
        Subscription {
            listeners: Arc::downgrade(self),
            id,
        }
    }

    fn remove(&self, id: u64) {
        let mut list = self.list.write().unwrap_or_else(|e| e.into_inner());
        list.retain(|(i, _)| *i != id);
        self.any.store(!list.is_empty(), Ordering::Release);
    }

    pub(crate) fn publish(&self, event: &Event) {
        if self.is_empty() {
            return;
        }
        // Clone the list out so that a listener may subscribe or unsubscribe without deadlock.
        let listeners: Vec<Listener> = self
            .list
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| Arc::clone(l))
            .collect();
        for listener in listeners {
            if catch_unwind(AssertUnwindSafe(|| listener(event))).is_err() {
                tracing::error!(
                    breaker = %event.breaker_name(),
                    "breaker: an event listener panicked; the event was skipped for it"
                );
            }
        }
    }
}

impl fmt::Debug for Listeners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.list.read().map(|l| l.len()).unwrap_or(0);
        f.debug_struct("Listeners").field("count", &n).finish()
    }
}

/// Keeps a listener subscribed; dropping it unsubscribes. [`Subscription::forever`] keeps the
/// listener for the life of the breaker or registry.
#[must_use = "dropping a Subscription unsubscribes its listener at once"]
pub struct Subscription {
    listeners: Weak<Listeners>,
    id: u64,
}

impl Subscription {
    /// Keeps the listener subscribed for as long as its breaker or registry lives.
    pub fn forever(mut self) {
        self.listeners = Weak::new();
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
