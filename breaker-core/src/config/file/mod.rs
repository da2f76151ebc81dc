//! Configuration files: TOML, Spring's `.properties` and Spring's YAML (`application.yml`),
//! loaded into a [`RegistryBuilder`].
//!
//! The three formats describe the same thing as Spring's `resilience4j.<pattern>.*`:
//! `configs.<name>` (shared configs, `default` among them), `instances.<name>` (one breaker,
//! bulkhead or retry each) and `tags.<name>` (the registry's metric tags), with the keys of the
//! pattern's table (for the circuit breaker [`crate::config::keys`], for the bulkhead
//! [`crate::bulkhead::keys`], for the retry [`crate::retry::keys`]) in any of Spring's relaxed
//! spellings. Breaker reads the `circuitbreaker`, `bulkhead` and `retry` patterns; the sections
//! of Resilience4j's other modules are skipped (a time limiter's timeout and a thread-pool
//! bulkhead with a warning).
//!
//! Loading is all or nothing: the file is parsed, every value checked, every `base-config`
//! followed and every config built before anything reaches the builder. The first problem is
//! returned as a [`LoadError`] naming the file, the line, the key, the value and what was expected.
//!
//! The steps, one file each, and each the same for every pattern: [`decode`] turns the bytes
//! into text; a parser per format ([`toml`], [`properties`], [`yaml`]; the last two through
//! [`spring`], which reads Spring's flat names) reads the text through a
//! [`document::Reading`] into one [`document::Document`] per pattern, looking names up in
//! [`spelling`] and checking values in [`values`]; [`resolve`] follows the `base-config`
//! chains as Resilience4j's Spring Boot support does; [`build`] turns each section into the
//! pattern's config (a [`Config`] for the circuit breaker) through its
//! [`Pattern`](crate::config::table::Pattern) impl. None of them uses this module.
//!
//! [`RegistryBuilder`]: crate::RegistryBuilder

mod build;
mod document;
mod error;
mod properties;
mod resolve;
mod spelling;
mod spring;
mod toml;
mod values;
mod yaml;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::config::bulkhead::BulkheadConfig;
use crate::config::retry::RetryConfig;
use crate::config::table::{ErrorKinds, Pattern};
use crate::config::{tags, Config};
use crate::log_safe::LogSafe;

use build::Built;
use document::{Document, Notes, Reading, Sections};
pub use error::{LoadError, LoadErrorKind};

/// What a file gives the registry: the configs of its circuit breakers, of its bulkheads and
/// of its retries, and its tags.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) breakers: Built<Config>,
    pub(crate) bulkheads: Built<BulkheadConfig>,
    pub(crate) retries: Built<RetryConfig>,
    /// The tags of every pattern's section (`resilience4j.<pattern>.tags.<name>`), each once:
    /// (label name, value, line). The registry has one set of tags, on every metric it exports.
    pub(crate) tags: Vec<(String, String, u32)>,
}

/// The shared configs given in code, by pattern: the bases a file's `base-config` may name
/// beside its own `configs`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CodeConfigs<'a> {
    pub(crate) breakers: &'a HashMap<String, Config>,
    pub(crate) bulkheads: &'a HashMap<String, BulkheadConfig>,
    pub(crate) retries: &'a HashMap<String, RetryConfig>,
}

/// The environment variable that points the global registry at a configuration file
/// (`.toml`, `.properties`, `.yml` or `.yaml`); see [`Registry::global`](crate::Registry::global).
pub const CONFIG_ENV: &str = "BREAKER_CONFIG";

/// A configuration file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// TOML: `[configs.<name>]` and `[instances.<name>]` tables (or the same under
    /// `[resilience4j.circuitbreaker]`).
    Toml,
    /// Spring `.properties` lines: `resilience4j.circuitbreaker.instances.<name>.<key>=<value>`.
    /// UTF-8, or ISO-8859-1 when the bytes are not valid UTF-8.
    Properties,
    /// Spring's YAML (`application.yml`): the `resilience4j.circuitbreaker` subtree, read as
    /// Spring Boot flattens it into property names.
    Yaml,
}

