//! The hint's options: the builder, their defaults, and the validated [`Settings`] the
//! background task runs with.

use std::fmt;
use std::time::Duration;

use super::error::{redact, HintError};
use super::url::validate_url;
use super::value::{value_for, MAX_ORIGIN};

/// The key prefix used unless [`RedisHintBuilder::prefix`] sets another.
pub const DEFAULT_PREFIX: &str = "cb:hint:";
/// The hint TTL used unless [`RedisHintBuilder::ttl`] sets another: 30 s, as the hint's rules
/// in docs/REDIS_HINT.md state.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// How often hints are read unless [`RedisHintBuilder::check_interval`] sets another.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// The bound on every Redis command (and on connecting) unless
/// [`RedisHintBuilder::command_timeout`] sets another.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

/// Configures and starts a Redis hint; see [`RedisHint::builder`](crate::hint::RedisHint::builder).
pub struct RedisHintBuilder {
    url: String,
    prefix: String,
    ttl: Duration,
    check_interval: Duration,
    command_timeout: Duration,
    origin: Option<String>,
}

impl fmt::Debug for RedisHintBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisHintBuilder")
            .field("url", &redact(&self.url))
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("check_interval", &self.check_interval)
            .field("command_timeout", &self.command_timeout)
            .field("origin", &self.origin)
            .finish()
    }
}

impl RedisHintBuilder {
    /// A builder for `url` with every option at its default.
    pub(super) fn new(url: String) -> Self {
        RedisHintBuilder {
            url,
            prefix: DEFAULT_PREFIX.to_owned(),
            ttl: DEFAULT_TTL,
            check_interval: DEFAULT_CHECK_INTERVAL,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            origin: None,
        }
    }

    /// The prefix of every hint key (default `cb:hint:`); a breaker's key is the prefix
    /// followed by its [encoded](crate::hint::encode_key) name. Must not be empty.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long a published hint lives in Redis (default 30 s; at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How often the hints of fresh local breakers are read (default 1 s; at least 1 ms).
    /// A fresh replica fast-opens at most this long after another replica's hint lands.
    pub fn check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// The bound on connecting and on every Redis command (default 500 ms; at least 1 ms).
    /// Past it the connection is dropped and made again at the next check.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Who publishes, written into the hint value and logged by the replicas it opens
    /// (default `pid:<process id>`): a pod name, a host name. At most 251 bytes, no control
    /// characters.
    pub fn origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// Checks every option; the settings the task runs with, or the first option at fault.
    pub(super) fn validate(self) -> Result<Settings, HintError> {
        let url = validate_url(&self.url)?;
        if self.prefix.is_empty() {
            return Err(HintError::invalid("prefix", "must not be empty"));
        }
        for (option, value) in [
            ("ttl", self.ttl),
            ("check_interval", self.check_interval),
            ("command_timeout", self.command_timeout),
        ] {
            if value < Duration::from_millis(1) {
                return Err(HintError::invalid(
                    option,
                    format!("{value:?} is below the 1 ms minimum"),
                ));
            }
        }
        let origin = match self.origin {
            Some(origin) => {
                if origin.len() > MAX_ORIGIN {
                    return Err(HintError::invalid(
                        "origin",
                        format!("{} bytes; at most {MAX_ORIGIN}", origin.len()),
                    ));
                }
                if origin.chars().any(char::is_control) {
                    return Err(HintError::invalid(
                        "origin",
                        "must not contain control characters",
                    ));
                }
                origin
            }
            None => format!("pid:{}", std::process::id()),
        };
        Ok(Settings {
            url,
            prefix: self.prefix,
            ttl: self.ttl,
            check_interval: self.check_interval,
            command_timeout: self.command_timeout,
            value: value_for(&origin),
        })
    }
}

/// Validated options, as the background task uses them.
#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) url: String,
    pub(super) prefix: String,
    pub(super) ttl: Duration,
    pub(super) check_interval: Duration,
    pub(super) command_timeout: Duration,
    /// The value every hint of this process carries (`open <origin>`).
    pub(super) value: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hint::value::parse_value;

    #[test]
    fn options_are_validated() {
        let bad = |b: RedisHintBuilder| match b.validate() {
            Err(HintError::InvalidOption { option, .. }) => option,
            other => panic!("expected an invalid option, got {other:?}"),
        };
        let b = || RedisHintBuilder::new("redis://127.0.0.1".to_owned());
        assert_eq!(bad(b().prefix("")), "prefix");
        assert_eq!(bad(b().ttl(Duration::ZERO)), "ttl");
        assert_eq!(
            bad(b().check_interval(Duration::from_micros(10))),
            "check_interval"
        );
        assert_eq!(bad(b().command_timeout(Duration::ZERO)), "command_timeout");
        assert_eq!(bad(b().origin("a\nb")), "origin");
        assert_eq!(bad(b().origin("x".repeat(MAX_ORIGIN + 1))), "origin");
        let s = b().origin("pod-a").validate().unwrap();
        assert_eq!(s.value, "open pod-a");
        assert!(parse_value(s.value.as_bytes()).is_ok());
    }
}
