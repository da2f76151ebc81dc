//! [`RequestKey`]: what a request's keyed breaker is, for the integrations: the tower layer's
//! `CircuitBreakerLayer::per_key` (crate `breaker-tower`) and the reqwest middleware's
//! `CircuitBreakerMiddleware::keyed_by` (crate `breaker-reqwest`). It names no HTTP type, so
//! it lives here, where both find it.

use std::fmt;

#[cfg(doc)]
use crate::registry::keyed::Keyed;

/// What a request's breaker is keyed by.
///
/// The key is anything that displays: its text picks the breaker in a keyed group, as
/// [`Keyed::get`] and the attribute's `key = ...` do, so `42u64` and `"42"` are one key and the
/// breaker of key `k` in group `name` is `name[k]`. A key text of up to 64 bytes is formatted
/// on the stack, so a request whose key already has a breaker allocates nothing to find it; a
/// key borrowed from the request (as the HTTP keys of both integrations are) copies nothing.
///
/// Any `Fn(&Request) -> K` with `K: Display` is a request key:
///
/// ```
/// use breaker_core::RequestKey;
///
/// struct Order {
///     tenant: u32,
/// }
///
/// let by_tenant = |order: &Order| order.tenant;
/// assert_eq!(by_tenant.key(&Order { tenant: 7 }).to_string(), "7");
/// ```
///
/// A type of your own can lend a key borrowed from the request:
///
/// ```
/// use breaker_core::RequestKey;
///
/// struct Order {
///     region: String,
/// }
///
/// struct ByRegion;
///
/// impl RequestKey<Order> for ByRegion {
///     type Key<'a> = &'a str;
///
///     fn key<'a>(&'a self, order: &'a Order) -> &'a str {
///         &order.region
///     }
/// }
/// assert_eq!(ByRegion.key(&Order { region: "eu-west".into() }), "eu-west");
/// ```
pub trait RequestKey<Request> {
    /// The key of one request, which may borrow from it.
    type Key<'a>: fmt::Display
    where
        Self: 'a,
        Request: 'a;

    /// The key of `request`.
    fn key<'a>(&'a self, request: &'a Request) -> Self::Key<'a>;
}

impl<Request, K, F> RequestKey<Request> for F
where
    F: Fn(&Request) -> K,
    K: fmt::Display,
{
    type Key<'a>
        = K
    where
        Self: 'a,
        Request: 'a;

    #[inline]
    fn key<'a>(&'a self, request: &'a Request) -> K {
        self(request)
    }
}
