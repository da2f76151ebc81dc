//! Configuration files: TOML and Spring-style `.properties`, loaded into a [`RegistryBuilder`].
//!
//! Both formats describe the same thing as Spring's `resilience4j.circuitbreaker.*`:
//! `configs.<name>` (shared configs, `default` among them) and `instances.<name>` (one breaker
//! each), with the keys of [`crate::config::keys`] in any of Spring's relaxed spellings.
//!
//! Loading is all or nothing: the file is parsed, every value checked, every `base-config`
//! followed and every config built before anything reaches the builder. The first problem is
//! returned as a [`LoadError`] naming the file, the line, the key, the value and what was expected.
//!
//! Inheritance follows Resilience4j's Spring support
//! (`CommonCircuitBreakerConfigurationProperties`): an instance starts from its `base-config`,
//! else from the shared config of its own name if there is one, else from `configs.default`; a
//! shared config starts from its `base-config`, else from Resilience4j's defaults. Keys are
//! merged one by one along the chain (a child's key replaces its base's; lists are replaced,
//! not merged).
//!
//! [`RegistryBuilder`]: crate::RegistryBuilder

mod keys;
mod properties;
mod toml;
mod values;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use crate::classify::ErrorKind;
use crate::config::{Config, ConfigBuilder, ConfigError, DEFAULT_CONFIG};

use keys::{Group, Key, Lookup};
use values::{Raw, Setting};

/// The environment variable that points the global registry at a configuration file
/// (`.toml` or `.properties`); see [`Registry::global`](crate::Registry::global).
pub const CONFIG_ENV: &str = "BREAKER_CONFIG";

/// A configuration file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// TOML: `[configs.<name>]` and `[instances.<name>]` tables (or the same under
    /// `[resilience4j.circuitbreaker]`).
    Toml,
    /// Spring `.properties` lines: `resilience4j.circuitbreaker.instances.<name>.<key>=<value>`.
    Properties,
}

impl Format {
    /// The format a file name's extension says: `.toml` or `.properties`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("toml") {
            Some(Format::Toml)
        } else if ext.eq_ignore_ascii_case("properties") {
            Some(Format::Properties)
        } else {
            None
        }
    }
}

/// What went wrong loading a configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read.
    Io,
    /// The file name ends in neither `.toml` nor `.properties`.
    UnknownFormat,
    /// The file is not UTF-8 text.
    NotUtf8,
    /// Not valid TOML, or a `.properties` line that cannot be read (a bad `\u` escape, a
    /// malformed key).
    Syntax,
    /// A key (or a section) that does not exist.
    UnknownKey,
    /// A Spring key whose behaviour breaker does not have; the message says what to use.
    UnsupportedKey,
    /// The same key twice in one section (in any spelling).
    DuplicateKey,
    /// A value the key does not accept: a bad duration, a threshold out of range, ...
    InvalidValue,
    /// A `base-config` naming a shared config that does not exist.
    UnknownBaseConfig,
    /// `base-config`s that lead back to where they started.
    BaseConfigCycle,
    /// A name in `record-exceptions` or `ignore-exceptions` that no code registered.
    UnknownErrorKind,
}

/// A configuration file was rejected, whole. Its message names the file, the line, the key,
/// the bad value and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    inner: Box<Details>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Details {
    kind: LoadErrorKind,
    file: String,
    line: Option<u32>,
    section: Option<String>,
    key: Option<String>,
    value: Option<String>,
    problem: String,
    expected: Option<String>,
}

impl LoadError {
    fn new(kind: LoadErrorKind, file: &str, problem: impl Into<String>) -> LoadError {
        LoadError {
            inner: Box::new(Details {
                kind,
                file: file.to_owned(),
                line: None,
                section: None,
                key: None,
                value: None,
                problem: problem.into(),
                expected: None,
            }),
        }
    }

    fn at(mut self, line: u32) -> LoadError {
        self.inner.line = Some(line);
        self
    }

    fn section(mut self, section: &str) -> LoadError {
        self.inner.section = Some(section.to_owned());
        self
    }

    fn key(mut self, key: &str) -> LoadError {
        self.inner.key = Some(key.to_owned());
        self
    }

    fn value(mut self, value: &str) -> LoadError {
        self.inner.value = Some(value.to_owned());
        self
    }

    fn expected(mut self, expected: impl Into<String>) -> LoadError {
        self.inner.expected = Some(expected.into());
        self
    }

