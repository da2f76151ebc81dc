//! The errors a protected call can end with.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::log_safe::LogSafe;
use crate::name::Name;
use crate::state::State;
use crate::time::timestamp::duration_nanos;

/// A call was rejected: the breaker is OPEN or FORCED_OPEN, or HALF_OPEN with every trial
/// permit taken. The downstream was not called.
///
/// A function guarded without a fallback returns its own error type built from this one
/// (`E: From<CallNotPermitted>`). So that such a type needs one conversion only, a timed-out
/// call converts into this type too ([`From<CallTimedOut>`]); [`CallNotPermitted::timed_out_after`]
/// tells the two apart.
#[derive(Clone, PartialEq, Eq)]
pub struct CallNotPermitted {
    // Two words, so that a `Result` carrying this error is cheap to return and to move: the
    // name (one pointer), and a packed detail: the state's code in the top 3 bits, then one bit
    // that says whether the call timed out, then 60 bits of nanoseconds (about 36 years, where
    // longer durations saturate): the timeout, or for a rejection the time left in OPEN's wait
    // plus one (0: not known).
    name: Name,
    detail: u64,
}

const STATE_SHIFT: u32 = 61;
const TIMED_OUT: u64 = 1 << 60;
const NANOS_MASK: u64 = TIMED_OUT - 1;

impl CallNotPermitted {
    #[inline]
    pub(crate) fn new(name: Name, state: State) -> CallNotPermitted {
        CallNotPermitted {
            name,
            detail: state.code() << STATE_SHIFT,
        }
    }

    /// A rejection by OPEN, whose wait ends in `remaining_nanos`.
    #[inline]
    pub(crate) fn open(name: Name, remaining_nanos: u64) -> CallNotPermitted {
        CallNotPermitted {
            name,
            detail: State::Open.code() << STATE_SHIFT
                | remaining_nanos.saturating_add(1).min(NANOS_MASK),
        }
    }

    /// For a call that was cancelled by `timeout-duration` rather than rejected: the timeout.
    pub fn timed_out_after(&self) -> Option<Duration> {
        (self.detail & TIMED_OUT != 0).then(|| Duration::from_nanos(self.detail & NANOS_MASK))
    }

    /// For a call rejected by an OPEN breaker: how long until its wait is over and it lets
    /// trial calls through (HALF_OPEN). `None` for any other rejection (FORCED_OPEN has no
    /// end; a HALF_OPEN breaker with every trial taken cannot tell when one frees up) and for
    /// a timeout.
    ///
    /// This is what an HTTP service puts in `Retry-After`; the time is taken when the call was
    /// rejected, on the breaker's clock.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.detail & (TIMED_OUT | NANOS_MASK) {
            0 => None,
            d if d & TIMED_OUT != 0 => None,
            plus_one => Some(Duration::from_nanos(plus_one - 1)),
        }
    }

    /// The name of the breaker that rejected the call.
    pub fn breaker_name(&self) -> &str {
        self.name.as_str()
    }

    /// The breaker's state when it rejected the call.
    pub fn state(&self) -> State {
        State::from_code(self.detail >> STATE_SHIFT)
    }
}

impl fmt::Debug for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallNotPermitted")
            .field("name", &self.breaker_name())
            .field("state", &self.state())
            .field("timed_out_after", &self.timed_out_after())
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl fmt::Display for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(after) = self.timed_out_after() {
            return write!(
                f,
                "CircuitBreaker '{}' cancelled a call that ran longer than {after:?}",
                LogSafe(self.breaker_name())
            );
        }
        write!(
            f,
            "CircuitBreaker '{}' is {} and does not permit further calls",
            LogSafe(self.breaker_name()),
            self.state()
        )
    }
}

impl Error for CallNotPermitted {}

/// A rejected call as an I/O error, so that a function returning `io::Result<T>` can be
/// guarded without a fallback: [`ErrorKind::TimedOut`](std::io::ErrorKind::TimedOut) for a call
/// cancelled by `timeout-duration`, [`ErrorKind::Other`](std::io::ErrorKind::Other) for a
/// rejection. The [`CallNotPermitted`] is the error's inner value (`get_ref`).
impl From<CallNotPermitted> for std::io::Error {
    fn from(rejected: CallNotPermitted) -> std::io::Error {
        let kind = match rejected.timed_out_after() {
            Some(_) => std::io::ErrorKind::TimedOut,
            None => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, rejected)
    }
}

/// A call ran longer than the breaker's `timeout-duration`: it was cancelled (dropped) and
/// recorded as a failure.
///
/// A function guarded without a fallback returns it through its error type's
/// `From<CallTimedOut>` if it has one (`io::Error` does: kind `TimedOut`); an error type with
/// only `From<CallNotPermitted>` gets a [`CallNotPermitted`] whose
/// [`timed_out_after`](CallNotPermitted::timed_out_after) is set.
#[derive(Clone, PartialEq, Eq)]
pub struct CallTimedOut {
    name: Name,
    /// The timeout in nanoseconds (saturating at `u64::MAX`, about 584 years).
    after: u64,
}

