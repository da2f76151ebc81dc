//! The fallback's own parts (docs/CREDIT_BUREAU.md §6): the manual-review queue and the score
//! cache, each on the contract's real part or on an embedded default.
//!
//! - The queue is the PostgreSQL table [`QUEUE_TABLE`] (given `--postgres URL`), else an
//!   append-only file that is fsync'd before each 202. Both commit a row before
//!   [`ReviewQueue::enqueue`] returns and are idempotent on the application id.
//! - The cache is Redis (given `--redis URL`): one key per tax id, `credit_bureau:score:` then
//!   the tax id's bytes, holding `{score}:{fetched, unix seconds}` with a TTL of what is left of
//!   the 30 days. Else it is a map in this process.
//!
//! Every operation on a server is bounded by [`StoreConfig::timeout`] as a whole (the pool's
//! wait, the connection and the I/O), and every operation fails with a [`StoreError`] that names the part, where it is
//! (a URL without its user or password) and the cause. This module is a leaf: it knows nothing
//! of the breaker, the bureau or the game day.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::error::Error;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use reqwest::Url;
use tokio::time::Instant;
use tokio_postgres::NoTls;

/// The table and the one status the fallback writes.
pub(crate) const QUEUE_TABLE: &str = "manual_underwriting_queue";
/// The status of a queued application.
pub(crate) const QUEUED: &str = "QUEUED_FOR_OFFLINE_REVIEW";

/// A cached score is used only if it is younger than this (docs/CREDIT_BUREAU.md §6: < 30 days).
pub(crate) const CACHE_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);

/// The bound of every store operation when [`StoreConfig::timeout`] is left at zero.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// The prefix of every cached score's key; the tax id's bytes follow it as they are.
const SCORE_KEY_PREFIX: &[u8] = b"credit_bureau:score:";

/// How long a run's hit counters stay in Redis after their last count.
const HITS_TTL_SECONDS: i64 = 24 * 3600;

/// The most connections the queue's pool opens to PostgreSQL.
const POOL_SIZE: usize = 16;

/// Which parts the fallback runs on: given URLs (PostgreSQL, Redis), or the embedded defaults
/// (the fsync'd append-only file queue, the in-process cache).
#[derive(Clone, Debug, Default)]
pub(crate) struct StoreConfig {
    /// `CREDIT_BUREAU_POSTGRES_URL` / `--postgres URL`: the queue in PostgreSQL.
    pub(crate) postgres_url: Option<String>,
    /// `CREDIT_BUREAU_REDIS_URL` / `--redis URL`: the cache in Redis.
    pub(crate) redis_url: Option<String>,
    /// The file queue's path when no PostgreSQL is given (a fresh file in the temp dir if
    /// `None`).
    pub(crate) queue_path: Option<PathBuf>,
    /// Every network store operation's bound (pool wait + I/O); zero means
    /// [`DEFAULT_TIMEOUT`]. (The file queue waits for its fsync: see [`FileQueue`].)
    pub(crate) timeout: Duration,
}

impl StoreConfig {
    fn timeout(&self) -> Duration {
        if self.timeout.is_zero() {
            DEFAULT_TIMEOUT
        } else {
            self.timeout
        }
    }
}

/// Which part of the fallback failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Queue,
    Cache,
}

/// A store operation that failed: which part, where (its URL with any user and password left
/// out, or the file's path), and what went wrong. Displayed as "the manual-review queue
/// (PostgreSQL at 127.0.0.1:5432/postgres) is unavailable: <cause>" or "the score cache (Redis
/// at 127.0.0.1:6379) is unavailable: <cause>".
#[derive(Debug)]
pub(crate) struct StoreError {
    part: Part,
    place: String,
    cause: String,
}

impl StoreError {
    fn new(part: Part, place: &str, cause: impl Into<String>) -> StoreError {
        StoreError {
            part,
            place: place.to_owned(),
            cause: cause.into(),
        }
    }

    fn timed_out(part: Part, place: &str, timeout: Duration) -> StoreError {
        StoreError::new(part, place, format!("no answer within {timeout:?}"))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = match self.part {
            Part::Queue => "the manual-review queue",
            Part::Cache => "the score cache",
        };
        write!(f, "{part} ({}) is unavailable: {}", self.place, self.cause)
    }
}

