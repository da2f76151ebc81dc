//! CLOSED's count window, recorded without the breaker's lock.
//!
//! A CLOSED breaker records every call, so its window is the hot path. This window keeps the
//! same figures as the locked [`CountWindow`](crate::window::count::CountWindow) (the last N outcomes and their
//! totals) in atomics:
//!
//! - `head` hands each call a ring position with one `fetch_add`.
//! - Each slot holds an outcome stamped with the *epoch* (the low bits of the [`StateId`] of
//!   the CLOSED state it was recorded in). A slot stamped with another epoch is empty, so
//!   entering CLOSED empties the window in O(1) by changing the epoch, and a late call from an
//!   earlier CLOSED can never overwrite a later one's outcome (its compare-exchange finds the
//!   newer stamp and gives up).
//! - `counts` packs the totals and the low bits of the epoch in one word, changed by
//!   compare-exchange only by a call whose slot changed, by exactly the difference between the
//!   outcome it wrote and the one it evicted. So once every call in flight has finished, the
//!   totals equal the outcomes in the slots of the current epoch (the loom models check this).
//!
//! A call whose outcome equals the one it evicts (the steady state of a healthy service) changes
//! nothing and costs one `fetch_add` and one load.
//!
//! While more than `size` calls are in flight at once, two of them can share a slot, and one
//! may subtract an outcome before the call that wrote it has added it: a total can be one below
//! zero for a moment, which [`Totals`] decoding detects (a total above the window size), so no
//! decision is taken on such a reading. The ring position is a `u32`: after 2^32 calls it wraps,
//! and once every 4 billion calls one slot is reused a little early (the totals stay exact).

use std::sync::atomic::Ordering;

use crate::state::StateId;
use crate::sync::{AtomicU32, AtomicU64};
use crate::window::totals::{Totals, EMPTY, FAILED, SLOW};

/// Largest window recorded without the lock: 12-bit totals, with room to tell a total that is
/// one below zero (it reads as 4095) from any real one.
pub(crate) const MAX_SIZE: u32 = 2047;

const EPOCH_BITS: u32 = 29;
const EPOCH_MASK: u32 = (1 << EPOCH_BITS) - 1;
/// Bit offsets of the totals in `counts`; the low 16 bits hold the epoch.
const CALLS: u32 = 16;
const FAILED_AT: u32 = 28;
const SLOW_AT: u32 = 40;
const SLOW_FAILED_AT: u32 = 52;
const FIELD: u64 = 0xFFF;

/// What recording one call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// The totals did not change (the evicted call had the same outcome).
    Unchanged,
    /// The totals changed; these are the totals right after the change.
    Changed(Totals),
    /// The window belongs to a later epoch than the caller's: nothing was counted. The ring
    /// position the call took is given back to the caller, to record the call there in the
    /// current state (so a late call leaves no hole in a later window).
    Stale(u32),
}

/// The count window of CLOSED (and METRICS_ONLY), shared between the locked state machine and
/// the lock-free completion path.
pub(crate) struct ClosedWindow {
    slots: Box<[AtomicU32]>,
    /// `u32::MAX / size + 1`, for computing `head % size` without a division.
    fastmod: u64,
    /// Written by every call: on a cache line of its own, so that the fields every call only
    /// reads do not move between cores with it.
    head: CacheLine<AtomicU32>,
    /// Written when a call changes the totals: apart from `head` for the same reason.
    counts: CacheLine<AtomicU64>,
}

