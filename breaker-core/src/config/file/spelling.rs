//! The names a configuration file may use, in Spring's relaxed spellings: a pattern's keys,
//! the Spring keys of the pattern breaker ignores or does not support, the section groups and
//! Resilience4j's modules.
//!
//! Spring's relaxed binding treats `sliding-window-size`, `slidingWindowSize`,
//! `sliding_window_size` and `SLIDING_WINDOW_SIZE` as one key. So do we: a key is compared in its
//! uniform form, lowercase with every `-` and `_` removed.

use crate::config::table::{Pattern, TableKey};

/// What a key in a section is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup<K> {
    Known(K),
    /// A Spring Boot key without meaning here; its canonical name.
    Ignored(&'static str),
    /// A Spring key breaker does not support: its canonical name and why.
    Unsupported(&'static str, &'static str),
    /// Not a key; maybe a near miss.
    Unknown(Option<&'static str>),
}

/// The uniform form of one element of a key: lowercase, without `-` and `_`.
pub(crate) fn uniform(raw: &str) -> String {
    raw.chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl<K> Lookup<K> {
    /// The same answer, with a known key made into `f(key)`.
    pub(crate) fn map<T>(self, f: impl FnOnce(K) -> T) -> Lookup<T> {
        match self {
            Lookup::Known(key) => Lookup::Known(f(key)),
            Lookup::Ignored(name) => Lookup::Ignored(name),
            Lookup::Unsupported(name, why) => Lookup::Unsupported(name, why),
            Lookup::Unknown(near) => Lookup::Unknown(near),
        }
    }
}

/// Looks a key of pattern `P` up, in any of Spring's relaxed spellings.
pub(crate) fn lookup<P: Pattern>(raw: &str) -> Lookup<P::Key> {
    let u = uniform(raw);
    if let Some(key) = P::Key::ALL.iter().find(|k| uniform(k.name()) == u) {
        return Lookup::Known(*key);
    }
    if let Some(name) = P::IGNORED.iter().find(|n| uniform(n) == u) {
        return Lookup::Ignored(name);
    }
    if let Some((name, why)) = P::UNSUPPORTED.iter().find(|(n, _)| uniform(n) == u) {
        return Lookup::Unsupported(name, why);
    }
    Lookup::Unknown(suggest::<P::Key>(&u))
}

/// The known key closest to `uniform_raw`, if it is close enough to be a typo.
fn suggest<K: TableKey>(uniform_raw: &str) -> Option<&'static str> {
    // Long inputs cannot be near a key, and would make the distance quadratic in the input.
    if uniform_raw.len() > 64 {
        return None;
    }
    let mut best: Option<(usize, &'static str)> = None;
    for key in K::ALL {
        let d = distance(uniform_raw, &uniform(key.name()));
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, key.name()));
        }
    }
    let (d, name) = best?;
    let limit = (uniform_raw.len() / 5).max(2);
    (d <= limit).then_some(name)
}

/// Levenshtein distance over chars.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The root of every breaker key in Spring's files, in uniform form per element.
const ROOT: &str = "resilience4j.circuitbreaker";

/// Characters that a line may start with invisibly, so that a key looks right and is not:
/// no-break spaces, the byte-order mark (a zero-width no-break space), zero-width and
/// typographic spaces. `java.util.Properties` and YAML treat none of them as white space.
const INVISIBLE: [char; 17] = [
    '\u{a0}', '\u{feff}', '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{202f}', '\u{205f}',
    '\u{3000}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2009}',
    '\u{200a}',
];

/// Why a key that is not read looks like a breaker key, if it does: `key` is a dotted name
/// (`resilence4j.circuitbreaker.instances.a.b`) whose root is not `resilience4j`. Its root (the
/// first two elements, as written) is returned with the reason.
pub(crate) fn near_breaker_key(key: &str) -> Option<(String, &'static str)> {
    let root_of = |k: &str| k.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    let visible = key.trim_start_matches(INVISIBLE);
    if visible.len() != key.len() {
        let u = uniform(visible);
        if u.starts_with("resilience4j") || near_root(&u) {
            return Some((
                root_of(key),
                "it starts with an invisible character (a no-break space, a byte-order mark \
                 or a zero-width space): delete the start of the line and type it again",
            ));
        }
        return None;
    }
    near_root(&uniform(key)).then(|| {
        (
            root_of(key),
            "its root is not `resilience4j.circuitbreaker` but close to it: a misspelling?",
        )
    })
}

/// Whether the start of `uniform_key` is within two edits of `resilience4j.circuitbreaker`,
/// without being `resilience4j.`: a misspelt or mistyped root (a letter dropped, swapped or
/// doubled, a dot lost).
fn near_root(uniform_key: &str) -> bool {
    if uniform_key.starts_with("resilience4j.") || uniform_key == "resilience4j" {
        return false;
    }
    let chars: Vec<char> = uniform_key.chars().take(ROOT.len() + 2).collect();
    (ROOT.len() - 2..=ROOT.len() + 2)
        .filter(|&n| n <= chars.len())
        .any(|n| distance(&chars[..n].iter().collect::<String>(), ROOT) <= 2)
}

