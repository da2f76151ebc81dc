//! The bulkhead's layer: [`BulkheadLayer`] wraps a service in a [`BulkheadService`], whose
//! requests hold a place of a [`Bulkhead`](breaker_core::Bulkhead) while they run, in a
//! [`BulkheadFuture`]. See the [crate docs](crate#bulkheads) for how it answers, waits and
//! composes with the breaker's layer.

mod future;
mod layer;
mod service;

pub use self::future::BulkheadFuture;
pub use self::layer::BulkheadLayer;
pub use self::service::BulkheadService;
