//! A grow-only map from keys to values that stay at one address for the map's life.
//!
//! PLACEHOLDER: reads take a read lock. To be replaced by a lock-free-read map.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::RwLock;

/// Grow-only concurrent map; values are never moved or dropped before the map.
pub(crate) struct ConcurrentMap<K, V> {
    inner: RwLock<HashMap<K, Box<V>>>,
}

impl<K: Hash + Eq, V> ConcurrentMap<K, V> {
    pub(crate) fn new() -> Self {
        ConcurrentMap {
            inner: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let map = self.inner.read().unwrap_or_else(|e| e.into_inner());
        let ptr: *const V = &**map.get(key)?;
        // SAFETY: values are boxed, never removed and never replaced while the map lives, so
        // the box's contents stay at this address for as long as `&self` is borrowed.
        Some(unsafe { &*ptr })
    }

    pub(crate) fn get_or_insert_with(&self, key: K, make: impl FnOnce() -> V) -> &V {
        if let Some(v) = self.get(&key) {
            return v;
        }
        let mut map = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let ptr: *const V = &**map.entry(key).or_insert_with(|| Box::new(make()));
        // SAFETY: as in `get`.
        unsafe { &*ptr }
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub(crate) fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        let map = self.inner.read().unwrap_or_else(|e| e.into_inner());
        for (k, v) in map.iter() {
            f(k, v);
        }
    }
}

impl<K, V> fmt::Debug for ConcurrentMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrentMap").finish_non_exhaustive()
    }
}
