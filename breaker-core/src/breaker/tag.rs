//! The current state in one atomic word, readable without the breaker's lock.

use std::sync::atomic::Ordering;

use crate::state::{State, StateId};
use crate::sync::AtomicU64;

/// A state object's [`StateId`] and its state, packed as `id << 3 | code`, so that one atomic
/// load tells a lock-free path both which state object is current and what state it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StateTag(u64);

const CODE_BITS: u32 = 3;
const CODE_MASK: u64 = (1 << CODE_BITS) - 1;
/// Bit `code` is set for the states that let every call through without asking anything of
/// the state: CLOSED (0), DISABLED (3), METRICS_ONLY (5).
const PERMITS_ALL: u64 = 1 << 0 | 1 << 3 | 1 << 5;

impl StateTag {
    /// The tag of state object `id`, in `state`.
    #[inline]
    pub(crate) fn new(id: StateId, state: State) -> StateTag {
        StateTag(id.get() << CODE_BITS | state.code())
    }

    /// The state object's id.
    #[inline]
    pub(crate) fn id(self) -> StateId {
        StateId::from_raw(self.0 >> CODE_BITS)
    }

    /// The state.
    #[inline]
    pub(crate) fn state(self) -> State {
        State::from_code(self.0 & CODE_MASK)
    }

    /// Whether the state is `state`.
    #[inline]
    pub(crate) fn is(self, state: State) -> bool {
        self.0 & CODE_MASK == state.code()
    }

    /// Whether the state lets every call through (CLOSED, DISABLED, METRICS_ONLY).
    #[inline]
    pub(crate) fn permits_all(self) -> bool {
        PERMITS_ALL >> (self.0 & CODE_MASK) & 1 == 1
    }
}

/// The breaker's current [`StateTag`]. Written under the breaker's lock (after the state it
/// names is fully built, with `Release`), read anywhere (with `Acquire`).
#[derive(Debug)]
pub(crate) struct AtomicStateTag(AtomicU64);

impl AtomicStateTag {
    pub(crate) fn new(tag: StateTag) -> AtomicStateTag {
        AtomicStateTag(AtomicU64::new(tag.0))
    }

    #[inline]
    pub(crate) fn load(&self) -> StateTag {
        StateTag(self.0.load(Ordering::Acquire))
    }

    #[inline]
    pub(crate) fn store(&self, tag: StateTag) {
        self.0.store(tag.0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_keeps_its_id_and_state() {
        for state in State::ALL {
            for id in [0, 1, 7, 1 << 40, u64::MAX >> CODE_BITS].map(StateId::from_raw) {
                let tag = StateTag::new(id, state);
                assert_eq!((tag.id(), tag.state()), (id, state));
                assert!(tag.is(state));
                assert_eq!(
                    tag.permits_all(),
                    matches!(state, State::Closed | State::Disabled | State::MetricsOnly),
                    "{state}"
                );
            }
        }
    }
}
