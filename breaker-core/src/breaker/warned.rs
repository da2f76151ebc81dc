//! Warnings a breaker writes once in its life, not once per call.

use std::sync::atomic::{AtomicU8, Ordering};

/// A warning a breaker writes at most once. (All of them are about `timeout-duration` so far;
/// the names say which case.)
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
#[allow(clippy::enum_variant_names)]
pub(crate) enum Warning {
    /// `timeout-duration` is set but an async call ran outside any Tokio runtime.
    TimeoutWithoutRuntime = 1 << 0,
    /// `timeout-duration` is set but the Tokio runtime has no time driver.
    TimeoutWithoutTimeDriver = 1 << 1,
    /// `timeout-duration` is set but a synchronous call cannot be cancelled.
    TimeoutOnSyncCall = 1 << 2,
}

/// The warnings a breaker has written.
#[derive(Debug, Default)]
pub(crate) struct Warned(AtomicU8);

impl Warned {
    /// Whether this is the first time `warning` comes up (and so should be written).
    pub(crate) fn first(&self, warning: Warning) -> bool {
        let bit = warning as u8;
        self.0.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// Whether `warning` came up before.
    #[inline]
    pub(crate) fn has(&self, warning: Warning) -> bool {
        self.0.load(Ordering::Relaxed) & warning as u8 != 0
    }
}