    pub(crate) fn unknown_format(file: &str) -> LoadError {
        LoadError::new(
            LoadErrorKind::UnknownFormat,
            file,
            "cannot tell the format from the file name",
        )
        .expected("a file name ending in .toml or .properties")
    }

    pub(crate) fn io(file: &str, err: &std::io::Error) -> LoadError {
        LoadError::new(
            LoadErrorKind::Io,
            file,
            format!("cannot read the file: {err}"),
        )
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> LoadErrorKind {
        self.inner.kind
    }

    /// The file (its path, or the name given to [`RegistryBuilder::load_str`]).
    ///
    /// [`RegistryBuilder::load_str`]: crate::RegistryBuilder::load_str
    pub fn file(&self) -> &str {
        &self.inner.file
    }

    /// The line (1-based), when the problem is on one.
    pub fn line(&self) -> Option<u32> {
        self.inner.line
    }

    /// The section, as `instances.<name>` or `configs.<name>`.
    pub fn section_name(&self) -> Option<&str> {
        self.inner.section.as_deref()
    }

    /// The key, as the file spells it.
    pub fn key_name(&self) -> Option<&str> {
        self.inner.key.as_deref()
    }

    /// The rejected value, as the file wrote it.
    pub fn bad_value(&self) -> Option<&str> {
        self.inner.value.as_deref()
    }

    /// What was expected instead, in words.
    pub fn expected_value(&self) -> Option<&str> {
        self.inner.expected.as_deref()
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.inner;
        f.write_str(&d.file)?;
        if let Some(line) = d.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", d.problem)?;
        if let Some(expected) = &d.expected {
            write!(f, ": expected {expected}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// One `key = value` of a section, checked.
#[derive(Clone, Debug)]
struct Entry {
    key: Key,
    raw_key: String,
    raw_value: String,
    setting: Setting,
    line: u32,
}

/// `configs.<name>` or `instances.<name>` with its entries.
#[derive(Debug)]
struct Section {
    group: Group,
    name: String,
    line: u32,
    entries: Vec<Entry>,
}

impl Section {
    fn title(&self) -> String {
        section_title(self.group, &self.name)
    }
}

fn section_title(group: Group, name: &str) -> String {
    format!("{}.{}", group.name(), name)
}

/// What the parsers build: the sections of one file, in order of first appearance.
#[derive(Debug)]
struct Document<'f> {
    file: &'f str,
    sections: Vec<Section>,
    index: HashMap<(Group, String), usize>,
    /// Spring-only keys that were read and ignored: (line, key as written).
    ignored: Vec<(u32, String)>,
    /// `resilience4j.timelimiter.*.timeout-duration` lines, not read: (line, key as written).
    time_limits: Vec<(u32, String)>,
}

impl<'f> Document<'f> {
    fn new(file: &'f str) -> Document<'f> {
        Document {
            file,
            sections: Vec::new(),
            index: HashMap::new(),
            ignored: Vec::new(),
            time_limits: Vec::new(),
        }
    }

    fn error(&self, kind: LoadErrorKind, problem: impl Into<String>) -> LoadError {
        LoadError::new(kind, self.file, problem)
    }

    /// The section `group.name`, created at `line` if it is new.
    fn section(&mut self, group: Group, name: &str, line: u32) -> Result<usize, LoadError> {
        if name.is_empty() {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("an empty name in {}", group.name()),
                )
                .at(line)
                .expected("a breaker or shared-config name that is not empty"));
        }
        if let Some(&i) = self.index.get(&(group, name.to_owned())) {
            return Ok(i);
        }
        self.sections.push(Section {
            group,
            name: name.to_owned(),
            line,
            entries: Vec::new(),
        });
        let i = self.sections.len() - 1;
        self.index.insert((group, name.to_owned()), i);
        Ok(i)
    }

    /// Sets `raw_key = raw` in section `s`, checking the key and the value.
    fn set(&mut self, s: usize, raw_key: &str, raw: &Raw, line: u32) -> Result<(), LoadError> {
        let title = self.sections[s].title();
        let key = match keys::lookup(raw_key) {
            Lookup::Known(key) => key,
            Lookup::Ignored(_) => {
                self.ignored.push((line, raw_key.to_owned()));
                return Ok(());
            }
            Lookup::Unsupported(name, why) => {
                return Err(self
                    .error(
                        LoadErrorKind::UnsupportedKey,
                        if raw_key == name {
                            format!("`{raw_key}` in {title} is not supported: {why}")
                        } else {
                            format!("`{raw_key}` ({name}) in {title} is not supported: {why}")
                        },
                    )
                    .at(line)
                    .section(&title)
                    .key(raw_key)
                    .value(&raw.display()));
            }
            Lookup::Unknown(suggestion) => {
                let shown = raw.display();
                let problem = match suggestion {
                    Some(near) => format!(
                        "unknown key `{raw_key}` (= `{shown}`) in {title} \
                         (did you mean `{near}`?)"
                    ),
                    None => format!("unknown key `{raw_key}` (= `{shown}`) in {title}"),
                };
                let names: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
                return Err(self
                    .error(LoadErrorKind::UnknownKey, problem)
                    .at(line)
                    .section(&title)
                    .key(raw_key)
                    .value(&raw.display())
                    .expected(format!("one of {}", names.join(", "))));
            }
        };
        if let Some(first) = self.sections[s].entries.iter().find(|e| e.key == key) {
            return Err(self
                .error(
                    LoadErrorKind::DuplicateKey,
                    format!(
                        "`{raw_key}` is set twice in {title} (first as `{}` on line {})",
                        first.raw_key, first.line
                    ),
                )
                .at(line)
                .section(&title)
                .key(raw_key)
                .value(&raw.display())
                .expected("each key at most once per section"));
        }
        let raw_value = raw.display();
        let Some(setting) = values::interpret(key.value_kind(), raw) else {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("invalid value `{raw_value}` for `{raw_key}` in {title}"),
                )
                .at(line)
                .section(&title)
                .key(raw_key)
                .value(&raw_value)
                .expected(values::expected(key.value_kind())));
        };
        self.sections[s].entries.push(Entry {
            key,
            raw_key: raw_key.to_owned(),
            raw_value,
            setting,
            line,
        });
        Ok(())
    }
}

/// The configs a file defines, built and ready for the registry.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) configs: Vec<(String, Config)>,
    pub(crate) instances: Vec<(String, Config)>,
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
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = line_of(bytes, e.valid_up_to());
        LoadError::new(LoadErrorKind::NotUtf8, file, "the file is not UTF-8 text")
            .at(line)
            .expected("UTF-8 text")
    })?;
    let mut doc = Document::new(file);
    match format {
        Format::Toml => toml::parse(text, &mut doc)?,
        Format::Properties => properties::parse(text, &mut doc)?,
    }
    let loaded = resolve(&doc, code_configs, kinds)?;
    for (line, key) in &doc.time_limits {
        tracing::warn!(
            file = %file,
            line = *line,
            key = %key,
            "breaker: a time limiter's timeout is not read; breaker has no separate time \
             limiter: set `timeout-duration` in the breaker's own section to cancel slow calls"
        );
    }
    for (line, key) in &doc.ignored {
        tracing::info!(
            file = %file,
            line = *line,
            key = %key,
            "breaker: ignored a Spring Boot key that has no meaning here"
        );
    }
    Ok(loaded)
}

