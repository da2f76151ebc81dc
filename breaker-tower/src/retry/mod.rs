//! The retry's layer: [`RetryLayer`] wraps a service in a [`RetryService`], whose requests are
//! sent again, through a [`Retry`](breaker_core::Retry), while they fail; each in a
//! [`RetryFuture`]. See the [crate docs](crate#retries) for which requests are replayed, how a
//! body is handled and how it composes with the breaker's and the bulkhead's layers.

mod classify;
mod future;
mod layer;
mod replay;
mod service;

pub use self::classify::RetryClassifier;
pub use self::future::RetryFuture;
pub use self::layer::RetryLayer;
pub use self::replay::IdempotentMethod;
pub use self::service::RetryService;