impl Format {
    /// The format a file name's extension says: `.toml`, `.properties`, `.yml` or `.yaml`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?;
        [
            ("toml", Format::Toml),
            ("properties", Format::Properties),
            ("yml", Format::Yaml),
            ("yaml", Format::Yaml),
        ]
        .into_iter()
        .find(|(e, _)| ext.eq_ignore_ascii_case(e))
        .map(|(_, format)| format)
    }
}

/// Reads `bytes` as `format`, resolves it against the shared configs and error kinds the
/// builder already has, and builds every config of every pattern.
pub(crate) fn load(
    format: Format,
    file: &str,
    bytes: &[u8],
    code: CodeConfigs<'_>,
    kinds: &ErrorKinds,
) -> Result<Loaded, LoadError> {
    let text = decode(format, file, bytes)?;
    let mut breaker_doc = Document::<Config>::new(file);
    let mut bulkhead_doc = Document::<BulkheadConfig>::new(file);
    let mut retry_doc = Document::<RetryConfig>::new(file);
    let notes = read(
        format,
        file,
        &text,
        vec![&mut breaker_doc, &mut bulkhead_doc, &mut retry_doc],
    )?;
    let mut breakers = build::build_all(&breaker_doc, code.breakers, kinds)?;
    let mut bulkheads = build::build_all(&bulkhead_doc, code.bulkheads, kinds)?;
    let mut retries = build::build_all(&retry_doc, code.retries, kinds)?;
    let tags = merge_tags(
        file,
        [
            std::mem::take(&mut breakers.tags),
            std::mem::take(&mut bulkheads.tags),
            std::mem::take(&mut retries.tags),
        ],
    )?;
    note(file, &notes);
    Ok(Loaded {
        breakers,
        bulkheads,
        retries,
        tags,
    })
}

/// The patterns whose sections a file's tags may sit in, in the order [`merge_tags`] takes
/// their tags.
const TAGGED: [&str; 3] = [Config::ROOT, BulkheadConfig::ROOT, RetryConfig::ROOT];

/// One list of the registry's tags from every pattern's sections (in [`TAGGED`]'s order): a
/// tag two sections give with the same value is kept once, with different values it is an
/// error at the later one's line.
fn merge_tags(
    file: &str,
    by_pattern: [Vec<(String, String, u32)>; TAGGED.len()],
) -> Result<Vec<(String, String, u32)>, LoadError> {
    let mut merged: Vec<(String, String, u32)> = Vec::new();
    for (name, value, line) in by_pattern.into_iter().flatten() {
        match merged.iter().find(|(n, _, _)| *n == name) {
            Some((_, v, _)) if *v == value => {}
            Some((_, v, first_line)) => {
                let sections: Vec<String> = TAGGED
                    .iter()
                    .map(|root| format!("resilience4j.{root}.tags"))
                    .collect();
                return Err(LoadError::new(
                    LoadErrorKind::DuplicateKey,
                    file,
                    format!(
                        "tag `{name}` is `{v}` on line {first_line} and `{value}` here; the \
                         registry's tags are on every metric it exports"
                    ),
                )
                .at(line)
                .with_key(&format!("tags.{name}"))
                .with_value(&value)
                .with_expected(format!("one value per tag across {}", sections.join(", "))));
            }
            None => merged.push((name, value, line)),
        }
    }
    Ok(merged)
}

/// Reads `text` in `format` into the documents of `patterns` (the first also takes a TOML
/// file's top-level tables): the one path every format and every pattern goes through.
fn read(
    format: Format,
    file: &str,
    text: &str,
    patterns: Vec<&mut dyn Sections>,
) -> Result<Notes, LoadError> {
    let mut reading = Reading::new(file, patterns);
    match format {
        Format::Toml => toml::parse(text, &mut reading)?,
        Format::Properties => properties::parse(text, &mut reading)?,
        Format::Yaml => yaml::parse(text, &mut reading)?,
    }
    Ok(reading.notes)
}

