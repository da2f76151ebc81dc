//! [`BulkheadLayer`]: wraps services in a [`BulkheadService`].

use std::fmt;

use tower_layer::Layer;

use super::service::BulkheadService;
use breaker_core::{Bulkhead, Registry};

/// A [`Layer`] that limits how many requests run at once in the services it wraps, with a
/// [`Bulkhead`]; see the [crate docs](crate#bulkheads).
///
/// Every service the layer wraps (and every clone of one) shares the layer's bulkhead, and so
/// its places.
#[derive(Clone)]
pub struct BulkheadLayer {
    bulkhead: Bulkhead,
}

impl BulkheadLayer {
    /// A layer around `bulkhead`.
    pub fn new(bulkhead: Bulkhead) -> Self {
        BulkheadLayer { bulkhead }
    }

    /// A layer around `registry`'s bulkhead `name` (created with the configuration of that
    /// name, else the bulkhead `default`, if it does not exist yet).
    pub fn from_registry(registry: &Registry, name: &str) -> Self {
        BulkheadLayer::new(registry.bulkhead(name))
    }

    /// The bulkhead the layer's services share.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = BulkheadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BulkheadService::new(inner, self.bulkhead.clone())
    }
}

impl fmt::Debug for BulkheadLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadLayer")
            .field("bulkhead", &self.bulkhead.name())
            .finish()
    }
}
