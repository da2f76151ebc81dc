//! Why a configuration file was rejected.

use std::fmt;

use crate::log_safe::LogSafe;

/// What went wrong loading a configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read.
    Io,
    /// The file name ends in none of `.toml`, `.properties`, `.yml` and `.yaml`.
    UnknownFormat,
    /// A TOML or YAML file that is not UTF-8 text (`.properties` bytes that are not UTF-8 are
    /// read as ISO-8859-1).
    NotUtf8,
    /// Not valid TOML or YAML, or a `.properties` line that cannot be read (a bad `\u` escape,
    /// a malformed key).
    Syntax,
    /// A key (or a section) that does not exist.
    UnknownKey,
    /// A Spring key whose behaviour breaker does not have; the message says what to use.
    UnsupportedKey,
    /// The same key twice in one section (in any spelling), the same tag twice, or a key twice
    /// in one TOML table or YAML mapping.
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
    pub(super) fn new(kind: LoadErrorKind, file: &str, problem: impl Into<String>) -> LoadError {
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

    /// On line `line`.
    pub(super) fn at(mut self, line: u32) -> LoadError {
        self.inner.line = Some(line);
        self
    }

    /// In section `section`.
    pub(super) fn in_section(mut self, section: &str) -> LoadError {
        self.inner.section = Some(section.to_owned());
        self
    }

    /// About the key `key`, as the file spells it.
    pub(super) fn with_key(mut self, key: &str) -> LoadError {
        self.inner.key = Some(key.to_owned());
        self
    }

    /// About the value `value`, as the file writes it.
    pub(super) fn with_value(mut self, value: &str) -> LoadError {
        self.inner.value = Some(value.to_owned());
        self
    }

    /// Saying what was expected instead.
    pub(super) fn with_expected(mut self, expected: impl Into<String>) -> LoadError {
        self.inner.expected = Some(expected.into());
        self
    }

    pub(crate) fn unknown_format(file: &str) -> LoadError {
        LoadError::new(
            LoadErrorKind::UnknownFormat,
            file,
            "cannot tell the format from the file name",
        )
        .with_expected("a file name ending in .toml, .properties, .yml or .yaml")
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
    pub fn section(&self) -> Option<&str> {
        self.inner.section.as_deref()
    }

    /// The key, as the file spells it.
    pub fn key(&self) -> Option<&str> {
        self.inner.key.as_deref()
    }

    /// The rejected value, as the file wrote it.
    pub fn value(&self) -> Option<&str> {
        self.inner.value.as_deref()
    }

    /// What was expected instead, in words.
    pub fn expected(&self) -> Option<&str> {
        self.inner.expected.as_deref()
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The file's name and the problem (which quotes the file's keys and values) are
        // written escaped: a file's bytes never reach a log line as control characters.
        let d = &self.inner;
        write!(f, "{}", LogSafe(&d.file))?;
        if let Some(line) = d.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", LogSafe(&d.problem))?;
        if let Some(expected) = &d.expected {
            write!(f, ": expected {}", LogSafe(expected))?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}
