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
//! The thread's cache is borrowed only to compare, mark and clone; an entry that a fill
//! displaces is dropped after the borrow ends, since dropping a breaker drops its listeners,
//! which are the user's code and may look a key up themselves. While the cache is borrowed,
//! or being destroyed at the thread's exit, lookups go to the map.

use std::cell::RefCell;
use std::sync::Arc;

use super::Slot;
use crate::breaker::CircuitBreaker;

/// Entries per thread: a handful of hot keys per thread, and few breakers kept alive.
pub(super) const ENTRIES: usize = 16;

/// A group's id and one of its slots.
type Entry = Option<(u64, Arc<Slot>)>;

const EMPTY: Entry = None;

thread_local! {
    static RECENT: RefCell<[Entry; ENTRIES]> = const { RefCell::new([EMPTY; ENTRIES]) };
}

/// Where `key` of the group `group` has its entry.
#[inline]
pub(super) fn index(group: u64, key: &str) -> usize {
    // A multiplicative hash over 8-byte words, read from the top bits, which mix best.
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes = key.as_bytes();
    let mut hash = (group ^ bytes.len() as u64).wrapping_mul(MIX);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(w)).wrapping_mul(MIX);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0; 8];
        w[..rest.len()].copy_from_slice(rest);
        hash = (hash ^ u64::from_le_bytes(w)).wrapping_mul(MIX);
    }
    (hash >> (u64::BITS - ENTRIES.trailing_zeros())) as usize
}

/// The breaker of `key` in the group `group`, if this thread's entry at `index` holds it and
/// it is still in the group; marks its slot used.
#[inline]
pub(super) fn get(index: usize, group: u64, key: &str) -> Option<CircuitBreaker> {
    RECENT
        .try_with(|recent| {
            let recent = recent.try_borrow().ok()?;
            let (id, slot) = recent.get(index)?.as_ref()?;
            let breaker = &slot.breaker;
            if *id != group || breaker.key() != Some(key) || breaker.is_detached() {
                return None;
            }
            slot.mark_used();
            Some(breaker.clone())
        })
        .ok()
        .flatten()
}

/// Puts `slot` of the group `group` at `index`, in place of what was there.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_in_range_and_depends_on_group_and_text() {
        let keys: Vec<String> = (0..1_000).map(|i| format!("tenant-{i}")).collect();
        let mut used = [0usize; ENTRIES];
        for key in &keys {
            let i = index(7, key);
            assert!(i < ENTRIES);
            used[i] += 1;
            assert_eq!(index(7, key), i);
        }
        // 1,000 keys spread over every entry, none taking more than three times its share.
        assert!(
            used.iter().all(|&n| n > 0 && n < 3 * 1_000 / ENTRIES),
            "{used:?}"
        );
        let moved = keys.iter().filter(|k| index(7, k) != index(8, k)).count();
        assert!(moved > 800, "the group moves most keys: {moved}");
        assert!(index(1, "") < ENTRIES);
        assert!(index(1, &"k".repeat(100)) < ENTRIES);
    }
}
