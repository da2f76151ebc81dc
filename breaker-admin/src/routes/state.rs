//! What every handler shares: the hub of followed breakers, bulkheads and retries, and the
//! router's options.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::Path;

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

    /// The followed breaker a `{name}` path segment names: a 400 if the segment is not
    /// percent-encoded UTF-8, a 404 that names it if no breaker has that name.
    pub(crate) fn find_at(
        &self,
        name: Result<Path<String>, PathRejection>,
    ) -> Result<Arc<Tracked>, ApiError> {
        let Path(name) = name.map_err(|_| ApiError::bad_path())?;
        self.find(&name)
    }
}
