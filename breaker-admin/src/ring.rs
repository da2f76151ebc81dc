//! A bounded ring of fixed-size records that writers fill without a lock and readers copy out
//! without stopping them: each breaker's recent events, and the stream's recent events of all.
//!
//! Tickets start at 0, or at a number given when the ring is made (the stream's start at the
//! admin's start time, so its ids never repeat an earlier run's); [`Ring::skip`] hands out a run
//! of tickets that no record will ever have (the stream's events published while nobody
//! listened).
//!
//! # Algorithm
//!
//! Every record gets a ticket, handed out in order; ticket `t` lives in slot `t % slots`, where
//! `slots` is the capacity rounded up to a power of two (so the slot is a mask, not a
//! division). A slot is a seqlock made of atomics only: a sequence word `seq` and `W` data
//! words. `seq == 2t + 2` means "holds ticket `t`, complete"; `seq == 2t + 1` means "ticket `t`
//! is being written"; 0 means empty.
//!
//! - **Write** (on the thread that publishes the event): read the next ticket `t` and the seq
//!   of its slot (Acquire, pairing with the previous writer's final Release store). Unless the
//!   slot holds the previous lap's ticket `t - slots` complete (or, in the first lap, nothing),
//!   its writer is still writing: give the record up (counted in `lost`) rather than wait, so
//!   a call is never slowed. Otherwise take the ticket with a compare-and-swap of the counter
//!   from `t` to `t + 1` (a failed one reads again); then `seq = 2t + 1`, a Release fence, the
//!   data words (Relaxed), `seq = 2t + 2` (Release). The one read-modify-write is the ticket's:
//!   the slot needs no claim of its own, because the next writer of the slot (ticket
//!   `t + slots`) can only take its ticket after reading this one's final `seq`, and the
//!   previous one finished before this one took its ticket. So no slot is ever written by two
//!   threads at once, and every ticket handed out is written.
//! - **Read** ticket `t`: load `seq` (Acquire); unless it is `2t + 2`, the record is not there
//!   (not yet written, or already overwritten, told apart by whether `seq` is below or above).
//!   Copy the data words (Relaxed), an Acquire fence, load `seq` again: if it changed, a newer
//!   writer took the slot during the copy and the copy is discarded as overwritten.
//!
//! This is the fence-based seqlock (a writer's Release fence after its first store pairs with
//! the reader's Acquire fence before its second load), so a reader never returns a record
//! mixing two writes. Every field is an atomic, so no `unsafe` is needed; a torn copy is only
//! ever values that are detected and dropped. `ring_tests.rs` runs writers against a reader and
//! checks every record it gets for tearing, and that a quiet ring gives back its newest
//! records; `tests/admin/ring_loom.rs` model-checks every interleaving of writers wrapping one
//! slot under a reader (this file is compiled there with loom's atomics, through
//! `crate::sync`).
//!
//! Giving up waits for nothing, but while a writer is stalled in the middle of its record (its
//! thread preempted between two of its stores), every record of the ring is given up until it
//! resumes: a ring is one breaker's (or the stream's), and what the stall loses is counted.

use std::sync::atomic::Ordering;

use crate::sync::{fence, AtomicU64};

/// The top bit of a slot's `seq`: the ticket of the rest of `seq` was skipped ([`Ring::skip`],
/// or below the ring's first ticket), so its slot is free for the next lap's writer but holds no
/// record. Tickets stay far below 2^62 (the stream's start at microseconds since 1970 is about
/// 2^51).
const SKIPPED: u64 = 1 << 63;

/// One record: `W` words, all written by one writer between two stores of its slot's `seq`.
struct Slot<const W: usize> {
    seq: AtomicU64,
    words: [AtomicU64; W],
}

/// What reading one ticket found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read<const W: usize> {
    /// The record of that ticket, whole.
    Record([u64; W]),
    /// Not written yet: its writer has not finished, or gave it up.
    Pending,
    /// A later ticket took the slot: the record is gone.
    Overwritten,
}

/// A bounded ring of `W`-word records; see the module's docs.
pub(crate) struct Ring<const W: usize> {
    next: AtomicU64,
    lost: AtomicU64,
    /// The records a reader gets back at most: the capacity asked for.
    capacity: u64,
    /// `slots.len() - 1`, a power of two less one.
    mask: u64,
    slots: Box<[Slot<W>]>,
}

impl<const W: usize> Ring<W> {
    /// A ring of `capacity` records (at least 1), in the next power of two of slots, its first
    /// ticket 0.
    pub(crate) fn new(capacity: usize) -> Ring<W> {
        Ring::starting_at(capacity, 0)
    }

    /// A ring of `capacity` records (at least 1) whose first ticket is `first`: the tickets
    /// below it are made skipped ones, so the first lap's writers find their slots free.
    pub(crate) fn starting_at(capacity: usize, first: u64) -> Ring<W> {
        let capacity = capacity.max(1);
        let slots: Box<[Slot<W>]> = (0..capacity.next_power_of_two())
            .map(|_| Slot {
                seq: AtomicU64::new(0),
                words: std::array::from_fn(|_| AtomicU64::new(0)),
            })
            .collect();
        let ring = Ring {
            next: AtomicU64::new(first),
            lost: AtomicU64::new(0),
            capacity: capacity as u64,
            mask: slots.len() as u64 - 1,
            slots,
        };
        ring.mark_skipped(first.saturating_sub(ring.mask + 1)..first);
        ring
    }

