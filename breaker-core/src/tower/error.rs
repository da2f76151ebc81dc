//! [`BreakerError`]: the error of a [`CircuitBreakerService`](crate::tower::CircuitBreakerService).

use std::error::Error;
use std::fmt;

use crate::error::CallNotPermitted;

/// The error of a [`CircuitBreakerService`](crate::tower::CircuitBreakerService): the breaker
/// rejected the request, or the inner service failed.
///
/// Display and [`source`](Error::source) are the rejection's or the inner error's own, so that
/// wrapping a service in the layer does not change how its errors read. For HTTP, map
/// [`Rejected`](BreakerError::Rejected) to a 503 Service Unavailable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerError<E> {
    /// The breaker did not permit the request; the inner service was not called.
    Rejected(CallNotPermitted),
    /// The inner service's own error (recorded as the classification says).
    Inner(E),
}

impl<E> BreakerError<E> {
    /// Whether the breaker rejected the request.
    pub fn is_rejected(&self) -> bool {
        matches!(self, BreakerError::Rejected(_))
    }

    /// The rejection, if the breaker rejected the request.
    pub fn rejected(&self) -> Option<&CallNotPermitted> {
        match self {
            BreakerError::Rejected(rejected) => Some(rejected),
            BreakerError::Inner(_) => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn inner(&self) -> Option<&E> {
        match self {
            BreakerError::Inner(error) => Some(error),
            BreakerError::Rejected(_) => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            BreakerError::Inner(error) => Some(error),
            BreakerError::Rejected(_) => None,
        }
    }
}

impl<E> From<CallNotPermitted> for BreakerError<E> {
    fn from(rejected: CallNotPermitted) -> Self {
        BreakerError::Rejected(rejected)
    }
}

impl<E: fmt::Display> fmt::Display for BreakerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::Rejected(rejected) => rejected.fmt(f),
            BreakerError::Inner(error) => error.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for BreakerError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BreakerError::Rejected(rejected) => rejected.source(),
            BreakerError::Inner(error) => error.source(),
        }
    }
}
