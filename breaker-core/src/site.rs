//! Call sites: the breaker (or bulkhead, or retry) of one place in the code, resolved once and
//! then cached.
//!
//! `#[circuit_breaker(name = "...")]` puts a `static` [`CallSite`] in the function it guards
//! (or a [`KeyedCallSite`] with `key = ...`), `#[bulkhead(name = "...")]` a [`BulkheadSite`],
//! `#[retry(name = "...")]` a [`RetrySite`].
//! The first call looks the name up in [`Registry::global`]; every later call reads the cached
//! handle, with no lookup by name. Hand-written code can do the same:
//!
//! ```
//! use breaker_core::{CallError, CallSite};
//!
//! static PRODUCTS: CallSite = CallSite::new("productService");
//!
//! fn get_product(id: u32) -> Result<String, CallError<std::io::Error>> {
//!     PRODUCTS.breaker().call_sync(|| Ok(format!("product {id}")))
//! }
//! # assert_eq!(get_product(7).unwrap(), "product 7");
//! ```

use std::fmt;

use once_cell::sync::OnceCell;

use crate::breaker::CircuitBreaker;
use crate::bulkhead::Bulkhead;
use crate::registry::keyed::{Keyed, KeyedLease};
use crate::registry::Registry;
use crate::retry::Retry;

/// What a site resolves by name from the global registry, and follows when it leaves it.
trait Member: Sized {
    /// The member named `name` in [`Registry::global`], created if it has none.
    fn resolve(name: &str) -> Self;
    /// Whether it left its registry (replaced or removed), so that the name now resolves to
    /// another one.
    fn left_registry(&self) -> bool;
}

impl Member for CircuitBreaker {
    fn resolve(name: &str) -> Self {
        Registry::global().breaker(name)
    }
    #[inline]
    fn left_registry(&self) -> bool {
        self.is_detached()
    }
}

impl Member for Bulkhead {
    fn resolve(name: &str) -> Self {
        Registry::global().bulkhead(name)
    }
    #[inline]
    fn left_registry(&self) -> bool {
        self.is_detached()
    }
}

impl Member for Retry {
    fn resolve(name: &str) -> Self {
        Registry::global().retry(name)
    }
    #[inline]
    fn left_registry(&self) -> bool {
        self.is_detached()
    }
}

/// One member a site resolved, and the one it resolved after that one left the registry.
///
/// A site keeps every member it cached for the life of the program (one per replace or remove
/// of its name, so few), since calls in flight may still hold a reference to an earlier one.
struct Link<M> {
    member: M,
    next: OnceCell<Box<Link<M>>>,
}

impl<M: Member> Link<M> {
    fn resolve(name: &str) -> Link<M> {
        Link {
            member: M::resolve(name),
            next: OnceCell::new(),
        }
    }

    /// The member `name` resolves to now: the first one cached, or the one after it that is
    /// still in the registry (resolving it on first need).
    #[inline]
    fn current<'a>(first: &'a OnceCell<Link<M>>, name: &str) -> &'a M {
        let mut link = first.get_or_init(|| Link::resolve(name));
        while link.member.left_registry() {
            link = link.next.get_or_init(|| Box::new(Link::resolve(name)));
        }
        &link.member
    }
}

/// The breaker named `name` in the global registry, resolved on first use and cached.
///
/// A `CallSite` is built in a `const` context, so it can live in a `static`. Two call sites
/// with the same name share one breaker (the registry has one breaker per name).
///
/// If the cached breaker leaves the registry ([`Registry::replace`], [`Registry::remove`]),
/// the next call looks the name up again and caches the breaker that has it now. The site
/// keeps every breaker it cached for the life of the program (one per replace or remove of
/// its name, so few), since calls in flight may still hold a reference to an earlier one.
pub struct CallSite {
    name: &'static str,
    first: OnceCell<Link<CircuitBreaker>>,
}

impl CallSite {
    /// A call site for the breaker named `name`; nothing is looked up until the first call.
    pub const fn new(name: &'static str) -> CallSite {
        CallSite {
            name,
            first: OnceCell::new(),
        }
    }

    /// The breaker's name (also the name of its configuration instance).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The breaker: `Registry::global().breaker(name)` on the first call, the cached handle on
    /// every later one (one load more than the handle: whether it is still in the registry).
    #[inline]
    pub fn breaker(&self) -> &CircuitBreaker {
        Link::current(&self.first, self.name)
    }
}

