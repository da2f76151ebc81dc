//! The staging game day (docs/GAME_DAY.md): the loan service calls a simulated credit bureau
//! (an axum server on 127.0.0.1, asked through reqwest, JSON both ways) through
//! `#[circuit_breaker(name = "credit_bureau_cb")]` and, inside it,
//! `#[bulkhead(name = "credit_bureau_cb")]`, at 220 applications a second over 200 workers,
//! while the bureau goes healthy -> a burst of bad tax ids (4xx) -> a 15 s brownout -> 5xx
//! errors -> recovery. The fallback answers from a cached score younger than 30 days, or
//! queues the application durably and answers 202.
//!
//! ```text
//! cargo run --example credit_bureau -- --compressed   # every duration / 100: about 3 s
//! cargo run --example credit_bureau                   # real time: 260 s
//! cargo run --example credit_bureau -- --no-bulkhead  # the same day, breaker alone
//! cargo run --example credit_bureau -- --retry option-a   # retried: three retries, no budget
//! cargo run --example credit_bureau -- --retry budget     # retried within the retry budget
//! ```
//!
//! `--retry` puts a retry around the breaker and the bulkhead (Spring's order, the fallback
//! outside it): `option-a` is the contract's rejected option A, "timeouts plus three retries",
//! and `budget` the same retries within the retry budget of examples/credit_bureau.toml;
//! `none`, the default, runs the day as it has always run. The report sets the bureau's
//! request rate during the brownout beside the rate of applications offered, for the retry
//! storm (docs/GAME_DAY.md).
//!
//! The configuration is examples/credit_bureau.toml (`--config PATH` for another file).
//! `CREDIT_BUREAU_COMPRESSED=1` is the same as `--compressed`.
//!
//! The fallback's parts are the contract's with `--postgres URL` (the manual-review queue as
//! the table `manual_underwriting_queue`, created if missing) and `--redis URL` (the score
//! cache), or `CREDIT_BUREAU_POSTGRES_URL` / `CREDIT_BUREAU_REDIS_URL`:
//!
//! ```text
//! cargo run --example credit_bureau -- --compressed \
//!     --postgres postgres://postgres@127.0.0.1:5432/postgres --redis redis://127.0.0.1:6379
//! ```
//!
//! Without them it runs on the embedded defaults, and says so when it starts: the queue in a
//! fresh file in the temp dir (`--queue PATH` to choose), fsync'd before each 202 and kept
//! after the run, and the cache in memory. `--store-timeout MS` bounds every store operation
//! (2000 ms).
//!
//! Beside the text report on stdout, the run is drawn as a timeline (breaker states, answers
//! per second, latency, the brownout) in a self-contained HTML file: `credit_bureau_report.html`
//! in the current directory, or `--html PATH`.
//!
//! `--rate N` changes the 220 applications a second. Compressed mode scales time but keeps
//! the rate, so it also divides the calls in flight by 100 (220/s x 25 ms is ~6, not 220/s x
//! 2.5 s = 550): the worker-pool numbers mean something only in real time (or with
//! `--compressed --rate 22000`, if the machine can open that many loopback connections).

mod game;

use std::path::PathBuf;
use std::process::exit;
use std::time::Duration;

use breaker::{Clock, Registry};

