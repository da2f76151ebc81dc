//! The current state in one atomic word, readable without the breaker's lock.

use std::sync::atomic::Ordering;

use crate::state::State;
use crate::sync::AtomicU64;

/// A state object's id and its state, packed as `id << 3 | code`.
///
/// Every transition builds a new state object with a new id (as Resilience4j builds a new state
/// object), so a tag names one state object exactly: a permit, a timer or a lock-free record
/// that remembers a tag can tell whether its state is still the current one.
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
    pub(crate) fn new(id: u64, state: State) -> StateTag {
        StateTag(id << CODE_BITS | state.code())
    }

    /// The state object's id.
    #[inline]
    pub(crate) fn id(self) -> u64 {
        self.0 >> CODE_BITS
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
            for id in [0, 1, 7, 1 << 40, u64::MAX >> CODE_BITS] {
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
