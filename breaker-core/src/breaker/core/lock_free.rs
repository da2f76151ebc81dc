//! The call paths that take no lock: a permit in a state that permits every call, a rejection
//! while OPEN, and a CLOSED call recorded in the lock-free window.
//!
//! Each reads the [`StateTag`](crate::breaker::tag::StateTag) once and falls back to the
//! locked state machine (`core/machine.rs`) for everything else. These are the protected
//! call's whole cost in the common cases, so they are `#[inline(always)]` where the bench asked
//! for it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{BreakerCore, Grant, NO_WINDOW};
use crate::breaker::metrics::EventMetrics;
use crate::breaker::tag::StateTag;
use crate::classify::Outcome;
use crate::error::CallNotPermitted;
use crate::event::{ErrorText, Event, EventKind};
use crate::state::{State, StateId};
use crate::time::timestamp::Timestamp;
use crate::window::closed::{ClosedWindow, Recorded};
use crate::window::totals::Totals;
use crate::window::Verdict;

impl BreakerCore {
    /// In a state that permits every call (CLOSED, DISABLED, METRICS_ONLY), a grant by the
    /// current state, starting now.
    #[inline(always)]
    pub(super) fn begin_unlimited(&self) -> Option<Grant> {
        let tag = self.view.tag.load();
        tag.permits_all().then(|| Grant {
            state: tag.id(),
            start: self.clock.now(),
        })
    }

    /// In OPEN before the end of its wait: counts and publishes a rejection, without the lock,
    /// and returns the rejection. Otherwise `None`: ask the state machine (`acquire_slow`).
    #[inline(always)]
    pub(super) fn reject_while_open(&self) -> Option<CallNotPermitted> {
        if !self.view.tag.load().is(State::Open) {
            return None;
        }
        let now = self.clock.now();
        let retry_after = self.view.retry_after.load(Ordering::Acquire);
        if now.unix_nanos() > retry_after {
            return None;
        }
        self.view.not_permitted.fetch_add(1, Ordering::Relaxed);
        if self.audience.wants_call_events() {
            self.publish_rejection(now);
        }
        Some(self.not_permitted_error(State::Open, retry_after - now.unix_nanos()))
    }

    /// Whether an OPEN breaker's wait is over at `now` (the next call would be a trial).
    pub(crate) fn open_wait_elapsed(&self, now: Timestamp) -> bool {
        now.unix_nanos() > self.view.retry_after.load(Ordering::Acquire)
    }

    /// The error for a rejected call (and its rate-limited log line); `remaining_nanos` is
    /// what is left of OPEN's wait (ignored in other states).
    #[inline]
    pub(super) fn not_permitted_error(
        &self,
        state: State,
        remaining_nanos: u64,
    ) -> CallNotPermitted {
        self.rejections.note(self.name(), state, &self.clock);
        match state {
            State::Open => CallNotPermitted::open(self.display_name(), remaining_nanos),
            _ => CallNotPermitted::new(self.display_name(), state),
        }
    }

    /// Completes a call granted by state `state` that took `elapsed_nanos`: in the lock-free
    /// CLOSED window if it can, else under the lock. `error` is the call's error text, for the
    /// listeners that asked for it (`None` on every path but a described failure's).
    #[inline]
    pub(super) fn complete(
        &self,
        state: StateId,
        outcome: Outcome,
        elapsed_nanos: u64,
        now: Timestamp,
        error: Option<&ErrorText>,
    ) {
        let mut position = None;
        if let Some(window) = &self.view.closed_window {
            if outcome != Outcome::Ignored {
                let failed = outcome == Outcome::Failure;
                match self.complete_closed(window, failed, elapsed_nanos, now, error) {
                    Ok(()) => return,
                    Err(taken) => position = taken,
                }
            }
        }
        self.complete_locked(state, outcome, (elapsed_nanos, now), position, error);
    }

