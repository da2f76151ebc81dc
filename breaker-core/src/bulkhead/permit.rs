//! A place in the bulkhead, as a value: given back when dropped.

use std::fmt;
use std::sync::Arc;

use crate::bulkhead::core::{Bulkhead, BulkheadCore};

/// A place in a [`Bulkhead`], from [`try_acquire`](Bulkhead::try_acquire),
/// [`acquire`](Bulkhead::acquire) or [`acquire_blocking`](Bulkhead::acquire_blocking).
///
/// Dropping it gives the place back, exactly once, whatever ended the call (it returned, it
/// failed, its future was dropped, it panicked and the permit was dropped while unwinding),
/// and publishes `CALL_FINISHED`.
#[must_use = "dropping a BulkheadPermit gives its place back at once"]
pub struct BulkheadPermit<'a> {
    core: &'a BulkheadCore,
}

impl<'a> BulkheadPermit<'a> {
    /// A place the caller already took from `core`'s count.
    #[inline]
    pub(crate) fn new(core: &'a BulkheadCore) -> BulkheadPermit<'a> {
        BulkheadPermit { core }
    }

    /// The name of the bulkhead the place is in.
    pub fn bulkhead_name(&self) -> &str {
        self.core.name()
    }
}

impl Drop for BulkheadPermit<'_> {
    // Inlined into the caller's crate: giving a place back nobody listens to is one
    // `fetch_add` and the question whether anyone listens, with no call.
    #[inline]
    fn drop(&mut self) {
        self.core.finish();
    }
}

impl fmt::Debug for BulkheadPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("bulkhead", &self.core.name())
            .finish()
    }
}

/// A [`BulkheadPermit`] that holds its own handle on the bulkhead (a reference count; no
/// allocation): `'static` and `Send`, for a call future that outlives the borrow of the
/// bulkhead, such as a `tower::Service`'s response future. From
/// [`try_acquire_owned`](Bulkhead::try_acquire_owned) or
/// [`acquire_owned`](Bulkhead::acquire_owned).
#[must_use = "dropping an OwnedBulkheadPermit gives its place back at once"]
pub struct OwnedBulkheadPermit {
    core: Arc<BulkheadCore>,
}

impl OwnedBulkheadPermit {
    /// A place the caller already took from `core`'s count.
    #[inline]
    pub(crate) fn new(core: Arc<BulkheadCore>) -> OwnedBulkheadPermit {
        OwnedBulkheadPermit { core }
    }

    /// The bulkhead the place is in.
    pub fn bulkhead(&self) -> Bulkhead {
        Bulkhead {
            core: Arc::clone(&self.core),
        }
    }
}

impl Drop for OwnedBulkheadPermit {
    // Inlined into the caller's crate: giving a place back nobody listens to is one
    // `fetch_add` and the question whether anyone listens, with no call.
    #[inline]
    fn drop(&mut self) {
        self.core.finish();
    }
}

impl fmt::Debug for OwnedBulkheadPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedBulkheadPermit")
            .field("bulkhead", &self.core.name())
            .finish()
    }
}
