//! The count-based window: the last N calls, one byte each.

use crate::window::totals::{Totals, EMPTY};

/// The last N calls.
#[derive(Debug)]
pub(crate) struct CountWindow {
    slots: Box<[u8]>,
    head: usize,
    pub(crate) totals: Totals,
}

impl CountWindow {
    pub(crate) fn new(size: u32) -> CountWindow {
        CountWindow {
            slots: vec![EMPTY; size as usize].into_boxed_slice(),
            head: 0,
            totals: Totals::default(),
        }
    }

    /// Records one outcome; returns whether the totals changed (they do not when the evicted
    /// call had the same outcome).
    #[inline]
    pub(crate) fn record(&mut self, outcome: u8) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        self.head = if self.head + 1 == self.slots.len() {
            0
        } else {
            self.head + 1
        };
        let evicted = std::mem::replace(&mut self.slots[self.head], outcome);
        if evicted == outcome {
            return false;
        }
        if evicted != EMPTY {
            self.totals.remove_one(evicted);
        }
        self.totals.add(outcome);
        true
    }
}
