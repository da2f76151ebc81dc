//! The map's unit tests (Miri and ThreadSanitizer run them too: scripts/sanitizers.sh).

use super::*;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Scales a count down under Miri, which is very slow.
fn scaled(n: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        n
    }
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn is_send_and_sync() {
    assert_send_sync::<ConcurrentMap<String, u64>>();
    assert_send_sync::<ConcurrentMap<u32, Vec<String>>>();
}

#[test]
fn basic_get_insert_len_for_each() {
    let map: ConcurrentMap<String, u32> = ConcurrentMap::new();
    assert_eq!(map.len(), 0);
    assert_eq!(map.get("a"), None);
    let mut seen = 0;
    map.for_each(|_, _| seen += 1);
    assert_eq!(seen, 0);

    assert_eq!(*map.get_or_insert_with("a".to_owned(), || 1), 1);
    assert_eq!(*map.get_or_insert_with("b".to_owned(), || 2), 2);
    // Existing key: the old value wins.
    assert_eq!(*map.get_or_insert_with("a".to_owned(), || 100), 1);
    assert_eq!(map.len(), 2);

    // Borrowed lookups (`&str` for `String` keys).
    assert_eq!(map.get("a"), Some(&1));
    assert_eq!(map.get("b"), Some(&2));
    assert_eq!(map.get("c"), None);
    assert_eq!(map.get(&"a".to_owned()), Some(&1));

    let mut all = Vec::new();
    map.for_each(|k, v| all.push((k.clone(), *v)));
    all.sort();
    assert_eq!(all, vec![("a".to_owned(), 1), ("b".to_owned(), 2)]);
    assert!(format!("{map:?}").contains("len: 2"));
}

#[test]
fn make_runs_once_per_key() {
    let map: ConcurrentMap<u32, u32> = ConcurrentMap::new();
    let mut calls = 0;
    for round in 0..3 {
        for k in 0..50 {
            let v = *map.get_or_insert_with(k, || {
                calls += 1;
                k * 10 + round
            });
            assert_eq!(v, k * 10, "first value wins");
        }
    }
    assert_eq!(calls, 50);
    assert_eq!(map.len(), 50);
}

#[test]
fn panicking_make_leaves_map_usable() {
    let map: ConcurrentMap<u32, String> = ConcurrentMap::new();
    map.get_or_insert_with(1, || "one".to_owned());
    let r = catch_unwind(AssertUnwindSafe(|| {
        map.get_or_insert_with(2, || panic!("make failed"));
    }));
    assert!(r.is_err());
    assert_eq!(map.len(), 1);
    assert_eq!(map.get(&2), None);
    // The writer mutex is poisoned now; inserts must still work.
    assert_eq!(map.get_or_insert_with(2, || "two".to_owned()), "two");
    assert_eq!(map.get(&1).map(String::as_str), Some("one"));
    assert_eq!(map.len(), 2);
}

#[test]
fn growth_keeps_values_and_references() {
    let n = scaled(100_000, 100) as u64;
    let map: ConcurrentMap<u64, u64> = ConcurrentMap::new();
    // References taken before many resizes.
    let early: Vec<&u64> = (0..8)
        .map(|k| map.get_or_insert_with(k, || k * 3))
        .collect();
    let early_addrs: Vec<*const u64> = early.iter().map(|r| *r as *const u64).collect();
    for k in 8..n {
        assert_eq!(*map.get_or_insert_with(k, || k * 3), k * 3);
    }
    assert_eq!(map.len(), n as usize);
    assert!(map.table().buckets.len() * MAX_LOAD >= n as usize);
    // Load factor stays bounded: at most MAX_LOAD per bucket.
    assert!(map.table().buckets.len() <= 2 * INITIAL_BUCKETS.max(n as usize / MAX_LOAD));
    for (k, r) in early.iter().enumerate() {
        assert_eq!(**r, k as u64 * 3);
        // Same address as a fresh lookup: values never move.
        assert!(ptr::eq(map.get(&(k as u64)).unwrap(), early_addrs[k]));
    }
    for k in 0..n {
        assert_eq!(map.get(&k), Some(&(k * 3)), "key {k}");
    }
    assert_eq!(map.get(&n), None);
    let mut keys = HashSet::new();
    let mut sum = 0u64;
    map.for_each(|k, v| {
        assert!(keys.insert(*k), "key {k} visited twice");
        sum += v;
    });
    assert_eq!(keys.len(), n as usize);
    assert_eq!(sum, 3 * n * (n - 1) / 2);
}

