//! The event stream's shared state: its ring of every breaker's recent events, whether the
//! breakers' listeners write it, its client slots, and the runs of tickets it skipped.
//!
//! # When the ring is written
//!
//! The listeners write the ring only while it is switched on: from when a client connects with
//! none connected, until `linger` after the last one leaves. A client that reconnects within
//! the linger (an `EventSource` does by itself a few seconds after its stream ends) resumes
//! from its `Last-Event-ID` with nothing missing, as long as the ring still holds it. With no
//! client for longer, a call costs the stream nothing: the listener reads one atomic
//! (`clients`) and writes nothing.
//!
//! # What a client resuming after a gap is told
//!
//! Events published while the ring is off get no ticket, so a client resuming from before that
//! time would find nothing missing. To tell it, every followed breaker counts what it
//! publishes anyway (its own ring's head, [`Counted::published`]): switching off stores each
//! breaker's count (its mark), and switching on adds up what each published since and takes
//! that many tickets at once ([`Ring::skip`]). No record ever has those tickets; the run is
//! kept here ([`StreamHub::gap_end`]), and a client whose cursor reaches it counts it lost
//! (`event: lagged`) and reads on. The count is exact for a gap in which nobody called at the
//! instant the ring was switched on or off. A call publishing at that very instant can be
//! counted lost and still be delivered (the switch stores its new state before it reads the
//! counts on the way on, after on the way off, so a call racing it errs that way); only a
//! publisher stopped between writing its breaker's ring and reading the switch, for exactly
//! the instant of the switch, can be neither delivered nor counted. A breaker removed from the
//! registry during the gap is not counted (a connected client skips a removed breaker's events
//! too).
//!
//! # Slots
//!
//! At most `max_clients` clients hold a slot at once; `routes/sse.rs` takes one per stream and
//! gives it back when the stream ends, or earlier when it stops reading (see there).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::event::Words;
use crate::ring::Ring;

/// The stream's limits that hold for the admin's life (set on `AdminBuilder`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamLimits {
    /// Clients with a slot at once; the next gets a 503.
    pub(crate) max_clients: usize,
    /// How long the ring stays switched on after the last client leaves.
    pub(crate) linger: Duration,
}

/// What the stream asks of a followed breaker to count what it published while the ring was
/// off.
pub(crate) trait Counted {
    /// Every event the breaker has published since the admin followed it.
    fn published(&self) -> u64;
    /// Its [`Counted::published`] when the ring was last switched off (0 before that).
    fn mark(&self) -> &AtomicU64;
}

/// The recent events of every breaker, for the server-sent event streams: each record is the
/// breaker's `Record` words, then the breaker's id.
pub(crate) struct StreamHub {
    pub(crate) ring: Ring<4>,
    /// Non-zero while the listeners write `ring` (see the module's docs): read by every
    /// listener on every event, written only here, when the ring is switched on or off.
    pub(crate) clients: AtomicUsize,
    /// The ring's first ticket.
    first: u64,
    limits: StreamLimits,
    switch: Mutex<Switch>,
}

/// The switch's state, changed under its lock by the HTTP side only.
#[derive(Debug, Default)]
struct Switch {
    /// Slots taken.
    slots: usize,
    /// Whether the ring is written.
    on: bool,
    /// Counts the times the last slot was given back, so a linger that ends after a client came
    /// and went again leaves the switch to the newer linger.
    departures: u64,
    /// The runs of tickets skipped for events published while off, oldest first; only those
    /// the ring's window still reaches.
    gaps: VecDeque<Range<u64>>,
}

