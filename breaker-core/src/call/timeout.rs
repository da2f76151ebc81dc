//! [`CallTimeout`]: the timer that enforces `timeout-duration` on one async call.
//!
//! A `CallTimeout` allocates nothing: it is a Tokio sleep and the limit, held wherever its
//! owner keeps it. The core's call future holds it in place; an adapter whose future must stay
//! small may box it instead, at one allocation per timed call (the tower layer does, and says
//! so in its docs).

use std::future::Future;
use std::panic::catch_unwind;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use crate::breaker::core::BreakerCore;
use crate::breaker::warned::Warning;
use crate::log_safe::LogSafe;

pin_project! {
    /// The running timer of one call's `timeout-duration`.
    ///
    /// `timeout-duration` ([`Config::timeout_duration`](crate::Config::timeout_duration), not
    /// set by default) bounds how long an async call may run: when it fires, the caller stops
    /// polling the call (dropping it cancels it), records a failure that took at least the
    /// limit ([`Permit::timed_out`](crate::Permit::timed_out)) and answers with the
    /// [`CallTimedOut`](crate::CallTimedOut) that returns. [`CircuitBreaker::call`] and the
    /// attribute do all of this; an adapter with a call future of its own gets the timer from
    /// its permit ([`Permit::start_timeout`](crate::Permit::start_timeout),
    /// [`OwnedPermit::start_timeout`](crate::OwnedPermit::start_timeout)) and polls
    /// [`poll_expired`](CallTimeout::poll_expired) whenever its call is still pending.
    ///
    /// The sleep is polled outside Tokio's cooperative budget, as `tokio::time::timeout` does
    /// when the call has spent the budget: a busy call still times out.
    ///
    /// [`CircuitBreaker::call`]: crate::CircuitBreaker::call
    pub struct CallTimeout {
        #[pin]
        sleep: tokio::task::Unconstrained<tokio::time::Sleep>,
        limit: Duration,
    }
}

impl CallTimeout {
    /// The timer for a call of `breaker` starting now, if its `timeout-duration` is set and
    /// the call runs where a timeout can be enforced: on a Tokio runtime with its time driver.
    /// Elsewhere the call runs without a timeout, and the breaker says so once (not once per
    /// call).
    #[inline]
    pub(crate) fn start(breaker: &BreakerCore) -> Option<CallTimeout> {
        let limit = breaker.config().timeout_duration()?;
        CallTimeout::start_sleep(breaker, limit)
    }

    #[cold]
    fn start_sleep(breaker: &BreakerCore, limit: Duration) -> Option<CallTimeout> {
        if breaker.warned().has(Warning::TimeoutWithoutTimeDriver) {
            return None;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            if breaker.warned().first(Warning::TimeoutWithoutRuntime) {
                tracing::warn!(
                    breaker = %LogSafe(breaker.name()),
                    "timeout-duration is set but an async call runs outside a Tokio runtime: it \
                     runs without a timeout (said once per breaker)"
                );
            }
            return None;
        }
        // Tokio offers no way to ask whether the runtime has a time driver; creating a sleep on
        // one without panics, so that panic is caught here (once: the breaker stops trying).
        match catch_unwind(|| tokio::time::sleep(limit)) {
            Ok(sleep) => Some(CallTimeout {
                sleep: tokio::task::unconstrained(sleep),
                limit,
            }),
            Err(_) => {
                if breaker.warned().first(Warning::TimeoutWithoutTimeDriver) {
                    tracing::warn!(
                        breaker = %LogSafe(breaker.name()),
                        "timeout-duration is set but the Tokio runtime has no time driver \
                         (build it with enable_time() or enable_all()): this breaker's calls \
                         run without a timeout"
                    );
                }
                None
            }
        }
    }

    /// The configured limit, `timeout-duration`.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// `Ready` with the limit once the timeout has fired, else `Pending` (and `cx` is woken
    /// when it fires).
    #[inline]
    pub fn poll_expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Duration> {
        let this = self.project();
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(*this.limit),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl std::fmt::Debug for CallTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallTimeout")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}
