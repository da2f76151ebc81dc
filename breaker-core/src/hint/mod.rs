//! The Redis advisory hint (seed 000, ADR-004), behind the `redis-hint` feature.
//!
//! Breaker state stays local to the process. The hint only lets one replica's evidence open a
//! *fresh* breaker of another replica sooner:
//!
//! - **Publish.** When a breaker goes to OPEN through its own evidence (a
//!   [`TransitionCause::Evaluation`](crate::TransitionCause::Evaluation): CLOSED or HALF_OPEN
//!   -> OPEN by its thresholds), the background task sets `{prefix}{name}` with the hint TTL,
//!   once per transition. Rejected calls never refresh it (the addendum's bug kept the hint alive
//!   that way). A manual transition (an operator's decision about this process; FORCED_OPEN is
//!   the tool for that) and an OPEN caused by a hint never publish: otherwise replicas would keep
//!   each other's hints alive for ever. A hint is never deleted; it expires, `ttl` after the
//!   evidence that wrote it (a write delayed by a Redis outage gets only the rest of the TTL, and
//!   is dropped if the breaker has left OPEN in the meantime).
//! - **Check.** Every `check_interval` the task reads the hints of the local breakers that
//!   still have **no local history**, in one pipeline, and calls
//!   [`CircuitBreaker::open_from_hint`](crate::CircuitBreaker::open_from_hint) on those with a
//!   hint. A breaker has local history from its first recorded call or its first transition
//!   not caused by a hint (evaluation, a wait elapsing, a manual transition, a reset), and keeps
//!   it for the life of the hint task. This is stricter than "no call in the current window":
//!   a breaker that recovered through its own half-open trials is CLOSED with an *empty* window,
//!   and its own stale hint must not re-open it (the addendum's scenario). A hint never closes a
//!   breaker, never moves HALF_OPEN, and never touches a breaker that has local evidence.
//! - **Unknown names.** Only the breakers that exist locally are read; a hint for a name this
//!   process does not use creates nothing. A breaker created later is read at the next check,
//!   and fast-opened then if its hint is alive.
//! - **Faults.** No call ever waits on Redis: the registry listener only does a non-blocking
//!   channel send, and all Redis traffic is on one background task, each command bounded by
//!   `command_timeout`. Redis down at start, killed, restarted, stalled, or holding a value of
//!   the wrong type or size: breakers behave exactly as without Redis, errors are logged at most
//!   once per 10 s per kind (and per key for bad values), and the hint resumes on its own.
//! - **Shutdown.** Dropping the [`HintHandle`] aborts the task and closes its connection;
//!   [`HintHandle::detach`] instead keeps the hint running for as long as the registry lives.
//!   Either way the task ends at its next wake-up (at most one `check_interval`) after the
//!   registry is dropped, and [`HintHandle::shutdown`] waits for it to end.
//!
//! ```no_run
//! # async fn demo() -> Result<(), breaker_core::hint::HintError> {
//! use std::time::Duration;
//! use breaker_core::{hint::RedisHint, Registry};
//!
//! let registry = Registry::new();
//! let hint = RedisHint::builder("redis://:secret@127.0.0.1:6379/0")
//!     .prefix("cb:hint:")
//!     .ttl(Duration::from_secs(30))
//!     .check_interval(Duration::from_secs(1))
//!     .command_timeout(Duration::from_millis(500))
//!     .start(&registry)?; // inside a tokio runtime
//! // ... serve; `hint` must stay alive (or call `hint.detach()`).
//! hint.shutdown().await;
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::registry::Registry;

mod redis;
mod task;

/// The key prefix used unless [`RedisHintBuilder::prefix`] sets another.
pub const DEFAULT_PREFIX: &str = "cb:hint:";
/// The hint TTL used unless [`RedisHintBuilder::ttl`] sets another (seed 000: 30 s).
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// How often hints are read unless [`RedisHintBuilder::check_interval`] sets another.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// The bound on every Redis command (and on connecting) unless
/// [`RedisHintBuilder::command_timeout`] sets another.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest hint value read; a longer value is ignored (and never transferred whole).
pub const MAX_HINT_VALUE: usize = 256;
/// How a hint value starts: the value is `open` or `open <origin>`.
pub const HINT_VALUE_TAG: &str = "open";

