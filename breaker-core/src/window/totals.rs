//! The four figures every window keeps, and how one call's outcome is coded.

/// Running totals of a window (or of one of its buckets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) calls: u32,
    pub(crate) failed: u32,
    pub(crate) slow: u32,
    pub(crate) slow_failed: u32,
}

impl Totals {
    pub(crate) fn add(&mut self, outcome: u8) {
        self.calls += 1;
        self.failed += u32::from(outcome & FAILED);
        self.slow += u32::from((outcome & SLOW) >> 1);
        self.slow_failed += u32::from(outcome == FAILED | SLOW);
    }

    pub(crate) fn remove(&mut self, other: &Totals) {
        self.calls -= other.calls;
        self.failed -= other.failed;
        self.slow -= other.slow;
        self.slow_failed -= other.slow_failed;
    }

    pub(crate) fn remove_one(&mut self, outcome: u8) {
        let mut one = Totals::default();
        one.add(outcome);
        self.remove(&one);
    }
}

/// Bit set in an outcome for a failed call.
pub(crate) const FAILED: u8 = 0b01;
/// Bit set in an outcome for a slow call.
pub(crate) const SLOW: u8 = 0b10;
/// A ring slot that holds no call yet.
pub(crate) const EMPTY: u8 = 0b100;
