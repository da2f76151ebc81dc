//! One breaker event as the rings keep it: a few words, no name, no allocation.

use std::time::Duration;

use breaker_core::{Event, EventKind, State, Timestamp};

use crate::lenient;

/// Resilience4j's event types (`CircuitBreakerEvent.Type`), in its order. `FORCED_OPEN` and
/// `DISABLED` are in Resilience4j's list but never published (a transition to those states is a
/// `STATE_TRANSITION`), so they filter to nothing here too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Error,
    IgnoredError,
    Success,
    NotPermitted,
    StateTransition,
    Reset,
    ForcedOpen,
    Disabled,
    FailureRateExceeded,
    SlowCallRateExceeded,
}

impl EventType {
    pub(crate) const ALL: [EventType; 10] = [
        EventType::Error,
        EventType::IgnoredError,
        EventType::Success,
        EventType::NotPermitted,
        EventType::StateTransition,
        EventType::Reset,
        EventType::ForcedOpen,
        EventType::Disabled,
        EventType::FailureRateExceeded,
        EventType::SlowCallRateExceeded,
    ];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            EventType::Error => "ERROR",
            EventType::IgnoredError => "IGNORED_ERROR",
            EventType::Success => "SUCCESS",
            EventType::NotPermitted => "NOT_PERMITTED",
            EventType::StateTransition => "STATE_TRANSITION",
            EventType::Reset => "RESET",
            EventType::ForcedOpen => "FORCED_OPEN",
            EventType::Disabled => "DISABLED",
            EventType::FailureRateExceeded => "FAILURE_RATE_EXCEEDED",
            EventType::SlowCallRateExceeded => "SLOW_CALL_RATE_EXCEEDED",
        }
    }

    /// The type a path's `{eventType}` names: upper-cased as Resilience4j reads it, or as
    /// leniently as Spring reads an enum (`state-transition`, `stateTransition`).
    pub(crate) fn parse(name: &str) -> Option<EventType> {
        lenient::event_type(name, EventType::ALL, EventType::as_str)
    }

    /// `ERROR, IGNORED_ERROR, ...`, for an error message.
    pub(crate) fn list() -> String {
        EventType::ALL.map(EventType::as_str).join(", ")
    }

    /// Its place in [`EventType::ALL`] (the declaration's order, which `ALL` follows).
    fn code(self) -> u64 {
        self as u64
    }

    fn from_code(code: u64) -> Option<EventType> {
        EventType::ALL.get(usize::try_from(code).ok()?).copied()
    }
}

/// A state as a small number (0 is "none"), for a record's first word.
fn state_code(state: State) -> u64 {
    State::ALL
        .iter()
        .position(|s| *s == state)
        .map_or(0, |i| i as u64 + 1)
}

fn state_of(code: u64) -> Option<State> {
    State::ALL
        .get(usize::try_from(code.checked_sub(1)?).ok()?)
        .copied()
}

/// One event without its breaker's name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Record {
    pub(crate) kind: EventType,
    pub(crate) at: Timestamp,
    /// How long the call took: SUCCESS, ERROR and IGNORED_ERROR.
    pub(crate) elapsed: Option<Duration>,
    /// STATE_TRANSITION's states.
    pub(crate) transition: Option<(State, State)>,
}

/// A record's words: `[type | from << 8 | to << 16 | has_elapsed << 24 | error text's key << 32,
/// unix nanos, elapsed nanos]`. The key (0: none) finds an ERROR or IGNORED_ERROR event's error
/// text among those its breaker's feed keeps (`hub.rs`); [`Record::from_words`] ignores it.
pub(crate) type Words = [u64; 3];

/// The words of a call's record (SUCCESS, ERROR, IGNORED_ERROR) at `at` that took
/// `elapsed_nanos`: [`Record::words`] for it, written out for the listener's fast path.
#[inline(always)]
pub(crate) const fn call_words(kind: EventType, at: Timestamp, elapsed_nanos: u64) -> Words {
    [kind as u64 | 1 << 24, at.unix_nanos(), elapsed_nanos]
}

/// `elapsed` in nanoseconds, `u64::MAX` past 584 years.
#[inline(always)]
pub(crate) fn nanos_of(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}