/// The longest `origin` accepted, so that a value always fits [`MAX_HINT_VALUE`].
const MAX_ORIGIN: usize = MAX_HINT_VALUE - HINT_VALUE_TAG.len() - 1;
/// Events queued for the background task before the listener starts dropping them.
const CHANNEL_CAPACITY: usize = 4096;

/// Entry point of the Redis advisory hint; see the [module documentation](self).
#[derive(Debug)]
pub struct RedisHint {
    _private: (),
}

impl RedisHint {
    /// A builder for a hint on the Redis server at `url`: `redis://` or `rediss://` (TLS,
    /// with the `redis-hint-tls` feature), with the user and password in the URL if the server
    /// wants them (`redis://user:password@host:6379/0`).
    pub fn builder(url: impl Into<String>) -> RedisHintBuilder {
        RedisHintBuilder {
            url: url.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            ttl: DEFAULT_TTL,
            check_interval: DEFAULT_CHECK_INTERVAL,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
            origin: None,
        }
    }
}

/// Configures and starts a Redis hint; see [`RedisHint::builder`].
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
    /// The prefix of every hint key (default `cb:hint:`); a breaker's key is the prefix
    /// followed by its [encoded](encode_key) name. Must not be empty.
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

    /// Subscribes to `registry` and starts the background task on the current tokio runtime.
    ///
    /// Fails only on a bad URL or option, or outside a tokio runtime. Redis itself is reached
    /// in the background: an unreachable server is logged and retried, never an error here.
    pub fn start(self, registry: &Registry) -> Result<HintHandle, HintError> {
        let settings = self.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| HintError::NoRuntime)?;
        let client = redis::open_client(&settings.url)?;
        let shared = Arc::new(task::Shared::default());
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let subscription = task::subscribe(registry, tx.clone(), Arc::clone(&shared));
        let task = runtime.spawn(task::run(task::Task::new(
            settings,
            client,
            registry.downgrade(),
            subscription,
            rx,
            Arc::clone(&shared),
        )));
        Ok(HintHandle {
            tx,
            task: Some(task),
            shared,
        })
    }

    fn validate(self) -> Result<Settings, HintError> {
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
        let value = if origin.is_empty() {
            HINT_VALUE_TAG.to_owned()
        } else {
            format!("{HINT_VALUE_TAG} {origin}")
        };
        Ok(Settings {
            url,
            prefix: self.prefix,
            ttl: self.ttl,
            check_interval: self.check_interval,
            command_timeout: self.command_timeout,
            value,
        })
    }
}

/// Validated options, as the background task uses them.
#[derive(Debug, Clone)]
struct Settings {
    url: String,
    prefix: String,
    ttl: Duration,
    check_interval: Duration,
    command_timeout: Duration,
    /// The value every hint of this process carries (`open <origin>`).
    value: String,
}

/// The running hint. Dropping it stops the hint (see [`detach`](HintHandle::detach)).
#[must_use = "dropping the HintHandle stops the hint at once; keep it, or call detach()"]
pub struct HintHandle {
    tx: mpsc::Sender<task::Msg>,
    task: Option<JoinHandle<()>>,
    shared: Arc<task::Shared>,
}

impl HintHandle {
    /// Handles every event published so far (writing the hints they call for), then reads the
    /// hints once, as the periodic check does. Useful at start-up and in tests.
    ///
    /// Returns an error if Redis could not be reached or did not answer within the command
    /// timeout, or if the hint has stopped; the breakers are unaffected either way.
    pub async fn check_now(&self) -> Result<(), HintError> {
        let (done, answer) = oneshot::channel();
        self.tx
            .send(task::Msg::Check(done))
            .await
            .map_err(|_| HintError::Stopped)?;
        answer.await.map_err(|_| HintError::Stopped)?
    }

    /// Counters of what the hint has done so far.
    pub fn stats(&self) -> HintStats {
        self.shared.stats()
    }

    /// Whether the background task is still running.
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Lets the hint run for as long as the registry lives, without this handle.
    pub fn detach(mut self) {
        self.task = None;
    }

    /// Stops the hint and waits until its task has ended and its connection is closed.
    pub async fn shutdown(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for HintHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl fmt::Debug for HintHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HintHandle")
            .field("running", &self.is_running())
            .field("stats", &self.stats())
            .finish()
    }
}

