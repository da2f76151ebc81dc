//! Helpers for the modules that hold guarded calls in flight (`bulkhead`, `retry`), and their
//! error type.

use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use breaker::{BulkheadFull, CallNotPermitted, CallTimedOut, MaxRetriesExceeded};
use tokio::sync::Semaphore;

/// Where a guarded call waits until the test lets it finish: it counts the calls that
/// entered, and those told to wait wait for a pass.
pub(crate) struct Gate {
    entered: AtomicUsize,
    passes: Semaphore,
}

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate {
            entered: AtomicUsize::new(0),
            passes: Semaphore::const_new(0),
        }
    }

    pub(crate) async fn enter(&self, wait: bool) {
        self.entered.fetch_add(1, Ordering::SeqCst);
        if wait {
            self.passes.acquire().await.expect("never closed").forget();
        }
    }

    pub(crate) fn entered(&self) -> usize {
        self.entered.load(Ordering::SeqCst)
    }

    pub(crate) fn open(&self, calls: usize) {
        self.passes.add_permits(calls);
    }
}

/// Polls `fut` once: a guarded call that parks in its [`Gate`] is then in flight, holding
/// what it took.
pub(crate) async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(std::pin::Pin::new(&mut *fut).poll(cx))).await
}

/// The guarded functions' error: their own failures, and one variant per way a guard ends a
/// call, built by the conversions a guarded function without a fallback needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApiError {
    Down,
    Fatal,
    Full { bulkhead: String },
    Rejected { breaker: String },
    TimedOut { breaker: String },
    Exhausted { retry: String, attempts: u32 },
}

impl From<BulkheadFull> for ApiError {
    fn from(e: BulkheadFull) -> Self {
        ApiError::Full {
            bulkhead: e.bulkhead_name().to_owned(),
        }
    }
}

impl From<CallNotPermitted> for ApiError {
    fn from(e: CallNotPermitted) -> Self {
        ApiError::Rejected {
            breaker: e.breaker_name().to_owned(),
        }
    }
}

impl From<CallTimedOut> for ApiError {
    fn from(e: CallTimedOut) -> Self {
        ApiError::TimedOut {
            breaker: e.breaker_name().to_owned(),
        }
    }
}

impl From<MaxRetriesExceeded> for ApiError {
    fn from(e: MaxRetriesExceeded) -> Self {
        ApiError::Exhausted {
            retry: e.retry_name().to_owned(),
            attempts: e.attempts(),
        }
    }
}

pub(crate) fn rejected(name: &str) -> ApiError {
    ApiError::Rejected {
        breaker: name.into(),
    }
}

pub(crate) fn full(name: &str) -> ApiError {
    ApiError::Full {
        bulkhead: name.into(),
    }
}
