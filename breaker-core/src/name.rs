//! Breaker names, interned once per process.
//!
//! A rejected call carries its breaker's name; interning makes that a copied pointer instead of a
//! reference count touched twice per rejection (an atomic read-modify-write each, on a cache
//! line every rejecting thread shares). Each distinct name is stored once for the life of the
//! process, like the breakers a registry keeps: a registry never forgets a breaker either.

use once_cell::sync::Lazy;

use crate::concurrent_map::ConcurrentMap;

static NAMES: Lazy<ConcurrentMap<Box<str>, &'static Name>> = Lazy::new(ConcurrentMap::new);

/// An interned name: a thin pointer to it is 8 bytes, half a `&str`, which keeps a rejection
/// error (and so every `Result` a protected call returns) small enough to move in few words.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Name {
    text: &'static str,
}

impl Name {
    pub(crate) fn as_str(&self) -> &'static str {
        self.text
    }
}

/// The process-wide copy of `name`.
pub(crate) fn intern(name: &str) -> &'static Name {
    if let Some(interned) = NAMES.get(name) {
        return interned;
    }
    NAMES.get_or_insert_with(Box::from(name), || {
        Box::leak(Box::new(Name {
            text: Box::leak(Box::from(name)),
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_name_is_stored_once() {
        let a = intern("name-tests:productService");
        let b = intern(&String::from("name-tests:productService"));
        assert_eq!(a.as_str(), "name-tests:productService");
        assert!(std::ptr::eq(a, b));
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert!(!std::ptr::eq(a, intern("name-tests:other")));
    }
}