/// Writes the WARN and INFO lines about the keys a loaded file had that were skipped.
fn note(file: &str, doc: &Notes) {
    for near in &doc.near_misses {
        tracing::warn!(
            file = %LogSafe(file),
            line = near.line,
            root = %LogSafe(&near.root),
            more_keys = near.more,
            "breaker: skipped a key that looks like a breaker key ({}); the breakers it means \
             run without it",
            near.why
        );
    }
    for (line, profile) in &doc.profiles {
        tracing::warn!(
            file = %LogSafe(file),
            line = *line,
            profile = %LogSafe(profile),
            "breaker: skipped a YAML document of a Spring profile; breaker has no profiles: \
             put the settings in a document without `spring.config.activate.on-profile`"
        );
    }
    for (line, key) in &doc.time_limits {
        tracing::warn!(
            file = %LogSafe(file),
            line = *line,
            key = %LogSafe(key),
            "breaker: a time limiter's timeout is not read; breaker has no separate time \
             limiter: set `timeout-duration` in the breaker's own section to cancel slow calls"
        );
    }
    if let Some(line) = doc.thread_pool_bulkhead {
        tracing::warn!(
            file = %LogSafe(file),
            line,
            "breaker: skipped `resilience4j.thread-pool-bulkhead`; breaker has no thread-pool \
             bulkhead: its semaphore bulkhead (`resilience4j.bulkhead`, `max-concurrent-calls`) \
             limits the calls in flight without a pool of its own"
        );
    }
    for (line, key) in &doc.ignored {
        tracing::info!(
            file = %LogSafe(file),
            line = *line,
            key = %LogSafe(key),
            "breaker: ignored a Spring Boot key that has no meaning here"
        );
    }
}

/// Whether the tags a file adds keep the registry within [`tags::MAX_TAGS`]: `have` are the
/// builder's tags so far, `adding` the file's (label name, value, line).
pub(crate) fn check_tag_count(
    file: &str,
    have: &BTreeMap<String, String>,
    adding: &[(String, String, u32)],
) -> Result<(), LoadError> {
    let mut count = have.len();
    for (name, value, line) in adding {
        if !have.contains_key(name) {
            count += 1;
        }
        if count > tags::MAX_TAGS {
            return Err(LoadError::new(
                LoadErrorKind::InvalidValue,
                file,
                format!("too many tags: with the registry's, `tags.{name}` is tag {count}"),
            )
            .at(*line)
            .with_key(&format!("tags.{name}"))
            .with_value(value)
            .with_expected(format!("at most {} tags in a registry", tags::MAX_TAGS)));
        }
    }
    Ok(())
}

/// The text of a file: a leading byte-order mark dropped; UTF-8, except that `.properties`
/// bytes that are not valid UTF-8 are ISO-8859-1, as `java.util.Properties` reads a stream.
///
/// Bytes valid in both (any ISO-8859-1 text whose bytes above 0x7F happen to form UTF-8
/// sequences, as `Ã©` does for `é`) are read as UTF-8, as Spring Boot reads
/// `application.properties`: a Latin-1 file almost never is valid UTF-8, a UTF-8 file always is.
fn decode<'b>(format: Format, file: &str, bytes: &'b [u8]) -> Result<Cow<'b, str>, LoadError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(Cow::Borrowed(text)),
        Err(_) if format == Format::Properties => {
            Ok(Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()))
        }
        Err(e) => {
            let line = line_of(bytes, e.valid_up_to());
            Err(
                LoadError::new(LoadErrorKind::NotUtf8, file, "the file is not UTF-8 text")
                    .at(line)
                    .with_expected("UTF-8 text"),
            )
        }
    }
}

