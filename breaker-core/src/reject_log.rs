//! Rejected calls in the log, without flooding it: at most one DEBUG line per breaker per
//! second of the breaker's clock, saying how many calls were rejected since the previous line.
//!
//! An OPEN breaker under load rejects thousands of calls a second; one line each would drown
//! the log (and cost more than the rejection). The first rejection is logged at once
//! (`rejected=1`); later ones are counted, and the first rejection a second or more after the
//! last line writes the count (`rejected=N`, this call included). Rejections in the last
//! second before a breaker stops rejecting are not written (the `not_permitted` metrics count
//! every one).
//!
//! No lock: each breaker's counters live in a slot of a fixed, static table, claimed with a
//! compare-and-swap on first use and found again by a hash of the breaker's address and name.
//! A slot idle for a minute can be taken over by another breaker. If all the slots a breaker
//! may use are busy, its rejections share one overflow slot with every other such breaker, so
//! the log still gets at most one more line a second. Nothing is done unless DEBUG is enabled
//! for this target.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::breaker::Shared;
use crate::state::State;

/// The target of the lines (the module that logged rejections before).
const TARGET: &str = "breaker_core::breaker";
const SLOTS: usize = 256;
/// Slots a breaker may use, starting at its hash.
const PROBES: usize = 8;
const INTERVAL_NANOS: u64 = 1_000_000_000;
/// A slot whose last line is this far from now (either way: clocks differ) may be taken over.
const IDLE_NANOS: u64 = 60 * INTERVAL_NANOS;

struct Slot {
    /// The breaker using the slot (a non-zero hash); 0 while free.
    owner: AtomicU64,
    /// The time of the last line, in nanoseconds of the breaker's clock; 0 before the first.
    last_line: AtomicU64,
    /// Rejections since the last line.
    pending: AtomicU64,
}

impl Slot {
    // Only copied into the statics below (an array of a non-Copy type needs a const item
    // before Rust 1.79's inline const); never used as a shared value.
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        owner: AtomicU64::new(0),
        last_line: AtomicU64::new(0),
        pending: AtomicU64::new(0),
    };
}

static TABLE: [Slot; SLOTS] = [Slot::FREE; SLOTS];
static OVERFLOW: Slot = Slot::FREE;

/// Logs (or counts) one rejected call of `breaker`, which was in `state`.
#[inline]
pub(crate) fn not_permitted(breaker: &Shared, state: State) {
    if tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
        log(breaker, state);
    }
}

#[cold]
fn log(breaker: &Shared, state: State) {
    let name = breaker.name();
    let now = breaker.clock().now().unix_nanos().max(1);
    let owner = owner_hash(std::ptr::from_ref(breaker) as usize, name);
    let (slot, shared) = match find_slot(owner, now) {
        Some(slot) => (slot, false),
        None => (&OVERFLOW, true),
    };
    slot.pending.fetch_add(1, Ordering::Relaxed);
    let last = slot.last_line.load(Ordering::Relaxed);
    let due = last == 0
        || now >= last.saturating_add(INTERVAL_NANOS)
        // The slot's time is ahead of this clock: another clock wrote it (an overflow slot
        // shared by registries on different clocks). Do not stay silent for that long.
        || now.saturating_add(INTERVAL_NANOS) < last;
    if !due
        || slot
            .last_line
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return; // counted; this second's line is written (or being written) by someone else
    }
    let rejected = slot.pending.swap(0, Ordering::Relaxed).max(1);
    if shared {
        tracing::debug!(
            target: TARGET,
            breaker = %name,
            state = %state,
            rejected,
            "calls not permitted (count shared with other busy breakers)"
        );
    } else {
        tracing::debug!(
            target: TARGET,
            breaker = %name,
            state = %state,
            rejected,
            "calls not permitted"
        );
    }
}

/// FNV-1a over the breaker's address and name; never 0.
fn owner_hash(address: usize, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in address.to_le_bytes().iter().chain(name.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// The slot of `owner`, claiming a free or idle one if it has none.
fn find_slot(owner: u64, now: u64) -> Option<&'static Slot> {
    // Truncation on 32-bit targets only changes which slot comes first.
    let start = owner as usize % SLOTS;
    let mut free = None;
    let mut idle = None;
    for i in 0..PROBES {
        let slot = &TABLE[(start + i) % SLOTS];
        let current = slot.owner.load(Ordering::Acquire);
        if current == owner {
            return Some(slot);
        }
        if current == 0 {
            free = free.or(Some(slot));
        } else if idle.is_none() && is_idle(slot, now) {
            idle = Some((slot, current));
        }
    }
    if let Some(slot) = free {
        match slot
            .owner
            .compare_exchange(0, owner, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return Some(slot),
            Err(current) if current == owner => return Some(slot),
            Err(_) => {}
        }
    }
    let (slot, previous) = idle?;
    slot.owner
        .compare_exchange(previous, owner, Ordering::AcqRel, Ordering::Acquire)
        .ok()?;
    slot.pending.store(0, Ordering::Relaxed);
    slot.last_line.store(0, Ordering::Relaxed);
    Some(slot)
}

fn is_idle(slot: &Slot, now: u64) -> bool {
    let last = slot.last_line.load(Ordering::Relaxed);
    last != 0 && (now > last.saturating_add(IDLE_NANOS) || now.saturating_add(IDLE_NANOS) < last)
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
        // No subscriber on this thread: DEBUG is disabled, and the table is not touched.
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock).build();
        let b = registry.breaker("reject-log-quiet");
        b.transition_to_forced_open_state();
        for _ in 0..10 {
            assert!(b.try_acquire().is_err());
        }
        let owner = super::owner_hash(std::ptr::from_ref(&*b.shared) as usize, "reject-log-quiet");
        assert!(super::TABLE
            .iter()
            .all(|s| s.owner.load(std::sync::atomic::Ordering::Relaxed) != owner));
    }
}
