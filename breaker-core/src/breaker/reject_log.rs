//! Rejected calls in the log, without flooding it: at most one DEBUG line per breaker per
//! second of the breaker's clock, saying how many calls were rejected since the previous line.
//!
//! An OPEN breaker under load rejects thousands of calls a second; one line each would drown
//! the log (and cost more than the rejection). The first rejection is logged at once
//! (`rejected=1`); later ones are counted, and the first rejection a second or more after the
//! last line writes the count (`rejected=N`, this call included). Rejections in the last
//! second before a breaker stops rejecting are not written (the `not_permitted` metrics count
//! every one). Nothing is done unless DEBUG is enabled for this target.
//!
//! Two atomics per breaker, no lock: the winner of a compare-exchange on the time of the last
//! line writes the next one.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::state::State;
use crate::time::clock::Clock;

/// The target of the lines, kept stable for log filters.
const TARGET: &str = "breaker_core::breaker";
const INTERVAL_NANOS: u64 = 1_000_000_000;

/// One breaker's rejection log.
#[derive(Debug, Default)]
pub(crate) struct RejectLog {
    /// The breaker clock's time of the last line, in Unix nanoseconds; 0 before the first.
    last_line: AtomicU64,
    /// Rejections since the last line.
    pending: AtomicU64,
}

impl RejectLog {
    /// Logs (or counts) one rejected call of the breaker `name`, which was in `state`.
    #[inline]
    pub(crate) fn note(&self, name: &str, state: State, clock: &Clock) {
        if tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
            self.log(name, state, clock);
        }
    }

    #[cold]
    fn log(&self, name: &str, state: State, clock: &Clock) {
        let now = clock.now().unix_nanos().max(1);
        self.pending.fetch_add(1, Ordering::Relaxed);
        let last = self.last_line.load(Ordering::Relaxed);
        let due = last == 0 || now >= last.saturating_add(INTERVAL_NANOS);
        if !due
            || self
                .last_line
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return; // counted; this second's line is written (or being written) by another call
        }
        let rejected = self.pending.swap(0, Ordering::Relaxed).max(1);
        tracing::debug!(
            target: TARGET,
            breaker = %name,
            state = %state,
            rejected,
            "calls not permitted"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::{self, Write as _};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use crate::{Config, ManualClock, Registry, State};

    /// Collects every event as `field=value ...` text.
    struct Capture(Arc<Mutex<Vec<String>>>);

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            let _ = write!(self.0, "{}={:?} ", field.name(), value);
        }
    }

    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields(String::new());
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn rejection_lines(lines: &[String]) -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.contains("calls not permitted"))
            .cloned()
            .collect()
    }

    #[test]
    fn an_open_breaker_under_load_logs_once_a_second_with_the_count() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let clock = ManualClock::new();
        let registry = Registry::builder()
            .clock(clock.clone())
            .default_config(
                Config::builder()
                    .sliding_window_size(2)
                    .minimum_number_of_calls(2)
                    .build()
                    .unwrap(),
            )
            .build();
        let b = registry.breaker("reject-log-test");
        tracing::subscriber::with_default(Capture(Arc::clone(&lines)), || {
            for _ in 0..2 {
                let _ = b.call_sync(|| Err::<(), _>("down"));
            }
            assert_eq!(b.state(), State::Open);
            for _ in 0..1_000 {
                assert!(b.try_acquire().is_err());
            }
            let first = rejection_lines(&lines.lock().unwrap());
            assert_eq!(first.len(), 1, "{first:?}");
            assert!(first[0].contains("rejected=1 "), "{}", first[0]);
            assert!(first[0].contains("breaker=reject-log-test"), "{}", first[0]);

            clock.advance(Duration::from_millis(999));
            assert!(b.try_acquire().is_err());
            assert_eq!(rejection_lines(&lines.lock().unwrap()).len(), 1);

            clock.advance(Duration::from_millis(1));
            assert!(b.try_acquire().is_err());
            let all = rejection_lines(&lines.lock().unwrap());
            assert_eq!(all.len(), 2, "{all:?}");
            // 999 counted after the first line, one at 999 ms, and this one.
            assert!(all[1].contains("rejected=1001 "), "{}", all[1]);
            assert!(all[1].contains("state=OPEN"), "{}", all[1]);
        });
    }

    #[test]
    fn nothing_is_counted_when_debug_is_off() {
        // No subscriber on this thread: DEBUG is disabled, and nothing is counted.
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock).build();
        let b = registry.breaker("reject-log-quiet");
        b.transition_to(State::ForcedOpen).unwrap();
        for _ in 0..10 {
            assert!(b.try_acquire().is_err());
        }
        let log = &b.shared.rejections;
        assert_eq!(log.pending.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(log.last_line.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