// The cause is part of the message (a client's error, already flattened with its sources).
impl Error for StoreError {}

/// An error and those of its sources that its message does not already include.
fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// Where a server is, from its URL: `host:port/path`, never the user or the password (nor the
/// query, which can carry a password too). A string that is not a URL (a libpq `key=value`
/// string) is not shown at all.
fn redacted(url: &str, default_port: u16) -> String {
    match Url::parse(url) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or("localhost");
            let port = parsed.port().unwrap_or(default_port);
            let path = parsed.path().trim_end_matches('/');
            format!("{host}:{port}{path}")
        }
        Err(_) => "(a connection string, not shown)".to_owned(),
    }
}

/// Locks, ignoring poisoning: the data are an append-only file and sets, valid after any panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Milliseconds since the Unix epoch (0 before it).
fn unix_millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The bucket of `width` from `start` that `at` falls in: `None` before `start`, the last one
/// for anything after the last.
fn bucket_of(at: SystemTime, start: SystemTime, width: Duration, buckets: usize) -> Option<usize> {
    let since = at.duration_since(start).ok()?;
    let index = (since.as_secs_f64() / width.as_secs_f64().max(f64::MIN_POSITIVE)) as usize;
    (buckets > 0).then(|| index.min(buckets - 1))
}

/// The manual-review queue. Both kinds commit before `enqueue` returns and are idempotent on
/// the application id (a second enqueue of one id changes nothing and returns `Ok(false)`).
pub(crate) enum ReviewQueue {
    /// The embedded default: an append-only file.
    File(Arc<FileQueue>),
    /// The contract's table in PostgreSQL.
    Postgres(PostgresQueue),
}

impl fmt::Debug for ReviewQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl ReviewQueue {
    /// The queue `config` names: PostgreSQL if it has a URL (the table created if missing),
    /// else the file at `queue_path` (created if missing; a fresh one in the temp dir if no
    /// path is given).
    pub(crate) async fn open(config: &StoreConfig) -> Result<ReviewQueue, StoreError> {
        let timeout = config.timeout();
        match &config.postgres_url {
            Some(url) => Ok(ReviewQueue::Postgres(
                PostgresQueue::open(url, timeout).await?,
            )),
            None => {
                let path = config.queue_path.clone().unwrap_or_else(fresh_queue_path);
                let opened = tokio::task::spawn_blocking(move || FileQueue::open(path)).await;
                match opened {
                    Ok(queue) => Ok(ReviewQueue::File(Arc::new(queue?))),
                    Err(e) => Err(StoreError::new(Part::Queue, "a file", e.to_string())),
                }
            }
        }
    }

    /// Where the queue is: "PostgreSQL at 127.0.0.1:5432/postgres, table
    /// manual_underwriting_queue" or "the file /tmp/...".
    pub(crate) fn describe(&self) -> String {
        match self {
            ReviewQueue::File(file) => file.place.clone(),
            ReviewQueue::Postgres(pg) => format!("{}, table {QUEUE_TABLE}", pg.place),
        }
    }

    /// Queues one application, committed before this returns. `Ok(true)`: a new row.
    /// `Ok(false)`: the id was already queued, nothing changed.
    pub(crate) async fn enqueue(
        &self,
        application_id: &str,
        tax_id: &str,
        at: SystemTime,
    ) -> Result<bool, StoreError> {
        match self {
            ReviewQueue::File(file) => {
                let (id, tax) = (application_id.to_owned(), tax_id.to_owned());
                file.blocking(move |file| file.append(&id, &tax, at)).await
            }
            ReviewQueue::Postgres(pg) => pg.enqueue(application_id, tax_id, at).await,
        }
    }

    /// Every queued application id, in the order queued.
    pub(crate) async fn ids(&self) -> Result<Vec<String>, StoreError> {
        match self {
            ReviewQueue::File(file) => {
                file.blocking(|file| Ok(file.rows()?.into_iter().map(|r| r.id).collect()))
                    .await
            }
            ReviewQueue::Postgres(pg) => pg.ids().await,
        }
    }

