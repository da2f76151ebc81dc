//! Why a hint could not start or check, and the URL redaction its errors and logs use.

use std::fmt;

/// Why a hint could not start, or why [`HintHandle::check_now`](crate::hint::HintHandle::check_now)
/// failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HintError {
    /// The Redis URL is wrong; `url` is shown with its password replaced by `***`.
    InvalidUrl {
        /// The URL, password redacted.
        url: String,
        /// The part that is wrong: `scheme`, `host`, `port`, `database`, `password`, `url`.
        part: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An option is out of range.
    InvalidOption {
        /// The builder method.
        option: &'static str,
        /// What is wrong with the value.
        reason: String,
    },
    /// [`RedisHintBuilder::start`](crate::hint::RedisHintBuilder::start) was called outside a tokio
    /// runtime.
    NoRuntime,
    /// Redis could not be reached, failed a command, or did not answer in time.
    Redis(String),
    /// The hint's task has ended (its handle was shut down, or the registry was dropped).
    Stopped,
}

impl HintError {
    pub(super) fn invalid(option: &'static str, reason: impl Into<String>) -> HintError {
        HintError::InvalidOption {
            option,
            reason: reason.into(),
        }
    }

    pub(super) fn url(url: &str, part: &'static str, reason: impl Into<String>) -> HintError {
        HintError::InvalidUrl {
            url: redact(url),
            part,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for HintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HintError::InvalidUrl { url, part, reason } => {
                write!(f, "invalid Redis URL `{url}`: the {part} {reason}")
            }
            HintError::InvalidOption { option, reason } => {
                write!(f, "invalid Redis hint option `{option}`: {reason}")
            }
            HintError::NoRuntime => f.write_str(
                "the Redis hint must be started inside a tokio runtime (it shares the app's runtime)",
            ),
            HintError::Redis(e) => write!(f, "Redis hint: {e}"),
            HintError::Stopped => f.write_str("the Redis hint has stopped"),
        }
    }
}

impl std::error::Error for HintError {}

/// `url` with the password (if any) replaced by `***`, for errors and logs.
pub(super) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                // `redis://secret@host`: a lone userinfo may be the password.
                format!("{scheme}://***@{host}{tail}")
            }
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_passwords() {
        assert_eq!(redact("redis://u:pw@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact("redis://pw@h"), "redis://***@h");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }
}