impl Record {
    /// The record of an event, or `None` for a kind this crate does not know (the core's
    /// `EventKind` is non-exhaustive).
    pub(crate) fn of(event: &Event) -> Option<Record> {
        let (kind, elapsed, transition) = match event.kind() {
            EventKind::StateTransition { from, to } => {
                (EventType::StateTransition, None, Some((from, to)))
            }
            EventKind::Success { elapsed } => (EventType::Success, Some(elapsed), None),
            EventKind::Error { elapsed } => (EventType::Error, Some(elapsed), None),
            EventKind::IgnoredError { elapsed } => (EventType::IgnoredError, Some(elapsed), None),
            EventKind::NotPermitted => (EventType::NotPermitted, None, None),
            EventKind::FailureRateExceeded { .. } => (EventType::FailureRateExceeded, None, None),
            EventKind::SlowCallRateExceeded { .. } => (EventType::SlowCallRateExceeded, None, None),
            EventKind::Reset => (EventType::Reset, None, None),
            _ => return None,
        };
        Some(Record {
            kind,
            at: event.at(),
            elapsed,
            transition,
        })
    }

    /// The words of `event`'s record: [`Record::of`] then [`Record::words`], without the
    /// detour for the call events that nearly every call publishes.
    #[inline]
    pub(crate) fn words_of(event: &Event) -> Option<Words> {
        let call = |kind: EventType, elapsed: Duration| {
            Some(call_words(kind, event.at(), nanos_of(elapsed)))
        };
        match event.kind() {
            EventKind::Success { elapsed } => call(EventType::Success, elapsed),
            EventKind::Error { elapsed } => call(EventType::Error, elapsed),
            EventKind::IgnoredError { elapsed } => call(EventType::IgnoredError, elapsed),
            _ => Record::of(event).map(|record| record.words()),
        }
    }

    pub(crate) fn words(&self) -> Words {
        let (from, to) = self
            .transition
            .map_or((0, 0), |(from, to)| (state_code(from), state_code(to)));
        let elapsed = self
            .elapsed
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        [
            self.kind.code() | from << 8 | to << 16 | u64::from(elapsed.is_some()) << 24,
            self.at.unix_nanos(),
            elapsed.unwrap_or(0),
        ]
    }

    /// The record of words made by [`Record::words`]; `None` for words no record makes.
    pub(crate) fn from_words(words: Words) -> Option<Record> {
        let [meta, at, elapsed] = words;
        let kind = EventType::from_code(meta & 0xff)?;
        let transition = match (meta >> 8 & 0xff, meta >> 16 & 0xff) {
            (0, 0) => None,
            (from, to) => Some((state_of(from)?, state_of(to)?)),
        };
        Some(Record {
            kind,
            at: Timestamp::from_unix_nanos(at),
            elapsed: (meta >> 24 & 1 == 1).then(|| Duration::from_nanos(elapsed)),
            transition,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_words() {
        let records = [
            Record {
                kind: EventType::StateTransition,
                at: Timestamp::from_unix_millis(1_700_000_000_000),
                elapsed: None,
                transition: Some((State::HalfOpen, State::MetricsOnly)),
            },
            Record {
                kind: EventType::Error,
                at: Timestamp::from_unix_nanos(5),
                elapsed: Some(Duration::from_nanos(1_234_567)),
                transition: None,
            },
            Record {
                kind: EventType::Success,
                at: Timestamp::from_unix_nanos(u64::MAX),
                elapsed: Some(Duration::ZERO),
                transition: None,
            },
        ];
        for record in records {
            assert_eq!(Record::from_words(record.words()), Some(record));
        }
        assert_eq!(Record::from_words([0xff, 0, 0]), None);
        assert_eq!(Record::from_words([4 | 9 << 8 | 1 << 16, 0, 0]), None);
    }

    #[test]
    fn a_calls_words_are_its_records() {
        for kind in [
            EventType::Success,
            EventType::Error,
            EventType::IgnoredError,
        ] {
            let record = Record {
                kind,
                at: Timestamp::from_unix_nanos(9),
                elapsed: Some(Duration::from_nanos(3)),
                transition: None,
            };
            assert_eq!(call_words(kind, record.at, 3), record.words());
        }
    }

    #[test]
    fn a_records_words_ignore_the_error_texts_key() {
        let record = Record {
            kind: EventType::Error,
            at: Timestamp::from_unix_nanos(5),
            elapsed: Some(Duration::from_nanos(7)),
            transition: None,
        };
        let [meta, at, elapsed] = record.words();
        assert_eq!(
            Record::from_words([meta | 42 << 32, at, elapsed]),
            Some(record)
        );
    }

    #[test]
    fn types_parse_in_any_case() {
        assert_eq!(
            EventType::parse("state_transition"),
            Some(EventType::StateTransition)
        );
        assert_eq!(
            EventType::parse("NOT_PERMITTED"),
            Some(EventType::NotPermitted)
        );
        assert_eq!(
            EventType::parse("Not-Permitted"),
            Some(EventType::NotPermitted)
        );
        assert_eq!(EventType::parse("OPEN"), None);
        for t in EventType::ALL {
            assert_eq!(EventType::from_code(t.code()), Some(t));
        }
    }
}
