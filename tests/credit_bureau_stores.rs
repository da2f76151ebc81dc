//! The credit-bureau fallback's own parts (examples/credit_bureau/store.rs) over real servers:
//! a PostgreSQL and a Redis each test starts on a free loopback port.
//!
//! First the parts alone: the queue in PostgreSQL inserts a committed row, is idempotent on the
//! application id, and counts its rows by status and by bucket of the time queued (the file
//! queue too, and it survives being reopened); the cache in Redis keeps a score for what is left
//! of its 30 days (a TTL of exactly that, and a reader that checks the age itself), under one
//! binary-safe key per tax id; a URL with a password never shows it in an error.
//!
//! Then the faults, each with the loan service's credit check in this process against a bureau
//! that fails (every call a 500 or refused by the opened breaker, so every application needs
//! the fallback), in real time with small store timeouts, and no sleeps: Redis killed (every
//! application goes straight to the queue), PostgreSQL stopped (503s that name PostgreSQL,
//! counted, never queued) and started again, PostgreSQL paused (the same 503s, ended by the
//! store's timeout) and resumed. Through each, every application ends as exactly one of a
//! cached answer, a committed row or a 503, and the rows counted by status with the test's
//! own SQL (tokio-postgres, not the example's code) are exactly the 202 answers.
//!
//! A binary of its own: the credit check's attribute reads the process's global registry,
//! installed here once from the example's file.

// Tests cannot run examples, so the example's modules are included here. The test does not
// use every item the example's `main` uses.
#[allow(dead_code)]
#[path = "../examples/credit_bureau/game.rs"]
mod game;
#[path = "support/postgres_server.rs"]
mod postgres_server;
#[path = "../breaker-core/tests/support/redis_server.rs"]
mod redis_server;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Once};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker::{Clock, Registry};
use game::loan::{Application, CreditCheck, Decision};
use game::store::{ReviewQueue, ScoreCache, StoreConfig, QUEUED, QUEUE_TABLE};
use postgres_server::PostgresServer;
use redis_server::{RedisServer, Reply};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The store timeout of the fault tests: small, so that a stalled server costs little.
const STORE_TIMEOUT: Duration = Duration::from_millis(300);

/// A day, in seconds.
const DAY: u64 = 86_400;

/// The stores on `postgres` and `redis`, with [`STORE_TIMEOUT`].
fn real_stores(postgres: &PostgresServer, redis: &RedisServer) -> StoreConfig {
    StoreConfig {
        postgres_url: Some(postgres.url()),
        redis_url: Some(redis.url()),
        queue_path: None,
        timeout: STORE_TIMEOUT,
    }
}

/// The rows of the queue table by status, read by the test itself through tokio-postgres.
async fn sql_count_by_status(url: &str) -> BTreeMap<String, u64> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test connects to PostgreSQL");
    let connection = tokio::spawn(connection);
    let rows = client
        .query(
            &format!("SELECT status, count(*) FROM {QUEUE_TABLE} GROUP BY status"),
            &[],
        )
        .await
        .expect("SELECT status, count(*)");
    drop(client);
    let _ = connection.await;
    rows.iter()
        .map(|row| (row.get(0), u64::try_from(row.get::<_, i64>(1)).unwrap()))
        .collect()
}

/// The application ids in the queue table, read by the test itself.
async fn sql_ids(url: &str) -> BTreeSet<String> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test connects to PostgreSQL");
    let connection = tokio::spawn(connection);
    let rows = client
        .query(&format!("SELECT application_id FROM {QUEUE_TABLE}"), &[])
        .await
        .expect("SELECT application_id");
    drop(client);
    let _ = connection.await;
    rows.iter().map(|row| row.get(0)).collect()
}