    /// How many records it gives back at most.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The ticket the next record will get: every ticket below it has been handed out.
    pub(crate) fn head(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Records given up because a writer still held the slot their ticket needed.
    pub(crate) fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// Every record it was given: those with a ticket and those given up.
    pub(crate) fn pushed(&self) -> u64 {
        // `lost` first: a push counted in neither is at most the ones under way.
        let lost = self.lost();
        self.head() + lost
    }

    #[inline]
    fn slot(&self, ticket: u64) -> &Slot<W> {
        // Masked below the slice's length, which came from a `usize`.
        &self.slots[(ticket & self.mask) as usize]
    }

    /// Appends a record; never waits, never allocates. Returns its ticket, or `None` if it was
    /// given up (the writer of the slot's previous lap has not finished).
    #[inline]
    pub(crate) fn push(&self, record: [u64; W]) -> Option<u64> {
        let laps = self.mask + 1;
        let mut ticket = self.next.load(Ordering::Relaxed);
        let slot = loop {
            let slot = self.slot(ticket);
            // The previous lap's record, complete (or, in the first lap, nothing). Acquire:
            // its writer's words happen before ours, so ours come later in each word's order.
            let free = match ticket.checked_sub(laps) {
                Some(previous) => 2 * previous + 2,
                None => 0,
            };
            if slot.seq.load(Ordering::Acquire) & !SKIPPED != free {
                self.lost.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            match self.next.compare_exchange_weak(
                ticket,
                ticket + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break slot,
                Err(now) => ticket = now,
            }
        };
        let writing = 2 * ticket + 1;
        slot.seq.store(writing, Ordering::Relaxed);
        fence(Ordering::Release);
        for (word, value) in slot.words.iter().zip(record) {
            word.store(value, Ordering::Relaxed);
        }
        slot.seq.store(writing + 1, Ordering::Release);
        Some(ticket)
    }

    /// Takes `count` tickets at once that no record will have, and returns the first: a reader
    /// finds them [`Read::Pending`] for ever, so whoever skips must tell readers (the stream
    /// keeps the runs it skipped). Never waits.
    ///
    /// The skipped tickets' slots (the last lap's worth) are marked complete-and-skipped, so
    /// that the writers of the next lap find the previous lap's record "complete" in them. A
    /// writer that checks a slot before its mark is stored gives its record up (counted lost):
    /// only at the instant of a skip.
    pub(crate) fn skip(&self, count: u64) -> u64 {
        let first = self.next.fetch_add(count, Ordering::Relaxed);
        let end = first.saturating_add(count);
        self.mark_skipped(end.saturating_sub(self.mask + 1).max(first)..end);
        first
    }

    /// Marks the slots of `tickets` (at most one lap) as holding those tickets complete and
    /// skipped: free for the next lap's writers, [`Read::Pending`] to readers.
    fn mark_skipped(&self, tickets: std::ops::Range<u64>) {
        for ticket in tickets {
            self.slot(ticket)
                .seq
                .store((2 * ticket + 2) | SKIPPED, Ordering::Release);
        }
    }

    /// The record of `ticket`, if the ring still holds it whole.
    pub(crate) fn read(&self, ticket: u64) -> Read<W> {
        let slot = self.slot(ticket);
        let complete = 2 * ticket + 2;
        let before = slot.seq.load(Ordering::Acquire);
        if before & SKIPPED != 0 {
            // A skipped ticket has no record; a later one in its slot is an overwrite.
            return if before & !SKIPPED > complete {
                Read::Overwritten
            } else {
                Read::Pending
            };
        }
        if before != complete {
            return if before > complete {
                Read::Overwritten
            } else {
                Read::Pending
            };
        }
        let record = std::array::from_fn(|i| slot.words[i].load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) == before {
            Read::Record(record)
        } else {
            Read::Overwritten
        }
    }

    /// Its records from the newest back, read one slot a step, so a caller that wants only the
    /// newest few reads only those. A record not written whole yet is passed over; the walk ends
    /// at the first record a newer one has overwritten (every older one is gone too).
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = [u64; W]> + '_ {
        let head = self.head();
        let oldest = head.saturating_sub(self.capacity());
        let mut ticket = head;
        std::iter::from_fn(move || {
            while ticket > oldest {
                ticket -= 1;
                match self.read(ticket) {
                    Read::Record(record) => return Some(record),
                    Read::Pending => {}
                    Read::Overwritten => ticket = oldest,
                }
            }
            None
        })
    }

    /// The newest records it holds, oldest first, with their tickets (at most its capacity).
    pub(crate) fn recent(&self) -> Vec<(u64, [u64; W])> {
        let head = self.head();
        let start = head.saturating_sub(self.capacity);
        (start..head)
            .filter_map(|ticket| match self.read(ticket) {
                Read::Record(record) => Some((ticket, record)),
                Read::Pending | Read::Overwritten => None,
            })
            .collect()
    }
}

#[cfg(test)]
impl<const W: usize> Ring<W> {
    /// Takes the next ticket and leaves its slot marked as being written, as a writer stalled
    /// in the middle of its record leaves it; [`resume`](Ring::resume) finishes it.
    pub(crate) fn stall(&self) -> u64 {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        self.slot(ticket)
            .seq
            .store(2 * ticket + 1, Ordering::Relaxed);
        ticket
    }

    /// Finishes the record of a [`stall`](Ring::stall)ed ticket.
    pub(crate) fn resume(&self, ticket: u64, record: [u64; W]) {
        let slot = self.slot(ticket);
        for (word, value) in slot.words.iter().zip(record) {
            word.store(value, Ordering::Relaxed);
        }
        slot.seq.store(2 * ticket + 2, Ordering::Release);
    }
}

impl<const W: usize> std::fmt::Debug for Ring<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity())
            .field("head", &self.head())
            .field("lost", &self.lost())
            .finish()
    }
}
