//! The newest `cap` events of many instances, by time: what `GET /actuator/circuitbreakerevents`
//! (and the bulkheads' and retries' endpoints for every instance) answers.
//!
//! Resilience4j gathers every buffered event of every instance and sorts them by creation time.
//! With a cap of `cap` events over `n` instances that keep up to `k` each, doing the same costs
//! `n·k` records in memory and an `n·k·log(n·k)` sort (10,000 breakers of 100 events: a million
//! records) for at most `cap` of them. Here each instance gives its events newest first, lazily
//! (its ring read back from its newest slot), and a heap holding one candidate per instance
//! picks the newest of all, `cap` times: `n + cap` records read, a heap of `n`, a list of `cap`;
//! time `O((n + cap)·log n)`, whatever `k` is.
//!
//! The answer is the one a stable sort by time of every instance's events (instances in name
//! order, each oldest first) would give, cut to its newest `cap`: the same events in the same
//! order, events at the same instant in instance order, then each instance's own order. That
//! holds when each instance's events are in time order, which is how a ring fills as long as
//! one thread at a time publishes an instance's events. When two threads publish to one
//! instance at once, the later event can reach the ring first; the sort put such a pair back
//! in time order, and so does this (the list is sorted by time at the end), but which events
//! fall at the edge of the cap can differ by such a pair.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use breaker_core::Timestamp;

/// One instance's newest event not yet taken.
struct Candidate<T> {
    at: Timestamp,
    source: usize,
    event: T,
}

impl<T> Candidate<T> {
    /// Later in the stable sort's order: later in time, then the later instance. (Two
    /// candidates never come from one instance.)
    fn key(&self) -> (Timestamp, usize) {
        (self.at, self.source)
    }
}

impl<T> PartialEq for Candidate<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Candidate<T> {}

impl<T> PartialOrd for Candidate<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Candidate<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The newest `cap` events of `sources` (one iterator per instance, in name order, each giving
/// its events newest first), oldest first, each with its instance's place in `sources`. `at`
/// is an event's creation time. See the module's docs for the order.
pub(crate) fn newest<T, I>(
    sources: impl IntoIterator<Item = I>,
    cap: usize,
    at: impl Fn(&T) -> Timestamp,
) -> Vec<(usize, T)>
where
    I: Iterator<Item = T>,
{
    let mut sources: Vec<I> = sources.into_iter().collect();
    let candidate = |source: usize, event: T| Candidate {
        at: at(&event),
        source,
        event,
    };
    let seeds: Vec<Candidate<T>> = sources
        .iter_mut()
        .enumerate()
        .filter_map(|(source, events)| Some(candidate(source, events.next()?)))
        .collect();
    let mut heap = BinaryHeap::from(seeds);
    let mut taken = Vec::new();
    while taken.len() < cap {
        let Some(newest) = heap.pop() else { break };
        if let Some(next) = sources[newest.source].next() {
            heap.push(candidate(newest.source, next));
        }
        taken.push((newest.source, newest.event));
    }
    taken.reverse();
    // Already in order unless an instance's ring held two events out of time order (see the
    // module's docs); a stable sort of a sorted list is one pass.
    taken.sort_by_key(|(_, event)| at(event));
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event: its time, its instance and its place in the instance's list.
    type Event = (u64, usize, usize);

    /// What Resilience4j's endpoint does, with the cap: every event, sorted by time (stably,
    /// so instances in order, each in its own order), the newest `cap` kept.
    fn by_full_sort(instances: &[Vec<u64>], cap: usize) -> Vec<Event> {
        let mut all: Vec<Event> = instances
            .iter()
            .enumerate()
            .flat_map(|(i, times)| times.iter().enumerate().map(move |(n, &t)| (t, i, n)))
            .collect();
        all.sort_by_key(|&(t, _, _)| t);
        let skip = all.len().saturating_sub(cap);
        all.split_off(skip)
    }

    fn by_selection(instances: &[Vec<u64>], cap: usize) -> Vec<Event> {
        let sources = instances
            .iter()
            .enumerate()
            .map(|(i, times)| times.iter().enumerate().rev().map(move |(n, &t)| (t, i, n)));
        newest(sources, cap, |&(t, _, _)| Timestamp::from_unix_nanos(t))
            .into_iter()
            .map(|(source, event)| {
                assert_eq!(source, event.1, "the event's own instance");
                event
            })
            .collect()
    }

    /// A small xorshift: the same random instances on every run.
    struct Random(u64);

    impl Random {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Random instances, each in time order as a ring fills: some empty, few or many times,
    /// many ties within and across instances (times from a small range).
    fn instances(random: &mut Random) -> Vec<Vec<u64>> {
        let count = random.below(12) as usize;
        let span = 1 + random.below(40);
        (0..count)
            .map(|_| {
                let len = random.below(15) as usize;
                let mut times: Vec<u64> = (0..len).map(|_| random.below(span)).collect();
                times.sort_unstable();
                times
            })
            .collect()
    }

    #[test]
    fn the_same_events_in_the_same_order_as_a_full_sort() {
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        for round in 0..5_000 {
            let instances = instances(&mut random);
            let total: usize = instances.iter().map(Vec::len).sum();
            for cap in [0, 1, 2, 7, total.saturating_sub(1), total, total + 3] {
                assert_eq!(
                    by_selection(&instances, cap),
                    by_full_sort(&instances, cap),
                    "round {round}, cap {cap}: {instances:?}"
                );
            }
        }
    }

    #[test]
    fn ties_come_in_instance_order_then_each_instance_own_order() {
        let instances = vec![vec![5, 5], vec![], vec![5], vec![1, 5]];
        assert_eq!(
            by_selection(&instances, 10),
            [(1, 3, 0), (5, 0, 0), (5, 0, 1), (5, 2, 0), (5, 3, 1)]
        );
        assert_eq!(by_selection(&instances, 2), [(5, 2, 0), (5, 3, 1)]);
    }

    /// Only what the cap needs is read: each instance's newest, then one more per event taken.
    #[test]
    fn reads_instances_plus_cap_events_whatever_they_hold() {
        use std::cell::Cell;
        let read = Cell::new(0usize);
        let sources = (0..100usize).map(|i| {
            let read = &read;
            (0..1_000u64).rev().map(move |n| {
                read.set(read.get() + 1);
                (n * 100 + i as u64, i)
            })
        });
        let taken = newest(sources, 10, |&(t, _)| Timestamp::from_unix_nanos(t));
        assert_eq!(taken.len(), 10);
        assert_eq!(taken[9].1, (99_999, 99));
        assert!(read.get() <= 100 + 10, "{} events read", read.get());
    }

    /// An instance whose ring holds two events out of time order (two threads published at
    /// once): the answer is still in time order.
    #[test]
    fn an_instance_out_of_time_order_still_comes_out_sorted() {
        let instances = vec![vec![1, 4, 3, 6], vec![2, 5]];
        let times: Vec<u64> = by_selection(&instances, 10)
            .iter()
            .map(|&(t, _, _)| t)
            .collect();
        assert_eq!(times, [1, 2, 3, 4, 5, 6]);
        assert_eq!(
            by_selection(&instances, 10),
            by_full_sort(&instances, 10),
            "with every event taken, the same as the full sort"
        );
    }
}