fn main() {
    // The fleet game day's two subcommands (docs/GAME_DAY.md, "The fleet").
    match std::env::args().nth(1).as_deref() {
        Some("replica") => exit(game::fleet::replica_main(std::env::args().skip(2))),
        Some("fleet") => exit(game::fleet::fleet_main(std::env::args().skip(2))),
        _ => {}
    }
    let mut compressed = std::env::var("CREDIT_BUREAU_COMPRESSED").is_ok_and(|v| v == "1");
    let mut config = PathBuf::from(game::CONFIG_PATH);
    let mut queue = None;
    let mut stores = game::store::StoreConfig {
        postgres_url: std::env::var("CREDIT_BUREAU_POSTGRES_URL").ok(),
        redis_url: std::env::var("CREDIT_BUREAU_REDIS_URL").ok(),
        queue_path: None,
        timeout: game::store::DEFAULT_TIMEOUT,
    };
    let mut html = PathBuf::from(game::picture::DEFAULT_FILE);
    let mut rate = 220;
    let mut bulkhead = true;
    let mut retry = game::RetryMode::None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--compressed" => compressed = true,
            "--no-bulkhead" => bulkhead = false,
            "--retry" => match args.next().as_deref().and_then(game::RetryMode::parse) {
                Some(mode) => retry = mode,
                None => {
                    eprintln!("--retry needs one of: none, option-a, budget");
                    exit(2);
                }
            },
            "--rate" => match args.next().and_then(|v| v.parse::<u32>().ok()) {
                Some(r) if r > 0 => rate = r,
                _ => {
                    eprintln!("--rate needs a whole number of applications per second above 0");
                    exit(2);
                }
            },
            "--postgres" | "--redis" => {
                let Some(url) = args.next() else {
                    eprintln!("{arg} needs a URL");
                    exit(2);
                };
                match arg.as_str() {
                    "--postgres" => stores.postgres_url = Some(url),
                    _ => stores.redis_url = Some(url),
                }
            }
            "--store-timeout" => match args.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(ms) if ms > 0 => stores.timeout = Duration::from_millis(ms),
                _ => {
                    eprintln!("--store-timeout needs a whole number of milliseconds above 0");
                    exit(2);
                }
            },
            "--config" | "--queue" | "--html" => {
                let Some(value) = args.next() else {
                    eprintln!("{arg} needs a path");
                    exit(2);
                };
                match arg.as_str() {
                    "--config" => config = value.into(),
                    "--queue" => queue = Some(PathBuf::from(value)),
                    _ => html = value.into(),
                }
            }
            other => {
                eprintln!("unknown argument `{other}`; expected --compressed, --no-bulkhead, --retry MODE, --rate N, --postgres URL, --redis URL, --store-timeout MS, --config PATH, --queue PATH, --html PATH");
                exit(2);
            }
        }
    }
    if !bulkhead && retry != game::RetryMode::None {
        // The retried call is written once, around the breaker and the bulkhead.
        eprintln!(
            "--retry {} runs with the bulkhead: drop --no-bulkhead",
            retry.key()
        );
        exit(2);
    }
    let scale = if compressed {
        game::COMPRESSED_SCALE
    } else {
        1.0
    };
    let registry = match game::load_registry(&config, scale, Clock::system()) {
        Ok(registry) => registry,
        Err(err) => {
            eprintln!("{err}");
            exit(1);
        }
    };
    if Registry::install_global(registry).is_err() {
        eprintln!("the global breaker registry was already in use");
        exit(1);
    }
    if stores.postgres_url.is_none() {
        stores.queue_path = Some(queue.unwrap_or_else(game::store::fresh_queue_path));
    }
    let options = game::Options {
        scale,
        rate,
        workers: 200,
        bulkhead,
        retry,
        stores,
        paused_clock: false,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cannot start the Tokio runtime: {err}");
            exit(1);
        }
    };
    match runtime.block_on(open_and_run(&options)) {
        Ok(report) => {
            println!("{report}");
            let drawn = game::picture::write_html(&report, &html);
            match &drawn {
                Ok(()) => println!("picture of the run:       {}", html.display()),
                Err(err) => eprintln!("cannot write the picture to {}: {err}", html.display()),
            }
            if report.lost() > 0 || !report.queue_matches {
                exit(3);
            }
            if drawn.is_err() {
                exit(1);
            }
        }
        Err(err) => {
            eprintln!("game day failed: {err}");
            exit(1);
        }
    }
}

/// Opens the fallback's queue and cache, says which they are, and runs the game day on them.
async fn open_and_run(options: &game::Options) -> Result<game::Report, String> {
    let stores = &options.stores;
    let queue = game::store::ReviewQueue::open(stores)
        .await
        .map_err(|e| e.to_string())?;
    let cache = game::store::ScoreCache::open(stores)
        .await
        .map_err(|e| e.to_string())?;
    let default = |given: &Option<String>, flag: &str, part: &str| {
        if given.is_some() {
            String::new()
        } else {
            format!(" (embedded default; {flag} URL for {part})")
        }
    };
    println!(
        "manual-review queue: {}{}",
        queue.describe(),
        default(&stores.postgres_url, "--postgres", "PostgreSQL")
    );
    println!(
        "score cache:         {}{}",
        cache.describe(),
        default(&stores.redis_url, "--redis", "Redis")
    );
    game::run_on(options, queue, cache)
        .await
        .map_err(|e| e.to_string())
}