/// A value alone on its 64-byte cache line.
#[repr(align(64))]
struct CacheLine<T>(T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl ClosedWindow {
    /// A window of `size` slots (1 to [`MAX_SIZE`]), empty in every epoch.
    pub(crate) fn new(size: u32) -> ClosedWindow {
        debug_assert!((1..=MAX_SIZE).contains(&size));
        // Stamped with the epoch just before 0, so no slot belongs to the first CLOSED state.
        let never = stamp(u64::from(EPOCH_MASK), EMPTY);
        ClosedWindow {
            slots: (0..size).map(|_| AtomicU32::new(never)).collect(),
            fastmod: (u64::MAX / u64::from(size)).wrapping_add(1),
            head: CacheLine(AtomicU32::new(0)),
            counts: CacheLine(AtomicU64::new(0)),
        }
    }

    /// Empties the window for a new CLOSED state `state`. Called under the breaker's lock,
    /// before the state is published, so every call that sees the new state sees this.
    pub(crate) fn reset(&self, state: StateId) {
        let epoch = state.get();
        // A swap rather than a store: every write to `counts` is then a read-modify-write, the
        // one kind of write whose place in the modification order loom models exactly (with a
        // plain store here, loom 0.7 let a later compare-exchange read the value before it).
        self.counts.swap(epoch & 0xFFFF, Ordering::AcqRel);
    }

    /// Whether any call was ever recorded here (in any epoch). The ring position wraps after
    /// 2^32 calls; by then the window is full, which the caller checks as well.
    pub(crate) fn has_recorded(&self) -> bool {
        self.head.load(Ordering::Relaxed) != 0
    }

    /// The window's size.
    pub(crate) fn size(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The totals of state `state`, or `None` while a call in flight makes them inconsistent
    /// (or the window has moved on to another state).
    #[inline]
    pub(crate) fn totals(&self, state: StateId) -> Option<Totals> {
        decode(
            self.counts.load(Ordering::Acquire),
            state.get(),
            self.size(),
        )
    }

    /// Records one outcome (`FAILED`/`SLOW` bits) in state `state`. `locked` says the caller
    /// holds the breaker's lock in that very state, so no later epoch can exist.
    #[inline(always)]
    pub(crate) fn record(&self, state: StateId, outcome: u8, locked: bool) -> Recorded {
        let position = self.head.fetch_add(1, Ordering::Relaxed);
        self.record_at(position, state, outcome, locked)
    }

    /// Records one outcome at ring position `position`, taken earlier by [`record`]. Inlined
    /// into [`record`]: it is every CLOSED call's completion, and out of line it returns its
    /// [`Recorded`] through memory.
    ///
    /// [`record`]: ClosedWindow::record
    #[inline(always)]
    pub(crate) fn record_at(
        &self,
        position: u32,
        state: StateId,
        outcome: u8,
        locked: bool,
    ) -> Recorded {
        let epoch = state.get();
        let slot = &self.slots[self.index(position)];
        let new = stamp(epoch, outcome);
        let mut old = slot.load(Ordering::Acquire);
        let evicted = loop {
            let evicted = if old >> 3 == new >> 3 {
                (old & 7) as u8
            } else if !locked && is_later(old >> 3, new >> 3) {
                return Recorded::Stale(position);
            } else {
                EMPTY
            };
            if old == new {
                break evicted;
            }
            match slot.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break evicted,
                Err(current) => old = current,
            }
        };
        if evicted == outcome {
            // Nothing to count, if the window is still this epoch's.
            return if self.counts.load(Ordering::Acquire) & 0xFFFF == epoch & 0xFFFF {
                Recorded::Unchanged
            } else {
                Recorded::Stale(position)
            };
        }
        let delta = weight(outcome).wrapping_sub(weight(evicted));
        let mut counts = self.counts.load(Ordering::Acquire);
        loop {
            if counts & 0xFFFF != epoch & 0xFFFF {
                // Emptied for a later CLOSED since the slot was taken: the slot's stamp makes
                // it empty there, so leaving the totals alone keeps them exact.
                return Recorded::Stale(position);
            }
            let next = counts.wrapping_add(delta);
            match self.counts.compare_exchange_weak(
                counts,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return match decode(next, epoch, self.size()) {
                        Some(totals) => Recorded::Changed(totals),
                        // Inconsistent for a moment (see the module's notes): no decision now;
                        // the call that completes the picture will take it.
                        None => Recorded::Unchanged,
                    };
                }
                Err(current) => counts = current,
            }
        }
    }

    /// `position % size`, by Lemire's multiply-shift (exact for every `u32`).
    #[inline]
    fn index(&self, position: u32) -> usize {
        let low = self.fastmod.wrapping_mul(u64::from(position));
        ((u128::from(low) * self.slots.len() as u128) >> 64) as usize
    }

    /// Recounts the slots of state `state`: what the totals equal once no call is in flight,
    /// and what a reader gets while they are inconsistent.
    pub(crate) fn recount(&self, state: StateId) -> Totals {
        let epoch = state.get();
        let mut totals = Totals::default();
        for slot in self.slots.iter() {
            let v = slot.load(Ordering::Acquire);
            if v >> 3 == stamp(epoch, 0) >> 3 {
                totals.add((v & 7) as u8);
            }
        }
        totals
    }
}

impl std::fmt::Debug for ClosedWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClosedWindow")
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

fn stamp(epoch: u64, outcome: u8) -> u32 {
    (epoch as u32 & EPOCH_MASK) << 3 | u32::from(outcome)
}

/// Whether epoch stamp `a` is later than `b` (29-bit serial-number arithmetic).
fn is_later(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b) & EPOCH_MASK;
    d != 0 && d < 1 << (EPOCH_BITS - 1)
}

/// An outcome's contribution to `counts` (an empty slot contributes nothing).
fn weight(outcome: u8) -> u64 {
    if outcome == EMPTY {
        return 0;
    }
    let failed = u64::from(outcome & FAILED);
    let slow = u64::from((outcome & SLOW) >> 1);
    1 << CALLS | failed << FAILED_AT | slow << SLOW_AT | (failed & slow) << SLOW_FAILED_AT
}