    /// Records a call in CLOSED's window without the lock, and publishes its event if anyone
    /// listens (with the metrics of the window's totals after it, so that listening costs no
    /// lock either). Returns an error (nothing recorded) if the breaker is not CLOSED, or the
    /// window has moved on to a later CLOSED state since the state was read; then the error
    /// holds the ring position the call took, for the locked path to record it there.
    ///
    /// A call that read CLOSED and records after the breaker left it counts in the window it
    /// read, which OPEN carries on (as a call finishing an instant earlier would have).
    #[inline(always)]
    fn complete_closed(
        &self,
        window: &ClosedWindow,
        failed: bool,
        elapsed: u64,
        now: Timestamp,
        error: Option<&ErrorText>,
    ) -> Result<(), Option<u32>> {
        let tag = self.view.tag.load();
        if !tag.is(State::Closed) {
            return Err(None);
        }
        if self.audience.wants_call_events() {
            self.record_closed_listened(window, tag, (failed, elapsed), now, error)
        } else {
            self.record_closed::<false>(window, tag, (failed, elapsed), now, None)
        }
    }

    /// [`record_closed`](BreakerCore::record_closed) for a call whose event someone hears: out
    /// of line, so that the unlistened completion inlined into every call stays small, and
    /// with the event's publishing inlined in it, so that a listened call costs one call more.
    #[inline(never)]
    fn record_closed_listened(
        &self,
        window: &ClosedWindow,
        tag: StateTag,
        call: (bool, u64),
        now: Timestamp,
        error: Option<&ErrorText>,
    ) -> Result<(), Option<u32>> {
        self.record_closed::<true>(window, tag, call, now, error)
    }

    /// Records a call (`failed` or not, `elapsed` nanoseconds) in CLOSED state `tag`'s window;
    /// if `LISTENED`, publishes its event first of anything the call causes.
    #[inline(always)]
    fn record_closed<const LISTENED: bool>(
        &self,
        window: &ClosedWindow,
        tag: StateTag,
        (failed, elapsed): (bool, u64),
        now: Timestamp,
        error: Option<&ErrorText>,
    ) -> Result<(), Option<u32>> {
        // No history to note here: a call recorded in this window is history by itself
        // (`ClosedWindow::has_recorded`).
        let state = tag.id();
        match window.record(state, self.view.thresholds.outcome(failed, elapsed), false) {
            // Totals as they were: nothing for OPEN's view either, should OPEN carry them on.
            Recorded::Unchanged => {
                if LISTENED {
                    match window.totals(state) {
                        Some(totals) => {
                            self.publish_closed_call(failed, elapsed, totals.pack(), now, error)
                        }
                        // The state moved on since: `trip` finds nothing to open, and
                        // publishes the event with the metrics taken under the lock.
                        None => self.trip(state, now, Some(call_kind(failed, elapsed)), error),
                    }
                }
            }
            Recorded::Stale(position) => return Err(Some(position)),
            Recorded::Changed(totals) => {
                if let Verdict::Exceeded { .. } = self.view.thresholds.verdict(&totals) {
                    let event = LISTENED.then(|| call_kind(failed, elapsed));
                    self.trip(state, now, event, error);
                } else if LISTENED {
                    self.publish_closed_call(failed, elapsed, totals.pack(), now, error);
                }
            }
        }
        Ok(())
    }

    /// Publishes a rejection made on the lock-free OPEN path.
    #[cold]
    fn publish_rejection(&self, now: Timestamp) {
        let not_permitted = self.view.not_permitted.load(Ordering::Relaxed);
        let metrics = match self.open_window_totals() {
            Some(totals) => EventMetrics::Open {
                totals: totals.pack(),
                minimum_calls: self.view.thresholds.minimum_calls(),
                not_permitted,
            },
            None => EventMetrics::Taken(self.view.open_metrics.load(not_permitted)),
        };
        let kind = EventKind::NotPermitted;
        let event = Event::new(self.event_name(), now, kind, None, metrics);
        self.audience.deliver(&event);
    }

