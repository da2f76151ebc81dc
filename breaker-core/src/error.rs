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
/// It stands for a rejection only: a call cut by `timeout-duration` is a [`CallTimedOut`]. A
/// function guarded without a fallback returns its own error type built from each
/// (`E: From<CallNotPermitted> + From<CallTimedOut>`).
#[derive(Clone, PartialEq, Eq)]
pub struct CallNotPermitted {
    // Two words, so that a `Result` carrying this error is cheap to return and to move: the
    // name (one pointer), and a packed detail: the state's code in the top 3 bits, then 61 bits
    // for the time left in OPEN's wait in nanoseconds plus one (0: not known; longer waits
    // saturate, at about 73 years).
    name: Name,
    detail: u64,
}

const STATE_SHIFT: u32 = 61;
const NANOS_MASK: u64 = (1 << STATE_SHIFT) - 1;

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

    /// For a call rejected by an OPEN breaker: how long until its wait is over and it lets
    /// trial calls through (HALF_OPEN). `None` for any other rejection (FORCED_OPEN has no
    /// end; a HALF_OPEN breaker with every trial taken cannot tell when one frees up).
    ///
    /// This is what an HTTP service puts in `Retry-After`; the time is taken when the call was
    /// rejected, on the breaker's clock.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.detail & NANOS_MASK {
            0 => None,
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
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl fmt::Display for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CircuitBreaker '{}' is {} and does not permit further calls",
            LogSafe(self.breaker_name()),
            self.state()
        )
    }
}

impl Error for CallNotPermitted {}

/// A rejected call as an I/O error of kind [`Other`](std::io::ErrorKind::Other), so that a
/// function returning `io::Result<T>` can be guarded without a fallback. The
/// [`CallNotPermitted`] is the error's inner value (`get_ref`).
impl From<CallNotPermitted> for std::io::Error {
    fn from(rejected: CallNotPermitted) -> std::io::Error {
        std::io::Error::other(rejected)
    }
}

/// A call ran longer than the breaker's `timeout-duration`: it was cancelled (dropped) and
/// recorded as a failure.
///
/// A function guarded without a fallback returns it through its error type's
/// `From<CallTimedOut>` (`io::Error` has one: kind `TimedOut`).
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

/// A bulkhead refused a call: every place was taken and none came free within
/// `max-wait-duration` (at once, when that is 0). The call did not run.
///
/// A function guarded by a bulkhead without a fallback returns its own error type built from it
/// (`E: From<BulkheadFull>`; `io::Error` has one: kind `Other`).
#[derive(Clone, PartialEq, Eq)]
pub struct BulkheadFull {
    // A bulkhead's name is interned for the process (`name::intern_static`): the refusal copies
    // two words and its drop does nothing, so a refusal reads nothing but the semaphore's
    // word and whether anyone listens.
    name: &'static str,
}

impl BulkheadFull {
    #[inline(always)]
    pub(crate) fn new(name: &'static str) -> BulkheadFull {
        BulkheadFull { name }
    }

    /// The name of the bulkhead that refused the call.
    pub fn bulkhead_name(&self) -> &str {
        self.name
    }
}

impl fmt::Debug for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadFull")
            .field("name", &self.bulkhead_name())
            .finish()
    }
}

impl fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bulkhead '{}' is full and does not permit further calls",
            LogSafe(self.bulkhead_name())
        )
    }
}

impl Error for BulkheadFull {}

/// A refused call as an I/O error of kind [`Other`](std::io::ErrorKind::Other), so that a
/// function returning `io::Result<T>` can be guarded without a fallback. The
/// [`BulkheadFull`] is the error's inner value (`get_ref`).
impl From<BulkheadFull> for std::io::Error {
    fn from(full: BulkheadFull) -> std::io::Error {
        std::io::Error::other(full)
    }
}

/// A retry used up its `max-attempts` on results its result predicate retries, with
/// `fail-after-max-attempts` set: the call ends with this error instead of the last result.
///
/// A retry whose attempts run out on errors ends with the last error itself
/// ([`CallError::Inner`]), as Resilience4j's rethrows it.
#[derive(Clone, PartialEq, Eq)]
pub struct MaxRetriesExceeded {
    // A retry's name is interned for the process: two words, nothing to drop.
    name: &'static str,
    attempts: u32,
}

impl MaxRetriesExceeded {
    pub(crate) fn new(name: &'static str, attempts: u32) -> MaxRetriesExceeded {
        MaxRetriesExceeded { name, attempts }
    }

    /// The name of the retry whose attempts ran out.
    pub fn retry_name(&self) -> &str {
        self.name
    }

    /// The attempts made, the first call included (`max-attempts`).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl fmt::Debug for MaxRetriesExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxRetriesExceeded")
            .field("name", &self.retry_name())
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl fmt::Display for MaxRetriesExceeded {
    /// Resilience4j's message: `Retry '<name>' has exhausted all attempts (<n>)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Retry '{}' has exhausted all attempts ({})",
            LogSafe(self.retry_name()),
            self.attempts
        )
    }
}

