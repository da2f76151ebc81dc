//! The one Redis connection of a hint: connecting, writing hints, reading them; every step
//! bounded by the command timeout.

use std::future::Future;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Value};

use super::error::HintError;
use super::value::MAX_HINT_VALUE;

/// Commands per pipeline when reading many hints, so that one reply stays small.
const READ_CHUNK: usize = 512;

/// A client for `url` (already validated part by part).
pub(super) fn open_client(url: &str) -> Result<Client, HintError> {
    #[cfg(feature = "redis-hint-tls")]
    ensure_crypto_provider();
    Client::open(url).map_err(|e| HintError::url(url, "url", format!("is rejected: {e}")))
}

/// rustls needs a process-wide crypto provider; without one (or with two compiled in and none
/// chosen) building a TLS config panics. Install ring's unless the app chose one already.
#[cfg(feature = "redis-hint-tls")]
fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is then installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// What one hint key holds.
#[derive(Debug, PartialEq)]
pub(super) enum Read {
    /// No key (or an empty string).
    Absent,
    /// A string: its first `MAX_HINT_VALUE + 1` bytes, so an oversized value shows as such
    /// without being transferred whole.
    Value(Vec<u8>),
    /// Redis refused to read it as a string (WRONGTYPE for a list or hash, NOPERM, ...).
    Refused(String),
}

/// The hint's connection, made on demand and dropped on any error or timeout.
pub(super) struct Conn {
    client: Client,
    timeout: Duration,
    conn: Option<MultiplexedConnection>,
    /// A connection attempt failed since the last check: wait for the next check to retry, so
    /// that a burst of events does not turn into a burst of connection attempts.
    backing_off: bool,
}

impl Conn {
    pub(super) fn new(client: Client, timeout: Duration) -> Conn {
        Conn {
            client,
            timeout,
            conn: None,
            backing_off: false,
        }
    }

    pub(super) fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    pub(super) fn is_backing_off(&self) -> bool {
        self.backing_off && self.conn.is_none()
    }

    /// Connects if needed and sends a PING; `Ok(true)` if this made a new connection.
    pub(super) async fn ping(&mut self) -> Result<bool, String> {
        let mut pipe = redis::pipe();
        pipe.cmd("PING");
        self.query(&pipe).await.map(|(new, _)| new)
    }

    /// Allows one new connection attempt (called once per check).
    pub(super) fn allow_retry(&mut self) {
        self.backing_off = false;
    }

    /// Connects if needed. `Ok(true)` if a new connection was made.
    async fn connect(&mut self) -> Result<(bool, MultiplexedConnection), String> {
        if let Some(conn) = &self.conn {
            return Ok((false, conn.clone()));
        }
        if self.backing_off {
            return Err("not connected; retrying at the next check".to_owned());
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let attempt = self
            .client
            .get_multiplexed_async_connection_with_config(&config);
        match bounded(self.timeout, attempt).await {
            Ok(conn) => {
                self.conn = Some(conn.clone());
                Ok((true, conn))
            }
            Err(e) => {
                self.backing_off = true;
                Err(format!("cannot connect: {e}"))
            }
        }
    }

    /// Runs `pipe`, dropping the connection on any failure.
    async fn query(&mut self, pipe: &redis::Pipeline) -> Result<(bool, Vec<Value>), String> {
        let (new, mut conn) = self.connect().await?;
        match bounded(self.timeout, pipe.query_async::<Vec<Value>>(&mut conn)).await {
            Ok(values) => Ok((new, values)),
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }

    /// Sets every `(key, ttl)` to `value` with a millisecond TTL, in one round trip. `Ok(true)`
    /// if this made a new connection.
    pub(super) async fn set_all(
        &mut self,
        writes: &[(String, u64)],
        value: &str,
    ) -> Result<bool, String> {
        let mut pipe = redis::pipe();
        for (key, ttl_ms) in writes {
            pipe.cmd("SET").arg(key).arg(value).arg("PX").arg(*ttl_ms);
        }
        let (new, replies) = self.query(&pipe).await?;
        if replies.len() != writes.len() {
            self.conn = None;
            return Err(format!(
                "SET: {} replies to {} commands",
                replies.len(),
                writes.len()
            ));
        }
        Ok(new)
    }

    /// Reads the hint at each key (one pipeline of `GETRANGE key 0 MAX` per chunk). `Ok` holds
    /// whether this made a new connection, and one [`Read`] per key.
    pub(super) async fn read_all(&mut self, keys: &[String]) -> Result<(bool, Vec<Read>), String> {
        let mut reads = Vec::with_capacity(keys.len());
        let mut any_new = false;
        for chunk in keys.chunks(READ_CHUNK) {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for key in chunk {
                pipe.cmd("GETRANGE").arg(key).arg(0).arg(MAX_HINT_VALUE);
            }
            let (new, replies) = self.query(&pipe).await?;
            any_new |= new;
            if replies.len() != chunk.len() {
                self.conn = None;
                return Err(format!(
                    "GETRANGE: {} replies to {} commands",
                    replies.len(),
                    chunk.len()
                ));
            }
            reads.extend(replies.into_iter().map(read_of));
        }
        Ok((any_new, reads))
    }
}

fn read_of(reply: Value) -> Read {
    match reply {
        Value::Nil => Read::Absent,
        Value::BulkString(bytes) if bytes.is_empty() => Read::Absent,
        Value::BulkString(bytes) => Read::Value(bytes),
        Value::SimpleString(s) => Read::Value(s.into_bytes()),
        Value::ServerError(e) => Read::Refused(e.to_string()),
        other => Read::Refused(format!("unexpected reply {other:?}")),
    }
}

/// `fut`, or an error once `timeout` has passed.
async fn bounded<T>(
    timeout: Duration,
    fut: impl Future<Output = redis::RedisResult<T>>,
) -> Result<T, String> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no answer within the command timeout ({timeout:?})"
        )),
    }
}