#[test]
fn concurrent_overlapping_inserts_and_reads() {
    const THREADS: usize = 4;
    let per_thread = scaled(20_000, 30);
    // Thread t inserts keys t*per_thread/2 .. t*per_thread/2 + per_thread, so neighbours
    // overlap by half, in alternating directions to race on the same keys.
    let total_keys = (THREADS + 1) * per_thread / 2;
    let map: ConcurrentMap<usize, (usize, usize)> = ConcurrentMap::new();
    let makes = AtomicUsize::new(0);
    let next_id = AtomicUsize::new(0);

    // (key, id, address of the value) as each thread saw them.
    let results: Vec<Vec<(usize, usize, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (map, makes, next_id) = (&map, &makes, &next_id);
                s.spawn(move || {
                    let start = t * per_thread / 2;
                    let mut got = Vec::with_capacity(per_thread);
                    let mut held: Vec<&(usize, usize)> = Vec::new();
                    for i in 0..per_thread {
                        let k = if t % 2 == 0 {
                            start + i
                        } else {
                            start + per_thread - 1 - i
                        };
                        let v = map.get_or_insert_with(k, || {
                            makes.fetch_add(1, Ordering::Relaxed);
                            (k, next_id.fetch_add(1, Ordering::Relaxed))
                        });
                        assert_eq!(v.0, k);
                        got.push((k, v.1, v as *const (usize, usize) as usize));
                        if i % 97 == 0 {
                            held.push(v);
                        }
                        // Concurrent reads of keys other threads may be inserting.
                        let probe = (k * 7 + t) % total_keys;
                        if let Some(p) = map.get(&probe) {
                            assert_eq!(p.0, probe);
                        }
                        if i % 1024 == 0 {
                            let mut count = 0;
                            map.for_each(|k, v| {
                                assert_eq!(*k, v.0);
                                count += 1;
                            });
                            assert!(count <= total_keys);
                        }
                    }
                    // References held across other threads' resizes are still valid.
                    for r in held {
                        assert_eq!(map.get(&r.0), Some(r));
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    assert_eq!(map.len(), total_keys);
    assert_eq!(
        makes.load(Ordering::Relaxed),
        total_keys,
        "make ran once per key"
    );
    // Every thread saw the same value (same id, same address) for a key.
    let mut ids = vec![None; total_keys];
    for got in &results {
        for &(k, id, addr) in got {
            let final_v = map.get(&k).unwrap();
            assert_eq!(final_v.1, id, "key {k}");
            assert_eq!(final_v as *const _ as usize, addr, "key {k}");
            match ids[k] {
                None => ids[k] = Some(id),
                Some(prev) => assert_eq!(prev, id, "key {k}"),
            }
        }
    }
    assert!(ids.iter().all(Option::is_some));
    let distinct: HashSet<usize> = ids.iter().map(|id| id.unwrap()).collect();
    assert_eq!(distinct.len(), total_keys, "ids are unique per key");
    let mut count = 0;
    map.for_each(|k, v| {
        assert_eq!(*k, v.0);
        count += 1;
    });
    assert_eq!(count, total_keys);
}

/// Counts drops of itself.
struct Counted {
    id: usize,
    drops: Arc<AtomicUsize>,
    dropped: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        assert!(!self.dropped, "value {} dropped twice", self.id);
        self.dropped = true;
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn drop_drops_each_value_once() {
    let n = scaled(5_000, 80);
    let drops = Arc::new(AtomicUsize::new(0));
    let map: ConcurrentMap<String, Counted> = ConcurrentMap::new();
    for i in 0..n {
        map.get_or_insert_with(i.to_string(), || Counted {
            id: i,
            drops: Arc::clone(&drops),
            dropped: false,
        });
    }
    // A losing insert of an existing key drops only its key, never a value.
    map.get_or_insert_with("0".to_owned(), || unreachable!());
    assert_eq!(map.len(), n);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(map);
    assert_eq!(drops.load(Ordering::SeqCst), n);

    // Empty map.
    drop(ConcurrentMap::<String, Counted>::new());
}

#[test]
fn drop_after_concurrent_inserts() {
    let per_thread = scaled(3_000, 40);
    let drops = Arc::new(AtomicUsize::new(0));
    let map: ConcurrentMap<usize, Counted> = ConcurrentMap::new();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (map, drops) = (&map, &drops);
            s.spawn(move || {
                for i in 0..per_thread {
                    let k = (i + t * per_thread / 4) % per_thread;
                    map.get_or_insert_with(k, || Counted {
                        id: k,
                        drops: Arc::clone(drops),
                        dropped: false,
                    });
                }
            });
        }
    });
    assert_eq!(map.len(), per_thread);
    // Moving the map to another thread and dropping it there (Send).
    std::thread::spawn(move || drop(map)).join().unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), per_thread);
}
