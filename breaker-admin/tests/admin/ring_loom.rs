//! The event ring (`src/ring.rs`, compiled here with loom's atomics) under every interleaving
//! loom finds of two writers that wrap one slot and a reader copying it: no copy mixes two
//! writes, a record is only ever read as written by the writer holding its ticket, every ticket
//! handed out is written, and a record is only missing when its writer gave it up (counted in
//! `lost`).

use loom::sync::Arc;

use crate::ring::{Read, Ring};

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

#[test]
fn writers_wrapping_one_slot_never_tear_a_record() {
    // Every interleaving (no preemption bound): a few thousand runs.
    loom::model(|| {
        let ring = Arc::new(Ring::<2>::new(1));
        let writers: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|writer| {
                let ring = Arc::clone(&ring);
                loom::thread::spawn(move || (ring.push([writer, writer ^ MIX]), writer))
            })
            .collect();
        let mut seen = Vec::new();
        for ticket in 0..2 {
            if let Read::Record(record) = ring.read(ticket) {
                seen.push((ticket, record));
            }
        }
        let mut owner = [0u64; 2];
        let mut given_up = 0;
        for handle in writers {
            match handle.join().unwrap() {
                (Some(ticket), writer) => owner[ticket as usize] = writer,
                (None, _) => given_up += 1,
            }
        }
        for (ticket, record) in seen {
            assert_eq!(record[1], record[0] ^ MIX, "torn: {record:?}");
            assert_eq!(
                record[0], owner[ticket as usize],
                "ticket {ticket} read another's record"
            );
        }
        assert_eq!(ring.lost(), given_up);
        let recent = ring.recent();
        match given_up {
            // Both written, in turn: the slot holds the second.
            0 => assert_eq!(recent, vec![(1, [owner[1], owner[1] ^ MIX])]),
            // One writer found the other still in the slot and gave its record up: the other's
            // is whole under ticket 0.
            1 => assert_eq!(recent, vec![(0, [owner[0], owner[0] ^ MIX])]),
            _ => panic!("both writers gave up"),
        }
    });
}

#[test]
fn a_reader_copying_a_slot_being_overwritten_discards_the_copy() {
    loom::model(|| {
        let ring = Arc::new(Ring::<3>::new(1));
        let writer = {
            let ring = Arc::clone(&ring);
            loom::thread::spawn(move || {
                ring.push([1, 1 ^ MIX, 1]);
                ring.push([2, 2 ^ MIX, 2]);
            })
        };
        for ticket in 0..2 {
            match ring.read(ticket) {
                Read::Record(record) => {
                    let v = ticket + 1;
                    assert_eq!(record, [v, v ^ MIX, v], "ticket {ticket}: {record:?}");
                }
                Read::Pending | Read::Overwritten => {}
            }
        }
        writer.join().unwrap();
        assert_eq!(ring.recent(), vec![(1, [2, 2 ^ MIX, 2])]);
        assert_eq!(ring.lost(), 0);
    });
}