#[inline]
fn decode(counts: u64, epoch: u64, size: u32) -> Option<Totals> {
    if counts & 0xFFFF != epoch & 0xFFFF {
        return None;
    }
    let field = |at: u32| ((counts >> at) & FIELD) as u32;
    let totals = Totals {
        calls: field(CALLS),
        failed: field(FAILED_AT),
        slow: field(SLOW_AT),
        slow_failed: field(SLOW_FAILED_AT),
    };
    let consistent = totals.calls <= size
        && totals.failed <= totals.calls
        && totals.slow <= totals.calls
        && totals.slow_failed <= totals.failed.min(totals.slow);
    consistent.then_some(totals)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn id(n: u64) -> StateId {
        StateId::from_raw(n)
    }

    // Safe integer arithmetic, no memory for Miri to check, and 120,000 comparisons that take
    // Miri minutes: the native test run covers it.
    #[test]
    #[cfg_attr(miri, ignore = "pure arithmetic: nothing for Miri to check")]
    fn index_is_position_modulo_size() {
        for size in [1, 2, 3, 7, 100, 2047] {
            let w = ClosedWindow::new(size);
            for p in (0..10_000).chain(u32::MAX - 10_000..=u32::MAX) {
                assert_eq!(w.index(p), (p % size) as usize, "size {size}, position {p}");
            }
        }
    }

    #[test]
    fn counts_follow_the_slots() {
        let w = ClosedWindow::new(3);
        w.reset(id(5));
        assert_eq!(
            w.record(id(5), FAILED, false),
            Recorded::Changed(w.recount(id(5)))
        );
        assert_eq!(
            w.record(id(5), SLOW, false),
            Recorded::Changed(w.recount(id(5)))
        );
        assert!(matches!(w.record(id(5), 0, false), Recorded::Changed(_)));
        // Full: a success evicting the failure changes the totals; one evicting a success not.
        assert!(matches!(w.record(id(5), 0, false), Recorded::Changed(_)));
        assert_eq!(w.record(id(5), SLOW, false), Recorded::Unchanged);
        let t = w.totals(id(5)).unwrap();
        assert_eq!(t, w.recount(id(5)));
        assert_eq!((t.calls, t.failed, t.slow, t.slow_failed), (3, 0, 1, 0));
    }

    #[test]
    fn a_new_epoch_is_empty_and_refuses_late_calls() {
        let w = ClosedWindow::new(2);
        w.reset(id(1));
        w.record(id(1), FAILED, false);
        w.record(id(1), FAILED, false);
        w.reset(id(4));
        assert_eq!(w.totals(id(4)).unwrap(), Totals::default());
        assert_eq!(w.totals(id(1)), None);
        assert!(matches!(w.record(id(4), 0, false), Recorded::Changed(t) if t.calls == 1));
        // A call of epoch 1 finishing now finds a later stamp or a later epoch: not counted.
        assert!(matches!(w.record(id(1), FAILED, false), Recorded::Stale(_)));
        assert!(matches!(w.record(id(1), FAILED, false), Recorded::Stale(_)));
        assert_eq!(w.totals(id(4)).unwrap(), w.recount(id(4)));
    }

    #[test]
    fn epochs_compare_across_the_wrap() {
        assert!(is_later(1, 0));
        assert!(is_later(0, EPOCH_MASK));
        assert!(!is_later(EPOCH_MASK, 0));
        assert!(!is_later(3, 3));
        // Never both ways: at half the range apart, neither epoch is the later one.
        let half = 1 << (EPOCH_BITS - 1);
        for (a, b) in [
            (half, 0),
            (0, half),
            (half + 5, 5),
            (half - 1, 0),
            (0, half + 1),
        ] {
            assert!(
                !(is_later(a, b) && is_later(b, a)),
                "{a} and {b} are each later than the other"
            );
        }
        assert!(is_later(half - 1, 0) && is_later(0, half + 1));
    }

    #[test]
    fn a_total_below_zero_reads_as_inconsistent() {
        let below = (2u64 << CALLS).wrapping_sub(1 << FAILED_AT);
        assert_eq!(decode(below, 0, 100), None);
        // Each bound on its own: more calls than the window holds, then more failed calls
        // than calls, each with every other figure in order.
        assert_eq!(decode(101 << CALLS, 0, 100), None);
        assert_eq!(decode(1 << CALLS | 2 << FAILED_AT, 0, 100), None);
        let ok = 3 << CALLS | 2 << FAILED_AT | 1 << SLOW_AT | 1 << SLOW_FAILED_AT;
        assert_eq!(
            decode(ok, 0, 100),
            Some(Totals {
                calls: 3,
                failed: 2,
                slow: 1,
                slow_failed: 1
            })
        );
    }
}
