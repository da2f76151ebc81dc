//! A grow-only map from keys to values that stay at one address for the map's life.
//!
//! # Design
//!
//! Every key/value pair lives in its own heap allocation, an [`Entry`], created on insert and
//! freed only when the map drops, so a `&V` handed out stays valid for the borrow of the map.
//!
//! The index over the entries is a [`Table`]: a power-of-two array of buckets, each an
//! `AtomicPtr` to the head of a singly linked list of [`Node`]s. A node points at one entry and
//! at the next node; it is never changed after it is published. Nodes belong to exactly one
//! table; entries are shared by every table built since they were inserted.
//!
//! * Readers ([`ConcurrentMap::get`], [`ConcurrentMap::for_each`]) take no lock: they
//!   Acquire-load the current table, Acquire-load a bucket head and follow immutable `next`
//!   pointers.
//! * Writers take the `writer` mutex, re-check the key, run `make`, and push a new node at the
//!   head of its bucket with a Release store.
//! * When there are more than two entries per bucket, the writer builds a new table with twice
//!   the buckets and new nodes pointing at the *same* entries, publishes it with a Release store,
//!   and retires the old table. Retired tables are kept until the map drops, because a reader may
//!   still be walking one. Bucket arrays and nodes of all tables together are at most about twice
//!   those of the current table (the sizes halve going back), so memory stays within a small
//!   constant factor of a plain hash table.
//!
//! A lookup that races with an insert of the same key may miss it; `get_or_insert_with` then
//! re-checks under the mutex, so `make` runs at most once per key.

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Buckets in a new map's table. A power of two.
const INITIAL_BUCKETS: usize = 16;

/// A table grows once it holds more than this many entries per bucket.
const MAX_LOAD: usize = 2;

/// One key/value pair. Allocated once, never moved, freed when the map drops.
struct Entry<K, V> {
    hash: u64,
    key: K,
    value: V,
}

/// One link of a bucket's list. Owned by exactly one table; immutable once published.
struct Node<K, V> {
    entry: *mut Entry<K, V>,
    next: *mut Node<K, V>,
}

/// An index over the entries. Frees its nodes (not the entries) when dropped.
struct Table<K, V> {
    /// `buckets.len() - 1`; `buckets.len()` is a power of two.
    mask: usize,
    buckets: Box<[AtomicPtr<Node<K, V>>]>,
}