#[tokio::test]
async fn postgres_queue_commits_once_per_application_and_counts_by_status_and_bucket() {
    let server = PostgresServer::start();
    let config = StoreConfig {
        postgres_url: Some(server.url()),
        timeout: Duration::from_secs(5),
        ..StoreConfig::default()
    };
    let queue = ReviewQueue::open(&config).await.expect("the queue opens");
    assert_eq!(
        queue.describe(),
        format!(
            "PostgreSQL at 127.0.0.1:{}/postgres, table {QUEUE_TABLE}",
            server.port()
        )
    );
    // The table is the contract's.
    let columns = server.psql(&format!(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns \
         WHERE table_name = '{QUEUE_TABLE}' ORDER BY ordinal_position"
    ));
    assert_eq!(
        columns,
        "application_id|text|NO\ntax_id|text|NO\nstatus|text|NO\n\
         queued_at|timestamp with time zone|NO\n"
    );

    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let at = |ms: u64| start + Duration::from_millis(ms);
    assert!(queue.enqueue("app-1", "tx-1", at(500)).await.unwrap());
    // Committed when `enqueue` returns: another session sees the row.
    assert_eq!(
        server.psql(&format!("SELECT count(*) FROM {QUEUE_TABLE}")),
        "1\n"
    );
    assert!(queue.enqueue("app-2", "tx-2", at(1500)).await.unwrap());
    assert!(queue.enqueue("app-3", "tx 3\t:x", at(1600)).await.unwrap());
    // A second enqueue of one id changes nothing.
    assert!(!queue.enqueue("app-1", "tx-other", at(2500)).await.unwrap());
    assert_eq!(
        server.psql(&format!(
            "SELECT tax_id, status FROM {QUEUE_TABLE} WHERE application_id = 'app-1'"
        )),
        format!("tx-1|{QUEUED}\n")
    );
    assert_eq!(queue.ids().await.unwrap(), ["app-1", "app-2", "app-3"]);
    let counts = queue.count_by_status().await.unwrap();
    assert_eq!(counts, BTreeMap::from([(QUEUED.to_owned(), 3)]));
    assert_eq!(counts, sql_count_by_status(&server.url()).await);
    // Buckets of a second from `start`, by the time each row was queued at; a row before the
    // start is not counted, and one after the last bucket is counted in it.
    assert!(queue
        .enqueue("app-0", "tx-0", start - Duration::from_secs(1))
        .await
        .unwrap());
    assert!(queue.enqueue("app-9", "tx-9", at(9000)).await.unwrap());
    assert_eq!(
        queue
            .rows_per_bucket(start, Duration::from_secs(1), 3)
            .await
            .unwrap(),
        [1, 2, 1]
    );
    assert_eq!(
        queue
            .rows_per_bucket(start, Duration::from_millis(100), 20)
            .await
            .unwrap()
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (i, *n))
            .collect::<Vec<_>>(),
        [(5, 1), (15, 1), (16, 1), (19, 1)]
    );
}

#[tokio::test]
async fn a_503_leaves_no_row_even_when_the_insert_runs_after_the_timeout() {
    let server = PostgresServer::start();
    let config = StoreConfig {
        postgres_url: Some(server.url()),
        timeout: STORE_TIMEOUT,
        ..StoreConfig::default()
    };
    let queue = ReviewQueue::open(&config).await.expect("the queue opens");
    // Another session inserts the same id and holds its transaction open: the queue's INSERT
    // waits on it inside the server, past the store's timeout, and the application is a 503.
    let (holder, connection) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
        .await
        .expect("the test connects");
    let _connection = tokio::spawn(connection);
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute(
            &format!("INSERT INTO {QUEUE_TABLE} VALUES ('app-late', 'tx-other', 'HELD', now())"),
            &[],
        )
        .await
        .unwrap();
    let error = queue
        .enqueue("app-late", "tx-late", SystemTime::now())
        .await
        .expect_err("the INSERT waits past the timeout");
    assert!(error.to_string().contains("no answer within"), "{error}");
    // The other session rolls back: the waiting INSERT goes on in the server. Taking the
    // table's exclusive lock waits for every transaction on it to end, the late INSERT's
    // included. Its connection was dropped at the timeout, so the server rolls it back: the
    // 503 left no row.
    holder.batch_execute("ROLLBACK").await.unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {QUEUE_TABLE} IN ACCESS EXCLUSIVE MODE; COMMIT"
        ))
        .await
        .unwrap();
    assert_eq!(
        sql_count_by_status(&server.url()).await,
        BTreeMap::new(),
        "a row behind a 503"
    );
    // And the queue goes on: the same id, now free, is queued.
    assert!(queue
        .enqueue("app-late", "tx-late", SystemTime::now())
        .await
        .unwrap());
}