    /// OPEN's totals read from CLOSED's lock-free window, when OPEN carries that window on and
    /// its totals are consistent at this moment (no call half-recorded in it). `None`
    /// otherwise: OPEN's figures are then `open_metrics`, taken under the lock.
    fn open_window_totals(&self) -> Option<Totals> {
        let state = self.view.open_window.load(Ordering::Relaxed);
        if state == NO_WINDOW {
            return None;
        }
        self.view
            .closed_window
            .as_ref()?
            .totals(StateId::from_raw(state))
    }

    /// The event of a CLOSED call recorded without the lock (`failed` or not, `elapsed`
    /// nanoseconds), carrying `totals`, the window's totals after it, packed
    /// (`Totals::pack`): the rates are worked out only if a listener reads them.
    ///
    /// The one event goes straight to the listeners (no `Pending`, no transition to log): this
    /// is the path every listened CLOSED call takes, so it is inlined into
    /// `record_closed_listened`, with the listener lists' loop. Its arguments are plain words,
    /// so the event is written from registers: an event assembled from a struct the caller had
    /// just stored field by field costs a store-forwarding stall per wider read of it.
    #[inline(always)]
    fn publish_closed_call(
        &self,
        failed: bool,
        elapsed: u64,
        totals: u64,
        now: Timestamp,
        error: Option<&ErrorText>,
    ) {
        let kind = call_kind(failed, elapsed);
        let metrics = EventMetrics::Closed {
            totals,
            minimum_calls: self.view.thresholds.minimum_calls(),
            not_permitted: self.view.not_permitted.load(Ordering::Relaxed),
        };
        let event = Event::new(self.event_name(), now, kind, None, metrics);
        self.audience.deliver_call(&event, error);
    }
}

/// The event kind of a recorded call, `failed` or not, that took `elapsed` nanoseconds.
#[inline]
fn call_kind(failed: bool, elapsed: u64) -> EventKind {
    let elapsed = Duration::from_nanos(elapsed);
    match failed {
        true => EventKind::Error { elapsed },
        false => EventKind::Success { elapsed },
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::event::EventKind;
    use crate::registry::Registry;
    use crate::state::State;
    use crate::time::manual::ManualClock;

    /// A listener (the admin's event ring, the metrics export) must not put CLOSED calls
    /// behind the breaker's lock: with the lock held elsewhere, a listened call still
    /// completes, and its event carries the window as it is after the call.
    #[test]
    fn a_listened_closed_call_takes_no_lock() {
        let registry = Registry::builder().clock(ManualClock::new()).build();
        let breaker = registry.breaker("listened");
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heard);
        let _subscription = breaker.subscribe(move |event| {
            let m = event.metrics();
            log.lock()
                .unwrap()
                .push((event.kind(), m.state, m.buffered_calls, m.failed_calls));
        });

        let held = breaker.core.lock();
        let (done, finished) = mpsc::channel();
        let caller = breaker.clone();
        std::thread::spawn(move || {
            let _ = caller.call_sync(|| Ok::<_, ()>(1));
            let _ = caller.call_sync(|| Err::<u32, _>(()));
            done.send(()).unwrap();
        });
        // A guard against a hang, not a timing assertion: before the lock-free path published
        // call events, the calls waited here for the lock for ever.
        finished
            .recv_timeout(Duration::from_secs(60))
            .expect("a CLOSED call with a listener waited for the breaker's lock");
        drop(held);

        let heard = heard.lock().unwrap();
        assert_eq!(heard.len(), 2, "{heard:?}");
        assert!(matches!(heard[0].0, EventKind::Success { .. }));
        assert_eq!((heard[0].1, heard[0].2, heard[0].3), (State::Closed, 1, 0));
        assert!(matches!(heard[1].0, EventKind::Error { .. }));
        assert_eq!((heard[1].1, heard[1].2, heard[1].3), (State::Closed, 2, 1));
    }
}