    /// The rows by status (`SELECT status, count(*) ... GROUP BY status`).
    pub(crate) async fn count_by_status(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        match self {
            ReviewQueue::File(file) => {
                file.blocking(|file| {
                    let mut counts = BTreeMap::new();
                    for row in file.rows()? {
                        *counts.entry(row.status).or_insert(0) += 1;
                    }
                    Ok(counts)
                })
                .await
            }
            ReviewQueue::Postgres(pg) => pg.count_by_status().await,
        }
    }

    /// Rows per bucket of `width` from `start` (by the `at` they were queued with), `buckets`
    /// long: rows queued before `start` are not counted, rows after the last bucket are
    /// counted in it (as the game day's timeline counts anything late).
    pub(crate) async fn rows_per_bucket(
        &self,
        start: SystemTime,
        width: Duration,
        buckets: usize,
    ) -> Result<Vec<u64>, StoreError> {
        match self {
            ReviewQueue::File(file) => {
                file.blocking(move |file| {
                    let mut counts = vec![0; buckets];
                    for row in file.rows()? {
                        let at = row.at.and_then(|at| bucket_of(at, start, width, buckets));
                        if let Some(index) = at {
                            counts[index] += 1;
                        }
                    }
                    Ok(counts)
                })
                .await
            }
            ReviewQueue::Postgres(pg) => pg.rows_per_bucket(start, width, buckets).await,
        }
    }
}

/// A fresh file in the temp dir for a queue.
pub(crate) fn fresh_queue_path() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!(
        "credit_bureau_review_queue_{}_{nanos}.log",
        std::process::id()
    ))
}

/// The embedded default queue: an append-only file, one line per application, `id TAB tax id
/// TAB status TAB queued-at (unix ms)`.
///
/// The line is written and fsync'd (`sync_data`) before `enqueue` returns, so a 202 given
/// after it survives a crash of this process (or of the machine). No acknowledged line is ever
/// rewritten: a crash mid-append can at worst leave one torn last line (no newline), for an
/// application that was never answered 202, and opening the file cuts it off, so the next line
/// starts on a line of its own; an append that fails cuts its own partial line off the same
/// way. The ids already queued are kept in memory (read back when the file is opened) for
/// idempotency.
///
/// Its operations are not bounded by the store timeout: a blocking write cannot be cancelled,
/// so an append given up on would still land, a row behind a 503. A local disk's fsync is
/// bounded by the operating system.
pub(crate) struct FileQueue {
    path: PathBuf,
    place: String,
    state: Mutex<FileState>,
}

/// The open file and the ids it holds.
struct FileState {
    file: File,
    ids: HashSet<String>,
}

/// One line of the queue file.
struct FileRow {
    id: String,
    status: String,
    /// `None` on a line written without it (three fields).
    at: Option<SystemTime>,
}

impl FileQueue {
    fn open(path: PathBuf) -> Result<FileQueue, StoreError> {
        let place = format!("the file {}", path.display());
        let error = |e: std::io::Error| StoreError::new(Part::Queue, &place, e.to_string());
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(error)?;
        // A torn last line (a crash mid-append) was never answered 202: cut it off.
        let text = std::fs::read(&path).map_err(error)?;
        if text.last().is_some_and(|&b| b != b'\n') {
            let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            file.set_len(whole as u64).map_err(error)?;
        }
        let ids = read_rows(&path)
            .map_err(error)?
            .into_iter()
            .map(|r| r.id)
            .collect();
        Ok(FileQueue {
            path,
            place,
            state: Mutex::new(FileState { file, ids }),
        })
    }

