//! A grow-only map from keys to values that stay at one address for the map's life.
//!
//! # Why not a crate
//!
//! Its callers (the registry's slot per plain name, the process-wide name interner, the Redis
//! hint's record of breakers with local history) only ever add, look up far more often than they
//! add, and need `make` run at most once per key (one slot per name; the interner leaks one copy
//! per name). A lookup here takes no lock, needs no guard and writes nothing: two Acquire loads
//! (plain loads on x86) and a walk of an immutable list, and the `&V` it returns lives as long as
//! the map. dashmap's `get` takes its shard's read lock (an atomic read-modify-write on a word
//! that every reader of the shard shares, and another to release it) and returns a guard that
//! holds it; elsa's `sync::FrozenMap` has this API exactly (insert-only, `&V` for the map's life)
//! but is an `RwLock<HashMap>`, the same read lock on every `get`; arc-swap over a `HashMap`
//! copies the whole map on every insert; evmap reads through per-thread handles, keeps each value
//! twice, and shows a write only after a `refresh` that waits for the readers. papaya, which the
//! keyed groups and the metrics export use because they must remove entries, comes closest: its
//! reads take no lock and write only the reading thread's own slot, but each lookup enters a
//! seize guard and may borrow only for the guard's life, it pays for removal and incremental
//! resizing that these callers never use, and its atomics are outside the loom models. What this
//! map costs in return: inserts are serialised on one mutex, and the tables replaced by growth
//! are kept until the map drops (at most about as much again as the current table), which suits
//! sets that grow a few times in a process's life.
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
//!
//! The atomics and the mutex come from `crate::sync`, and entries, nodes and tables are
//! `Published`, so that breaker-model's loom models (breaker-model/tests/models.rs) check the map
//! through the registry: two threads creating one breaker, and lookups and listings while the
//! table grows. Under loom a table starts with one bucket, so that a map's third entry grows it.

use std::borrow::Borrow;
#[cfg(not(loom))]
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::Ordering;

use crate::sync::{AtomicPtr, AtomicUsize, Mutex, Published};

/// Buckets in a new map's table. A power of two. Under loom, one, so that a model reaches a
/// growth with a map's third entry.
#[cfg(not(loom))]
const INITIAL_BUCKETS: usize = 16;
#[cfg(loom)]
const INITIAL_BUCKETS: usize = 1;

/// The keys' hasher. Under loom a fixed one: loom replays an interleaving by running the model
/// again, which only works if every run makes the same operations, so a key must land in the
/// same bucket every time.
#[cfg(not(loom))]
type Hasher = RandomState;
#[cfg(loom)]
type Hasher = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

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
    entry: EntryPtr<K, V>,
    next: NodePtr<K, V>,
}

/// Entries, nodes and tables are made by `Box::into_raw` and reached by readers through an
/// atomic pointer; [`Published`] lets the loom models check each such read.
type EntryPtr<K, V> = *mut Published<Entry<K, V>>;
type NodePtr<K, V> = *mut Published<Node<K, V>>;
type TablePtr<K, V> = *mut Published<Table<K, V>>;

/// The head of one bucket's list.
type Bucket<K, V> = AtomicPtr<Published<Node<K, V>>>;

/// An index over the entries. Frees its nodes (not the entries) when dropped.
struct Table<K, V> {
    /// `buckets.len() - 1`; `buckets.len()` is a power of two.
    mask: usize,
    buckets: Box<[Bucket<K, V>]>,
}

impl<K, V> Table<K, V> {
    /// A table whose buckets start at `heads`; `heads.len()` must be a power of two.
    fn with_heads(heads: Vec<NodePtr<K, V>>) -> Self {
        debug_assert!(heads.len().is_power_of_two());
        Table {
            mask: heads.len() - 1,
            buckets: heads.into_iter().map(AtomicPtr::new).collect(),
        }
    }

    fn bucket(&self, hash: u64) -> &Bucket<K, V> {
        &self.buckets[bucket_index(hash, self.mask)]
    }
}

/// The bucket of `hash` in a table of `mask + 1` buckets.
fn bucket_index(hash: u64, mask: usize) -> usize {
    // Truncating the hash on 32-bit targets is intended: only the low bits pick a bucket.
    hash as usize & mask
}

impl<K, V> Drop for Table<K, V> {
    fn drop(&mut self) {
        for bucket in self.buckets.iter() {
            // Relaxed: the table is being dropped, so whatever gave us `&mut self` (the map's
            // own drop) already orders this after every store.
            let mut node = bucket.load(Ordering::Relaxed);
            while !node.is_null() {
                // SAFETY: every node in this table's lists was made by `Box::into_raw` and is
                // linked into exactly one list of exactly one table, so it is freed exactly once,
                // here. `&mut self` (the map is being dropped) means no reader is walking it.
                let boxed = unsafe { Box::from_raw(node) };
                node = boxed.get().next;
            }
        }
    }
}

/// State only touched under the writer mutex.
struct Writer<K, V> {
    /// Tables replaced by a bigger one, kept alive for readers still walking them.
    retired: Vec<TablePtr<K, V>>,
}

