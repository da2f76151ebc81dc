//! The ring under many writers and a reader (`ring.rs`); `tests/admin/ring_loom.rs` checks the
//! interleavings of a slot's writers with loom.

use std::sync::atomic::Ordering;

use crate::ring::{Read, Ring};

#[test]
fn keeps_the_newest_records_oldest_first() {
    let ring = Ring::<2>::new(3);
    assert!(ring.recent().is_empty());
    for i in 0..5u64 {
        assert_eq!(ring.push([i, i * 10]), Some(i));
    }
    assert_eq!(
        ring.recent(),
        vec![(2, [2, 20]), (3, [3, 30]), (4, [4, 40])]
    );
    // Ticket 4 took ticket 0's slot (4 slots for a capacity of 3).
    assert_eq!(ring.read(0), Read::Overwritten);
    assert_eq!(ring.read(5), Read::Pending);
    assert_eq!(ring.read(4), Read::Record([4, 40]));
    assert_eq!(ring.lost(), 0);
}

#[test]
fn a_capacity_that_is_not_a_power_of_two_gives_back_that_many() {
    let ring = Ring::<1>::new(3);
    for i in 0..10u64 {
        ring.push([i]);
    }
    assert_eq!(ring.capacity(), 3);
    assert_eq!(ring.recent(), vec![(7, [7]), (8, [8]), (9, [9])]);
    // Ticket 5 shares no slot with the newest three (4 slots): still whole, if not given back.
    assert_eq!(ring.read(6), Read::Record([6]));
    assert_eq!(ring.read(5), Read::Overwritten);
}

/// A writer stalled in the middle of its record holds its slot: the writer that needs that slot
/// a lap later gives its record up (no ticket, nothing waits), and the ring goes on once the
/// stalled one is done.
#[test]
fn a_record_whose_slot_is_still_being_written_is_given_up() {
    let ring = Ring::<1>::new(2);
    ring.push([0]);
    let stalled = ring.stall();
    assert_eq!(stalled, 1);
    assert_eq!(ring.push([2]), Some(2));
    assert_eq!(ring.push([3]), None);
    assert_eq!((ring.lost(), ring.head(), ring.pushed()), (1, 3, 4));
    assert_eq!(ring.read(1), Read::Pending);
    // The stalled writer finishes: the slot is free for the next lap again.
    ring.resume(stalled, [1]);
    assert_eq!(ring.read(1), Read::Record([1]));
    assert_eq!(ring.push([3]), Some(3));
    assert_eq!(ring.recent(), vec![(2, [2]), (3, [3])]);
}

#[test]
fn a_capacity_of_zero_holds_one() {
    let ring = Ring::<1>::new(0);
    ring.push([1]);
    ring.push([2]);
    assert_eq!(ring.recent(), vec![(1, [2])]);
}

#[test]
fn newest_first_reads_back_to_the_oldest_record_held() {
    let ring = Ring::<1>::new(3);
    assert_eq!(ring.newest_first().next(), None);
    ring.push([7]);
    assert_eq!(ring.newest_first().collect::<Vec<_>>(), [[7]]);
    for i in 0..5u64 {
        ring.push([i]);
    }
    assert_eq!(ring.newest_first().collect::<Vec<_>>(), [[4], [3], [2]]);
    // Lazy: taking one reads one.
    assert_eq!(ring.newest_first().next(), Some([4]));
}

#[test]
fn newest_first_stops_where_newer_records_overwrote_older_ones() {
    let ring = Ring::<1>::new(4);
    for i in 0..4u64 {
        ring.push([i]);
    }
    let mut walk = ring.newest_first();
    assert_eq!(walk.next(), Some([3]));
    // Two newer records take the slots of tickets 0 and 1 while the walk is under way.
    ring.push([4]);
    ring.push([5]);
    assert_eq!(walk.collect::<Vec<_>>(), [[2]]);
}

