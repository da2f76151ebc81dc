//! Configuration files: TOML, Spring's `.properties` and Spring's YAML (`application.yml`),
//! loaded into a [`RegistryBuilder`].
//!
//! The three formats describe the same thing as Spring's `resilience4j.circuitbreaker.*`:
//! `configs.<name>` (shared configs, `default` among them), `instances.<name>` (one breaker
//! each) and `tags.<name>` (the registry's metric tags), with the keys of
//! [`crate::config::keys`] in any of Spring's relaxed spellings.
//!
//! Loading is all or nothing: the file is parsed, every value checked, every `base-config`
//! followed and every config built before anything reaches the builder. The first problem is
//! returned as a [`LoadError`] naming the file, the line, the key, the value and what was expected.
//!
//! The steps, one file each: [`decode`] turns the bytes into text; a parser per format
//! ([`toml`], [`properties`], [`yaml`]; the last two through [`spring`], which reads Spring's
//! flat names) reads the text into a [`document::Document`], looking names up in [`spelling`]
//! and checking values in [`values`]; [`resolve`] follows the `base-config` chains as
//! Resilience4j's Spring Boot support does; [`build`] turns each section into a [`Config`].
//! None of them uses this module.
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

use crate::classify::ErrorKind;
use crate::config::{tags, Config};
use crate::log_safe::LogSafe;

pub(crate) use build::Loaded;
use document::Document;
pub use error::{LoadError, LoadErrorKind};

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
/// builder already has, and builds every config.
pub(crate) fn load(
    format: Format,
    file: &str,
    bytes: &[u8],
    code_configs: &HashMap<String, Config>,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Loaded, LoadError> {
    let text = decode(format, file, bytes)?;
    let mut doc = Document::new(file);
    match format {
        Format::Toml => toml::parse(&text, &mut doc)?,
        Format::Properties => properties::parse(&text, &mut doc)?,
        Format::Yaml => yaml::parse(&text, &mut doc)?,
    }
    let loaded = build::build_all(&doc, code_configs, kinds)?;
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
    for (line, key) in &doc.ignored {
        tracing::info!(
            file = %LogSafe(file),
            line = *line,
            key = %LogSafe(key),
            "breaker: ignored a Spring Boot key that has no meaning here"
        );
    }
    Ok(loaded)
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
    use super::*;

    fn load_str(format: Format, text: &str) -> Result<Loaded, LoadError> {
        load(
            format,
            "test",
            text.as_bytes(),
            &HashMap::new(),
            &HashMap::new(),
        )
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
        use crate::config::keys::{Key, Limit};
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
        let mut doc = Document::new("t.properties");
        properties::parse(properties, &mut doc).unwrap();
        assert_eq!(doc.time_limits.len(), 1);
        assert_eq!(doc.time_limits[0].0, 2);
        assert!(doc.sections.is_empty());

        let toml = "[resilience4j.timelimiter.instances.x]\ntimeout-duration = \"1s\"\n";
        let mut doc = Document::new("t.toml");
        toml::parse(toml, &mut doc).unwrap();
        assert_eq!(
            doc.time_limits,
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
            let err = load(
                format,
                "x",
                b"a = 1\nb = \xff\n",
                &HashMap::new(),
                &HashMap::new(),
            )
            .unwrap_err();
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