#[tokio::test]
async fn file_queue_commits_once_per_application_across_reopening() {
    let path = std::env::temp_dir().join(format!(
        "breaker_stores_file_queue_{}_{}.log",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let config = StoreConfig {
        queue_path: Some(path.clone()),
        ..StoreConfig::default()
    };
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let queue = ReviewQueue::open(&config).await.expect("the file opens");
    assert_eq!(queue.describe(), format!("the file {}", path.display()));
    assert!(queue.enqueue("app-1", "tx-1", start).await.unwrap());
    assert!(!queue.enqueue("app-1", "tx-1", start).await.unwrap());
    drop(queue);
    // Reopened (a restarted service): the ids already queued are still known, and a torn last
    // line (a crash mid-append, never answered 202) is cut off.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"app-torn\ttx"))
        .unwrap();
    let queue = ReviewQueue::open(&config).await.expect("the file reopens");
    assert!(!queue.enqueue("app-1", "tx-1", start).await.unwrap());
    assert_eq!(queue.ids().await.unwrap(), ["app-1"]);
    // The next line starts where the torn one did, on a line of its own.
    let later = start + Duration::from_millis(1500);
    assert!(queue.enqueue("app-2", "tx-2", later).await.unwrap());
    assert_eq!(queue.ids().await.unwrap(), ["app-1", "app-2"]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        format!(
            "app-1\ttx-1\t{QUEUED}\t1800000000000\n\
             app-2\ttx-2\t{QUEUED}\t1800000001500\n"
        )
    );
    assert_eq!(
        queue.count_by_status().await.unwrap(),
        BTreeMap::from([(QUEUED.to_owned(), 2)])
    );
    assert_eq!(
        queue
            .rows_per_bucket(start, Duration::from_secs(1), 2)
            .await
            .unwrap(),
        [1, 1]
    );
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn redis_cache_keeps_a_score_for_what_is_left_of_its_30_days() {
    let server = RedisServer::start();
    let config = StoreConfig {
        redis_url: Some(server.url()),
        timeout: Duration::from_secs(5),
        ..StoreConfig::default()
    };
    let cache = ScoreCache::open(&config).await.expect("the cache opens");
    assert_eq!(
        cache.describe(),
        format!(
            "Redis at 127.0.0.1:{}, keys credit_bureau:score:{{tax id}}",
            server.port()
        )
    );
    let now = SystemTime::now();
    let days = |n: u64| Duration::from_secs(n * DAY);

    // 29 days old: stored with a TTL of the day left, and returned with its age.
    cache.put("tx-29", 712, now - days(29)).await.unwrap();
    let key = "credit_bureau:score:tx-29";
    let fetched = (now - days(29))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert_eq!(server.get(key), Some(format!("712:{fetched}")));
    let ttl = server.pttl(key);
    assert!(
        ttl <= (DAY * 1000) as i64 && ttl > (DAY * 1000 - 60_000) as i64,
        "the TTL is what is left of the 30 days (one day), not {ttl} ms"
    );
    assert_eq!(cache.recent("tx-29", now).await.unwrap(), Some((712, 29)));
    // The reader checks the age itself: two days later the same key is too old.
    assert_eq!(cache.recent("tx-29", now + days(2)).await.unwrap(), None);

    // 31 days old: not stored at all.
    cache.put("tx-31", 650, now - days(31)).await.unwrap();
    assert_eq!(server.get("credit_bureau:score:tx-31"), None);
    assert_eq!(cache.recent("tx-31", now).await.unwrap(), None);
    assert_eq!(cache.recent("tx-none", now).await.unwrap(), None);

    // Fresh: a TTL of the whole 30 days.
    cache.put("tx-0", 801, now).await.unwrap();
    assert!(server.pttl("credit_bureau:score:tx-0") > (29 * DAY * 1000) as i64);
    assert_eq!(cache.recent("tx-0", now).await.unwrap(), Some((801, 0)));

    // Binary-safe: a tax id with a space, a colon and a newline is one key of its own, its
    // bytes as they are after the prefix.
    let odd = "a b:c\nd";
    cache.put(odd, 599, now).await.unwrap();
    match server.cmd_bytes(&[b"GET", b"credit_bureau:score:a b:c\nd"]) {
        Reply::Bulk(value) => assert!(value.starts_with(b"599:")),
        other => panic!("the odd tax id's key: {other:?}"),
    }
    assert_eq!(cache.recent(odd, now).await.unwrap(), Some((599, 0)));
    assert_eq!(cache.recent("a b", now).await.unwrap(), None);

    // A value that is not `score:seconds` is an error (the fallback counts it as a miss).
    server.cmd(&["SET", "credit_bureau:score:tx-bad", "high"]);
    let bad = cache.recent("tx-bad", now).await.unwrap_err().to_string();
    assert!(bad.contains("score cache (Redis at 127.0.0.1:"), "{bad}");

    // Hits per bucket, counted in Redis and read back from it.
    for bucket in [0, 2, 2, 5] {
        cache.count_hit(bucket).await.unwrap();
    }
    assert_eq!(cache.hits_per_bucket(4).await.unwrap(), [1, 0, 2, 0]);
    assert_eq!(server.command_calls("incrby"), 4, "one INCRBY per hit");
}

#[tokio::test]
async fn a_url_with_a_password_is_redacted_in_errors() {
    let port = RedisServer::unused_port();
    let postgres = StoreConfig {
        postgres_url: Some(format!(
            "postgres://breaker:s3cret-pw@127.0.0.1:{port}/postgres"
        )),
        timeout: Duration::from_secs(5),
        ..StoreConfig::default()
    };
    let error = ReviewQueue::open(&postgres).await.unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "the manual-review queue (PostgreSQL at 127.0.0.1:{port}/postgres) is unavailable: "
        )),
        "{error}"
    );
    assert!(!error.contains("s3cret-pw"), "{error}");
    assert!(!error.contains("breaker@"), "{error}");

    let redis = StoreConfig {
        redis_url: Some(format!("redis://user:s3cret-pw@127.0.0.1:{port}/0")),
        timeout: Duration::from_secs(5),
        ..StoreConfig::default()
    };
    let error = ScoreCache::open(&redis).await.unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "the score cache (Redis at 127.0.0.1:{port}/0) is unavailable: "
        )),
        "{error}"
    );
    assert!(!error.contains("s3cret-pw"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn store_operations_hold_the_paused_clock_still() {
    // The game day's test runs on Tokio's paused clock, which jumps to the next timer whenever
    // the runtime waits with nothing marked on the wire: a store operation the credit check
    // makes must be marked, or the clock jumps over its I/O and the run's durations become the
    // machine's.
    let postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let stores = StoreConfig {
        timeout: Duration::from_secs(5),
        ..real_stores(&postgres, &redis)
    };
    // Opening and seeding are marked too (as game.rs marks them), or the stores' own timeouts
    // would fire as the clock jumps.
    let wire = game::wire::Wire::new(true);
    let (queue, cache) = {
        let _io = wire.store_io();
        let queue = ReviewQueue::open(&stores).await.expect("the queue opens");
        let cache = ScoreCache::open(&stores).await.expect("the cache opens");
        cache
            .put("tx-cached", 700, SystemTime::now())
            .await
            .unwrap();
        (queue, cache)
    };
    // No bureau is asked: `shed` is the fallback alone (the cache, then the queue).
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let check = CreditCheck::new(nowhere, Duration::from_millis(25), queue, cache)
        .expect("a credit check")
        .with_wire(wire.clone());
    // A timer a millisecond away, always: the clock's next jump.
    let ticking = tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let start = Instant::now();
    for n in 0..20 {
        let app = Application {
            id: format!("held-{n:03}"),
            tax_id: format!("tx-{n}"),
            received: Instant::now(),
        };
        assert_eq!(check.shed(&app).await, Decision::Queued);
    }
    let returning = Application {
        id: "held-cached".to_owned(),
        tax_id: "tx-cached".to_owned(),
        received: Instant::now(),
    };
    assert!(matches!(
        check.shed(&returning).await,
        Decision::Cached { score: 700, .. }
    ));
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "the paused clock moved while the fallback's stores were asked"
    );
    assert_eq!(wire.gave_up(), 0);
    ticking.abort();
}

/// Installs the global registry once, from the example's file at the compressed scale (calls
/// cut off at 25 ms).
fn install_registry() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let registry = game::load_registry(
            Path::new(game::CONFIG_PATH),
            game::COMPRESSED_SCALE,
            Clock::system(),
        )
        .unwrap_or_else(|e| panic!("examples/credit_bureau.toml: {e}"));
        Registry::install_global(registry).expect("nothing used the global registry before");
    });
}

