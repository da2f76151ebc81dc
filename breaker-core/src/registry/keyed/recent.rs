//! The slots this thread looked up last, in front of every keyed group's map.
//!
//! A lookup through the map hashes the key text with SipHash, pins the map and clones the
//! breaker's handle. A key used again on the same thread, the common case of a protected
//! function called over and over for a few tenants, finds its slot here instead: a cheap hash
//! of the text picks one entry, and the entry is served if it is the same group's and its
//! breaker has the same key text.
//!
//! # Never a stale breaker
//!
//! An entry holds the group's `Arc<Slot>`, and is served only while its breaker is in the
//! group: removing a breaker from the map (by [`Keyed::remove`](super::Keyed::remove) or by a
//! sweep) detaches it, and a detached breaker is a miss, so the next lookup goes to the map
//! and gets the key's breaker there. Between the removal and the detach, a lookup through the
//! cache gets the breaker being removed, as a lookup through the map in that same instant
//! does (see [`Keyed`](super::Keyed)). Groups are told apart by an id no other group of the
//! process gets, so an entry never answers for a group that was dropped and another one
//! made at its address.
//!
//! A hit marks the slot used, as a lookup through the map does, so a key served from here is
//! not idle to the sweep.
//!
//! # Bounded
//!
//! [`ENTRIES`] entries per thread, direct-mapped, whatever the number of keys, groups or
//! registries: each entry keeps at most one breaker alive (a removed one until the entry is
//! taken by another key or the thread ends). The index hash is not SipHash, since nothing
//! here grows with collisions: two keys on one entry take turns and each miss is one lookup
//! through the map, as without the cache.
//!
//! # Per thread
//!
//! Each thread reads and writes only its own entries: no lock, no write to memory other
//! threads read, and threads calling one function with different keys never evict each
//! other's entries. A single slot shared by a call site would be written by every thread whose
//! key differs from the last one, and would need its own reclamation scheme before a replaced
//! entry could be freed.
//!
//! # Lent, not cloned
//!
//! A hit moves the slot's `Arc` out of its entry, and the caller moves it back when its call is
//! over ([`KeyedLease`]): no reference count is touched, where a clone and a drop of the
//! handle would be two atomic read-modify-writes, the dearest part of a lookup. While it is
//! lent, its entry is empty: a lookup of the same key in between (from inside the call) goes
//! to the map. A miss lends the slot the map lookup cloned, and giving it back fills the entry.
//!
//! The thread's cache is borrowed only to compare, mark and move; an entry that a fill
//! displaces is dropped after the borrow ends, since dropping a breaker drops its listeners,
//! which are the user's code and may look a key up themselves. While the cache is borrowed,
//! or being destroyed at the thread's exit, lookups go to the map.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use super::slot::Slot;
use crate::breaker::CircuitBreaker;

/// Entries per thread: a handful of hot keys per thread, and few breakers kept alive.
pub(super) const ENTRIES: usize = 16;

/// A group's id and one of its slots.
type Entry = Option<(u64, Arc<Slot>)>;

const EMPTY: Entry = None;

thread_local! {
    static RECENT: RefCell<[Entry; ENTRIES]> = const { RefCell::new([EMPTY; ENTRIES]) };
}

/// Where a key of the group `group` has its entry, from the key text's bytes, followed by
/// zeros or not (`KeyText::padded_bytes`): a text and the same text padded with zeros to a
/// multiple of 8 bytes have one index.
#[inline]
pub(super) fn index(group: u64, padded: &[u8]) -> usize {
    // A multiplicative hash over 8-byte words, read from the top bits, which mix best.
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let (words, rest) = padded.as_chunks::<8>();
    let mut hash = group.wrapping_mul(MIX);
    for &word in words {
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(MIX);
    }
    if !rest.is_empty() {
        let mut word = [0; 8];
        word[..rest.len()].copy_from_slice(rest);
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(MIX);
    }
    (hash >> (u64::BITS - ENTRIES.trailing_zeros())) as usize
}