impl<K, V> Table<K, V> {
    fn with_buckets(n: usize) -> Self {
        debug_assert!(n.is_power_of_two());
        Table {
            mask: n - 1,
            buckets: (0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
        }
    }

    fn bucket(&self, hash: u64) -> &AtomicPtr<Node<K, V>> {
        // Truncating the hash on 32-bit targets is intended: only the low bits pick a bucket.
        &self.buckets[hash as usize & self.mask]
    }
}

impl<K, V> Drop for Table<K, V> {
    fn drop(&mut self) {
        for bucket in self.buckets.iter_mut() {
            let mut node = *bucket.get_mut();
            while !node.is_null() {
                // SAFETY: every node in this table's lists was made by `Box::into_raw` and is
                // linked into exactly one list of exactly one table, so it is freed exactly once,
                // here. `&mut self` (the map is being dropped) means no reader is walking it.
                let boxed = unsafe { Box::from_raw(node) };
                node = boxed.next;
            }
        }
    }
}

/// State only touched under the writer mutex.
struct Writer<K, V> {
    /// Tables replaced by a bigger one, kept alive for readers still walking them.
    retired: Vec<*mut Table<K, V>>,
}

/// Grow-only concurrent map; values are never moved or dropped before the map.
///
/// Lookups take no lock; inserts take a mutex. See the module docs for the design.
pub(crate) struct ConcurrentMap<K, V> {
    /// The current table; never null. Made by `Box::into_raw`, freed only in `Drop`.
    table: AtomicPtr<Table<K, V>>,
    /// Number of entries. Only changed under `writer`.
    len: AtomicUsize,
    writer: Mutex<Writer<K, V>>,
    hasher: RandomState,
    /// The map owns `K`s and `V`s (for drop check).
    _owns: PhantomData<Box<Entry<K, V>>>,
}

// SAFETY: the raw pointers only point at allocations the map owns (entries, nodes, tables), so
// sending the map sends its `K`s and `V`s along, which needs `K: Send` and `V: Send`, exactly as
// for `HashMap<K, V>`. No pointer refers to thread-local or borrowed data.
unsafe impl<K: Send, V: Send> Send for ConcurrentMap<K, V> {}

// SAFETY: through `&ConcurrentMap` a thread can read `&K` and `&V` (`get`, `for_each`), which needs
// `K: Sync` and `V: Sync`, and can move a `K` and a `V` in (`get_or_insert_with`) that another
// thread may later drop with the map, which needs `K: Send` and `V: Send`. All shared mutable
// state is atomics (published with Release, read with Acquire) or behind the `writer` mutex.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for ConcurrentMap<K, V> {}

impl<K: Hash + Eq, V> ConcurrentMap<K, V> {
    pub(crate) fn new() -> Self {
        let table = Box::into_raw(Box::new(Table::with_buckets(INITIAL_BUCKETS)));
        ConcurrentMap {
            table: AtomicPtr::new(table),
            len: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                retired: Vec::new(),
            }),
            hasher: RandomState::new(),
            _owns: PhantomData,
        }
    }

    /// The current table.
    fn table(&self) -> &Table<K, V> {
        let table = self.table.load(Ordering::Acquire);
        // SAFETY: `table` is never null and was made by `Box::into_raw`; it was fully built
        // before its Release store, which this Acquire load synchronizes with. Tables are only
        // freed in `Drop`, which cannot run while `&self` is borrowed, and are never mutated
        // except through their atomics, so a shared reference for the borrow of `self` is sound.
        unsafe { &*table }
    }

    /// The entry for `key` in `table`, if it is linked there.
    fn find<'a, Q>(table: &'a Table<K, V>, hash: u64, key: &Q) -> Option<&'a Entry<K, V>>
    where
        K: Borrow<Q>,
        Q: Eq + ?Sized,
    {
        let mut node = table.bucket(hash).load(Ordering::Acquire);
        while !node.is_null() {
            // SAFETY: a non-null bucket head or `next` points at a node made by `Box::into_raw`
            // and fully written before being published: heads by a Release store (paired with
            // the Acquire load above), `next` before its node was published, or before the table
            // was published (paired with the Acquire load of the table). Nodes are never mutated
            // after that and are freed only when their table is, i.e. when the map drops, which
            // outlives `'a`.
            let n = unsafe { &*node };
            // SAFETY: `n.entry` was made by `Box::into_raw`, fully written before the node that
            // points at it was published, never mutated, and freed only when the map drops.
            let entry = unsafe { &*n.entry };
            if entry.hash == hash && entry.key.borrow() == key {
                return Some(entry);
            }
            node = n.next;
        }
        None
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        Self::find(self.table(), hash, key).map(|e| &e.value)
    }

    /// The value for `key`, inserting `make()` if there is none.
    ///
    /// `make` runs at most once per key: it runs under the writer mutex, after re-checking that
    /// the key is still absent. So `make` must not insert into this same map (it would deadlock);
    /// reading it with `get` is fine. If `make` panics the map is unchanged.
    pub(crate) fn get_or_insert_with(&self, key: K, make: impl FnOnce() -> V) -> &V {
        let hash = self.hasher.hash_one(&key);
        if let Some(e) = Self::find(self.table(), hash, &key) {
            return &e.value;
        }

        // A panic under the lock (in `make`, or in `K`'s `Eq`) happens before any change to the
        // map, so a poisoned lock guards consistent state and can be used as is.
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // Only writers store `self.table`, and we are the writer, so this is the latest table.
        let mut table = self.table();
        if let Some(e) = Self::find(table, hash, &key) {
            return &e.value;
        }
        let value = make();

        let len = self.len.load(Ordering::Relaxed) + 1;
        if len > MAX_LOAD * table.buckets.len() {
            table = self.grow(table, &mut writer);
        }

        let entry = Box::into_raw(Box::new(Entry { hash, key, value }));
        let bucket = table.bucket(hash);
        let node = Box::into_raw(Box::new(Node {
            entry,
            // Only writers store bucket heads, and we hold the writer lock, so this is the latest
            // head. Acquire (not needed given the lock, free on x86) makes the chain from the
            // previous writer's Release store to our readers explicit in the atomics.
            next: bucket.load(Ordering::Acquire),
        }));
        // Release: publishes the node and the entry it points at to Acquire loads in `find`.
        bucket.store(node, Ordering::Release);
        self.len.store(len, Ordering::Release);
        drop(writer);

        // SAFETY: `entry` was just made by `Box::into_raw` and is freed only when the map drops;
        // it is never mutated, so a shared reference for the borrow of `self` is sound.
        unsafe { &(*entry).value }
    }

    /// Replaces `old` (the current table) with one of twice the buckets linking the same
    /// entries, publishes it, retires `old`, and returns the new table. Call under the writer
    /// lock, passing its guard.
    fn grow<'a>(&'a self, old: &'a Table<K, V>, writer: &mut Writer<K, V>) -> &'a Table<K, V> {
        let new = Table::with_buckets(old.buckets.len() * 2);
        for bucket in old.buckets.iter() {
            // We are the only writer, and the lock orders us after every earlier one; Acquire
            // also pairs with their Release stores directly (it is free on x86, growth is rare).
            let mut node = bucket.load(Ordering::Acquire);
            while !node.is_null() {
                // SAFETY: as in `find`; the node is live and immutable while the map lives.
                let n = unsafe { &*node };
                // SAFETY: as in `find`; we only read the hash, which never changes.
                let hash = unsafe { (*n.entry).hash };
                let head = new.bucket(hash);
                let copy = Box::into_raw(Box::new(Node {
                    entry: n.entry,
                    next: head.load(Ordering::Relaxed),
                }));
                // Relaxed: `new` is not shared yet; its Release publication below covers this.
                head.store(copy, Ordering::Relaxed);
                node = n.next;
            }
        }
        let new = Box::into_raw(Box::new(new));
        // Reserve first, so that a failed allocation cannot leave `old` unowned.
        writer.retired.reserve(1);
        // Release: publishes the whole new table (buckets and nodes) to Acquire loads of it.
        let old_ptr = self.table.swap(new, Ordering::AcqRel);
        debug_assert!(ptr::eq(old_ptr, old));
        writer.retired.push(old_ptr);
        // SAFETY: `new` was just made by `Box::into_raw` and, like every table, is freed only
        // when the map drops and mutated only through its atomics.
        unsafe { &*new }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Calls `f` on every entry, without taking a lock. Entries inserted while this runs may or
    /// may not be visited; every entry inserted before it started is visited exactly once.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        let table = self.table();
        for bucket in table.buckets.iter() {
            let mut node = bucket.load(Ordering::Acquire);
            while !node.is_null() {
                // SAFETY: as in `find`: published nodes are immutable and live as long as the map.
                let n = unsafe { &*node };
                // SAFETY: as in `find`: published entries are immutable and live as long as
                // the map.
                let entry = unsafe { &*n.entry };
                f(&entry.key, &entry.value);
                node = n.next;
            }
        }
    }
}