/// A bureau that fails: every credit report is a 500.
async fn failing_bureau() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().route(
        "/v2/credit-reports/{tax_id}",
        axum::routing::get(|| async { axum::http::StatusCode::INTERNAL_SERVER_ERROR }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("an address");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, server)
}

/// The loan service's credit check on `stores`, against a bureau that fails.
async fn failing_check(stores: &StoreConfig) -> (Arc<CreditCheck>, tokio::task::JoinHandle<()>) {
    install_registry();
    let (bureau, server) = failing_bureau().await;
    let queue = ReviewQueue::open(stores).await.expect("the queue opens");
    let cache = ScoreCache::open(stores).await.expect("the cache opens");
    let check =
        CreditCheck::new(bureau, Duration::from_millis(25), queue, cache).expect("a credit check");
    (Arc::new(check), server)
}

/// What each application of a batch was answered, by id.
type Answers = BTreeMap<String, Decision>;

/// Checks `count` applications at once, `{label}-{n}` with tax ids from `tax_id(n)`, and
/// returns each one's answer (a failing bureau never answers 200 or 4xx).
async fn batch(
    check: &Arc<CreditCheck>,
    label: &str,
    count: usize,
    tax_id: impl Fn(usize) -> String,
) -> Answers {
    let mut handlers = JoinSet::new();
    for n in 0..count {
        let check = check.clone();
        let app = Application {
            id: format!("{label}-{n:03}"),
            tax_id: tax_id(n),
            received: Instant::now(),
        };
        handlers.spawn(async move {
            let decision = check.check(&app).await;
            (app.id, decision)
        });
    }
    let mut answers = Answers::new();
    // The guard only ends a test that would hang: each operation is bounded by STORE_TIMEOUT.
    let joined = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(joined) = handlers.join_next().await {
            let (id, decision) = joined.expect("no handler panicked");
            let decision = decision.unwrap_or_else(|e| panic!("{id}: a 4xx from a 500? {e}"));
            assert!(
                !matches!(decision, Decision::Bureau { .. }),
                "{id}: the failing bureau answered"
            );
            answers.insert(id, decision);
        }
    })
    .await;
    joined.expect("the batch ended");
    answers
}