/// The two groups of a `resilience4j.circuitbreaker` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Group {
    /// `configs.<name>`: shared configs (`default` and any `base-config`).
    Configs,
    /// `instances.<name>`: one breaker each.
    Instances,
}

impl Group {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Group::Configs => "configs",
            Group::Instances => "instances",
        }
    }

    /// `configs`, `instances`, or Resilience4j 1.x's `backends` (an alias of `instances`).
    pub(crate) fn lookup(raw: &str) -> Option<Group> {
        match uniform(raw).as_str() {
            "configs" => Some(Group::Configs),
            "instances" | "backends" => Some(Group::Instances),
            _ => None,
        }
    }
}

/// Whether `raw` names one of the Resilience4j modules a Spring file may configure
/// (`resilience4j.<module>`); the loader reads those it has a pattern for and skips the others.
pub(crate) fn is_resilience4j_module(raw: &str) -> bool {
    matches!(
        uniform(raw).as_str(),
        "circuitbreaker"
            | "retry"
            | "bulkhead"
            | "threadpoolbulkhead"
            | "ratelimiter"
            | "timelimiter"
            | "scheduled"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::circuit_breaker::Key;
    use crate::config::Config;

    fn lookup(raw: &str) -> Lookup<Key> {
        super::lookup::<Config>(raw)
    }

    #[test]
    fn relaxed_spellings_find_the_same_key() {
        for raw in [
            "sliding-window-size",
            "slidingWindowSize",
            "sliding_window_size",
            "SLIDING_WINDOW_SIZE",
        ] {
            assert_eq!(lookup(raw), Lookup::Known(Key::SlidingWindowSize), "{raw}");
        }
        assert_eq!(
            lookup("automaticTransitionFromOpenToHalfOpenEnabled"),
            Lookup::Known(Key::AutomaticTransitionFromOpenToHalfOpenEnabled)
        );
        assert_eq!(lookup("baseConfig"), Lookup::Known(Key::BaseConfig));
    }

    #[test]
    fn every_canonical_name_is_found() {
        for key in Key::ALL {
            assert_eq!(lookup(key.name()), Lookup::Known(key));
        }
    }

    #[test]
    fn typos_get_a_suggestion_and_nonsense_does_not() {
        assert_eq!(
            lookup("sliding-windw-size"),
            Lookup::Unknown(Some("sliding-window-size"))
        );
        assert_eq!(
            lookup("failureRateTreshold"),
            Lookup::Unknown(Some("failure-rate-threshold"))
        );
        assert_eq!(lookup("colour"), Lookup::Unknown(None));
    }

    #[test]
    fn near_breaker_keys_are_found() {
        for near in [
            "resilence4j.circuitbreaker.instances.a.b",
            "resilience4j-circuitbreaker.instances.a.b",
            "Resilience4J_CircuitBreakr.instances.a.b",
            "resiliance4j.circuitbreaker",
            "resilience4jcircuitbreaker.instances",
            "\u{a0}resilience4j.circuitbreaker.instances.a.b",
            "\u{feff}resilience4j.circuitbreaker.instances.a.b",
        ] {
            assert!(near_breaker_key(near).is_some(), "{near:?}");
        }
        assert_eq!(
            near_breaker_key("resilence4j.circuitbreaker.instances.a.b")
                .unwrap()
                .0,
            "resilence4j.circuitbreaker"
        );
        for far in [
            "resilience4j.circuitbreaker.instances.a.b",
            "resilience4j.retry.instances.a.b",
            "spring.application.name",
            "server.port",
            "management.endpoints.web.exposure.include",
            "\u{a0}server.port",
            "",
        ] {
            assert_eq!(near_breaker_key(far), None, "{far:?}");
        }
    }

    #[test]
    fn backoff_keys_are_keys() {
        assert_eq!(
            lookup("enableExponentialBackoff"),
            Lookup::Known(Key::EnableExponentialBackoff)
        );
        assert_eq!(
            lookup("randomized_wait_factor"),
            Lookup::Known(Key::RandomizedWaitFactor)
        );
    }

    #[test]
    fn spring_only_keys_are_ignored_or_explained() {
        assert_eq!(
            lookup("registerHealthIndicator"),
            Lookup::Known(Key::RegisterHealthIndicator)
        );
        assert_eq!(
            lookup("eventConsumerBufferSize"),
            Lookup::Known(Key::EventConsumerBufferSize)
        );
        assert_eq!(
            lookup("writableStackTraceEnabled"),
            Lookup::Ignored("writable-stack-trace-enabled")
        );
        assert!(matches!(
            lookup("record-failure-predicate"),
            Lookup::Unsupported("record-failure-predicate", _)
        ));
    }
}