/// The 1-based line of byte offset `at`.
fn line_of(bytes: &[u8], at: usize) -> u32 {
    let newlines = bytes[..at.min(bytes.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    u32::try_from(newlines + 1).unwrap_or(u32::MAX)
}

/// Where a section's keys start from.
#[derive(Clone, Copy)]
enum Root<'a> {
    /// Resilience4j's defaults.
    Defaults,
    /// A config given in code.
    Code(&'a Config),
}

/// A section with its base chain merged: the root it starts from and every key along the
/// chain (the nearest definition wins).
#[derive(Clone)]
struct Merged<'a> {
    root: Root<'a>,
    entries: BTreeMap<Key, (usize, &'a Entry)>,
}

struct Resolver<'a> {
    doc: &'a Document<'a>,
    code_configs: &'a HashMap<String, Config>,
    configs: HashMap<&'a str, usize>,
    memo: HashMap<usize, Merged<'a>>,
}

impl<'a> Resolver<'a> {
    /// The section the keys of section `s` inherit from, if any, else its root.
    fn base_of(&self, s: usize) -> Result<Result<usize, Root<'a>>, LoadError> {
        let section = &self.doc.sections[s];
        let base = section.entries.iter().find_map(|e| match &e.setting {
            Setting::Name(name) if e.key == Key::BaseConfig => Some((e, name)),
            _ => None,
        });
        if let Some((entry, name)) = base {
            if let Some(&i) = self.configs.get(name.as_str()) {
                return Ok(Ok(i));
            }
            if let Some(config) = self.code_configs.get(name) {
                return Ok(Err(Root::Code(config)));
            }
            let mut names: Vec<&str> = self
                .configs
                .keys()
                .copied()
                .chain(self.code_configs.keys().map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            let expected = if names.is_empty() {
                "the name of a shared config, but none is defined (configs.<name>)".to_owned()
            } else {
                format!("one of the shared configs: {}", names.join(", "))
            };
            return Err(self
                .doc
                .error(
                    LoadErrorKind::UnknownBaseConfig,
                    format!(
                        "`{}` of {} names `{name}`, which is not a shared config",
                        entry.raw_key,
                        section.title()
                    ),
                )
                .at(entry.line)
                .section(&section.title())
                .key(&entry.raw_key)
                .value(name)
                .expected(expected));
        }
        let own_name = section.name.as_str();
        match section.group {
            Group::Instances => {
                // Resilience4j: a shared config of the instance's own name, else `default`.
                for name in [own_name, DEFAULT_CONFIG] {
                    if let Some(&i) = self.configs.get(name) {
                        return Ok(Ok(i));
                    }
                    if let Some(config) = self.code_configs.get(name) {
                        return Ok(Err(Root::Code(config)));
                    }
                }
                Ok(Err(Root::Defaults))
            }
            Group::Configs => Ok(Err(Root::Defaults)),
        }
    }

    /// Section `s` with its chain merged. Iterative, so a long chain cannot overflow the stack;
    /// memoised, so every section is walked once.
    fn merged(&mut self, s: usize) -> Result<Merged<'a>, LoadError> {
        let mut chain = vec![s];
        let root = loop {
            let last = chain[chain.len() - 1];
            if let Some(m) = self.memo.get(&last) {
                chain.pop();
                break m.clone();
            }
            match self.base_of(last)? {
                Ok(base) => {
                    if let Some(at) = chain.iter().position(|&c| c == base) {
                        return Err(self.cycle(&chain[at..], base));
                    }
                    chain.push(base);
                }
                Err(root) => {
                    break Merged {
                        root,
                        entries: BTreeMap::new(),
                    }
                }
            }
        };
        let mut merged = root;
        for &c in chain.iter().rev() {
            for entry in &self.doc.sections[c].entries {
                if entry.key != Key::BaseConfig {
                    merged.entries.insert(entry.key, (c, entry));
                }
            }
            self.memo.insert(c, merged.clone());
        }
        Ok(merged)
    }

    fn cycle(&self, cycle: &[usize], back_to: usize) -> LoadError {
        let titles: Vec<String> = cycle
            .iter()
            .chain(std::iter::once(&back_to))
            .map(|&c| self.doc.sections[c].title())
            .collect();
        // Report it at the base-config that closes the cycle.
        let closing = &self.doc.sections[cycle[cycle.len() - 1]];
        let entry = closing.entries.iter().find(|e| e.key == Key::BaseConfig);
        let mut err = self
            .doc
            .error(
                LoadErrorKind::BaseConfigCycle,
                format!(
                    "`base-config` in {} makes a cycle: {}",
                    closing.title(),
                    titles.join(" -> ")
                ),
            )
            .section(&closing.title())
            .expected("base-configs that end at a config without one");
        if let Some(entry) = entry {
            err = err
                .at(entry.line)
                .key(&entry.raw_key)
                .value(&entry.raw_value);
        }
        err
    }
}

