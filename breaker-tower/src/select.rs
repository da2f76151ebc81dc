//! Which breaker guards a request: one for every request ([`CircuitBreaker`]), or one per key
//! ([`PerKey`], on the registry's keyed breakers, as the attribute's `key = ...`).

use std::fmt;

use breaker_core::CircuitBreaker;
use breaker_core::Keyed;
use breaker_core::RequestKey;

/// How a [`CircuitBreakerService`](crate::CircuitBreakerService) finds the breaker
/// that guards a request.
///
/// Implemented by [`CircuitBreaker`] (one breaker for every request) and [`PerKey`] (a breaker
/// per request key). A service can implement it to pick breakers its own way.
pub trait Breakers<Request> {
    /// Runs `f` with the breaker for `request`.
    fn with_breaker<R>(&self, request: &Request, f: impl FnOnce(&CircuitBreaker) -> R) -> R;
}

impl<Request> Breakers<Request> for CircuitBreaker {
    #[inline]
    fn with_breaker<R>(&self, _: &Request, f: impl FnOnce(&CircuitBreaker) -> R) -> R {
        f(self)
    }
}

/// A breaker per request key: the key `K` picks a breaker from a registry's keyed group
/// ([`Registry::keyed`](breaker_core::Registry::keyed)), created on first use with the group's
/// configuration (or the instance entry `name[key]`), evicted when idle under the group's
/// limits. The same breakers as the attribute's `key = ...` under the same name.
///
/// Keys often come from the request (a header, a host): the group's limits bound how many
/// breakers a stream of distinct keys can make (1,000 per group by default, the least recently
/// used evicted first).
#[derive(Clone)]
pub struct PerKey<K> {
    group: Keyed,
    key: K,
}

impl<K> PerKey<K> {
    pub(crate) fn new(group: Keyed, key: K) -> Self {
        PerKey { group, key }
    }

    /// The keyed group the breakers come from.
    pub fn group(&self) -> &Keyed {
        &self.group
    }
}

impl<Request, K: RequestKey<Request>> Breakers<Request> for PerKey<K> {
    #[inline]
    fn with_breaker<R>(&self, request: &Request, f: impl FnOnce(&CircuitBreaker) -> R) -> R {
        let breaker = self.group.get(&self.key.key(request));
        f(&breaker)
    }
}

impl<K> fmt::Debug for PerKey<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerKey")
            .field("group", &self.group.name())
            .finish_non_exhaustive()
    }
}
