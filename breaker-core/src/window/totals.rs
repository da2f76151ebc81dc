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
    /// The totals in one word, 16 bits each: for a window of at most 65,535 calls (CLOSED's
    /// lock-free window holds at most 2,047), so that an event can carry them in a register.
    #[inline]
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.calls <= u32::from(u16::MAX));
        let field = |v: u32| u64::from(v.min(u32::from(u16::MAX)));
        field(self.calls)
            | field(self.failed) << 16
            | field(self.slow) << 32
            | field(self.slow_failed) << 48
    }

    /// The totals [`pack`](Totals::pack) put in one word.
    #[inline]
    pub(crate) fn unpack(packed: u64) -> Totals {
        let field = |at: u32| (packed >> at & 0xFFFF) as u32;
        Totals {
            calls: field(0),
            failed: field(16),
            slow: field(32),
            slow_failed: field(48),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each figure has its own 16 bits: four different figures come back as they went in, and
    /// a figure past 16 bits stays at the most a field holds rather than spilling into the next.
    #[test]
    fn packed_totals_come_back_figure_by_figure() {
        let totals = Totals {
            calls: 2047,
            failed: 1500,
            slow: 700,
            slow_failed: 3,
        };
        assert_eq!(Totals::unpack(totals.pack()), totals);
        let full = Totals {
            calls: 65_535,
            failed: 65_535,
            slow: 65_535,
            slow_failed: 65_535,
        };
        assert_eq!(Totals::unpack(full.pack()), full);
        let spilling = Totals {
            failed: 70_000,
            ..Totals::default()
        };
        assert_eq!(Totals::unpack(spilling.pack()).failed, 65_535);
        assert_eq!(Totals::unpack(spilling.pack()).slow, 0);
    }
}