/// What a hint has done since it started; see [`HintHandle::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HintStats {
    /// Checks completed with Redis answering (one at start, then one per `check_interval`,
    /// plus `check_now` calls).
    pub checks: u64,
    /// Hints written (one per OPEN transition from local evidence, when Redis took it).
    pub published: u64,
    /// Breakers opened by a hint.
    pub fast_opened: u64,
    /// Hint keys ignored because of their type, size or content.
    pub ignored_values: u64,
    /// Failed or timed-out connections and commands.
    pub redis_errors: u64,
    /// Events the listener could not queue (the task was far behind); each may be a lost
    /// publish.
    pub dropped_events: u64,
    /// Whether the task holds a connection to Redis right now.
    pub connected: bool,
}

/// Why a hint could not start, or why [`HintHandle::check_now`] failed.
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
    /// [`RedisHintBuilder::start`] was called outside a tokio runtime.
    NoRuntime,
    /// Redis could not be reached, failed a command, or did not answer in time.
    Redis(String),
    /// The hint's task has ended (its handle was shut down, or the registry was dropped).
    Stopped,
}

impl HintError {
    fn invalid(option: &'static str, reason: impl Into<String>) -> HintError {
        HintError::InvalidOption {
            option,
            reason: reason.into(),
        }
    }

