//! A configuration value that was rejected.

use std::borrow::Cow;
use std::fmt;

use crate::log_safe::LogSafe;

/// A configuration value that was rejected: which key, the value given, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    key: &'static str,
    value: String,
    expected: Cow<'static, str>,
}

impl ConfigError {
    pub(crate) fn new(
        key: &'static str,
        value: impl fmt::Display,
        expected: impl Into<Cow<'static, str>>,
    ) -> Self {
        ConfigError {
            key,
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// The key, spelled as in Spring properties (for example `sliding-window-size`).
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The rejected value as text.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What the key accepts.
    pub fn expected(&self) -> &str {
        &self.expected
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value `{}` for `{}`: expected {}",
            LogSafe(&self.value),
            self.key,
            self.expected
        )
    }
}

impl std::error::Error for ConfigError {}