/// The 1-based line of byte offset `at`.
fn line_of(bytes: &[u8], at: usize) -> u32 {
    let newlines = bytes[..at.min(bytes.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    u32::try_from(newlines + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::classify::ErrorKind;

    fn load_str(format: Format, text: &str) -> Result<Built<Config>, LoadError> {
        load_all(format, text.as_bytes()).map(|loaded| loaded.breakers)
    }

    /// Loads `bytes` with no configs or error kinds given in code.
    fn load_all(format: Format, bytes: &[u8]) -> Result<Loaded, LoadError> {
        let none = (HashMap::new(), HashMap::new(), HashMap::new());
        let code = CodeConfigs {
            breakers: &none.0,
            bulkheads: &none.1,
            retries: &none.2,
        };
        load(format, "test", bytes, code, &HashMap::new())
    }

    /// A second pattern, declared with the same table macro: its rows give its config, and the
    /// loader reads its `resilience4j.toy` sections from the three formats through the same
    /// path as the circuit breaker's, in the same file.
    mod toy {
        #![allow(unreachable_pub, dead_code)]

        use std::sync::Arc;
        use std::time::Duration;

        use crate::classify::ErrorKind;
        use crate::config::error::ConfigError;
        use crate::config::table::{
            fits, ErrorKinds, Field, Limit, Pattern, TableKey, Value, ValueKind,
        };

        config_table! {
            /// The toy pattern's keys.
            pub mod keys;
            /// The toy pattern's config.
            #[derive(Clone, Debug, PartialEq)]
            pub struct ToyConfig;
            /// Builds a [`ToyConfig`].
            #[derive(Clone, Debug)]
            pub struct ToyBuilder;
            /// A toy key.
            pub(crate) enum ToyKey;
            spring: { root: "toy", ignored: &["toy-only-in-java"], unsupported: &[] }
            across: check_across;
            extra {}
            rows {
                /// Calls at once (default 10), up to 100.
                MaxCalls: max_calls: u32 = 10, value {
                    name: MAX_CALLS = "max-calls",
                    rule: Limit::Calls { max: Some(100) },
                }
                /// How long a call waits for its turn (default 0).
                MaxWait: max_wait: Duration = Duration::ZERO, value {
                    name: MAX_WAIT = "max-wait-duration",
                    rule: Limit::None,
                }
                /// Errors retried (default none).
                RetryExceptions: retry_exceptions: Arc<[ErrorKind]> = Arc::from([]), kinds {
                    name: RETRY_EXCEPTIONS = "retry-exceptions",
                    rule: Limit::None,
                }
            }
        }

        impl ToyConfig {
            /// A wait only with more than one call at once.
            fn check_across(&mut self) -> Result<(), ConfigError> {
                if self.max_calls == 1 && !self.max_wait.is_zero() {
                    return Err(ConfigError::new(
                        keys::MAX_WAIT,
                        format!("{:?}", self.max_wait),
                        "no wait with max-calls = 1",
                    ));
                }
                Ok(())
            }
        }
    }

    /// Reads `text` into a toy document and a breaker document at once, and builds both.
    fn load_two(
        format: Format,
        text: &str,
    ) -> Result<(Built<toy::ToyConfig>, Built<Config>), LoadError> {
        let kinds: ErrorKinds = [(
            "Boom".to_owned(),
            ErrorKind::of_type::<std::io::Error>("Boom"),
        )]
        .into_iter()
        .collect();
        let mut breakers = Document::<Config>::new("two");
        let mut toys = Document::<toy::ToyConfig>::new("two");
        read(format, "two", text, vec![&mut breakers, &mut toys])?;
        let toys = build::build_all(&toys, &HashMap::new(), &kinds)?;
        let breakers = build::build_all(&breakers, &HashMap::new(), &kinds)?;
        Ok((toys, breakers))
    }

    #[test]
    fn a_second_pattern_loads_from_every_format_through_the_same_path() {
        let texts = [
            (
                Format::Properties,
                "resilience4j.toy.configs.default.maxWaitDuration=2s\n\
                 resilience4j.toy.instances.a.max-calls=5\n\
                 resilience4j.toy.instances.a.retry-exceptions[0]=Boom\n\
                 resilience4j.toy.instances.a.toy-only-in-java=true\n\
                 resilience4j.circuitbreaker.instances.a.sliding-window-size=7\n\
                 resilience4j.retry.instances.a.max-attempts=3\n",
            ),
            (
                Format::Yaml,
                "resilience4j:\n  toy:\n    configs:\n      default:\n        maxWaitDuration: 2s\n    \
                 instances:\n      a:\n        max-calls: 5\n        retry-exceptions: [Boom]\n        \
                 toy-only-in-java: true\n  circuitbreaker:\n    instances:\n      a:\n        \
                 sliding-window-size: 7\n  retry:\n    instances:\n      a:\n        max-attempts: 3\n",
            ),
            (
                Format::Toml,
                "[resilience4j.toy.configs.default]\nmaxWaitDuration = \"2s\"\n\
                 [resilience4j.toy.instances.a]\nmax-calls = 5\nretry-exceptions = [\"Boom\"]\n\
                 toy-only-in-java = true\n\
                 [resilience4j.circuitbreaker.instances.a]\nsliding-window-size = 7\n\
                 [resilience4j.retry.instances.a]\nmax-attempts = 3\n",
            ),
        ];
        for (format, text) in texts {
            let (toys, breakers) = load_two(format, text).unwrap();
            let (name, a) = &toys.instances[0];
            assert_eq!(name, "a", "{format:?}");
            assert_eq!(a.max_calls(), 5, "{format:?}");
            assert_eq!(
                a.max_wait(),
                Duration::from_secs(2),
                "{format:?}: from configs.default"
            );
            assert_eq!(a.retry_exceptions()[0].name(), "Boom", "{format:?}");
            assert_eq!(toys.configs[0].1.max_calls(), 10, "{format:?}: the default");
            assert_eq!(
                breakers.instances[0].1.sliding_window_size(),
                7,
                "{format:?}"
            );
        }
    }

    #[test]
    fn a_second_pattern_is_checked_by_its_own_rows() {
        let bad = [
            (
                Format::Properties,
                "resilience4j.toy.instances.a.max-calls=101\n",
                1,
            ),
            (
                Format::Yaml,
                "resilience4j.toy:\n  instances:\n    a:\n      max-calls: 101\n",
                4,
            ),
            (
                Format::Toml,
                "[resilience4j.toy.instances.a]\nmax-calls = 101\n",
                2,
            ),
        ];
        for (format, text, line) in bad {
            let err = load_two(format, text).unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
            assert_eq!(err.line(), Some(line), "{err}");
            assert_eq!(err.key(), Some("max-calls"), "{err}");
            assert_eq!(
                err.expected(),
                Some("a whole number of calls from 1 to 100"),
                "{err}"
            );
        }
        let err = load_two(
            Format::Properties,
            "resilience4j.toy.instances.a.sliding-window-size=1\n",
        )
        .unwrap_err();
        assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
        assert_eq!(
            err.expected(),
            Some("one of max-calls, max-wait-duration, retry-exceptions, base-config")
        );
        // The checks across keys run as the table's `across` names them.
        let err = load_two(
            Format::Toml,
            "[resilience4j.toy.instances.a]\nmax-calls = 1\nmax-wait-duration = \"1s\"\n",
        )
        .unwrap_err();
        assert_eq!(
            (err.key(), err.line()),
            (Some("max-wait-duration"), Some(3)),
            "{err}"
        );
        assert_eq!(
            toy::keys::ALL,
            [
                "max-calls",
                "max-wait-duration",
                "retry-exceptions",
                "base-config"
            ]
        );
    }

    #[test]
    fn a_long_base_chain_resolves_without_recursion() {
        let mut text = String::from("[configs.c0]\nsliding-window-size = 7\n");
        for i in 1..5_000 {
            text.push_str(&format!("[configs.c{i}]\nbase-config = \"c{}\"\n", i - 1));
        }
        let loaded = load_str(Format::Toml, &text).unwrap();
        assert_eq!(loaded.configs.len(), 5_000);
        assert!(loaded
            .configs
            .iter()
            .all(|(_, c)| c.sliding_window_size() == 7));
    }

    /// Every key with a limit, set just outside it in a file, is rejected under its own name
    /// with its limit's words: the loader routes each key to its own setter.
    #[test]
    fn every_limited_key_is_checked_under_its_own_name() {
        use crate::config::circuit_breaker::Key;
        use crate::config::table::{Limit, TableKey};
        use crate::config::SlidingWindowType;

        let mut checked = 0;
        for key in Key::ALL {
            let limit = key.limit();
            let value = match limit {
                Limit::None | Limit::OpenOrClosed => continue,
                Limit::Calls { max: Some(max) } | Limit::Events { max } => {
                    (u64::from(max) + 1).to_string()
                }
                Limit::Calls { max: None } | Limit::Percent | Limit::Positive => "0".to_owned(),
                Limit::Fraction => "1.5".to_owned(),
                Limit::WindowSize { calls, .. } => (u64::from(calls) + 1).to_string(),
                Limit::NonZero { .. } => "\"0s\"".to_owned(),
                Limit::AtLeast(min) => format!("\"{}ns\"", min.as_nanos() - 1),
            };
            let text = format!("[instances.x]\n{} = {value}\n", key.name());
            let err = load_str(Format::Toml, &text).unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
            assert_eq!(err.key(), Some(key.name()), "{err}");
            let expected = limit.expected(SlidingWindowType::CountBased);
            assert_eq!(err.expected(), Some(&*expected), "{err}");
            checked += 1;
        }
        assert_eq!(checked, 12);
    }

    #[test]
    fn time_limiter_timeouts_are_noted_not_read() {
        let properties = "a=1\nresilience4j.timelimiter.instances.x.timeout-duration=1s\n";
        let mut doc = Document::<Config>::new("t.properties");
        let notes = read(
            Format::Properties,
            "t.properties",
            properties,
            vec![&mut doc],
        )
        .unwrap();
        assert_eq!(notes.time_limits.len(), 1);
        assert_eq!(notes.time_limits[0].0, 2);
        assert!(doc.sections.is_empty());

        let toml = "[resilience4j.timelimiter.instances.x]\ntimeout-duration = \"1s\"\n";
        let mut doc = Document::<Config>::new("t.toml");
        let notes = read(Format::Toml, "t.toml", toml, vec![&mut doc]).unwrap();
        assert_eq!(
            notes.time_limits,
            [(
                2,
                "resilience4j.timelimiter.instances.x.timeout-duration".to_owned()
            )]
        );
        assert!(doc.sections.is_empty());
    }

    #[test]
    fn not_utf8_names_the_line() {
        for format in [Format::Toml, Format::Yaml] {
            let err = load_all(format, b"a = 1\nb = \xff\n").unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::NotUtf8);
            assert_eq!(err.line(), Some(2));
        }
    }

    #[test]
    fn properties_are_utf8_else_latin1_and_lose_their_bom() {
        let decoded = |bytes: &[u8]| decode(Format::Properties, "p", bytes).unwrap().into_owned();
        assert_eq!(
            decoded(b"a=caf\xC3\xA9"),
            "a=caf\u{e9}",
            "valid UTF-8 is UTF-8"
        );
        assert_eq!(decoded(b"a=caf\xE9"), "a=caf\u{e9}", "else ISO-8859-1");
        assert_eq!(decoded(b"\xEF\xBB\xBFa=1"), "a=1");
        assert_eq!(
            decode(Format::Toml, "t", b"\xEF\xBB\xBFa=1").unwrap(),
            "a=1"
        );
    }

    #[test]
    fn formats_by_extension() {
        for (name, format) in [
            ("a.toml", Some(Format::Toml)),
            ("a.properties", Some(Format::Properties)),
            ("application.yml", Some(Format::Yaml)),
            ("A.YAML", Some(Format::Yaml)),
            ("a.json", None),
            ("yml", None),
        ] {
            assert_eq!(Format::from_path(Path::new(name)), format, "{name}");
        }
    }
}