impl StreamHub {
    /// A stream of `capacity` events whose first ticket is `first`, switched off.
    pub(crate) fn new(capacity: usize, first: u64, limits: StreamLimits) -> StreamHub {
        StreamHub {
            ring: Ring::starting_at(capacity, first),
            clients: AtomicUsize::new(0),
            first,
            limits,
            switch: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Switch> {
        self.switch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the record `words` (a breaker feed's [`Words`]) of breaker `id` to the ring while
    /// the stream is switched on: the one thing a call does for the stream.
    #[inline(always)]
    pub(crate) fn hear(&self, words: Words, id: u64) {
        if self.clients.load(Ordering::Relaxed) > 0 {
            let [meta, at, elapsed] = words;
            self.ring.push([meta, at, elapsed, id]);
        }
    }

    /// The ring's first ticket: every id this stream gives is at least this.
    pub(crate) fn first_ticket(&self) -> u64 {
        self.first
    }

    pub(crate) fn limits(&self) -> StreamLimits {
        self.limits
    }

    /// Slots taken now.
    pub(crate) fn slots_taken(&self) -> usize {
        self.lock().slots
    }

    /// Takes a slot, unless every one is taken. The first slot taken while the ring is off
    /// switches it on; `breakers` (every breaker followed) are then read for what they
    /// published while it was off.
    pub(crate) fn take_slot<C: Counted>(&self, breakers: impl FnOnce() -> Vec<Arc<C>>) -> bool {
        let mut switch = self.lock();
        if switch.slots >= self.limits.max_clients {
            return false;
        }
        switch.slots += 1;
        if !switch.on {
            switch.on = true;
            // On first, then the counts: a call publishing meanwhile is in the ring and may
            // be counted too (see the module's docs).
            self.clients.store(1, Ordering::SeqCst);
            let missed: u64 = breakers()
                .iter()
                .map(|b| {
                    b.published()
                        .saturating_sub(b.mark().load(Ordering::Relaxed))
                })
                .sum();
            if missed > 0 {
                let start = self.ring.skip(missed);
                switch.gaps.push_back(start..start + missed);
            }
            let oldest = self.ring.head().saturating_sub(self.ring.capacity());
            while switch.gaps.front().is_some_and(|gap| gap.end <= oldest) {
                switch.gaps.pop_front();
            }
        }
        true
    }

    /// Gives a slot back. When it was the last, returns the departure to pass to
    /// [`StreamHub::switch_off_after`] once the linger is over.
    pub(crate) fn give_back_slot(&self) -> Option<u64> {
        let mut switch = self.lock();
        switch.slots = switch.slots.saturating_sub(1);
        (switch.slots == 0).then(|| {
            switch.departures += 1;
            switch.departures
        })
    }

    /// Switches the ring off, if no slot was taken since `departure` (see
    /// [`StreamHub::give_back_slot`]); `breakers` are read for their marks.
    pub(crate) fn switch_off_after<C: Counted>(
        &self,
        departure: u64,
        breakers: impl FnOnce() -> Vec<Arc<C>>,
    ) {
        let mut switch = self.lock();
        if switch.slots > 0 || switch.departures != departure || !switch.on {
            return;
        }
        // The marks first, then off: a call publishing meanwhile is in the ring and may be
        // counted at the next switch-on too (see the module's docs).
        for breaker in breakers() {
            breaker.mark().store(breaker.published(), Ordering::Relaxed);
        }
        self.clients.store(0, Ordering::SeqCst);
        switch.on = false;
    }

    /// The end of the skipped run `ticket` is in, if it is in one.
    pub(crate) fn gap_end(&self, ticket: u64) -> Option<u64> {
        self.lock()
            .gaps
            .iter()
            .find(|gap| gap.contains(&ticket))
            .map(|gap| gap.end)
    }
}

impl std::fmt::Debug for StreamHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let switch = self.lock();
        f.debug_struct("StreamHub")
            .field("ring", &self.ring)
            .field("first", &self.first)
            .field("limits", &self.limits)
            .field("slots", &switch.slots)
            .field("on", &switch.on)
            .field("gaps", &switch.gaps.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A breaker that has published `published` events.
    #[derive(Default)]
    struct Fake {
        published: AtomicU64,
        mark: AtomicU64,
    }

    impl Counted for Fake {
        fn published(&self) -> u64 {
            self.published.load(Ordering::Relaxed)
        }
        fn mark(&self) -> &AtomicU64 {
            &self.mark
        }
    }

    fn hub(max_clients: usize) -> StreamHub {
        let limits = StreamLimits {
            max_clients,
            linger: Duration::ZERO,
        };
        StreamHub::new(8, 100, limits)
    }

    #[test]
    fn the_first_slot_switches_the_ring_on_and_the_last_departure_off() {
        let stream = hub(2);
        let breakers = || Vec::<Arc<Fake>>::new();
        assert_eq!(stream.clients.load(Ordering::Relaxed), 0);
        assert!(stream.take_slot(breakers));
        assert!(stream.take_slot(breakers));
        assert!(!stream.take_slot(breakers), "two slots at most");
        assert_eq!(stream.slots_taken(), 2);
        assert_eq!(stream.clients.load(Ordering::Relaxed), 1);
        assert_eq!(stream.give_back_slot(), None);
        let departure = stream.give_back_slot().expect("the last slot");
        // A slot taken and given back since: the older linger leaves the switch alone.
        assert!(stream.take_slot(breakers));
        stream.switch_off_after(departure, breakers);
        assert_eq!(stream.clients.load(Ordering::Relaxed), 1);
        let newer = stream.give_back_slot().unwrap();
        stream.switch_off_after(departure, breakers);
        assert_eq!(
            stream.clients.load(Ordering::Relaxed),
            1,
            "a stale departure"
        );
        stream.switch_off_after(newer, breakers);
        assert_eq!(stream.clients.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn what_was_published_while_off_is_a_skipped_run_of_tickets() {
        let stream = hub(4);
        let (a, b) = (Arc::new(Fake::default()), Arc::new(Fake::default()));
        let both = || vec![Arc::clone(&a), Arc::clone(&b)];
        // Published before any client: counted at the first switch-on too.
        a.published.store(2, Ordering::Relaxed);
        assert!(stream.take_slot(both));
        assert_eq!(stream.ring.head(), 102);
        assert_eq!(stream.gap_end(100), Some(102));
        stream.ring.push([0; 4]);
        let off = stream.give_back_slot().unwrap();
        stream.switch_off_after(off, both);
        a.published.store(5, Ordering::Relaxed);
        b.published.store(4, Ordering::Relaxed);
        assert!(stream.take_slot(both));
        // 102 is the record; 103..110 the 3 + 4 events published while off.
        assert_eq!(stream.ring.head(), 110);
        assert_eq!(stream.gap_end(102), None);
        assert_eq!(stream.gap_end(103), Some(110));
        assert_eq!(stream.gap_end(109), Some(110));
        assert_eq!(stream.gap_end(110), None);
        // The first run is out of the ring's window (8) now, and forgotten.
        assert_eq!(stream.gap_end(100), None);
    }
}