    /// Runs `op` on a blocking thread (file I/O and fsync block).
    async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        op: impl FnOnce(&FileQueue) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let queue = self.clone();
        match tokio::task::spawn_blocking(move || op(&queue)).await {
            Ok(result) => result,
            Err(e) => Err(StoreError::new(Part::Queue, &self.place, e.to_string())),
        }
    }

    fn append(
        &self,
        application_id: &str,
        tax_id: &str,
        at: SystemTime,
    ) -> Result<bool, StoreError> {
        // A tab or newline would break the one-line format.
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        let id = clean(application_id);
        let mut state = lock(&self.state);
        if state.ids.contains(&id) {
            return Ok(false);
        }
        let line = format!("{id}\t{}\t{QUEUED}\t{}\n", clean(tax_id), unix_millis(at));
        let file = &mut state.file;
        let written = file.metadata().map(|m| m.len()).and_then(|before| {
            let appended = file
                .write_all(line.as_bytes())
                .and_then(|()| file.flush())
                .and_then(|()| file.sync_data());
            if appended.is_err() {
                // The line may be partly written: cut it off, so the next starts whole.
                let _ = file.set_len(before);
            }
            appended
        });
        written.map_err(|e| StoreError::new(Part::Queue, &self.place, e.to_string()))?;
        state.ids.insert(id);
        Ok(true)
    }

    fn rows(&self) -> Result<Vec<FileRow>, StoreError> {
        read_rows(&self.path).map_err(|e| StoreError::new(Part::Queue, &self.place, e.to_string()))
    }
}

/// The complete lines of a queue file, in order (a torn last line is no row).
fn read_rows(path: &Path) -> std::io::Result<Vec<FileRow>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .split_inclusive('\n')
        .filter_map(|line| line.strip_suffix('\n'))
        .map(|line| {
            let mut fields = line.split('\t');
            let id = fields.next().unwrap_or_default().to_owned();
            let _tax_id = fields.next();
            let status = fields.next().unwrap_or(QUEUED).to_owned();
            let at = fields
                .next()
                .and_then(|ms| ms.parse().ok())
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
            FileRow { id, status, at }
        })
        .collect())
}

/// The queue as the PostgreSQL table [`QUEUE_TABLE`], through a deadpool pool of
/// tokio-postgres connections.
pub(crate) struct PostgresQueue {
    pool: Pool,
    place: String,
    timeout: Duration,
}

