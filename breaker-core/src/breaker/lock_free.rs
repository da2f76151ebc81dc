//! The call paths that take no lock: a permit in a state that permits every call, a rejection
//! while OPEN, and a CLOSED call recorded in the lock-free window.
//!
//! Each reads the [`StateTag`] once and falls back to the locked state machine
//! (`machine.rs`) for everything else. These are the protected call's whole cost in the common
//! cases, so they are `#[inline(always)]` where the bench asked for it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::breaker::shared::Shared;
use crate::breaker::tag::StateTag;
use crate::classify::Outcome;
use crate::error::CallNotPermitted;
use crate::event::EventKind;
use crate::state::State;
use crate::time::timestamp::Timestamp;
use crate::window::closed::{ClosedWindow, Recorded};
use crate::window::Verdict;

impl Shared {
    /// In a state that permits every call (CLOSED, DISABLED, METRICS_ONLY), the state's id and
    /// the call's start: a permit without the permit value, for the protected-call fast path.
    #[inline(always)]
    pub(crate) fn begin_unlimited(&self) -> Option<(u64, Timestamp)> {
        let tag = self.tag.load();
        tag.permits_all().then(|| (tag.id(), self.clock.now()))
    }

    /// In OPEN before the end of its wait: counts and publishes a rejection, without the lock,
    /// and returns the rejection. Otherwise `None`: ask [`acquire_slow`](Shared::acquire_slow).
    #[inline(always)]
    pub(crate) fn reject_while_open(&self) -> Option<CallNotPermitted> {
        if !self.tag.load().is(State::Open) {
            return None;
        }
        let now = self.clock.now();
        let retry_after = self.retry_after.load(Ordering::Acquire);
        if now.unix_nanos() > retry_after {
            return None;
        }
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        if self.wants_call_events() {
            self.publish_rejection(now);
        }
        Some(self.not_permitted_error(State::Open, retry_after - now.unix_nanos()))
    }

    /// The error for a rejected call (and its rate-limited log line); `remaining_nanos` is
    /// what is left of OPEN's wait (ignored in other states).
    #[inline]
    pub(crate) fn not_permitted_error(
        &self,
        state: State,
        remaining_nanos: u64,
    ) -> CallNotPermitted {
        self.rejections.note(self.name(), state, &self.clock);
        match state {
            State::Open => CallNotPermitted::open(self.shared_name(), remaining_nanos),
            _ => CallNotPermitted::new(self.shared_name(), state),
        }
    }

    /// Records the outcome of a call granted by state `state_id` at `start`, taking the time
    /// since then as its duration (one clock read).
    #[inline(always)]
    pub(crate) fn finish(&self, state_id: u64, start: Timestamp, outcome: Outcome) {
        let now = self.clock.now();
        let elapsed = now.unix_nanos().saturating_sub(start.unix_nanos());
        self.complete(state_id, outcome, elapsed, now);
    }

    /// Completes a permit granted by state `permit_id`.
    #[inline]
    pub(crate) fn complete(
        &self,
        permit_id: u64,
        outcome: Outcome,
        elapsed_nanos: u64,
        now: Timestamp,
    ) {
        let mut position = None;
        if let Some(window) = &self.fast {
            if outcome != Outcome::Ignored {
                let failed = outcome == Outcome::Failure;
                match self.complete_closed(window, failed, elapsed_nanos, now) {
                    Ok(()) => return,
                    Err(taken) => position = taken,
                }
            }
        }
        self.complete_locked(permit_id, outcome, elapsed_nanos, now, position);
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
    pub(crate) fn complete_closed(
        &self,
        window: &ClosedWindow,
        failed: bool,
        elapsed: u64,
        now: Timestamp,
    ) -> Result<(), Option<u32>> {
        let tag = self.tag.load();
        if !tag.is(State::Closed) {
            return Err(None);
        }
        // No `note_history` here: a call recorded in this window is history by itself
        // (`ClosedWindow::has_recorded`).
        let epoch = tag.id();
        // The call's event, if anyone listens: published before anything the call causes.
        let event = self.wants_call_events().then(|| {
            let elapsed = Duration::from_nanos(elapsed);
            match failed {
                true => EventKind::Error { elapsed },
                false => EventKind::Success { elapsed },
            }
        });
        match window.record(epoch, self.thresholds.outcome(failed, elapsed), false) {
            // Totals as they were: nothing for OPEN's view either, should OPEN carry them on.
            Recorded::Unchanged => {
                if let Some(kind) = event {
                    match window.totals(epoch) {
                        Some(totals) => self.publish_closed_call(kind, &totals, now),
                        // The state moved on since: `trip` finds nothing to open, and
                        // publishes the event with the metrics taken under the lock.
                        None => self.trip(epoch, now, Some(kind)),
                    }
                }
            }
            Recorded::Stale(position) => return Err(Some(position)),
            Recorded::Changed(totals) => {
                if let Verdict::Exceeded { .. } = self.thresholds.verdict(&totals) {
                    self.trip(epoch, now, event);
                } else if let Some(kind) = event {
                    self.publish_closed_call(kind, &totals, now);
                }
                if self.tag.load() != tag {
                    self.refresh_open_view(epoch, now);
                }
            }
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn note_history(&self) {
        if !self.history.load(Ordering::Relaxed) {
            self.history.store(true, Ordering::Relaxed);
        }
    }

    /// Returns a permit without recording anything (a cancelled call).
    pub(crate) fn release(&self, permit_id: u64) {
        // Only a HALF_OPEN state takes permits back, and only its own: skip the lock otherwise.
        if self.tag.load() == StateTag::new(permit_id, State::HalfOpen) {
            let mut m = self.lock();
            self.give_back(&mut m, permit_id);
        }
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

        let held = breaker.shared.lock();
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
