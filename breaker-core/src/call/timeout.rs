//! The timer that enforces `timeout-duration` on an async call: the core's call future and the
//! tower layer's response future both hold one, in place (no allocation).

use std::future::Future;
use std::panic::catch_unwind;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use crate::breaker::shared::Shared;
use crate::breaker::warned::Warning;
use crate::log_safe::LogSafe;

pin_project! {
    /// The timeout of a running call. Its sleep is polled outside Tokio's cooperative budget,
    /// as `tokio::time::timeout` does when the call has spent the budget: a busy call still
    /// times out.
    pub(crate) struct Timer {
        #[pin]
        sleep: tokio::task::Unconstrained<tokio::time::Sleep>,
        limit: Duration,
    }
}

impl Timer {
    /// The timer for a call starting now, if it runs where a timeout can be enforced: on a
    /// Tokio runtime with its time driver. Elsewhere the call runs without a timeout, and the
    /// breaker says so once (not once per call).
    #[cold]
    pub(crate) fn start(breaker: &Shared, limit: Duration) -> Option<Timer> {
        if breaker.warned.has(Warning::TimeoutWithoutTimeDriver) {
            return None;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            if breaker.warned.first(Warning::TimeoutWithoutRuntime) {
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
            Ok(sleep) => Some(Timer {
                sleep: tokio::task::unconstrained(sleep),
                limit,
            }),
            Err(_) => {
                if breaker.warned.first(Warning::TimeoutWithoutTimeDriver) {
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

    /// `Ready` with the configured limit once the timeout has fired.
    #[inline]
    pub(crate) fn poll_expired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Duration> {
        let this = self.project();
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(*this.limit),
            Poll::Pending => Poll::Pending,
        }
    }
}