impl PostgresQueue {
    async fn open(url: &str, timeout: Duration) -> Result<PostgresQueue, StoreError> {
        let place = format!("PostgreSQL at {}", redacted(url, 5432));
        let error = |cause: String| StoreError::new(Part::Queue, &place, cause);
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| error(format!("not a PostgreSQL URL: {}", chain(&e))))?;
        config.connect_timeout(timeout);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                // A closed connection is found by `is_closed` and replaced; a stalled one by
                // the timeout, after which it is dropped (see `run`).
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .recycle_timeout(Some(timeout))
            .build()
            .map_err(|e| error(chain(&e)))?;
        let queue = PostgresQueue {
            pool,
            place,
            timeout,
        };
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {QUEUE_TABLE} (application_id text PRIMARY KEY, \
             tax_id text NOT NULL, status text NOT NULL, queued_at timestamptz NOT NULL)"
        );
        let deadline = Instant::now() + timeout;
        let client = queue.connect(deadline).await?;
        let created = tokio::time::timeout_at(deadline, client.batch_execute(&create)).await;
        queue.finish(client, created)?;
        Ok(queue)
    }

    /// A pooled connection, by `deadline`: an idle one, or a new one. Each operation takes
    /// one, runs its statements within the same deadline, and hands it to [`Self::finish`].
    async fn connect(&self, deadline: Instant) -> Result<Object, StoreError> {
        match tokio::time::timeout_at(deadline, self.pool.get()).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(self.error(chain(&e))),
            Err(_) => Err(self.timed_out()),
        }
    }

    /// The end of an operation on `client`: its result, and the connection given back to
    /// the pool if it went well. A connection whose operation failed or timed out is dropped
    /// instead (closed): it may be stalled, or hold a half-done exchange.
    fn finish<T>(
        &self,
        client: Object,
        result: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        let outcome = match result {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => self.error(chain(&e)),
            Err(_) => self.timed_out(),
        };
        drop(Object::take(client));
        Err(outcome)
    }

    fn timed_out(&self) -> StoreError {
        StoreError::timed_out(Part::Queue, &self.place, self.timeout)
    }

    /// One application's row, committed when this returns `Ok`.
    ///
    /// The INSERT runs in a transaction whose COMMIT is sent only once the INSERT has
    /// answered: if the server stalls (or the timeout fires) before that, the connection is
    /// closed and the server rolls the row back when it gets to it, so an application answered
    /// 503 leaves no row. Only a stall between sending COMMIT and its answer leaves the row
    /// committed behind a 503: captured after all, and a retry of it is a no-op (`Ok(false)`).
    async fn enqueue(&self, id: &str, tax_id: &str, at: SystemTime) -> Result<bool, StoreError> {
        let deadline = Instant::now() + self.timeout;
        let mut client = self.connect(deadline).await?;
        let insert = format!(
            "INSERT INTO {QUEUE_TABLE} (application_id, tax_id, status, queued_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (application_id) DO NOTHING"
        );
        let inserted = tokio::time::timeout_at(deadline, async {
            let transaction = client.transaction().await?;
            let rows = transaction
                .execute(&insert, &[&id, &tax_id, &QUEUED, &at])
                .await?;
            transaction.commit().await?;
            Ok(rows == 1)
        })
        .await;
        self.finish(client, inserted)
    }

    async fn ids(&self) -> Result<Vec<String>, StoreError> {
        let deadline = Instant::now() + self.timeout;
        let client = self.connect(deadline).await?;
        let query =
            format!("SELECT application_id FROM {QUEUE_TABLE} ORDER BY queued_at, application_id");
        let rows = tokio::time::timeout_at(deadline, client.query(&query, &[])).await;
        let rows = self.finish(client, rows)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn count_by_status(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let deadline = Instant::now() + self.timeout;
        let client = self.connect(deadline).await?;
        let query = format!("SELECT status, count(*) FROM {QUEUE_TABLE} GROUP BY status");
        let rows = tokio::time::timeout_at(deadline, client.query(&query, &[])).await;
        let rows = self.finish(client, rows)?;
        Ok(rows
            .iter()
            .map(|row| {
                let count: i64 = row.get(1);
                (row.get(0), u64::try_from(count).unwrap_or(0))
            })
            .collect())
    }

    /// The buckets counted by the server: each row's `queued_at - start` over `width`.
    async fn rows_per_bucket(
        &self,
        start: SystemTime,
        width: Duration,
        buckets: usize,
    ) -> Result<Vec<u64>, StoreError> {
        let deadline = Instant::now() + self.timeout;
        let client = self.connect(deadline).await?;
        let query = format!(
            "SELECT floor(extract(epoch FROM queued_at - $1::timestamptz)::float8 / $2::float8)::int8 \
             AS bucket, count(*) FROM {QUEUE_TABLE} WHERE queued_at >= $1::timestamptz GROUP BY bucket"
        );
        let width_secs = width.as_secs_f64();
        let rows =
            tokio::time::timeout_at(deadline, client.query(&query, &[&start, &width_secs])).await;
        let rows = self.finish(client, rows)?;
        let mut counts = vec![0; buckets];
        if buckets == 0 {
            return Ok(counts);
        }
        for row in rows {
            let (bucket, count): (i64, i64) = (row.get(0), row.get(1));
            let index = usize::try_from(bucket).unwrap_or(0).min(buckets - 1);
            counts[index] += u64::try_from(count).unwrap_or(0);
        }
        Ok(counts)
    }

    fn error(&self, cause: String) -> StoreError {
        StoreError::new(Part::Queue, &self.place, cause)
    }
}

/// Scores fetched earlier, fresh for 30 days ([`CACHE_MAX_AGE`]); in Redis as one key per tax
/// id with the fetch time in the value and a TTL of what is left of the 30 days.
pub(crate) enum ScoreCache {
    /// The embedded default: a map in this process.
    Memory(MemoryCache),
    /// Redis.
    Redis(RedisCache),
}

impl fmt::Debug for ScoreCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl ScoreCache {
    /// The cache `config` names: Redis if it has a URL (connected, or an error), else a map in
    /// this process.
    pub(crate) async fn open(config: &StoreConfig) -> Result<ScoreCache, StoreError> {
        match &config.redis_url {
            Some(url) => Ok(ScoreCache::Redis(
                RedisCache::open(url, config.timeout()).await?,
            )),
            None => Ok(ScoreCache::Memory(MemoryCache::default())),
        }
    }