impl Error for MaxRetriesExceeded {}

/// Exhausted retries as an I/O error of kind [`Other`](std::io::ErrorKind::Other), with the
/// [`MaxRetriesExceeded`] as its inner value (`get_ref`).
impl From<MaxRetriesExceeded> for std::io::Error {
    fn from(exhausted: MaxRetriesExceeded) -> std::io::Error {
        std::io::Error::other(exhausted)
    }
}

/// How a protected call ended, when it did not end with `Ok`: the one error of every way
/// through a breaker, a bulkhead or a retry (their calls, the attribute's fallbacks, the tower layer's
/// service).
///
/// `Display` is the rejection's, the timeout's, the refusal's, the exhausted retries' or the
/// inner error's own, so that guarding a
/// call does not change how its errors read; for the same reason [`source`](Error::source)
/// is what that error's own `source` is (the error `Display` printed is not repeated as its
/// source).
///
/// Non-exhaustive: a later version may tell apart more ways a call can end without its own
/// result, so a `match` on it needs a `_` arm.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError<E> {
    /// The breaker rejected the call; the downstream was not called.
    Rejected(CallNotPermitted),
    /// The call ran longer than `timeout-duration`; it was cancelled and recorded as a failure.
    TimedOut(CallTimedOut),
    /// A bulkhead refused the call: it was full; the downstream was not called.
    BulkheadFull(BulkheadFull),
    /// The call ran and returned this error (recorded as a failure, or ignored, as
    /// classified).
    Inner(E),
    /// A retry used up its attempts on results it retries, with `fail-after-max-attempts`.
    RetriesExhausted(MaxRetriesExceeded),
}

impl<E> CallError<E> {
    /// Whether the breaker rejected the call.
    pub fn is_rejected(&self) -> bool {
        matches!(self, CallError::Rejected(_))
    }

    /// Whether the call was cancelled by `timeout-duration`.
    pub fn is_timed_out(&self) -> bool {
        matches!(self, CallError::TimedOut(_))
    }

    /// Whether a bulkhead refused the call.
    pub fn is_bulkhead_full(&self) -> bool {
        matches!(self, CallError::BulkheadFull(_))
    }

    /// The rejection, if the breaker rejected the call.
    pub fn rejected(&self) -> Option<&CallNotPermitted> {
        match self {
            CallError::Rejected(rejected) => Some(rejected),
            _ => None,
        }
    }

    /// The timeout, if the call ran into it.
    pub fn timed_out(&self) -> Option<&CallTimedOut> {
        match self {
            CallError::TimedOut(timed_out) => Some(timed_out),
            _ => None,
        }
    }

    /// The refusal, if a bulkhead refused the call.
    pub fn bulkhead_full(&self) -> Option<&BulkheadFull> {
        match self {
            CallError::BulkheadFull(full) => Some(full),
            _ => None,
        }
    }

    /// Whether a retry used up its attempts on results it retries (`fail-after-max-attempts`).
    pub fn is_retries_exhausted(&self) -> bool {
        matches!(self, CallError::RetriesExhausted(_))
    }

    /// The exhausted retries, if a retry ended the call with them.
    pub fn retries_exhausted(&self) -> Option<&MaxRetriesExceeded> {
        match self {
            CallError::RetriesExhausted(exhausted) => Some(exhausted),
            _ => None,
        }
    }

    /// The call's own error, if it ran and failed.
    pub fn inner(&self) -> Option<&E> {
        match self {
            CallError::Inner(e) => Some(e),
            _ => None,
        }
    }

    /// The call's own error, if it ran and failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            CallError::Inner(e) => Some(e),
            _ => None,
        }
    }

    /// Converts into the call's error type, which can represent a rejection, a timeout, a
    /// bulkhead's refusal and exhausted retries (`std::io::Error` can: kinds `Other`,
    /// `TimedOut`, `Other` and `Other`).
    pub fn into_error(self) -> E
    where
        E: From<CallNotPermitted>
            + From<CallTimedOut>
            + From<BulkheadFull>
            + From<MaxRetriesExceeded>,
    {
        match self {
            CallError::Inner(e) => e,
            CallError::Rejected(rejected) => E::from(rejected),
            CallError::TimedOut(timed_out) => E::from(timed_out),
            CallError::BulkheadFull(full) => E::from(full),
            CallError::RetriesExhausted(exhausted) => E::from(exhausted),
        }
    }
}

impl<E> From<CallNotPermitted> for CallError<E> {
    fn from(rejected: CallNotPermitted) -> Self {
        CallError::Rejected(rejected)
    }
}

impl<E> From<CallTimedOut> for CallError<E> {
    fn from(timed_out: CallTimedOut) -> Self {
        CallError::TimedOut(timed_out)
    }
}