/// Grow-only concurrent map; values are never moved or dropped before the map.
///
/// Lookups take no lock; inserts take a mutex. See the module docs for the design.
pub(crate) struct ConcurrentMap<K, V> {
    /// The current table; never null. Made by `Box::into_raw`, freed only in `Drop`.
    table: AtomicPtr<Published<Table<K, V>>>,
    /// Number of entries. Only changed under `writer`.
    len: AtomicUsize,
    writer: Mutex<Writer<K, V>>,
    hasher: Hasher,
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
        let table = Table::with_heads(vec![ptr::null_mut(); INITIAL_BUCKETS]);
        let table = Box::into_raw(Box::new(Published::new(table)));
        ConcurrentMap {
            table: AtomicPtr::new(table),
            len: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                retired: Vec::new(),
            }),
            hasher: Hasher::default(),
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
        unsafe { (*table).get() }
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
            let n = unsafe { (*node).get() };
            // SAFETY: `n.entry` was made by `Box::into_raw`, fully written before the node that
            // points at it was published, never mutated, and freed only when the map drops.
            let entry = unsafe { (*n.entry).get() };
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

        let entry = Box::into_raw(Box::new(Published::new(Entry { hash, key, value })));
        let bucket = table.bucket(hash);
        let node = Box::into_raw(Box::new(Published::new(Node {
            entry,
            // Only writers store bucket heads, and we hold the writer lock, so this is the latest
            // head. Acquire (not needed given the lock, free on x86) makes the chain from the
            // previous writer's Release store to our readers explicit in the atomics.
            next: bucket.load(Ordering::Acquire),
        })));
        // Release: publishes the node and the entry it points at to Acquire loads in `find`.
        bucket.store(node, Ordering::Release);
        self.len.store(len, Ordering::Release);
        drop(writer);

        // SAFETY: `entry` was just made by `Box::into_raw` and is freed only when the map drops;
        // it is never mutated, so a shared reference for the borrow of `self` is sound.
        unsafe { &(*entry).get().value }
    }

    /// Replaces `old` (the current table) with one of twice the buckets linking the same
    /// entries, publishes it, retires `old`, and returns the new table. Call under the writer
    /// lock, passing its guard.
    fn grow<'a>(&'a self, old: &'a Table<K, V>, writer: &mut Writer<K, V>) -> &'a Table<K, V> {
        // The new table is private until it is published below, so its lists are built in a
        // plain `Vec` and its atomics made with their final heads.
        let mut heads: Vec<NodePtr<K, V>> = vec![ptr::null_mut(); old.buckets.len() * 2];
        let mask = heads.len() - 1;
        for bucket in old.buckets.iter() {
            // We are the only writer, and the lock orders us after every earlier one; Acquire
            // also pairs with their Release stores directly (it is free on x86, growth is rare).
            let mut node = bucket.load(Ordering::Acquire);
            while !node.is_null() {
                // SAFETY: as in `find`; the node is live and immutable while the map lives.
                let n = unsafe { (*node).get() };
                // SAFETY: as in `find`; we only read the hash, which never changes.
                let hash = unsafe { (*n.entry).get().hash };
                let head = &mut heads[bucket_index(hash, mask)];
                *head = Box::into_raw(Box::new(Published::new(Node {
                    entry: n.entry,
                    next: *head,
                })));
                node = n.next;
            }
        }
        let new = Table::with_heads(heads);
        let new = Box::into_raw(Box::new(Published::new(new)));
        // Reserve first, so that a failed allocation cannot leave `old` unowned.
        writer.retired.reserve(1);
        // Release: publishes the whole new table (its buckets and nodes) to Acquire loads of it.
        let old_ptr = self.table.swap(new, Ordering::AcqRel);
        // SAFETY: `old_ptr` is the table that was current until the swap, which is never null
        // and stays allocated (retired below) until the map drops.
        debug_assert!(ptr::eq(unsafe { (*old_ptr).get() }, old));
        writer.retired.push(old_ptr);
        // SAFETY: `new` was just made by `Box::into_raw` and, like every table, is freed only
        // when the map drops and mutated only through its atomics.
        unsafe { (*new).get() }
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
                let n = unsafe { (*node).get() };
                // SAFETY: as in `find`: published entries are immutable and live as long as
                // the map.
                let entry = unsafe { (*n.entry).get() };
                f(&entry.key, &entry.value);
                node = n.next;
            }
        }
    }
}

impl<K, V> Drop for ConcurrentMap<K, V> {
    fn drop(&mut self) {
        // Relaxed loads here and below: `&mut self` already orders this after every store.
        let table = self.table.load(Ordering::Relaxed);
        // SAFETY: the current table is never null, was made by `Box::into_raw`, and is freed
        // only here; `&mut self` means no reader is using it.
        let table = unsafe { Box::from_raw(table) };
        // The current table links every entry exactly once (each insert links its entry into the
        // table current at the time, and growing relinks all of them). Take ownership of each.
        let mut entries = Vec::with_capacity(self.len.load(Ordering::Relaxed));
        for bucket in table.get().buckets.iter() {
            let mut node = bucket.load(Ordering::Relaxed);
            while !node.is_null() {
                // SAFETY: as in `find`; nodes are live until `table` drops below.
                let n = unsafe { (*node).get() };
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
mod tests;
