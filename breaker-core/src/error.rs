//! The errors a protected call can end with.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use crate::state::State;

/// A call was rejected: the breaker is OPEN or FORCED_OPEN, or HALF_OPEN with every trial
/// permit taken. The downstream was not called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallNotPermitted {
    name: Arc<str>,
    state: State,
}

impl CallNotPermitted {
    pub(crate) fn new(name: Arc<str>, state: State) -> CallNotPermitted {
        CallNotPermitted { name, state }
    }

    /// The name of the breaker that rejected the call.
    pub fn breaker_name(&self) -> &str {
        &self.name
    }

    /// The breaker's state when it rejected the call.
    pub fn state(&self) -> State {
        self.state
    }
}

impl fmt::Display for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CircuitBreaker '{}' is {} and does not permit further calls",
            self.name, self.state
        )
    }
}

impl Error for CallNotPermitted {}

/// How a protected call ended, when it did not end with `Ok`.
#[derive(Debug)]
pub enum CallError<E> {
    /// The breaker rejected the call; the downstream was not called.
    NotPermitted(CallNotPermitted),
    /// The call ran and returned this error (recorded as a failure, or ignored, as classified).
    Failed(E),
}

impl<E> CallError<E> {
    /// Whether the breaker rejected the call.
    pub fn is_not_permitted(&self) -> bool {
        matches!(self, CallError::NotPermitted(_))
    }

    /// The call's own error, if it ran.
    pub fn into_inner(self) -> Option<E> {
        match self {
            CallError::Failed(e) => Some(e),
            CallError::NotPermitted(_) => None,
        }
    }

    /// Converts into the call's error type, which can represent a rejection.
    pub fn into_error(self) -> E
    where
        E: From<CallNotPermitted>,
    {
        match self {
            CallError::Failed(e) => e,
            CallError::NotPermitted(rejected) => E::from(rejected),
        }
    }
}

impl<E> From<CallNotPermitted> for CallError<E> {
    fn from(rejected: CallNotPermitted) -> Self {
        CallError::NotPermitted(rejected)
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NotPermitted(rejected) => rejected.fmt(f),
            CallError::Failed(e) => e.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for CallError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CallError::NotPermitted(rejected) => Some(rejected),
            CallError::Failed(e) => Some(e),
        }
    }
}

/// A manual transition that Resilience4j does not allow (CLOSED -> HALF_OPEN,
/// METRICS_ONLY -> OPEN, METRICS_ONLY -> HALF_OPEN). The state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IllegalTransition {
    name: Arc<str>,
    from: State,
    to: State,
}

impl IllegalTransition {
    pub(crate) fn new(name: Arc<str>, from: State, to: State) -> IllegalTransition {
        IllegalTransition { name, from, to }
    }

    /// The state the breaker was (and still is) in.
    pub fn from(&self) -> State {
        self.from
    }

    /// The state that was asked for.
    pub fn to(&self) -> State {
        self.to
    }
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CircuitBreaker '{}' cannot go from {} to {}",
            self.name, self.from, self.to
        )
    }
}

impl Error for IllegalTransition {}
