//! Breaker names: one pointer, interned once per process for plain breakers and keyed groups,
//! counted for keyed breakers.
//!
//! A rejected call carries its breaker's name. For a name interned for the process (a plain
//! breaker's, which the code names, so there are few), copying it is a copied pointer instead of
//! a reference count touched twice per rejection (an atomic read-modify-write each, on a cache
//! line every rejecting thread shares): arcstr's `ArcStr` skips the count of a leaked string. A
//! keyed breaker's name comes from run-time data (a tenant header), so it is not interned but
//! counted, and freed with the last breaker, error or event that holds it: an evicted key leaves
//! nothing behind.

use arcstr::ArcStr;
use once_cell::sync::Lazy;

#[cfg(not(loom))]
use crate::concurrent_map::ConcurrentMap;

#[cfg(not(loom))]
static NAMES: Lazy<ConcurrentMap<Box<str>, Name>> = Lazy::new(ConcurrentMap::new);

/// Under loom the map's atomics are loom's, which cannot outlive one model run, so the
/// process-wide interner is a locked `HashMap` there.
#[cfg(loom)]
static NAMES: Lazy<LockedNames> = Lazy::new(LockedNames::default);

#[cfg(loom)]
#[derive(Default)]
struct LockedNames(std::sync::Mutex<std::collections::HashMap<Box<str>, Name>>);

#[cfg(loom)]
impl LockedNames {
    fn get(&self, name: &str) -> Option<Name> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    fn get_or_insert_with(&self, name: Box<str>, make: impl FnOnce() -> Name) -> Name {
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        names.entry(name).or_insert_with(make).clone()
    }
}

/// A breaker's name: one pointer (8 bytes, a third of a `String`), which keeps a rejection
/// error (and so every `Result` a protected call returns) small enough to move in few words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Name(ArcStr);

impl Name {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as `&'static str`, for a name interned for the process (never freed).
    pub(crate) fn as_static(&self) -> Option<&'static str> {
        ArcStr::as_static(&self.0)
    }

    /// A name of its own, freed with the last holder (a keyed breaker's).
    pub(crate) fn counted(text: &str) -> Name {
        Name(ArcStr::from(text))
    }
}

/// The process-wide copy of `name`, which is never freed and costs nothing to copy.
pub(crate) fn intern(name: &str) -> Name {
    if let Some(interned) = NAMES.get(name) {
        return interned.clone();
    }
    NAMES
        .get_or_insert_with(Box::from(name), || {
            let text = ArcStr::from(name);
            let _static: &'static str = text.leak();
            Name(text)
        })
        .clone()
}

/// The process-wide copy of `name` as a `&'static str`, for a holder that copies it on a hot
/// path: a copy and its drop read nothing, where an interned [`Name`]'s clone and drop each
/// read arcstr's flags to learn that it is static. A bulkhead's refusal carries its name so.
pub(crate) fn intern_static(name: &str) -> &'static str {
    // The interned text is already leaked (above), so `leak` only hands it out.
    intern(name).0.leak()
}

/// The display name of the plain breaker configured by `name`: `name` itself, with `\` and
/// `[` escaped (`\\`, `\[`), so that no plain name can read as a keyed one.
pub(crate) fn plain_display(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains(['\\', '[']) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 2);
    escape_into(&mut out, name, '[');
    std::borrow::Cow::Owned(out)
}

/// The display name of the keyed breaker (`name`, `key`): `name[key]`, the name escaped as in
/// [`plain_display`] and `\` and `]` escaped in the key. The first `[` that no `\` escapes
/// ends the name, and only a keyed name has one, so no two breakers share a display name.
pub(crate) fn keyed_display(name: &str, key: &str) -> String {
    let mut out = String::with_capacity(name.len() + key.len() + 2);
    escape_into(&mut out, name, '[');
    out.push('[');
    escape_into(&mut out, key, ']');
    out.push(']');
    out
}

fn escape_into(out: &mut String, text: &str, special: char) {
    for c in text.chars() {
        if c == '\\' || c == special {
            out.push('\\');
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_name_is_stored_once() {
        let a = intern("name-tests:productService");
        let b = intern(&String::from("name-tests:productService"));
        assert_eq!(a.as_str(), "name-tests:productService");
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert!(
            ArcStr::is_static(&a.0),
            "copying an interned name touches no count"
        );
        assert!(!std::ptr::eq(
            a.as_str(),
            intern("name-tests:other").as_str()
        ));
    }

    #[test]
    fn a_static_name_is_the_interned_text() {
        let text = intern_static("name-tests:inventory");
        assert_eq!(text, "name-tests:inventory");
        assert!(std::ptr::eq(text, intern("name-tests:inventory").as_str()));
        assert!(std::ptr::eq(
            text,
            intern_static(&String::from("name-tests:inventory"))
        ));
    }

    #[test]
    fn a_counted_name_is_freed_with_its_last_holder() {
        let name = Name::counted("name-tests:tenant[42]");
        let copy = name.clone();
        assert_eq!(ArcStr::strong_count(&name.0), Some(2));
        drop(copy);
        assert_eq!(ArcStr::strong_count(&name.0), Some(1));
        assert_ne!(name, intern("name-tests:tenant"));
    }

    #[test]
    fn display_names_cannot_collide() {
        assert_eq!(plain_display("productService"), "productService");
        assert_eq!(keyed_display("tenantProducts", "42"), "tenantProducts[42]");
        // name `t` + key `a:b`, name `t:a` + key `b`: different breakers, different names.
        assert_ne!(keyed_display("t", "a:b"), keyed_display("t:a", "b"));
        // A plain name that looks keyed, and keys that look like more keys.
        assert_eq!(plain_display("t[a]"), "t\\[a]");
        assert_ne!(plain_display("t[a]"), keyed_display("t", "a"));
        assert_eq!(keyed_display("t", "a]["), "t[a\\][]");
        assert_ne!(keyed_display("t[a", "b"), keyed_display("t", "a[b"));
        assert_ne!(keyed_display("t\\", "x"), keyed_display("t", "\\x"));
    }
}
