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
//! Every record gets a ticket from one counter (`next`, a `fetch_add`); ticket `t` lives in slot
//! `t % capacity`. A slot is a seqlock made of atomics only: a sequence word `seq` and `W` data
//! words. `seq == 2t + 2` means "holds ticket `t`, complete"; `seq == 2t + 1` means "ticket `t`
//! is being written"; 0 means empty.
//!
//! - **Write** (on the thread that publishes the event): take a ticket, then claim the slot with
//!   a compare-and-swap (Acquire, pairing with the previous writer's final Release store) from a
//!   complete, older `seq` to `2t + 1`; a Release fence; the data words (Relaxed);
//!   `seq = 2t + 2` (Release). The claim is what keeps two writers out of one slot:
//!   when the ring wraps while a writer is still writing, the newer writer finds the slot odd (or
//!   already newer) and gives its record up instead of waiting, so a call is never slowed and a
//!   slot is never written by two threads at once. Given-up records are counted (`lost`).
//! - **Read** ticket `t`: load `seq` (Acquire); unless it is `2t + 2`, the record is not there
//!   (not yet written, or already overwritten, told apart by whether `seq` is below or above).
//!   Copy the data words (Relaxed), an Acquire fence, load `seq` again: if it changed, a newer
//!   writer claimed the slot during the copy and the copy is discarded as overwritten.
//!
//! This is the fence-based seqlock (a writer's Release fence after its claim pairs with the
//! reader's Acquire fence before its second load), so a reader never returns a record mixing
//! two writes. Every field is an atomic, so no `unsafe` is needed; a torn copy is only ever
//! values that are detected and dropped. `ring_tests.rs` runs writers against a reader and checks
//! every record it gets for tearing, and that a quiet ring gives back its newest records;
//! `tests/admin/ring_loom.rs` model-checks every interleaving of writers wrapping one slot under a
//! reader (this file is compiled there with loom's atomics, through `crate::sync`).

use std::sync::atomic::Ordering;

use crate::sync::{fence, AtomicU64};

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
    slots: Box<[Slot<W>]>,
}

impl<const W: usize> Ring<W> {
    /// A ring of `capacity` records (at least 1), its first ticket 0.
    pub(crate) fn new(capacity: usize) -> Ring<W> {
        Ring::starting_at(capacity, 0)
    }

    /// A ring of `capacity` records (at least 1) whose first ticket is `first`.
    pub(crate) fn starting_at(capacity: usize, first: u64) -> Ring<W> {
        let slots = (0..capacity.max(1))
            .map(|_| Slot {
                seq: AtomicU64::new(0),
                words: std::array::from_fn(|_| AtomicU64::new(0)),
            })
            .collect();
        Ring {
            next: AtomicU64::new(first),
            lost: AtomicU64::new(0),
            slots,
        }
    }

    /// How many records it holds.
    pub(crate) fn capacity(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The ticket the next record will get: every ticket below it has been handed out.
    pub(crate) fn head(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Records given up because a slower writer still held their slot.
    pub(crate) fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    fn slot(&self, ticket: u64) -> &Slot<W> {
        // The index is below the slice's length, which came from a `usize`.
        &self.slots[(ticket % self.capacity()) as usize]
    }

    /// Appends a record; never waits, never allocates. Returns its ticket.
    pub(crate) fn push(&self, record: [u64; W]) -> u64 {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = self.slot(ticket);
        let writing = 2 * ticket + 1;
        let mut seq = slot.seq.load(Ordering::Relaxed);
        loop {
            // Odd: another writer is in this slot. Above ours: a newer record already took it.
            if seq & 1 == 1 || seq > writing {
                self.lost.fetch_add(1, Ordering::Relaxed);
                return ticket;
            }
            // Acquire: the previous writer's words happen before ours, so ours come later in
            // each word's order and cannot be overwritten by its late stores (the loom model
            // finds that interleaving with a Relaxed claim).
            match slot
                .seq
                .compare_exchange_weak(seq, writing, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => seq = now,
            }
        }
        fence(Ordering::Release);
        for (word, value) in slot.words.iter().zip(record) {
            word.store(value, Ordering::Relaxed);
        }
        slot.seq.store(writing + 1, Ordering::Release);
        ticket
    }

    /// Takes `count` tickets at once that no record will have, and returns the first: a reader
    /// finds them [`Read::Pending`] for ever, so whoever skips must tell readers (the stream
    /// keeps the runs it skipped). Never waits.
    pub(crate) fn skip(&self, count: u64) -> u64 {
        self.next.fetch_add(count, Ordering::Relaxed)
    }

    /// The record of `ticket`, if the ring still holds it whole.
    pub(crate) fn read(&self, ticket: u64) -> Read<W> {
        let slot = self.slot(ticket);
        let complete = 2 * ticket + 2;
        let before = slot.seq.load(Ordering::Acquire);
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
        let start = head.saturating_sub(self.capacity());
        (start..head)
            .filter_map(|ticket| match self.read(ticket) {
                Read::Record(record) => Some((ticket, record)),
                Read::Pending | Read::Overwritten => None,
            })
            .collect()
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