    /// Where the cache is: "Redis at 127.0.0.1:6379, keys credit_bureau:score:{tax id}" or
    /// "this process's memory".
    pub(crate) fn describe(&self) -> String {
        match self {
            ScoreCache::Memory(_) => "this process's memory".to_owned(),
            ScoreCache::Redis(redis) => {
                format!("{}, keys credit_bureau:score:{{tax id}}", redis.place)
            }
        }
    }

    /// Stores `score`, fetched at `fetched`, for what is left of its 30 days (measured on this
    /// machine's clock); a score already 30 days old or more is not stored.
    pub(crate) async fn put(
        &self,
        tax_id: &str,
        score: u32,
        fetched: SystemTime,
    ) -> Result<(), StoreError> {
        let age = SystemTime::now()
            .duration_since(fetched)
            .unwrap_or_default();
        let Some(left) = CACHE_MAX_AGE.checked_sub(age) else {
            return Ok(());
        };
        match self {
            ScoreCache::Memory(memory) => {
                lock(&memory.entries).insert(tax_id.to_owned(), (score, fetched));
                Ok(())
            }
            ScoreCache::Redis(redis) => redis.put(tax_id, score, fetched, left).await,
        }
    }

    /// A score younger than 30 days at `now`, with its age in whole days; `Ok(None)` on a
    /// miss (none, or an older one).
    pub(crate) async fn recent(
        &self,
        tax_id: &str,
        now: SystemTime,
    ) -> Result<Option<(u32, u64)>, StoreError> {
        let found = match self {
            ScoreCache::Memory(memory) => lock(&memory.entries).get(tax_id).copied(),
            ScoreCache::Redis(redis) => redis.get(tax_id).await?,
        };
        Ok(found.and_then(|(score, fetched)| {
            let age = now.duration_since(fetched).unwrap_or_default();
            (age < CACHE_MAX_AGE).then_some((score, age.as_secs() / 86_400))
        }))
    }

    /// Counts one cache answer in bucket `bucket` (in Redis: INCR of a per-run, per-bucket
    /// key), for [`Self::hits_per_bucket`].
    pub(crate) async fn count_hit(&self, bucket: usize) -> Result<(), StoreError> {
        match self {
            ScoreCache::Memory(memory) => {
                *lock(&memory.hits).entry(bucket).or_insert(0) += 1;
                Ok(())
            }
            ScoreCache::Redis(redis) => redis.count_hit(bucket).await,
        }
    }

    /// The hits counted in buckets `0..buckets`, read back from where they were counted: the
    /// picture's "cache hits from Redis".
    pub(crate) async fn hits_per_bucket(&self, buckets: usize) -> Result<Vec<u64>, StoreError> {
        match self {
            ScoreCache::Memory(memory) => {
                let hits = lock(&memory.hits);
                Ok((0..buckets)
                    .map(|b| hits.get(&b).copied().unwrap_or(0))
                    .collect())
            }
            ScoreCache::Redis(redis) => redis.hits_per_bucket(buckets).await,
        }
    }
}

/// The embedded default cache: scores and hit counts in this process.
#[derive(Debug, Default)]
pub(crate) struct MemoryCache {
    entries: Mutex<HashMap<String, (u32, SystemTime)>>,
    hits: Mutex<BTreeMap<usize, u64>>,
}

/// The cache in Redis, through `redis`'s reconnecting [`ConnectionManager`].
///
/// A score's key is `credit_bureau:score:` followed by the tax id's bytes as they are: Redis
/// keys are binary-safe and the key is sent as one bulk string, so a tax id with spaces,
/// colons, newlines or any other bytes is still exactly one key of its own, and no tax id can
/// reach a key outside the `credit_bureau:score:` prefix. The value is `{score}:{fetched}`,
/// the fetch time in unix seconds, so a reader checks the age itself (a clock that moved, or
/// a TTL set by another writer, cannot make an old score fresh). A run's hit counts are
/// `credit_bureau:hits:{run}:{bucket}`, kept for a day.
pub(crate) struct RedisCache {
    connection: ConnectionManager,
    place: String,
    timeout: Duration,
    /// This cache's hit counters' run id: the process and the time it opened.
    run: String,
}

