//! What every handler shares: the hub of followed breakers and the router's options.

use std::sync::Arc;

use crate::hub::{Hub, Tracked};
use crate::options::Options;
use crate::routes::error::ApiError;

/// The router's state, one per [`Admin::router`](crate::Admin::router) call, shared by every
/// handler through an `Arc`.
pub(crate) struct AppState {
    pub(crate) hub: Arc<Hub>,
    pub(crate) options: Options,
}

impl AppState {
    /// The followed breaker whose display name is `name`, or a 404 that names it.
    pub(crate) fn find(&self, name: &str) -> Result<Arc<Tracked>, ApiError> {
        self.hub
            .find(name)
            .ok_or_else(|| ApiError::no_breaker(name))
    }
}