/// The slot of the key text `key` (its bytes) in the group `group`, taken out of this
/// thread's entry at `index` if the entry holds it and its breaker is still in the group;
/// marks it used. Taken, not cloned: moving the `Arc` out and back touches no reference count.
#[inline]
pub(super) fn take(index: usize, group: u64, key: &[u8]) -> Option<Arc<Slot>> {
    RECENT
        .try_with(|recent| {
            let mut recent = recent.try_borrow_mut().ok()?;
            let entry = recent.get_mut(index)?;
            let (id, slot) = entry.as_ref()?;
            let breaker = &slot.breaker;
            let same_key = breaker.key().map(str::as_bytes) == Some(key);
            if *id != group || !same_key || breaker.is_detached() {
                return None;
            }
            slot.mark_used();
            entry.take().map(|(_, slot)| slot)
        })
        .ok()
        .flatten()
}

/// Puts `slot` of the group `group` at `index`, in place of what was there.
#[inline]
pub(super) fn put(index: usize, group: u64, slot: Arc<Slot>) {
    let displaced = RECENT
        .try_with(|recent| {
            let mut recent = recent.try_borrow_mut().ok()?;
            recent.get_mut(index)?.replace((group, slot))
        })
        .ok()
        .flatten();
    // Dropped here, after the borrow: see the module docs.
    drop(displaced);
}

/// A keyed breaker lent for one call by [`KeyedCallSite::lease`](crate::KeyedCallSite::lease):
/// the slot itself, moved out of this thread's cache (or looked up in the group's map), so
/// that lending it touches no reference count. [`give_back`](KeyedLease::give_back) puts it
/// into the cache of the thread that gives it back, where the next lookup of its key finds it;
/// dropped instead, it only releases its handle.
///
/// `#[circuit_breaker(key = ...)]` takes one per call and gives it back when the call is over.
pub struct KeyedLease {
    group: u64,
    index: usize,
    slot: Arc<Slot>,
}

impl KeyedLease {
    pub(super) fn new(group: u64, index: usize, slot: Arc<Slot>) -> KeyedLease {
        KeyedLease { group, index, slot }
    }

    /// The key's breaker.
    #[inline]
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.slot.breaker
    }

    /// Hands the breaker back to this thread's cache.
    #[inline]
    pub fn give_back(self) {
        put(self.index, self.group, self.slot);
    }
}

impl fmt::Debug for KeyedLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KeyedLease").field(self.breaker()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_in_range_and_depends_on_group_and_text() {
        let keys: Vec<String> = (0..1_000).map(|i| format!("tenant-{i}")).collect();
        let mut used = [0usize; ENTRIES];
        for key in &keys {
            let i = index(7, key.as_bytes());
            assert!(i < ENTRIES);
            used[i] += 1;
            let mut padded = key.clone().into_bytes();
            padded.resize(key.len().next_multiple_of(8), 0);
            assert_eq!(
                index(7, &padded),
                i,
                "zeros up to a word's end change nothing"
            );
        }
        // 1,000 keys spread over every entry, none taking more than three times its share.
        assert!(
            used.iter().all(|&n| n > 0 && n < 3 * 1_000 / ENTRIES),
            "{used:?}"
        );
        let moved = keys
            .iter()
            .filter(|k| index(7, k.as_bytes()) != index(8, k.as_bytes()))
            .count();
        assert!(moved > 800, "the group moves most keys: {moved}");
        assert!(index(1, b"") < ENTRIES);
        assert!(index(1, "k".repeat(100).as_bytes()) < ENTRIES);
    }

    /// Two groups' keys can share an entry: it answers only for the group that filled it, even
    /// for the same key text.
    #[test]
    fn an_entry_answers_only_for_its_own_group() {
        let registry = crate::Registry::builder().build();
        let (a, b) = (registry.keyed("recent:a"), registry.keyed("recent:b"));
        let (from_a, _) = (a.get("k"), b.get("k"));
        let slot = Arc::clone(a.group.breakers.pin().get("k").unwrap());
        put(3, a.group.id, slot);
        assert!(
            take(3, b.group.id, b"k").is_none(),
            "group b was given group a's breaker"
        );
        let own = take(3, a.group.id, b"k").expect("the entry answers for its own group");
        assert!(own.breaker.ptr_eq(&from_a));
    }
}
