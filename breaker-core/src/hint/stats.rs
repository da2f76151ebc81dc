//! The counters a running hint exposes.

/// What a hint has done since it started; see
/// [`HintHandle::stats`](crate::hint::HintHandle::stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HintStats {
    /// Checks completed with Redis answering (one at start, then one per `check_interval`,
    /// plus `check_now` calls).
    pub checks: u64,
    /// Hints written (one per OPEN transition from local evidence, when Redis took it).
    pub published: u64,
    /// Breakers opened by a hint.
    pub fast_opened: u64,
    /// Hint keys ignored because of their type, size or content.
    pub ignored_values: u64,
    /// Failed or timed-out connections and commands.
    pub redis_errors: u64,
    /// Events the listener could not queue (the task was far behind); each may be a lost
    /// publish.
    pub dropped_events: u64,
    /// Whether the task holds a connection to Redis right now.
    pub connected: bool,
}
