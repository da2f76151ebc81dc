//! What a router serves and how: the routes it mounts, the write operation's hook, the
//! Prometheus renderer, what health shows and the probes' states. Set through
//! [`Admin`](crate::Admin)'s methods.

use std::sync::Arc;
use std::time::Duration;

use axum::http::request::Parts;

use crate::availability::{Liveness, Readiness};
use crate::hosts::AllowedHosts;

/// What an [`Authorize`] hook decides about one write request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Authorization {
    /// The request may change the breaker's state.
    Allow,
    /// The request carries no (valid) credentials: 401, nothing changes.
    Unauthorized,
    /// The credentials are valid but not allowed to write: 403, nothing changes.
    Forbidden,
}

/// Decides whether a request may use the write operation (`POST /actuator/circuitbreakers/{name}`).
///
/// It sees the request's method, URI, headers and extensions (`axum::http::request::Parts`,
/// which is `http::request::Parts`), before the body is read. Any
/// `Fn(&Parts) -> Authorization + Send + Sync + 'static` is one.
pub trait Authorize: Send + Sync + 'static {
    /// The decision for `request`.
    fn authorize(&self, request: &Parts) -> Authorization;
}

impl<F> Authorize for F
where
    F: Fn(&Parts) -> Authorization + Send + Sync + 'static,
{
    fn authorize(&self, request: &Parts) -> Authorization {
        self(request)
    }
}

/// The renderer of `GET /actuator/prometheus`.
type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Which routes a router serves, and how.
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) circuit_breakers: bool,
    pub(crate) events: bool,
    pub(crate) bulkheads: bool,
    pub(crate) bulkhead_events: bool,
    pub(crate) retries: bool,
    pub(crate) retry_events: bool,
    pub(crate) stream: bool,
    pub(crate) health: bool,
    /// `GET /actuator`, the links index.
    pub(crate) index: bool,
    pub(crate) health_show: HealthShow,
    /// The `liveness` and `readiness` groups and their `livenessState` and `readinessState`
    /// components.
    pub(crate) health_probes: bool,
    /// Whether the `readiness` group takes `circuitBreakers` too.
    pub(crate) readiness_includes_circuit_breakers: bool,
    pub(crate) readiness: Readiness,
    pub(crate) liveness: Liveness,
    pub(crate) dashboard: bool,
    pub(crate) write: Option<Arc<dyn Authorize>>,
    pub(crate) prometheus: Option<Render>,
    pub(crate) stream_interval: Duration,
    pub(crate) stream_max_lifetime: Duration,
    pub(crate) stream_stall_timeout: Duration,
    /// The `Host` names answered; `None`: every one.
    pub(crate) allowed_hosts: Option<AllowedHosts>,
}

/// What the health endpoint shows beyond a status: Spring's `show-components` and
/// `show-details`, each either never or always (a request carries no roles here).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HealthShow {
    /// Each health indicator's details (`show-details`, default never).
    pub(crate) details: bool,
    /// The components of the whole and of a group (`show-components`); `None` follows
    /// `details`, as Spring's unset `show-components` does.
    pub(crate) components: Option<bool>,
}

impl HealthShow {
    /// Whether the components are shown.
    pub(crate) fn components(self) -> bool {
        self.components.unwrap_or(self.details)
    }
}