impl fmt::Debug for CallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSite")
            .field("name", &self.name)
            .field("resolved", &self.first.get().is_some())
            .finish()
    }
}

/// The bulkhead named `name` in the global registry, resolved on first use and cached: what
/// `#[bulkhead(name = "...")]` holds.
///
/// ```
/// use breaker_core::{BulkheadSite, CallError};
///
/// static INVENTORY: BulkheadSite = BulkheadSite::new("inventory");
///
/// fn stock(id: u32) -> Result<u32, CallError<std::io::Error>> {
///     INVENTORY.bulkhead().call_sync(|| Ok(id * 10))
/// }
/// # assert_eq!(stock(7).unwrap(), 70);
/// ```
///
/// Built in a `const` context, so it can live in a `static`; two sites with the same name
/// share one bulkhead, and so its places. If the cached bulkhead leaves the registry
/// ([`Registry::remove_bulkhead`]), the next call looks the name up again, as a [`CallSite`]
/// does.
pub struct BulkheadSite {
    name: &'static str,
    first: OnceCell<Link<Bulkhead>>,
}

impl BulkheadSite {
    /// A site for the bulkhead named `name`; nothing is looked up until the first call.
    pub const fn new(name: &'static str) -> BulkheadSite {
        BulkheadSite {
            name,
            first: OnceCell::new(),
        }
    }

    /// The bulkhead's name (also the name of its configuration instance).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The bulkhead: `Registry::global().bulkhead(name)` on the first call, the cached handle
    /// on every later one (one load more than the handle: whether it is still in the registry).
    #[inline]
    pub fn bulkhead(&self) -> &Bulkhead {
        Link::current(&self.first, self.name)
    }
}

impl fmt::Debug for BulkheadSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadSite")
            .field("name", &self.name)
            .field("resolved", &self.first.get().is_some())
            .finish()
    }
}

/// The retry named `name` in the global registry, resolved on first use and cached: what
/// `#[retry(name = "...")]` holds.
///
/// ```
/// use breaker_core::{CallError, RetrySite};
///
/// static QUOTES: RetrySite = RetrySite::new("quotes");
///
/// fn quote(id: u32) -> Result<u32, CallError<std::io::Error>> {
///     QUOTES.retry().call_sync(|| Ok(id * 10))
/// }
/// # assert_eq!(quote(7).unwrap(), 70);
/// ```
///
/// Built in a `const` context, so it can live in a `static`; two sites with the same name
/// share one retry, and so its budget. If the cached retry leaves the registry
/// ([`Registry::remove_retry`]), the next call looks the name up again, as a [`CallSite`] does.
pub struct RetrySite {
    name: &'static str,
    first: OnceCell<Link<Retry>>,
}

impl RetrySite {
    /// A site for the retry named `name`; nothing is looked up until the first call.
    pub const fn new(name: &'static str) -> RetrySite {
        RetrySite {
            name,
            first: OnceCell::new(),
        }
    }

    /// The retry's name (also the name of its configuration instance).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The retry: `Registry::global().retry(name)` on the first call, the cached handle on
    /// every later one (one load more than the handle: whether it is still in the registry).
    #[inline]
    pub fn retry(&self) -> &Retry {
        Link::current(&self.first, self.name)
    }
}

impl fmt::Debug for RetrySite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetrySite")
            .field("name", &self.name)
            .field("resolved", &self.first.get().is_some())
            .finish()
    }
}

/// Breakers keyed at run time, all configured by one name: `#[circuit_breaker(name = "llm",
/// key = ...)]`. Each distinct key text gets its own breaker, named `name[key]` (see
/// [`CircuitBreaker::name`]).
///
/// The group ([`Registry::keyed`]) is resolved once from the global registry and cached;
/// finding the breaker of a key that has one takes no lock and allocates nothing.
///
/// ```
/// use breaker_core::KeyedCallSite;
///
/// static LLM: KeyedCallSite = KeyedCallSite::new("llm");
///
/// let openai = LLM.breaker("openai/gpt");
/// let other = LLM.breaker(&format!("{}/{}", "anthropic", "claude"));
/// assert_eq!(openai.name(), "llm[openai/gpt]");
/// assert_eq!(openai.key(), Some("openai/gpt"));
/// assert!(!openai.ptr_eq(&other));
/// ```
pub struct KeyedCallSite {
    name: &'static str,
    keyed: OnceCell<Keyed>,
}

