//! How the sliding window that computes the rates in CLOSED is measured.

use std::fmt;

/// How the sliding window that computes the rates in CLOSED is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SlidingWindowType {
    /// The last `sliding-window-size` calls.
    #[default]
    CountBased,
    /// The calls of the last `sliding-window-size` seconds, bucketed by whole epoch second.
    TimeBased,
}

impl SlidingWindowType {
    /// The spelling used in configuration files: `COUNT_BASED` or `TIME_BASED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SlidingWindowType::CountBased => "COUNT_BASED",
            SlidingWindowType::TimeBased => "TIME_BASED",
        }
    }
}

impl fmt::Display for SlidingWindowType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
