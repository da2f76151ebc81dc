//! Call sites: the breaker of one place in the code, resolved once and then cached.
//!
//! `#[circuit_breaker(name = "...")]` puts a `static` [`CallSite`] in the function it guards
//! (or a [`KeyedCallSite`] with `key = ...`). The first call looks the name up in
//! [`Registry::global`]; every later call reads the cached handle, with no lookup by name.
//! Hand-written code can do the same:
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

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::hash::Hash;

use once_cell::sync::OnceCell;

use crate::breaker::CircuitBreaker;
use crate::registry::keyed::Keyed;
use crate::registry::Registry;

/// The breaker named `name` in the global registry, resolved on first use and cached.
///
/// A `CallSite` is built in a `const` context, so it can live in a `static`. Two call sites
/// with the same name share one breaker (the registry has one breaker per name).
pub struct CallSite {
    name: &'static str,
    breaker: OnceCell<CircuitBreaker>,
}

impl CallSite {
    /// A call site for the breaker named `name`; nothing is looked up until the first call.
    pub const fn new(name: &'static str) -> CallSite {
        CallSite {
            name,
            breaker: OnceCell::new(),
        }
    }

    /// The breaker's name (also the name of its configuration instance).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The breaker: `Registry::global().breaker(name)` on the first call, the cached handle on
    /// every later one.
    #[inline]
    pub fn breaker(&self) -> &CircuitBreaker {
        self.breaker
            .get_or_init(|| Registry::global().breaker(self.name))
    }
}

impl fmt::Debug for CallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallSite")
            .field("name", &self.name)
            .field("resolved", &self.breaker.get().is_some())
            .finish()
    }
}

/// Breakers keyed at run time, all configured by one name: `#[circuit_breaker(name = "llm",
/// key = ...)]`. Each distinct key gets its own breaker, named `name:key`.
///
/// The key set ([`Registry::keyed`]) is resolved once from the global registry and cached;
/// finding the breaker of a key that was seen before takes no lock.
///
/// ```
/// use breaker_core::KeyedCallSite;
///
/// static LLM: KeyedCallSite = KeyedCallSite::new("llm");
///
/// let openai = LLM.breaker(&"openai/gpt".to_owned());
/// let other = LLM.breaker(&"anthropic/claude".to_owned());
/// assert_eq!(openai.name(), "llm:openai/gpt");
/// assert!(!openai.ptr_eq(&other));
/// ```
pub struct KeyedCallSite {
    name: &'static str,
    /// A `Keyed<K>` for the key type of the first call.
    keyed: OnceCell<Box<dyn Any + Send + Sync>>,
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

    /// The breaker for `key`, created on first use.
    ///
    /// The site caches the key set of the first key type it sees. A call site whose key type
    /// varies (a generic function keyed by a type parameter) still works: other key types are
    /// looked up in the registry on each call, and get an owned handle.
    #[inline]
    pub fn breaker<K>(&self, key: &K) -> Cow<'_, CircuitBreaker>
    where
        K: Hash + Eq + Clone + fmt::Display + Send + Sync + 'static,
    {
        let cached = self
            .keyed
            .get_or_init(|| Box::new(Registry::global().keyed::<K>(self.name)));
        match cached.downcast_ref::<Keyed<K>>() {
            Some(keyed) => Cow::Borrowed(keyed.get(key)),
            None => Cow::Owned(Registry::global().keyed::<K>(self.name).get(key).clone()),
        }
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
    fn keyed_site_gives_one_breaker_per_key() {
        static SITE: KeyedCallSite = KeyedCallSite::new("site-tests:keyed");
        let a = SITE.breaker(&1u32);
        let b = SITE.breaker(&2u32);
        assert!(matches!(a, Cow::Borrowed(_)));
        assert!(!a.ptr_eq(&b));
        assert!(a.ptr_eq(&SITE.breaker(&1u32)));
        assert_eq!(a.name(), "site-tests:keyed:1");
        assert!(a.ptr_eq(Registry::global().keyed::<u32>("site-tests:keyed").get(&1)));
    }

    #[test]
    fn keyed_site_with_a_second_key_type_still_finds_the_right_breaker() {
        static SITE: KeyedCallSite = KeyedCallSite::new("site-tests:two-types");
        let by_int = SITE.breaker(&7u64);
        let by_string = SITE.breaker(&"7".to_owned());
        assert!(matches!(by_string, Cow::Owned(_)));
        assert!(!by_int.ptr_eq(&by_string), "each key type has its own set");
        assert!(by_string.ptr_eq(&SITE.breaker(&"7".to_owned())));
    }
}