impl KeyedCallSite {
    /// A keyed call site for the breakers configured by `name`.
    pub const fn new(name: &'static str) -> KeyedCallSite {
        KeyedCallSite {
            name,
            keyed: OnceCell::new(),
        }
    }

    /// The name the keys are configured by.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The breaker of `key` (any `Display` value, borrowed or owned: the breaker is its
    /// text's), created on first use.
    #[inline]
    pub fn breaker<K: fmt::Display + ?Sized>(&self, key: &K) -> CircuitBreaker {
        self.group().get(key)
    }

    /// The breaker of `key`, lent for one call: what `#[circuit_breaker(key = ...)]` does.
    ///
    /// Each thread keeps the breakers of the keys it used last; lending one of those moves it
    /// out of the thread's cache and [`KeyedLease::give_back`] moves it back, so a call on a key
    /// used again on the same thread touches no reference count (a clone and a drop of the
    /// handle, as [`breaker`](KeyedCallSite::breaker) hands out, are two atomic
    /// read-modify-writes). A breaker that left the registry (evicted or removed) is never lent.
    ///
    /// ```
    /// use breaker_core::{CallError, KeyedCallSite};
    ///
    /// static TENANTS: KeyedCallSite = KeyedCallSite::new("tenantProducts");
    ///
    /// fn products(tenant: &str) -> Result<u32, CallError<std::io::Error>> {
    ///     let lease = TENANTS.lease(tenant);
    ///     let out = lease.breaker().call_sync(|| Ok(7));
    ///     lease.give_back();
    ///     out
    /// }
    /// assert_eq!(products("acme").unwrap(), 7);
    /// ```
    #[inline]
    pub fn lease<K: fmt::Display + ?Sized>(&self, key: &K) -> KeyedLease {
        self.group().lease(key)
    }

    fn group(&self) -> &Keyed {
        self.keyed
            .get_or_init(|| Registry::global().keyed(self.name))
    }
}