impl CallTimedOut {
    pub(crate) fn new(name: Name, after: Duration) -> CallTimedOut {
        CallTimedOut {
            name,
            after: duration_nanos(after),
        }
    }

    /// The name of the breaker whose timeout fired.
    pub fn breaker_name(&self) -> &str {
        self.name.as_str()
    }

    /// The configured timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.after)
    }
}

impl fmt::Debug for CallTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallTimedOut")
            .field("name", &self.breaker_name())
            .field("timeout", &self.timeout())
            .finish()
    }
}

impl fmt::Display for CallTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CircuitBreaker '{}' cancelled a call that ran longer than {:?}",
            LogSafe(self.breaker_name()),
            self.timeout()
        )
    }
}

impl Error for CallTimedOut {}

/// A timed-out call as an I/O error of kind [`TimedOut`](std::io::ErrorKind::TimedOut), with
/// the [`CallTimedOut`] as its inner value (`get_ref`).
impl From<CallTimedOut> for std::io::Error {
    fn from(timed_out: CallTimedOut) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, timed_out)
    }
}

impl From<CallTimedOut> for CallNotPermitted {
    fn from(timed_out: CallTimedOut) -> CallNotPermitted {
        CallNotPermitted {
            name: timed_out.name,
            detail: State::Closed.code() << STATE_SHIFT
                | TIMED_OUT
                | timed_out.after.min(NANOS_MASK),
        }
    }
}

/// How a protected call ended, when it did not end with `Ok`.
///
/// Non-exhaustive: a later version may tell apart more ways a call can end without its own
/// result, so a `match` on it needs a `_` arm.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError<E> {
    /// The breaker rejected the call; the downstream was not called.
    NotPermitted(CallNotPermitted),
    /// The call ran and returned this error (recorded as a failure, or ignored, as classified).
    Failed(E),
    /// The call ran longer than `timeout-duration`; it was cancelled and recorded as a failure.
    TimedOut(CallTimedOut),
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
            CallError::NotPermitted(_) | CallError::TimedOut(_) => None,
        }
    }

    /// Whether the call was cancelled by `timeout-duration`.
    pub fn is_timed_out(&self) -> bool {
        matches!(self, CallError::TimedOut(_))
    }

    /// Converts into the call's error type, which can represent a rejection (a timeout
    /// converts through [`CallNotPermitted`] too).
    pub fn into_error(self) -> E
    where
        E: From<CallNotPermitted>,
    {
        match self {
            CallError::Failed(e) => e,
            CallError::NotPermitted(rejected) => E::from(rejected),
            CallError::TimedOut(timed_out) => E::from(CallNotPermitted::from(timed_out)),
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
            CallError::TimedOut(timed_out) => timed_out.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for CallError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            CallError::NotPermitted(rejected) => Some(rejected),
            CallError::Failed(e) => Some(e),
            CallError::TimedOut(timed_out) => Some(timed_out),
        }
    }
}

/// A manual transition that Resilience4j does not allow (CLOSED -> HALF_OPEN,
/// METRICS_ONLY -> OPEN, METRICS_ONLY -> HALF_OPEN). The state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IllegalTransition {
    name: Name,
    from: State,
    to: State,
}

impl IllegalTransition {
    pub(crate) fn new(name: Name, from: State, to: State) -> IllegalTransition {
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
            LogSafe(self.name.as_str()),
            self.from,
            self.to
        )
    }
}

impl Error for IllegalTransition {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_are_two_words_and_keep_every_detail() {
        assert_eq!(std::mem::size_of::<CallNotPermitted>(), 16);
        assert_eq!(std::mem::size_of::<CallTimedOut>(), 16);
        let name = crate::name::intern("error-tests:packing");
        for state in State::ALL {
            let rejected = CallNotPermitted::new(name.clone(), state);
            assert_eq!(rejected.state(), state);
            assert_eq!(rejected.timed_out_after(), None);
            assert_eq!(rejected.breaker_name(), "error-tests:packing");
        }
        for after in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(2_000),
            Duration::from_secs(3600 * 24 * 365 * 30),
        ] {
            let timed_out = CallNotPermitted::from(CallTimedOut::new(name.clone(), after));
            assert_eq!(timed_out.timed_out_after(), Some(after));
            assert_eq!(timed_out.state(), State::Closed);
        }
        // Beyond about 36 years the timeout saturates instead of spilling into the state.
        let forever = CallNotPermitted::from(CallTimedOut::new(name.clone(), Duration::MAX));
        assert_eq!(forever.state(), State::Closed);
        assert_eq!(forever.retry_after(), None);
        assert!(forever.timed_out_after().unwrap() > Duration::from_secs(3600 * 24 * 365 * 36));
        for remaining in [0, 1, 1_500_000_000, u64::MAX] {
            let open = CallNotPermitted::open(name.clone(), remaining);
            assert_eq!(open.state(), State::Open);
            assert_eq!(open.timed_out_after(), None);
            let expected = Duration::from_nanos(remaining.min(NANOS_MASK - 1));
            assert_eq!(open.retry_after(), Some(expected));
        }
        assert_eq!(
            CallNotPermitted::new(name, State::ForcedOpen).retry_after(),
            None
        );
    }
}