impl<E> From<BulkheadFull> for CallError<E> {
    fn from(full: BulkheadFull) -> Self {
        CallError::BulkheadFull(full)
    }
}

impl<E> From<MaxRetriesExceeded> for CallError<E> {
    fn from(exhausted: MaxRetriesExceeded) -> Self {
        CallError::RetriesExhausted(exhausted)
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rejected(rejected) => rejected.fmt(f),
            CallError::TimedOut(timed_out) => timed_out.fmt(f),
            CallError::BulkheadFull(full) => full.fmt(f),
            CallError::RetriesExhausted(exhausted) => exhausted.fmt(f),
            CallError::Inner(e) => e.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for CallError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        // `Display` printed the variant's error itself: its source is that error's.
        match self {
            CallError::Rejected(rejected) => rejected.source(),
            CallError::TimedOut(timed_out) => timed_out.source(),
            CallError::BulkheadFull(full) => full.source(),
            CallError::RetriesExhausted(exhausted) => exhausted.source(),
            CallError::Inner(e) => e.source(),
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
        assert_eq!(std::mem::size_of::<BulkheadFull>(), 16);
        assert!(
            !std::mem::needs_drop::<BulkheadFull>(),
            "dropping a refusal touches nothing"
        );
        let name = crate::name::intern("error-tests:packing");
        for state in State::ALL {
            let rejected = CallNotPermitted::new(name.clone(), state);
            assert_eq!(rejected.state(), state);
            assert_eq!(rejected.retry_after(), None);
            assert_eq!(rejected.breaker_name(), "error-tests:packing");
        }
        for remaining in [0, 1, 1_500_000_000, u64::MAX] {
            let open = CallNotPermitted::open(name.clone(), remaining);
            assert_eq!(open.state(), State::Open);
            let expected = Duration::from_nanos(remaining.min(NANOS_MASK - 1));
            assert_eq!(open.retry_after(), Some(expected));
        }
        assert_eq!(
            CallNotPermitted::new(name, State::ForcedOpen).retry_after(),
            None
        );
    }

    /// An error reporter prints `Display`, then walks `source()`: nothing is printed twice.
    #[test]
    fn call_errors_read_as_the_error_they_carry_and_never_repeat_it() {
        #[derive(Debug)]
        struct Refused(std::io::Error);
        impl fmt::Display for Refused {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("refused")
            }
        }
        impl Error for Refused {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        fn chain(e: &dyn Error) -> Vec<String> {
            let mut lines = vec![e.to_string()];
            let mut next = e.source();
            while let Some(e) = next {
                lines.push(e.to_string());
                next = e.source();
            }
            lines
        }
        let name = crate::name::intern("error-tests:chain");
        let inner = CallError::Inner(Refused(std::io::Error::other("connection reset")));
        assert_eq!(chain(&inner), ["refused", "connection reset"]);
        let rejected = CallError::<Refused>::from(CallNotPermitted::new(name.clone(), State::Open));
        assert_eq!(
            chain(&rejected),
            ["CircuitBreaker 'error-tests:chain' is OPEN and does not permit further calls"]
        );
        assert!(rejected.is_rejected() && !rejected.is_timed_out());
        let timed_out = CallTimedOut::new(name.clone(), Duration::from_millis(100));
        let timed_out = CallError::<Refused>::from(timed_out);
        assert_eq!(
            chain(&timed_out),
            ["CircuitBreaker 'error-tests:chain' cancelled a call that ran longer than 100ms"]
        );
        assert!(timed_out.is_timed_out() && !timed_out.is_rejected());
        let full = CallError::<Refused>::from(BulkheadFull::new(crate::name::intern_static(
            "error-tests:chain",
        )));
        assert_eq!(
            chain(&full),
            ["Bulkhead 'error-tests:chain' is full and does not permit further calls"]
        );
        assert!(full.is_bulkhead_full() && !full.is_rejected() && !full.is_timed_out());
        assert_eq!(
            full.bulkhead_full().map(BulkheadFull::bulkhead_name),
            Some("error-tests:chain")
        );
        assert_eq!(
            timed_out.timed_out().map(CallTimedOut::timeout),
            Some(Duration::from_millis(100))
        );
        let io = |e: CallError<std::io::Error>| e.into_error().kind();
        let after = Duration::from_millis(100);
        let timed_out = CallError::from(CallTimedOut::new(name.clone(), after));
        assert_eq!(io(timed_out), std::io::ErrorKind::TimedOut);
        let rejected = CallError::from(CallNotPermitted::new(name.clone(), State::Open));
        assert_eq!(io(rejected), std::io::ErrorKind::Other);
        assert_eq!(
            io(CallError::from(BulkheadFull::new(
                crate::name::intern_static("error-tests:chain")
            ))),
            std::io::ErrorKind::Other
        );
        assert_eq!(
            inner.into_inner().map(|e| e.0.kind()),
            Some(std::io::ErrorKind::Other)
        );
    }
}