    fn url(url: &str, part: &'static str, reason: impl Into<String>) -> HintError {
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

/// The Redis key of the hint for the breaker `name` under `prefix`.
///
/// Bytes outside `A-Z a-z 0-9 - . _ :` are percent-encoded (`%` itself included), so distinct
/// names always get distinct keys, and no name can add a glob character, a cluster hash tag
/// (`{...}`), whitespace or a control character to a key: `llm:openai/gpt-4` becomes
/// `cb:hint:llm:openai%2Fgpt-4`.
pub fn encode_key(prefix: &str, name: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut key = String::with_capacity(prefix.len() + name.len());
    key.push_str(prefix);
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':') {
            key.push(char::from(b));
        } else {
            key.push('%');
            key.push(char::from(HEX[usize::from(b >> 4)]));
            key.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    key
}

/// A hint value as read: `Ok(origin)` for `open` / `open <origin>`, else why it is ignored.
fn parse_value(value: &[u8]) -> Result<String, String> {
    if value.len() > MAX_HINT_VALUE {
        return Err(format!("value longer than {MAX_HINT_VALUE} bytes"));
    }
    let rest = value
        .strip_prefix(HINT_VALUE_TAG.as_bytes())
        .ok_or_else(|| format!("value does not start with `{HINT_VALUE_TAG}`"))?;
    match rest {
        [] => Ok(String::new()),
        [b' ', origin @ ..] => Ok(String::from_utf8_lossy(origin).into_owned()),
        _ => Err(format!("value does not start with `{HINT_VALUE_TAG}`")),
    }
}

/// `url` with the password (if any) replaced by `***`, for errors and logs.
fn redact(url: &str) -> String {
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

/// Checks the parts of a Redis URL one by one, so that an error names the wrong part;
/// returns the URL to hand to the client.
fn validate_url(url: &str) -> Result<String, HintError> {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(HintError::url(
            url,
            "scheme",
            "is missing: expected `redis://host:port` or `rediss://host:port`",
        ));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "redis" => {}
        "rediss" if cfg!(feature = "redis-hint-tls") => {}
        "rediss" => {
            return Err(HintError::url(
                url,
                "scheme",
                "`rediss://` (TLS) needs breaker's `redis-hint-tls` feature",
            ))
        }
        other => {
            return Err(HintError::url(
                url,
                "scheme",
                format!("`{other}://` is not supported: expected `redis://` or `rediss://`"),
            ))
        }
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let host_port = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => {
            if userinfo
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(HintError::url(
                    url,
                    "password",
                    "or user name contains whitespace; percent-encode it",
                ));
            }
            host_port
        }
        None => authority,
    };
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, after)) => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => {
                    return Err(HintError::url(
                        url,
                        "host",
                        format!("`[{host}]` is followed by `{after}`"),
                    ))
                }
            },
            None => return Err(HintError::url(url, "host", "has an unclosed `[`")),
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err(HintError::url(url, "host", "is missing"));
    }
    if host.contains(|c: char| c.is_whitespace() || c.is_control() || c == '@') {
        return Err(HintError::url(
            url,
            "host",
            format!("`{host}` is not a host"),
        ));
    }
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => {
                return Err(HintError::url(
                    url,
                    "port",
                    format!("`{port}` is not a port number (1-65535)"),
                ))
            }
        }
    }
    let path = tail.split(['?', '#']).next().unwrap_or("");
    let db = path.trim_start_matches('/');
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(HintError::url(
            url,
            "database",
            format!("`{db}` is not a database number"),
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_encode_names_injectively_and_safely() {
        assert_eq!(
            encode_key("cb:hint:", "productService"),
            "cb:hint:productService"
        );
        assert_eq!(
            encode_key("cb:hint:", "llm:openai/gpt-4"),
            "cb:hint:llm:openai%2Fgpt-4"
        );
        assert_eq!(encode_key("p:", "a b*{x}\n%"), "p:a%20b%2A%7Bx%7D%0A%25");
        assert_eq!(encode_key("p:", "é"), "p:%C3%A9");
        // `%` is escaped, so an encoded-looking name cannot collide with the name it encodes.
        assert_ne!(encode_key("p:", "a/b"), encode_key("p:", "a%2Fb"));
        let key = encode_key("p:", "*?[]{} \r\n\"'\\");
        assert!(key[2..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:%".contains(&b)));
    }

    #[test]
    fn values_are_parsed_strictly() {
        assert_eq!(parse_value(b"open"), Ok(String::new()));
        assert_eq!(parse_value(b"open pod-a"), Ok("pod-a".to_owned()));
        assert!(parse_value(b"opened").is_err());
        assert!(parse_value(b"1").is_err());
        assert!(parse_value(b"").is_err());
        let long = [b"open ".as_slice(), &[b'x'; MAX_HINT_VALUE]].concat();
        assert!(parse_value(&long).unwrap_err().contains("longer"));
    }

    fn url_err(url: &str) -> (&'static str, String) {
        match validate_url(url) {
            Err(HintError::InvalidUrl { part, url, .. }) => (part, url),
            other => panic!("{url}: expected an invalid URL, got {other:?}"),
        }
    }

    #[test]
    fn bad_urls_name_the_wrong_part() {
        assert_eq!(url_err("127.0.0.1:6379").0, "scheme");
        assert_eq!(url_err("http://127.0.0.1:6379").0, "scheme");
        assert_eq!(url_err("redis://").0, "host");
        assert_eq!(url_err("redis://:pw@:6379").0, "host");
        assert_eq!(url_err("redis://127.0.0.1:0").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:99999").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:six").0, "port");
        assert_eq!(url_err("redis://127.0.0.1:6379/zero").0, "database");
        assert_eq!(url_err("redis://[::1:6379").0, "host");
        if !cfg!(feature = "redis-hint-tls") {
            assert_eq!(url_err("rediss://127.0.0.1:6379").0, "scheme");
        }
        // The password never shows.
        let (part, shown) = url_err("redis://user:s3cret@127.0.0.1:nope");
        assert_eq!(part, "port");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("user:***@"), "{shown}");
    }

    #[test]
    fn good_urls_pass() {
        for url in [
            "redis://127.0.0.1",
            "redis://127.0.0.1:6379",
            "redis://127.0.0.1:6379/2",
            "redis://:pw@localhost:6379/0",
            "redis://user:p%40ss@localhost:6379",
            "redis://[::1]:6379",
            "REDIS://127.0.0.1/",
        ] {
            assert!(validate_url(url).is_ok(), "{url}");
        }
    }

    #[test]
    fn redaction_hides_passwords() {
        assert_eq!(redact("redis://u:pw@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact("redis://pw@h"), "redis://***@h");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }

    #[test]
    fn options_are_validated() {
        let bad = |b: RedisHintBuilder| match b.validate() {
            Err(HintError::InvalidOption { option, .. }) => option,
            other => panic!("expected an invalid option, got {other:?}"),
        };
        let b = || RedisHint::builder("redis://127.0.0.1");
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