/// How many answers were `Queued`.
fn queued(answers: &Answers) -> usize {
    answers.values().filter(|d| **d == Decision::Queued).count()
}

/// The end of every fault test: each application is exactly one of a cached answer, a
/// committed row or a 503; the rows by status (the test's own SQL) are the 202 answers, and
/// the queue's ids are the 202'd ids, which are the ids the credit check counted as queued.
async fn check_accounting(
    label: &str,
    postgres: &PostgresServer,
    check: &CreditCheck,
    answers: &Answers,
) {
    let (mut cached, mut queued_ids, mut unavailable) = (0, BTreeSet::new(), 0);
    for (id, decision) in answers {
        match decision {
            Decision::Cached { .. } => cached += 1,
            Decision::Queued => {
                queued_ids.insert(id.clone());
            }
            Decision::Unavailable(_) => unavailable += 1,
            Decision::Bureau { .. } => unreachable!("checked in `batch`"),
        }
    }
    assert_eq!(cached + queued_ids.len() + unavailable, answers.len());
    let counts = sql_count_by_status(&postgres.url()).await;
    println!(
        "{label}: {} applications: {cached} cached, {} queued (202), {unavailable} unavailable (503); \
         rows by status: {counts:?}; cache errors: {}",
        answers.len(),
        queued_ids.len(),
        check
            .stats()
            .cache_errors
            .load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(
        counts,
        BTreeMap::from([(QUEUED.to_owned(), queued_ids.len() as u64)]),
        "the rows by status are not the 202 answers"
    );
    assert_eq!(sql_ids(&postgres.url()).await, queued_ids);
    let counted: BTreeSet<String> = game::loan::lock(&check.stats().queued_ids)
        .iter()
        .cloned()
        .collect();
    assert_eq!(counted, queued_ids, "queued ids counted and answered 202");
}

/// Every answer of `answers` is a 503 that names the queue in PostgreSQL, with `cause` in it.
fn all_unavailable(answers: &Answers, postgres: &PostgresServer, cause: &str) {
    let place = format!(
        "the manual-review queue (PostgreSQL at 127.0.0.1:{}/postgres) is unavailable: ",
        postgres.port()
    );
    for (id, decision) in answers {
        match decision {
            Decision::Unavailable(text) => {
                assert!(
                    text.starts_with(&place) && text.contains(cause),
                    "{id}: {text}"
                );
            }
            other => panic!("{id}: {other:?} with PostgreSQL down"),
        }
    }
}

#[tokio::test]
async fn redis_down_sends_every_application_straight_to_the_queue() {
    let postgres = PostgresServer::start();
    let mut redis = RedisServer::start();
    let (check, _bureau) = failing_check(&real_stores(&postgres, &redis)).await;
    let cached_tax_id = |n: usize| format!("ret-{n:03}");
    for n in 0..10 {
        check
            .cache()
            .put(&cached_tax_id(n), 700, SystemTime::now())
            .await
            .unwrap();
    }
    // Redis up: the returning applicants are answered from the cache, the others queued.
    let mut answers = batch(&check, "up", 20, |n| {
        if n < 10 {
            cached_tax_id(n)
        } else {
            format!("tx-{n}")
        }
    })
    .await;
    let cached = answers
        .values()
        .filter(|d| matches!(d, Decision::Cached { score: 700, .. }))
        .count();
    assert_eq!((cached, queued(&answers)), (10, 10), "{answers:?}");

    // Redis killed: every application, returning or not, goes straight to the queue, each
    // lookup counted as a cache error.
    redis.kill();
    let errors_before = check
        .stats()
        .cache_errors
        .load(std::sync::atomic::Ordering::SeqCst);
    let down = batch(&check, "down", 20, |n| {
        if n < 10 {
            cached_tax_id(n)
        } else {
            format!("tx-{n}")
        }
    })
    .await;
    assert_eq!(queued(&down), 20, "{down:?}");
    let errors = check
        .stats()
        .cache_errors
        .load(std::sync::atomic::Ordering::SeqCst)
        - errors_before;
    assert_eq!(errors, 20, "one cache error per lookup");
    answers.extend(down);
    check_accounting("Redis killed", &postgres, &check, &answers).await;
}

#[tokio::test]
async fn postgres_stopped_gives_503s_that_name_it_and_queuing_resumes_when_it_is_back() {
    let mut postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let (check, _bureau) = failing_check(&real_stores(&postgres, &redis)).await;
    let mut answers = batch(&check, "before", 20, |n| format!("tx-a{n}")).await;
    assert_eq!(queued(&answers), 20);

    // Stopped: connections refused, every application a 503 that names PostgreSQL.
    postgres.stop();
    let down = batch(&check, "stopped", 20, |n| format!("tx-b{n}")).await;
    all_unavailable(&down, &postgres, "");
    answers.extend(down);

    // Back: the pool replaces its closed connections, and queuing resumes.
    postgres.start_again();
    let back = batch(&check, "back", 20, |n| format!("tx-c{n}")).await;
    assert_eq!(queued(&back), 20, "{back:?}");
    answers.extend(back);
    check_accounting(
        "PostgreSQL stopped and started again",
        &postgres,
        &check,
        &answers,
    )
    .await;
}

#[tokio::test]
async fn postgres_stalled_gives_503s_within_the_store_timeout_and_queuing_resumes() {
    let postgres = PostgresServer::start();
    let redis = RedisServer::start();
    let (check, _bureau) = failing_check(&real_stores(&postgres, &redis)).await;
    let mut answers = batch(&check, "before", 20, |n| format!("tx-a{n}")).await;
    assert_eq!(queued(&answers), 20);

    // Paused: the port accepts connections and nothing answers. Every application is a 503
    // ended by the store's timeout (its text says so), none queued.
    postgres.pause();
    let stalled = batch(&check, "stalled", 20, |n| format!("tx-b{n}")).await;
    all_unavailable(
        &stalled,
        &postgres,
        &format!("no answer within {STORE_TIMEOUT:?}"),
    );
    answers.extend(stalled);

    // Resumed: the stalled connections were dropped, so what they had sent is rolled back;
    // new ones are made, and queuing resumes.
    postgres.resume();
    let back = batch(&check, "back", 20, |n| format!("tx-c{n}")).await;
    assert_eq!(queued(&back), 20, "{back:?}");
    answers.extend(back);
    check_accounting("PostgreSQL paused and resumed", &postgres, &check, &answers).await;
}