#[test]
fn tickets_can_start_anywhere_and_skipped_ones_never_come() {
    let ring = Ring::<1>::starting_at(4, 1_000);
    assert_eq!(ring.head(), 1_000);
    assert_eq!(ring.push([1]), Some(1_000));
    assert_eq!(ring.skip(3), 1_001);
    assert_eq!(ring.head(), 1_004);
    assert_eq!(ring.push([2]), Some(1_004));
    for skipped in 1_001..1_004 {
        assert_eq!(ring.read(skipped), Read::Pending, "{skipped}");
    }
    assert_eq!(ring.recent(), vec![(1_004, [2])]);
    assert_eq!(ring.newest_first().collect::<Vec<_>>(), [[2]]);
    // The writers of the laps after a start and after a skip find their slots free: every
    // record is kept, none given up.
    for n in 0..10 {
        assert_eq!(ring.push([n]), Some(1_005 + n), "record {n}");
    }
    assert_eq!(ring.skip(9), 1_015);
    for n in 0..10 {
        assert_eq!(ring.push([n]), Some(1_024 + n), "record {n} after the skip");
    }
    assert_eq!(ring.lost(), 0);
    assert_eq!(
        ring.recent(),
        vec![(1_030, [6]), (1_031, [7]), (1_032, [8]), (1_033, [9])]
    );
}

/// Many writers against a reader: every record the reader gets is whole (its three words
/// agree), tickets come oldest first from the newest window, and once the writers stop the
/// ring gives back exactly its newest `capacity` records.
#[test]
fn readers_never_see_a_torn_record_while_many_threads_write() {
    use std::sync::atomic::AtomicUsize;
    const WRITERS: u64 = 4;
    const CAPACITY: usize = 64;
    const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
    let per_writer: u64 = if cfg!(miri) { 200 } else { 50_000 };
    let ring = Ring::<3>::new(CAPACITY);
    let finished = AtomicUsize::new(0);
    let whole = |r: &[u64; 3]| r[1] == r[0] ^ MIX && r[2] == r[0].wrapping_mul(MIX);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (ring, finished) = (&ring, &finished);
            s.spawn(move || {
                for i in 0..per_writer {
                    let v = w << 32 | i;
                    ring.push([v, v ^ MIX, v.wrapping_mul(MIX)]);
                }
                finished.fetch_add(1, Ordering::Release);
            });
        }
        s.spawn(|| {
            let mut reads = 0u64;
            while finished.load(Ordering::Acquire) < WRITERS as usize || reads == 0 {
                let before = ring.head();
                let recent = ring.recent();
                let after = ring.head();
                reads += 1;
                for pair in recent.windows(2) {
                    assert!(pair[0].0 < pair[1].0, "oldest first: {pair:?}");
                }
                for (ticket, record) in &recent {
                    assert!(whole(record), "torn record at ticket {ticket}: {record:?}");
                    assert!(*ticket < after, "ticket {ticket} from the future");
                    assert!(
                        *ticket + CAPACITY as u64 >= before,
                        "ticket {ticket} older than the window at {before}"
                    );
                }
            }
        });
    });
    let head = ring.head();
    // Every record is either written under a ticket or given up (its slot was held by a
    // writer stalled a whole lap behind), which `lost` counts.
    assert_eq!(ring.pushed(), WRITERS * per_writer);
    assert_eq!(head + ring.lost(), WRITERS * per_writer);
    let recent = ring.recent();
    let tickets: Vec<u64> = recent.iter().map(|(t, _)| *t).collect();
    assert!(recent.iter().all(|(_, r)| whole(r)));
    // Every ticket handed out is written: once the writers are done, the newest `capacity`
    // tickets are all there.
    let newest: Vec<u64> = (head - CAPACITY as u64..head).collect();
    assert_eq!(tickets, newest);
    // Each writer's records come out in the order it wrote them.
    for w in 0..WRITERS {
        let mine: Vec<u64> = recent
            .iter()
            .map(|(_, r)| r[0])
            .filter(|v| v >> 32 == w)
            .collect();
        assert!(mine.windows(2).all(|p| p[0] < p[1]), "writer {w}: {mine:?}");
    }
}