impl RedisCache {
    async fn open(url: &str, timeout: Duration) -> Result<RedisCache, StoreError> {
        let place = format!("Redis at {}", redacted(url, 6379));
        let error = |cause: String| StoreError::new(Part::Cache, &place, cause);
        let client = redis::Client::open(url)
            .map_err(|e| error(format!("not a Redis URL: {}", chain(&e))))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // Reconnect quickly and not for long: a cache that is down is a miss, and the
            // next operation tries again.
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(10))
            .set_max_delay(timeout);
        let connecting = ConnectionManager::new_with_config(client, config);
        let connection = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(e)) => return Err(error(chain(&e))),
            Err(_) => return Err(StoreError::timed_out(Part::Cache, &place, timeout)),
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(RedisCache {
            connection,
            place,
            timeout,
            run: format!("{}-{nanos}", std::process::id()),
        })
    }

    /// Runs one command (or pipeline) within the timeout.
    async fn query<T: redis::FromRedisValue>(
        &self,
        command: impl FnOnce(&mut ConnectionManager) -> redis::RedisFuture<'_, T>,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(self.timeout, command(&mut connection)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(StoreError::new(Part::Cache, &self.place, chain(&e))),
            Err(_) => Err(StoreError::timed_out(
                Part::Cache,
                &self.place,
                self.timeout,
            )),
        }
    }

    fn score_key(tax_id: &str) -> Vec<u8> {
        [SCORE_KEY_PREFIX, tax_id.as_bytes()].concat()
    }

    fn hits_key(&self, bucket: usize) -> String {
        format!("credit_bureau:hits:{}:{bucket}", self.run)
    }

    async fn put(
        &self,
        tax_id: &str,
        score: u32,
        fetched: SystemTime,
        left: Duration,
    ) -> Result<(), StoreError> {
        // Whole seconds, rounded down: the key never outlives the 30 days.
        let seconds = left.as_secs();
        if seconds == 0 {
            return Ok(());
        }
        let value = format!("{score}:{}", unix_millis(fetched) / 1000);
        let key = Self::score_key(tax_id);
        self.query(|c| {
            Box::pin(async move {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(&value)
                    .arg("EX")
                    .arg(seconds)
                    .query_async::<()>(c)
                    .await
            })
        })
        .await
    }

    async fn get(&self, tax_id: &str) -> Result<Option<(u32, SystemTime)>, StoreError> {
        let key = Self::score_key(tax_id);
        let value: Option<Vec<u8>> = self
            .query(|c| Box::pin(async move { redis::cmd("GET").arg(&key).query_async(c).await }))
            .await?;
        let Some(value) = value else {
            return Ok(None);
        };
        let parsed = std::str::from_utf8(&value).ok().and_then(|text| {
            let (score, fetched) = text.split_once(':')?;
            Some((
                score.parse().ok()?,
                UNIX_EPOCH + Duration::from_secs(fetched.parse().ok()?),
            ))
        });
        match parsed {
            Some(found) => Ok(Some(found)),
            None => Err(StoreError::new(
                Part::Cache,
                &self.place,
                format!(
                    "the value of a score's key is not `score:unix seconds`: {:?}",
                    String::from_utf8_lossy(&value[..value.len().min(64)])
                ),
            )),
        }
    }

    async fn count_hit(&self, bucket: usize) -> Result<(), StoreError> {
        let key = self.hits_key(bucket);
        self.query(|c| {
            Box::pin(async move {
                redis::pipe()
                    .incr(&key, 1)
                    .ignore()
                    .expire(&key, HITS_TTL_SECONDS)
                    .ignore()
                    .query_async::<()>(c)
                    .await
            })
        })
        .await
    }

    async fn hits_per_bucket(&self, buckets: usize) -> Result<Vec<u64>, StoreError> {
        if buckets == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = (0..buckets).map(|b| self.hits_key(b)).collect();
        let counts: Vec<Option<u64>> = self
            .query(|c| Box::pin(async move { redis::cmd("MGET").arg(&keys).query_async(c).await }))
            .await?;
        Ok(counts.into_iter().map(Option::unwrap_or_default).collect())
    }
}