fn resolve(
    doc: &Document<'_>,
    code_configs: &HashMap<String, Config>,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Loaded, LoadError> {
    let configs = doc
        .sections
        .iter()
        .enumerate()
        .filter(|(_, s)| s.group == Group::Configs)
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut resolver = Resolver {
        doc,
        code_configs,
        configs,
        memo: HashMap::new(),
    };
    let mut loaded = Loaded::default();
    for (s, section) in doc.sections.iter().enumerate() {
        let merged = resolver.merged(s)?;
        let config = build(doc, section, &merged, kinds)?;
        let named = (section.name.clone(), config);
        match section.group {
            Group::Configs => loaded.configs.push(named),
            Group::Instances => loaded.instances.push(named),
        }
    }
    Ok(loaded)
}

/// Builds the config of `section` from its merged chain.
fn build(
    doc: &Document<'_>,
    section: &Section,
    merged: &Merged<'_>,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Config, LoadError> {
    let mut builder = match merged.root {
        Root::Defaults => Config::builder(),
        Root::Code(config) => config.to_builder(),
    };
    for &(owner, entry) in merged.entries.values() {
        builder = apply(doc, owner, entry, builder, kinds)?;
    }
    builder
        .build()
        .map_err(|e| config_error(doc, section, merged, &e))
}

fn apply(
    doc: &Document<'_>,
    owner: usize,
    entry: &Entry,
    b: ConfigBuilder,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<ConfigBuilder, LoadError> {
    Ok(match (&entry.setting, entry.key) {
        (Setting::WindowType(t), _) => b.sliding_window_type(*t),
        (Setting::Count(n), Key::SlidingWindowSize) => b.sliding_window_size(*n),
        (Setting::Count(n), Key::MinimumNumberOfCalls) => b.minimum_number_of_calls(*n),
        (Setting::Count(n), _) => b.permitted_number_of_calls_in_half_open_state(*n),
        (Setting::Percent(p), Key::FailureRateThreshold) => b.failure_rate_threshold(*p),
        (Setting::Percent(p), _) => b.slow_call_rate_threshold(*p),
        (Setting::Duration(d), Key::SlowCallDurationThreshold) => {
            b.slow_call_duration_threshold(*d)
        }
        (Setting::Duration(d), Key::WaitDurationInOpenState) => b.wait_duration_in_open_state(*d),
        (Setting::Duration(d), Key::MaxWaitDurationInHalfOpenState) => {
            b.max_wait_duration_in_half_open_state(*d)
        }
        (Setting::Duration(d), _) => b.timeout_duration(Some(*d)),
        (Setting::Bool(on), _) => b.automatic_transition_from_open_to_half_open_enabled(*on),
        (Setting::State(s), _) => b.transition_to_state_after_wait_duration(*s),
        (Setting::Kinds(names), key) => {
            let resolved = names
                .iter()
                .map(|name| {
                    kinds
                        .get(name)
                        .cloned()
                        .ok_or_else(|| unknown_kind(doc, owner, entry, name, kinds))
                })
                .collect::<Result<Vec<_>, _>>()?;
            if key == Key::RecordExceptions {
                b.record_exceptions(resolved)
            } else {
                b.ignore_exceptions(resolved)
            }
        }
        (Setting::Name(_), _) => b,
    })
}

fn unknown_kind(
    doc: &Document<'_>,
    owner: usize,
    entry: &Entry,
    name: &str,
    kinds: &HashMap<String, ErrorKind>,
) -> LoadError {
    let title = doc.sections[owner].title();
    let mut names: Vec<&str> = kinds.keys().map(String::as_str).collect();
    names.sort_unstable();
    let expected = if names.is_empty() {
        "an error kind registered in code, but none is: register kinds with \
         RegistryBuilder::error_kind before loading the file"
            .to_owned()
    } else {
        format!(
            "one of the error kinds registered in code: {}",
            names.join(", ")
        )
    };
    doc.error(
        LoadErrorKind::UnknownErrorKind,
        format!(
            "unknown error kind `{name}` in `{}` of {title}",
            entry.raw_key
        ),
    )
    .at(entry.line)
    .section(&title)
    .key(&entry.raw_key)
    .value(name)
    .expected(expected)
}

/// A config that did not build: blame the entry that set the rejected key (in the section,
/// or up its base chain), else the section.
fn config_error(
    doc: &Document<'_>,
    section: &Section,
    merged: &Merged<'_>,
    e: &ConfigError,
) -> LoadError {
    let culprit = merged
        .entries
        .values()
        .find(|(_, entry)| entry.key.name() == e.key());
    let (title, line, key, value) = match culprit {
        Some(&(owner, entry)) => (
            doc.sections[owner].title(),
            entry.line,
            entry.raw_key.as_str(),
            entry.raw_value.as_str(),
        ),
        None => (section.title(), section.line, e.key(), e.value()),
    };
    let mut problem = format!("invalid value `{value}` for `{key}` in {title}");
    if title != section.title() {
        problem.push_str(&format!(" (the base of {})", section.title()));
    }
    doc.error(LoadErrorKind::InvalidValue, problem)
        .at(line)
        .section(&title)
        .key(key)
        .value(value)
        .expected(e.expected())
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
        let err = load(
            Format::Properties,
            "x.properties",
            b"a=1\nb=\xff\n",
            &HashMap::new(),
            &HashMap::new(),
        )
        .unwrap_err();
        assert_eq!(err.kind(), LoadErrorKind::NotUtf8);
        assert_eq!(err.line(), Some(2));
    }
}
