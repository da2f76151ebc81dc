//! Helpers for the modules that hold guarded calls in flight (`bulkhead`, `retry`).

use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

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
