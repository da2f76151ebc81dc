//! The six states, which transitions between them are legal, and the identity of one state
//! object ([`StateId`]).

use std::fmt;

/// The state of a circuit breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls pass and are measured; the thresholds may open the breaker.
    Closed,
    /// Calls are rejected until the wait in OPEN is over.
    Open,
    /// A limited number of trial calls pass; their results close or re-open the breaker.
    HalfOpen,
    /// Calls pass and nothing is measured.
    Disabled,
    /// Calls are rejected until a manual transition.
    ForcedOpen,
    /// Calls pass and are measured, but the breaker never opens.
    MetricsOnly,
}

impl State {
    /// Every state, in Resilience4j's order.
    pub const ALL: [State; 6] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::Disabled,
        State::ForcedOpen,
        State::MetricsOnly,
    ];

    /// Resilience4j's name: `CLOSED`, `OPEN`, `HALF_OPEN`, `DISABLED`, `FORCED_OPEN`, `METRICS_ONLY`.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Open => "OPEN",
            State::HalfOpen => "HALF_OPEN",
            State::Disabled => "DISABLED",
            State::ForcedOpen => "FORCED_OPEN",
            State::MetricsOnly => "METRICS_ONLY",
        }
    }

    /// The lower-case name used as a metrics tag (`closed`, `half_open`, ...).
    pub const fn as_tag(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::Disabled => "disabled",
            State::ForcedOpen => "forced_open",
            State::MetricsOnly => "metrics_only",
        }
    }

    /// Parses Resilience4j's name (`HALF_OPEN`); `None` for anything else.
    pub fn from_name(name: &str) -> Option<State> {
        State::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether Resilience4j allows a transition from `self` to `to`.
    ///
    /// Illegal: CLOSED -> HALF_OPEN, METRICS_ONLY -> OPEN and METRICS_ONLY -> HALF_OPEN. Every
    /// other pair is legal, including a state to itself (which builds a fresh state: a new
    /// window, a new wait) without publishing an event.
    pub const fn can_transition_to(self, to: State) -> bool {
        !matches!(
            (self, to),
            (State::Closed, State::HalfOpen)
                | (State::MetricsOnly, State::Open)
                | (State::MetricsOnly, State::HalfOpen)
        )
    }

    /// The state as three bits, for the packed words that hold a state (the breaker's
    /// [`StateTag`](crate::breaker::tag::StateTag), a rejection's detail).
    pub(crate) const fn code(self) -> u64 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::Disabled => 3,
            State::ForcedOpen => 4,
            State::MetricsOnly => 5,
        }
    }

    /// The state of a code made by [`State::code`]. Such codes are only ever made from a
    /// `State`, so any other value is a bug in the packing, not bad input.
    pub(crate) const fn from_code(code: u64) -> State {
        match code {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::Disabled,
            4 => State::ForcedOpen,
            5 => State::MetricsOnly,
            _ => panic!("a state code is only ever made by State::code"),
        }
    }
}

/// The identity of one state object of one breaker.
///
/// Every transition builds a new state object with the next id (as Resilience4j builds a new
/// state object), so an id names one state object exactly: the breaker's tag, a timer, a permit
/// and the lock-free CLOSED window each carry the id of the state they belong to, and can tell
/// whether that state is still the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StateId(u64);

impl StateId {
    /// A breaker's first state object.
    pub(crate) const FIRST: StateId = StateId(0);

    /// The id of the state object built after this one.
    #[inline]
    pub(crate) fn next(self) -> StateId {
        StateId(self.0 + 1)
    }

    /// The id as a number, for a place that packs or stores it as one (the tag's word, the
    /// timer queue, the CLOSED window's slot stamps).
    #[inline]
    pub(crate) const fn get(self) -> u64 {
        self.0
    }

    /// The id that [`get`](StateId::get) gave as `id`.
    #[inline]
    pub(crate) const fn from_raw(id: u64) -> StateId {
        StateId(id)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_transitions_match_resilience4j_table() {
        // Resilience4j 2.x StateTransition enum, row by row: every pair it lists is legal,
        // and the three pairs it leaves out are not.
        let illegal = [
            (State::Closed, State::HalfOpen),
            (State::MetricsOnly, State::Open),
            (State::MetricsOnly, State::HalfOpen),
        ];
        for from in State::ALL {
            for to in State::ALL {
                assert_eq!(
                    from.can_transition_to(to),
                    !illegal.contains(&(from, to)),
                    "{from} -> {to}"
                );
            }
        }
    }

    #[test]
    fn names_round_trip_and_codes_are_distinct() {
        for s in State::ALL {
            assert_eq!(State::from_name(s.as_str()), Some(s));
            assert_eq!(State::from_code(s.code()), s);
        }
        assert_eq!(State::from_name("half_open"), None);
    }
}
