//! [`RetryFuture`]: the response of a [`RetryService`](crate::RetryService).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use breaker_core::CallError;

use crate::inner_error::{InnerError, Wrap};

/// The attempts of a replayed request, boxed (see [`RetryFuture`]).
pub(crate) type Attempts<T, E> = Pin<Box<dyn Future<Output = Result<T, CallError<E>>> + Send>>;

pin_project! {
    /// The response of a [`RetryService`](crate::RetryService): the attempts of a request
    /// that can be replayed, or the one call of a request that cannot (the inner service's
    /// future `F`, polled in place).
    ///
    /// The attempts are the retry's own call ([`Retry::call_with`](breaker_core::Retry::call_with)),
    /// boxed: its future has no name a service's `Future` type could give. Dropping this
    /// future drops the attempt in flight (or the wait before the next one) and no further
    /// attempt starts. `W` says how the inner service's errors become the service's
    /// ([`Wrap`] or [`Flatten`](crate::Flatten)).
    pub struct RetryFuture<F, T, E, W = Wrap> {
        #[pin]
        kind: Kind<F, T, E>,
        errors: PhantomData<fn() -> W>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, T, E> {
        Once {
            #[pin]
            fut: F,
        },
        Attempts {
            fut: Attempts<T, E>,
        },
    }
}

impl<F, T, E, W> RetryFuture<F, T, E, W> {
    /// The one call of a request that cannot be replayed.
    #[inline]
    pub(crate) fn once(fut: F) -> Self {
        RetryFuture {
            kind: Kind::Once { fut },
            errors: PhantomData,
        }
    }

    /// The attempts of a request that can be replayed.
    #[inline]
    pub(crate) fn attempts(fut: Attempts<T, E>) -> Self {
        RetryFuture {
            kind: Kind::Attempts { fut },
            errors: PhantomData,
        }
    }
}

impl<F, T, E, W, X> Future for RetryFuture<F, T, E, W>
where
    F: Future<Output = Result<T, X>>,
    W: InnerError<X, Inner = E>,
{
    type Output = Result<T, CallError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Once { fut } => fut.poll(cx).map_err(W::convert),
            KindProj::Attempts { fut } => fut.as_mut().poll(cx),
        }
    }
}

impl<F, T, E, W> fmt::Debug for RetryFuture<F, T, E, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Once { .. } => "once",
            Kind::Attempts { .. } => "attempts",
        };
        f.debug_struct("RetryFuture")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}