impl<K, V> Drop for ConcurrentMap<K, V> {
    fn drop(&mut self) {
        let table = *self.table.get_mut();
        // SAFETY: the current table is never null, was made by `Box::into_raw`, and is freed
        // only here; `&mut self` means no reader is using it.
        let table = unsafe { Box::from_raw(table) };
        // The current table links every entry exactly once (each insert links its entry into the
        // table current at the time, and growing relinks all of them). Take ownership of each.
        let mut entries = Vec::with_capacity(*self.len.get_mut());
        for bucket in table.buckets.iter() {
            // Relaxed: `&mut self` already synchronizes with every writer.
            let mut node = bucket.load(Ordering::Relaxed);
            while !node.is_null() {
                // SAFETY: as in `find`; nodes are live until `table` drops below.
                let n = unsafe { &*node };
                // SAFETY: `n.entry` was made by `Box::into_raw` and is linked exactly once from
                // the current table, so it is reclaimed exactly once, here. Other tables' nodes
                // pointing at it are freed below without touching it.
                entries.push(unsafe { Box::from_raw(n.entry) });
                node = n.next;
            }
        }
        // Free all nodes and bucket arrays (these never run user code).
        drop(table);
        let writer = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        for old in writer.retired.drain(..) {
            // SAFETY: retired tables were made by `Box::into_raw`, are in `retired` once, and
            // are freed only here; no reader remains.
            drop(unsafe { Box::from_raw(old) });
        }
        // Drop keys and values last. If one `Drop` panics, dropping the `Vec` still drops the
        // remaining entries and frees its buffer.
        drop(entries);
    }
}

impl<K, V> fmt::Debug for ConcurrentMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrentMap")
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
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
        let n = scaled(100_000, 300) as u64;
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
        let per_thread = scaled(20_000, 60);
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
        let n = scaled(5_000, 200);
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
}