impl fmt::Debug for KeyedCallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedCallSite")
            .field("name", &self.name)
            .field("resolved", &self.keyed.get().is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CallNotPermitted;
    use crate::state::State;

    // These tests use the global registry with its defaults; names are unique to this module.

    #[test]
    fn io_error_from_a_rejection_keeps_it_inside() {
        static SITE: CallSite = CallSite::new("site-tests:io");
        SITE.breaker().transition_to(State::ForcedOpen).unwrap();
        let err: std::io::Error = SITE
            .breaker()
            .call_sync(|| Ok::<(), std::io::Error>(()))
            .unwrap_err()
            .into_error();
        assert_eq!(err.kind(), std::io::ErrorKind::Other);
        let inner = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<CallNotPermitted>());
        assert_eq!(inner.map(|r| r.breaker_name()), Some("site-tests:io"));
    }

    #[test]
    fn call_site_resolves_once_to_the_registry_breaker() {
        static SITE: CallSite = CallSite::new("site-tests:plain");
        let first = SITE.breaker() as *const CircuitBreaker;
        let second = SITE.breaker() as *const CircuitBreaker;
        assert_eq!(first, second, "the handle is cached in the site");
        assert!(SITE
            .breaker()
            .ptr_eq(&Registry::global().breaker("site-tests:plain")));
        assert_eq!(SITE.name(), "site-tests:plain");
        assert!(format!("{SITE:?}").contains("resolved: true"));
    }

    #[test]
    fn two_sites_with_one_name_share_a_breaker() {
        static A: CallSite = CallSite::new("site-tests:shared");
        static B: CallSite = CallSite::new("site-tests:shared");
        assert!(A.breaker().ptr_eq(B.breaker()));
    }

    #[test]
    fn a_keyed_lease_lends_the_keys_breaker() {
        static SITE: KeyedCallSite = KeyedCallSite::new("site-tests:lease");
        let lease = SITE.lease(&7u32);
        assert!(lease.breaker().ptr_eq(&SITE.breaker(&7u32)));
        assert_eq!(
            format!("{lease:?}"),
            r#"KeyedLease(CircuitBreaker { name: "site-tests:lease[7]", state: Closed, .. })"#
        );
        lease.give_back();
        let again = SITE.lease("7");
        assert!(
            again.breaker().ptr_eq(&SITE.breaker(&7u32)),
            "given back, lent again"
        );
    }

    #[test]
    fn keyed_site_gives_one_breaker_per_key_text() {
        static SITE: KeyedCallSite = KeyedCallSite::new("site-tests:keyed");
        let a = SITE.breaker(&1u32);
        let b = SITE.breaker(&2u32);
        assert!(!a.ptr_eq(&b));
        assert!(a.ptr_eq(&SITE.breaker(&1u32)));
        assert_eq!(a.name(), "site-tests:keyed[1]");
        assert!(a.ptr_eq(&Registry::global().keyed("site-tests:keyed").get(&1)));
    }

    #[test]
    fn keys_of_different_types_with_one_text_are_one_breaker() {
        static SITE: KeyedCallSite = KeyedCallSite::new("site-tests:two-types");
        let by_int = SITE.breaker(&7u64);
        let by_string = SITE.breaker(&"7".to_owned());
        let by_str = SITE.breaker("7");
        assert!(by_int.ptr_eq(&by_string) && by_int.ptr_eq(&by_str));
        assert_eq!(Registry::global().keyed("site-tests:two-types").len(), 1);
    }

    #[test]
    fn call_site_follows_a_replaced_breaker() {
        static SITE: CallSite = CallSite::new("site-tests:replaced");
        let first = SITE.breaker().clone();
        let config = crate::config::Config::builder()
            .failure_rate_threshold(10.0)
            .build()
            .unwrap();
        let old = Registry::global()
            .replace("site-tests:replaced", config)
            .unwrap();
        assert!(old.ptr_eq(&first) && old.is_detached());
        let now = SITE.breaker();
        assert!(!now.ptr_eq(&first));
        assert!(now.ptr_eq(&Registry::global().breaker("site-tests:replaced")));
        assert_eq!(now.config().failure_rate_threshold(), 10.0);
    }

    #[test]
    fn bulkhead_site_resolves_once_and_follows_a_removed_bulkhead() {
        static SITE: BulkheadSite = BulkheadSite::new("site-tests:bulkhead");
        static OTHER: BulkheadSite = BulkheadSite::new("site-tests:bulkhead");
        let first = SITE.bulkhead() as *const Bulkhead;
        assert_eq!(first, SITE.bulkhead() as *const Bulkhead, "cached");
        assert!(
            SITE.bulkhead().ptr_eq(OTHER.bulkhead()),
            "one name, one bulkhead"
        );
        assert!(SITE
            .bulkhead()
            .ptr_eq(&Registry::global().bulkhead("site-tests:bulkhead")));
        assert!(format!("{SITE:?}").contains("resolved: true"));

        let cached = SITE.bulkhead().clone();
        let removed = Registry::global()
            .remove_bulkhead("site-tests:bulkhead")
            .unwrap();
        assert!(removed.ptr_eq(&cached) && removed.is_detached());
        let now = SITE.bulkhead();
        assert!(!now.ptr_eq(&removed), "the site looked the name up again");
        assert!(now.ptr_eq(&Registry::global().bulkhead("site-tests:bulkhead")));
    }

    #[test]
    fn retry_site_resolves_once_and_follows_a_removed_retry() {
        static SITE: RetrySite = RetrySite::new("site-tests:retry");
        static OTHER: RetrySite = RetrySite::new("site-tests:retry");
        let first = SITE.retry() as *const Retry;
        assert_eq!(first, SITE.retry() as *const Retry, "cached");
        assert!(SITE.retry().ptr_eq(OTHER.retry()), "one name, one retry");
        assert!(SITE
            .retry()
            .ptr_eq(&Registry::global().retry("site-tests:retry")));
        assert!(format!("{SITE:?}").contains("resolved: true"));

        let cached = SITE.retry().clone();
        let removed = Registry::global().remove_retry("site-tests:retry").unwrap();
        assert!(removed.ptr_eq(&cached));
        let now = SITE.retry();
        assert!(!now.ptr_eq(&removed), "the site looked the name up again");
        assert!(now.ptr_eq(&Registry::global().retry("site-tests:retry")));
    }
}
