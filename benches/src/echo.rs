//! The inner service of the tower benches (`layer`, `bulkhead`), and one request through a
//! service as a tower stack makes it, with no runtime.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::hint::black_box;
use std::task::{Context, Poll, Waker};

use tower_service::Service;

use crate::harness::block_on;

/// The inner service: always ready, answers with its request at once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Echo;

impl Service<u64> for Echo {
    type Response = u64;
    type Error = Infallible;
    type Future = Ready<Result<u64, Infallible>>;

    #[inline]
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, x: u64) -> Self::Future {
        ready(Ok(black_box(x)))
    }
}

/// One request through `svc`: `poll_ready` (once, with a noop waker), `call`, and the response
/// future polled to completion.
#[inline(always)]
pub(crate) fn request<S: Service<u64>>(svc: &mut S, x: u64) -> Result<S::Response, S::Error> {
    let mut cx = Context::from_waker(Waker::noop());
    match svc.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => block_on(svc.call(x)),
        Poll::Ready(Err(e)) => Err(e),
        Poll::Pending => panic!("the services these benches time are ready at once"),
    }
}

/// A row's work: one request through `svc`, result discarded.
pub(crate) fn through<S: Service<u64>>(mut svc: S) -> impl FnMut() {
    move || {
        black_box(request(&mut svc, black_box(1))).ok();
    }
}
