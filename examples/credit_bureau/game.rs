//! The game day itself (shared by the example and tests/game_day.rs): configuration, the bureau
//! simulator, the loan service, the load generator, the report and its timeline (drawn by
//! `picture.rs`).

#[path = "bureau.rs"]
pub(crate) mod bureau;
#[path = "fleet.rs"]
pub(crate) mod fleet;
#[path = "fleet_picture.rs"]
pub(crate) mod fleet_picture;
#[path = "loan.rs"]
pub(crate) mod loan;
#[path = "picture.rs"]
pub(crate) mod picture;
#[path = "service.rs"]
pub(crate) mod service;
#[path = "store.rs"]
pub(crate) mod store;
#[path = "wire.rs"]
pub(crate) mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use breaker::{Clock, ConfigError, EventKind, LoadError, Registry, RetryEventKind, State};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use bureau::{Behaviour, Bureau, Script};
use loan::{
    lock, Application, CreditCheck, Decision, FallbackCause, RunClock, BREAKER, BULKHEAD, RETRY,
    RETRY_OPTION_A,
};
use store::{ReviewQueue, ScoreCache, StoreConfig, QUEUED};
use wire::Wire;

/// examples/credit_bureau.toml, wherever the command runs from.
pub(crate) const CONFIG_PATH: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/credit_bureau.toml");

/// `--compressed`: every duration (the script's, the breaker's and the bulkhead's) times 1/100,
/// and the bulkhead's limit with them (see [`load_registry`]).
pub(crate) const COMPRESSED_SCALE: f64 = 0.01;

/// Why the configuration could not be set up.
#[derive(Debug)]
pub(crate) enum SetupError {
    /// The file did not load.
    Load(LoadError),
    /// The scaled configuration was rejected.
    Config(ConfigError),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::Load(e) => e.fmt(f),
            SetupError::Config(e) => write!(f, "scaled configuration: {e}"),
        }
    }
}

/// How the loan service retries its calls to the bureau (`--retry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryMode {
    /// No retry: the game day as it has always run (the default, so earlier runs stay
    /// reproducible).
    None,
    /// The contract's rejected option A: the file's retry (three retries) without a budget.
    OptionA,
    /// The file's retry with its budget.
    Budget,
}

impl RetryMode {
    /// Every mode, in the order `--retry` lists them.
    pub(crate) const ALL: [RetryMode; 3] = [RetryMode::None, RetryMode::OptionA, RetryMode::Budget];

    /// Its `--retry` value.
    pub(crate) fn key(self) -> &'static str {
        match self {
            RetryMode::None => "none",
            RetryMode::OptionA => "option-a",
            RetryMode::Budget => "budget",
        }
    }

    /// The retry its calls go through: [`RETRY`] with the file's budget, [`RETRY_OPTION_A`]
    /// without one.
    pub(crate) fn retry_name(self) -> Option<&'static str> {
        match self {
            RetryMode::None => None,
            RetryMode::OptionA => Some(RETRY_OPTION_A),
            RetryMode::Budget => Some(RETRY),
        }
    }

    /// The mode a `--retry` value names, if any.
    pub(crate) fn parse(value: &str) -> Option<RetryMode> {
        RetryMode::ALL.into_iter().find(|mode| mode.key() == value)
    }
}

/// The registry for the game day: the breaker, the bulkhead and the retry `credit_bureau_cb`
/// from the TOML file, with every duration multiplied by `scale`, and the bulkhead's
/// `max-concurrent-calls` too, rounded up; and the retry [`RETRY_OPTION_A`], the file's retry
/// without its budget. Both retries are always there, so one registry serves every
/// [`RetryMode`] (a test runs them all in one process, on the one global registry).
///
/// One file, scaled in code, rather than a second "compressed" file: the two runs then differ
/// only in time, never in a threshold someone forgot to copy. The bulkhead's limit scales with
/// time because it is sized by Little's law (docs/CREDIT_BUREAU.md §1): calls in flight are the
/// rate times the bureau's latency, and a compressed run keeps the rate and divides the
/// latency by 100 (120 places become 2). The worker pool is not scaled: it is the loan
/// service's, and its numbers mean something only in real time (docs/GAME_DAY.md).
///
/// The retry's waits scale like every duration; its `budget-window` too, but never below the
/// key's 1 s minimum; its `budget-min-retries-per-second` is a rate, like the applications a
/// second, which a compressed run keeps.
///
/// The registry runs on `clock`: [`Clock::system`] for the example, a manual clock that
/// follows Tokio's paused one for tests/game_day.rs.
pub(crate) fn load_registry(
    path: &Path,
    scale: f64,
    clock: impl Into<Clock>,
) -> Result<Registry, SetupError> {
    let mut builder = Registry::builder();
    for kind in loan::error_kinds() {
        builder = builder.error_kind(kind);
    }
    let file = builder.load_file(path).map_err(SetupError::Load)?.build();
    let config = file.config_for(BREAKER);
    let scaled = config
        .to_builder()
        .slow_call_duration_threshold(config.slow_call_duration_threshold().mul_f64(scale))
        .wait_duration_in_open_state(config.wait_duration_in_open_state().mul_f64(scale))
        .max_wait_duration_in_half_open_state(
            config.max_wait_duration_in_half_open_state().mul_f64(scale),
        )
        .timeout_duration(config.timeout_duration().map(|d| d.mul_f64(scale)))
        .build()
        .map_err(SetupError::Config)?;
    let bulkhead = file.bulkhead_config_for(BULKHEAD);
    let places = (f64::from(bulkhead.max_concurrent_calls()) * scale).ceil();
    let scaled_bulkhead = bulkhead
        .to_builder()
        .max_concurrent_calls(places.clamp(1.0, f64::from(u32::MAX)) as u32)
        .max_wait_duration(bulkhead.max_wait_duration().mul_f64(scale))
        .build()
        .map_err(SetupError::Config)?;
    let retry_config = file.retry_config_for(RETRY);
    let scaled_retry = retry_config
        .to_builder()
        .wait_duration(retry_config.wait_duration().mul_f64(scale))
        .exponential_max_wait_duration(
            retry_config
                .exponential_max_wait_duration()
                .map(|d| d.mul_f64(scale)),
        )
        .budget_window(
            retry_config
                .budget_window()
                .mul_f64(scale)
                .max(Duration::from_secs(1)),
        )
        .build()
        .map_err(SetupError::Config)?;
    let option_a = scaled_retry
        .to_builder()
        .budget_enabled(false)
        .build()
        .map_err(SetupError::Config)?;
    Ok(Registry::builder()
        .clock(clock)
        .instance(BREAKER, scaled)
        .bulkhead_instance(BULKHEAD, scaled_bulkhead)
        .retry_instance(RETRY, scaled_retry)
        .retry_instance(RETRY_OPTION_A, option_a)
        .build())
}

/// How to run the game day.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// 1.0 for real time, [`COMPRESSED_SCALE`] for `--compressed`.
    pub(crate) scale: f64,
    /// Applications per second (docs/CREDIT_BUREAU.md: 220), in either mode.
    pub(crate) rate: u32,
    /// The worker pool (docs/CREDIT_BUREAU.md: 200).
    pub(crate) workers: usize,
    /// Whether the bureau's calls go through the bulkhead (`--no-bulkhead`: not).
    pub(crate) bulkhead: bool,
    /// Whether they are retried, and with or without the budget (`--retry`).
    pub(crate) retry: RetryMode,
    /// The fallback's queue and cache: PostgreSQL and Redis, or the embedded defaults (the
    /// queue file, the in-process cache).
    pub(crate) stores: StoreConfig,
    /// Whether the run is on Tokio's paused clock (tests/game_day.rs): then whatever is on its
    /// way between the client and the bureau holds the clock still (wire.rs).
    pub(crate) paused_clock: bool,
}

/// One state transition, as the event stream told it.
#[derive(Clone, Debug)]
pub(crate) struct Transition {
    /// Since the game day started.
    pub(crate) at: Duration,
    /// The state left.
    pub(crate) from: State,
    /// The state entered.
    pub(crate) to: State,
    /// The client's socket counter at that moment.
    pub(crate) sockets_opened: u64,
}

/// The bulkhead a run's calls went through, as configured (scaled).
#[derive(Clone, Debug)]
pub(crate) struct BulkheadSetting {
    /// Its name.
    pub(crate) name: String,
    /// `max-concurrent-calls`: the most calls to the bureau under way at once.
    pub(crate) max_concurrent_calls: u32,
    /// `max-wait-duration`: how long a call waits for a place before it is refused.
    pub(crate) max_wait_duration: Duration,
}

/// The retry a run's calls went through, as configured (scaled), and what it did.
#[derive(Clone, Debug)]
pub(crate) struct RetrySetting {
    /// Its name.
    pub(crate) name: String,
    /// `--retry`.
    pub(crate) mode: RetryMode,
    /// `max-attempts`: attempts in all, the first included.
    pub(crate) max_attempts: u32,
    /// `wait-duration`: the wait before each retry.
    pub(crate) wait: Duration,
    /// The budget's `budget-ratio`, `budget-window` and `budget-min-retries-per-second`, if
    /// the budget is on.
    pub(crate) budget: Option<(f64, Duration, u32)>,
    /// Retries made (the retry's RETRY events).
    pub(crate) retries: u64,
    /// Retries the budget refused (the retry's BUDGET_EXHAUSTED events).
    pub(crate) refused_by_budget: u64,
}

/// What the game day measured.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The breaker's name.
    pub(crate) breaker_name: String,
    /// The time scale (1.0 = real time).
    pub(crate) scale: f64,
    /// Applications per second the load generator aimed at.
    pub(crate) rate: u32,
    /// The worker pool's size.
    pub(crate) workers: usize,
    /// The bulkhead the calls went through, if any.
    pub(crate) bulkhead: Option<BulkheadSetting>,
    /// The retry the calls went through, if any.
    pub(crate) retry: Option<RetrySetting>,
    /// When the run started, on the wall clock (for the picture's title).
    pub(crate) started: SystemTime,
    /// How long the run took, on its own clock (Tokio's): until the last application was
    /// answered.
    pub(crate) ended: Duration,
    /// The phases: name and length.
    pub(crate) phases: Vec<(&'static str, Duration)>,
    /// Applications sent.
    pub(crate) requests: u64,
    /// Answered with the bureau's score.
    pub(crate) bureau_answers: u64,
    /// Answered with a cached score.
    pub(crate) cached: u64,
    /// Answered 202 and queued.
    pub(crate) queued: u64,
    /// Answered 4xx (bad tax id).
    pub(crate) client_errors: u64,
    /// Answered 503 because the queue was unavailable (not captured).
    pub(crate) unavailable: u64,
    /// Refused because no worker was free.
    pub(crate) workers_exhausted: u64,
    /// Of those, answered by the fallback (a cached score or a queued 202).
    pub(crate) shed_answered: u64,
    /// Handler tasks that panicked or never finished.
    pub(crate) crashed: u64,
    /// Fallbacks by cause (indexed in the order of [`FallbackCause::ALL`]).
    pub(crate) fallbacks: [u64; FallbackCause::ALL.len()],
    /// Timed-out calls whose request was still under way when their fallback ran.
    pub(crate) timeouts_outlived: u64,
    /// The most workers ever busy at once.
    pub(crate) max_busy_workers: usize,
    /// The most requests to the bureau ever under way at once: the most workers the bureau
    /// held.
    pub(crate) max_bureau_held: usize,
    /// The state transitions.
    pub(crate) transitions: Vec<Transition>,
    /// Total time spent OPEN.
    pub(crate) time_open: Duration,
    /// Fail-fast latencies (received -> fallback) of refused calls, sorted.
    pub(crate) fail_fast: Vec<Duration>,
    /// Sockets opened while OPEN (between a transition to OPEN and the next transition).
    pub(crate) sockets_while_open: u64,
    /// Requests the bureau received.
    pub(crate) bureau_hits: u64,
    /// Of those, the ones whose client hung up before the bureau answered (cancelled calls).
    pub(crate) bureau_abandoned: u64,
    /// Calls the breaker recorded as ignored errors (the 4xx).
    pub(crate) ignored_errors: u64,
    /// Recorded calls that took longer than `slow-call-duration-threshold`, as the events
    /// reported them.
    pub(crate) slow_calls: u64,
    /// Times the breaker reported its slow-call rate at or above the threshold.
    pub(crate) slow_rate_exceeded: u64,
    /// When the brownout started, after the start.
    pub(crate) brownout_start: Duration,
    /// When the brownout ended, after the start.
    pub(crate) brownout_end: Duration,
    /// The configuration's `timeout-duration` (scaled), what cancels a call.
    pub(crate) timeout: Duration,
    /// The configuration's `slow-call-duration-threshold` (scaled).
    pub(crate) slow_threshold: Duration,
    /// The breaker's state when the run started.
    pub(crate) initial_state: State,
    /// The breaker's state at the end.
    pub(crate) final_state: State,
    /// Where the manual-review queue was (store.rs's `describe`).
    pub(crate) queue_place: String,
    /// Where the score cache was.
    pub(crate) cache_place: String,
    /// The rows this run added to the queue, by status, read from the queue itself
    /// (`SELECT status, count(*) ... GROUP BY status` after the run, less the same before it:
    /// a table in PostgreSQL may hold earlier runs' rows).
    pub(crate) queue_counts: BTreeMap<String, u64>,
    /// This run's application ids in the queue after the run.
    pub(crate) queue_rows: usize,
    /// The ids of the applications answered 202 (tests/game_day.rs holds the table to them).
    #[allow(dead_code)]
    pub(crate) queued_ids: BTreeSet<String>,
    /// Whether the queue holds exactly the applications answered 202, and its count of
    /// [`QUEUED`] rows added equals the 202 answers.
    pub(crate) queue_matches: bool,
    /// Rows queued per bucket of the timeline, read from the queue by the time each was
    /// queued at (PostgreSQL's `queued_at`).
    pub(crate) queue_rows_per_bucket: Vec<u64>,
    /// Cache hits per bucket of the timeline, read back from the cache (Redis's counters).
    pub(crate) cache_hits_per_bucket: Vec<u64>,
    /// Cache operations that failed (each lookup among them answered as a miss).
    pub(crate) cache_errors: u64,
    /// The run second by second, for the picture.
    pub(crate) timeline: Timeline,
    /// On Tokio's paused clock, the times the clock was let move with a request still on its
    /// way (wire.rs): 0 when every duration of the run was its own.
    pub(crate) wire_gave_up: u64,
}

impl Report {
    /// Applications that got no answer of their own: not the bureau's, a cached score, a
    /// queued 202 or a 4xx.
    pub(crate) fn lost(&self) -> u64 {
        self.requests
            - (self.bureau_answers + self.cached + self.queued + self.client_errors)
                .min(self.requests)
    }

    /// Whether a HALF_OPEN -> CLOSED transition was seen.
    pub(crate) fn recovered_through_half_open(&self) -> bool {
        self.transitions
            .iter()
            .any(|t| t.from == State::HalfOpen && t.to == State::Closed)
    }

    /// The fallbacks for `cause`.
    pub(crate) fn fallback(&self, cause: FallbackCause) -> u64 {
        self.fallbacks[cause as usize]
    }

    /// When the breaker first went from CLOSED to OPEN, since the start.
    pub(crate) fn first_open(&self) -> Option<Duration> {
        self.transitions
            .iter()
            .find(|t| t.from == State::Closed && t.to == State::Open)
            .map(|t| t.at)
    }

    /// Whether the breaker opened before the brownout (that is, because of the 4xx burst).
    pub(crate) fn opened_before_brownout(&self) -> bool {
        self.transitions
            .iter()
            .any(|t| t.to == State::Open && t.at < self.brownout_start)
    }

    /// The bureau's request rate beside the rate the loan service was offered, over the
    /// seconds of the timeline that lie wholly inside the brownout.
    pub(crate) fn brownout_rates(&self) -> BrownoutRates {
        let width = self.timeline.width().as_secs_f64();
        let first = (self.brownout_start.as_secs_f64() / width).ceil() as usize;
        let end = (self.brownout_end.as_secs_f64() / width).floor() as usize;
        let buckets = self.timeline.buckets();
        let inside = &buckets[first.min(buckets.len())..end.min(buckets.len())];
        let per_second = |n: u32| f64::from(n) / width;
        let mean = |of: fn(&Bucket) -> u32| {
            let sum: f64 = inside.iter().map(|b| f64::from(of(b))).sum();
            sum / (inside.len().max(1) as f64 * width)
        };
        let peak =
            |of: fn(&Bucket) -> u32| inside.iter().map(|b| per_second(of(b))).fold(0.0, f64::max);
        BrownoutRates {
            seconds: inside.len(),
            offered_mean: mean(|b| b.sent),
            offered_peak: peak(|b| b.sent),
            bureau_mean: mean(|b| b.bureau_hits),
            bureau_peak: peak(|b| b.bureau_hits),
        }
    }

    /// The `p`-th percentile (0..=100) of the fail-fast latencies.
    pub(crate) fn fail_fast_percentile(&self, p: f64) -> Option<Duration> {
        let n = self.fail_fast.len();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        self.fail_fast.get(rank.clamp(1, n) - 1).copied()
    }
}

/// The bureau's request rate during the brownout beside the rate of applications offered to
/// the loan service, per second of the run's own clock (compressed runs keep the rate, so
/// their figures read like the real-time run's).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BrownoutRates {
    /// The seconds of the script counted (those wholly inside the brownout).
    pub(crate) seconds: usize,
    /// Applications offered per second, on average.
    pub(crate) offered_mean: f64,
    /// Applications offered in the busiest second.
    pub(crate) offered_peak: f64,
    /// Requests the bureau received per second, on average (every attempt counts).
    pub(crate) bureau_mean: f64,
    /// Requests the bureau received in its busiest second.
    pub(crate) bureau_peak: f64,
}

impl BrownoutRates {
    /// The bureau's mean rate over the offered mean rate (0 when nothing was offered).
    pub(crate) fn mean_ratio(&self) -> f64 {
        ratio(self.bureau_mean, self.offered_mean)
    }

    /// The bureau's peak second over the offered mean rate (0 when nothing was offered).
    pub(crate) fn peak_ratio(&self) -> f64 {
        ratio(self.bureau_peak, self.offered_mean)
    }
}

/// `a / b`, or 0 when `b` is 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Prints a duration in the run's own time and, if compressed, in real time too.
struct Scaled(Duration, f64);

impl fmt::Display for Scaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_secs_f64() * 1000.0;
        if self.1 == 1.0 {
            write!(f, "{ms:.1} ms")
        } else {
            write!(f, "{ms:.1} ms (= {:.1} s real time)", ms / self.1 / 1000.0)
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |d: Option<Duration>| match d {
            Some(d) => format!("{:.0} us", d.as_secs_f64() * 1e6),
            None => "n/a".to_owned(),
        };
        writeln!(
            f,
            "== credit bureau game day (time scale {}) ==",
            self.scale
        )?;
        write!(f, "phases:")?;
        for (name, length) in &self.phases {
            write!(f, " {name} {:.0} ms;", length.as_secs_f64() * 1000.0)?;
        }
        writeln!(f)?;
        match &self.bulkhead {
            Some(b) => writeln!(
                f,
                "bulkhead:                 {}, max-concurrent-calls {}, max-wait-duration {:.0} ms",
                b.name,
                b.max_concurrent_calls,
                b.max_wait_duration.as_secs_f64() * 1000.0
            )?,
            None => writeln!(f, "bulkhead:                 none (--no-bulkhead)")?,
        }
        match &self.retry {
            Some(r) => {
                let budget = r.budget.map_or_else(
                    || "no budget".to_owned(),
                    |(ratio, window, floor)| {
                        format!(
                            "budget {ratio} x calls over {:.0} ms + {floor}/s",
                            window.as_secs_f64() * 1000.0
                        )
                    },
                );
                writeln!(
                    f,
                    "retry:                    {} (--retry {}), max-attempts {}, wait {:.0} ms, {budget}; \
                     {} retries made, {} refused by the budget",
                    r.name,
                    r.mode.key(),
                    r.max_attempts,
                    r.wait.as_secs_f64() * 1000.0,
                    r.retries,
                    r.refused_by_budget
                )?
            }
            None => writeln!(f, "retry:                    none (--retry none)")?,
        }
        writeln!(f, "applications sent:        {}", self.requests)?;
        writeln!(f, "  bureau answer (200):    {}", self.bureau_answers)?;
        writeln!(f, "  cached fallback (200):  {}", self.cached)?;
        writeln!(f, "  queued (202):           {}", self.queued)?;
        writeln!(f, "  4xx answered:           {}", self.client_errors)?;
        writeln!(f, "  503 queue unavailable:  {}", self.unavailable)?;
        writeln!(
            f,
            "  no free worker:         {} ({} answered by the fallback, counted above)",
            self.workers_exhausted, self.shed_answered
        )?;
        writeln!(f, "  handler crashed:        {}", self.crashed)?;
        write!(f, "fallback causes:         ")?;
        for (i, cause) in FallbackCause::ALL.iter().enumerate() {
            let separator = if i == 0 { "" } else { "," };
            write!(f, "{separator} {} {}", cause.label(), self.fallback(*cause))?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "timed out, request still running at the fallback: {}",
            self.timeouts_outlived
        )?;
        writeln!(f, "transitions (from the event stream):")?;
        for t in &self.transitions {
            writeln!(
                f,
                "  {:>9.1} ms  {} -> {}",
                t.at.as_secs_f64() * 1000.0,
                t.from,
                t.to
            )?;
        }
        match self.first_open() {
            Some(at) if at >= self.brownout_start => writeln!(
                f,
                "breaker first opened:     {}, {} after the brownout started",
                Scaled(at, self.scale),
                Scaled(at - self.brownout_start, self.scale)
            )?,
            Some(at) => writeln!(
                f,
                "breaker first opened:     {}, before the brownout",
                Scaled(at, self.scale)
            )?,
            None => writeln!(f, "breaker first opened:     never")?,
        }
        writeln!(
            f,
            "time OPEN:                {}",
            Scaled(self.time_open, self.scale)
        )?;
        writeln!(
            f,
            "fail-fast while OPEN:     n={} p50={} p99={} max={}",
            self.fail_fast.len(),
            us(self.fail_fast_percentile(50.0)),
            us(self.fail_fast_percentile(99.0)),
            us(self.fail_fast.last().copied()),
        )?;
        writeln!(
            f,
            "max workers busy:         {} of the pool of {}",
            self.max_busy_workers, self.workers
        )?;
        let limit = self.bulkhead.as_ref().map_or_else(
            || "no bulkhead".to_owned(),
            |b| format!("the bulkhead allows {}", b.max_concurrent_calls),
        );
        writeln!(
            f,
            "max held by the bureau:   {} workers at once ({limit})",
            self.max_bureau_held
        )?;
        writeln!(
            f,
            "bureau requests received: {} (the client hung up on {} before the answer)",
            self.bureau_hits, self.bureau_abandoned
        )?;
        let storm = self.brownout_rates();
        writeln!(
            f,
            "bureau rate in brownout:  peak {:.0}/s ({:.2} x offered), mean {:.1}/s ({:.2} x \
             offered {:.1}/s; offered peak {:.0}/s), over {} s of script",
            storm.bureau_peak,
            storm.peak_ratio(),
            storm.bureau_mean,
            storm.mean_ratio(),
            storm.offered_mean,
            storm.offered_peak,
            storm.seconds
        )?;
        writeln!(
            f,
            "slow calls recorded:      {} (slow-call rate exceeded {} times)",
            self.slow_calls, self.slow_rate_exceeded
        )?;
        writeln!(f, "sockets opened while OPEN: {}", self.sockets_while_open)?;
        writeln!(
            f,
            "4xx ignored by breaker:   {} (opened during 4xx burst: {})",
            self.ignored_errors,
            self.opened_before_brownout()
        )?;
        writeln!(
            f,
            "final state:              {} (HALF_OPEN -> CLOSED seen: {})",
            self.final_state,
            self.recovered_through_half_open()
        )?;
        writeln!(f, "manual-review queue:      {}", self.queue_place)?;
        write!(f, "  rows added by status:  ")?;
        if self.queue_counts.is_empty() {
            write!(f, " none")?;
        }
        for (status, count) in &self.queue_counts {
            write!(f, " {status} {count}")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "  this run's rows:        {}, exactly the 202 answers: {}",
            self.queue_rows, self.queue_matches
        )?;
        // One bucket of the timeline is one second of the script.
        writeln!(
            f,
            "  rows by queued_at:      {} in the busiest second of script",
            self.queue_rows_per_bucket.iter().max().unwrap_or(&0)
        )?;
        writeln!(f, "score cache:              {}", self.cache_place)?;
        writeln!(
            f,
            "  hits read back:         {} (cache errors, answered as misses: {})",
            self.cache_hits_per_bucket.iter().sum::<u64>(),
            self.cache_errors
        )?;
        if self.wire_gave_up > 0 {
            writeln!(
                f,
                "paused clock let move with a request on its way: {} times",
                self.wire_gave_up
            )?;
        }
        write!(
            f,
            "applications lost:        {}{}",
            self.lost(),
            if self.lost() == 0 && self.queue_matches {
                " (none)"
            } else {
                " (LOST!)"
            }
        )
    }
}

/// How an application was answered, as the report counts it: every application ends in
/// exactly one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The bureau's own score.
    BureauAnswer,
    /// A cached score younger than 30 days (the fallback).
    Cached,
    /// Queued for manual review and answered 202 (the fallback).
    Queued,
    /// The bureau's 4xx, handed back to the applicant.
    ClientError,
    /// 503: the queue was unavailable.
    Unavailable,
    /// The handler panicked or never finished.
    Crashed,
}

impl Outcome {
    /// Every outcome, in the order the report prints them (and the picture stacks them).
    pub(crate) const ALL: [Outcome; 6] = [
        Outcome::BureauAnswer,
        Outcome::Cached,
        Outcome::Queued,
        Outcome::ClientError,
        Outcome::Unavailable,
        Outcome::Crashed,
    ];

    /// The report's name for it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Outcome::BureauAnswer => "bureau answer (200)",
            Outcome::Cached => "cached fallback (200)",
            Outcome::Queued => "queued (202)",
            Outcome::ClientError => "4xx answered",
            Outcome::Unavailable => "503 queue unavailable",
            Outcome::Crashed => "handler crashed",
        }
    }

    /// A short key for it (the picture's data attributes).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Outcome::BureauAnswer => "bureau",
            Outcome::Cached => "cached",
            Outcome::Queued => "queued",
            Outcome::ClientError => "client-error",
            Outcome::Unavailable => "unavailable",
            Outcome::Crashed => "crashed",
        }
    }

    fn of(decision: &Decision) -> Outcome {
        match decision {
            Decision::Bureau { .. } => Outcome::BureauAnswer,
            Decision::Cached { .. } => Outcome::Cached,
            Decision::Queued => Outcome::Queued,
            Decision::Unavailable(_) => Outcome::Unavailable,
        }
    }
}

/// Bins per doubling of a [`Histogram`]: 8, so a bin is at most 1/8 of its lower bound wide
/// and its midpoint is within 6.25 % of any latency in it.
const BINS_PER_DOUBLING: u32 = 8;
/// The first doubling binned: 2^10 ns (about 1 µs); everything below is one bin.
const FIRST_EXPONENT: u32 = 10;
/// The end of the last doubling: 2^37 ns (about 137 s); everything above is in the last bin.
const LAST_EXPONENT: u32 = 37;
/// The number of bins: one for below 1 µs, then 8 per doubling up to 137 s.
const HISTOGRAM_BINS: usize = 1 + ((LAST_EXPONENT - FIRST_EXPONENT) * BINS_PER_DOUBLING) as usize;

/// Latencies as counts in fixed, log-spaced bins: 217 counters whatever the number of
/// latencies, so a bucket of the timeline has the same size at any rate.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: [u32; HISTOGRAM_BINS],
}

impl Histogram {
    /// An empty histogram.
    pub(crate) fn new() -> Histogram {
        Histogram {
            counts: [0; HISTOGRAM_BINS],
        }
    }

    fn bin_of(latency: Duration) -> usize {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        if ns < 1 << FIRST_EXPONENT {
            return 0;
        }
        let exponent = 63 - ns.leading_zeros();
        if exponent >= LAST_EXPONENT {
            return HISTOGRAM_BINS - 1;
        }
        // The three bits after the leading one pick one of the 8 bins of this doubling.
        let sub = ((ns >> (exponent - 3)) & 7) as u32;
        1 + ((exponent - FIRST_EXPONENT) * BINS_PER_DOUBLING + sub) as usize
    }

    /// The latencies a bin holds, as [low, high) in nanoseconds.
    fn bounds(bin: usize) -> (u64, u64) {
        if bin == 0 {
            return (0, 1 << FIRST_EXPONENT);
        }
        let exponent = FIRST_EXPONENT + (bin as u32 - 1) / BINS_PER_DOUBLING;
        let sub = u64::from((bin as u32 - 1) % BINS_PER_DOUBLING);
        ((8 + sub) << (exponent - 3), (9 + sub) << (exponent - 3))
    }

    /// Counts one latency.
    pub(crate) fn record(&mut self, latency: Duration) {
        let bin = &mut self.counts[Self::bin_of(latency)];
        *bin = bin.saturating_add(1);
    }

    /// Adds another histogram's counts to this one.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine = mine.saturating_add(*theirs);
        }
    }

    /// How many latencies it counted.
    pub(crate) fn count(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// The `p`-th percentile (0..=100), as the midpoint of the bin that holds it; `None` if
    /// empty.
    pub(crate) fn percentile(&self, p: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * n as f64).ceil().clamp(1.0, n as f64) as u64;
        let mut seen = 0;
        for (bin, &count) in self.counts.iter().enumerate() {
            seen += u64::from(count);
            if seen >= rank {
                let (low, high) = Self::bounds(bin);
                return Some(Duration::from_nanos(low + (high - low) / 2));
            }
        }
        None
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("p50", &self.percentile(50.0))
            .field("p99", &self.percentile(99.0))
            .finish()
    }
}

/// One bucket of the timeline: one second of the script (1 s in real time, 10 ms compressed).
#[derive(Clone, Debug)]
pub(crate) struct Bucket {
    /// Applications sent in this bucket.
    pub(crate) sent: u32,
    /// How the applications sent in this bucket were answered, by [`Outcome`] (indexed in the
    /// order of [`Outcome::ALL`]); they add up to `sent` once the run is over.
    pub(crate) answers: [u32; Outcome::ALL.len()],
    /// Fallbacks that started in this bucket, by cause (indexed in the order of
    /// [`FallbackCause::ALL`]): the moment the breaker refused, the bulkhead refused, the
    /// timeout cancelled or the call failed.
    pub(crate) fallbacks: [u32; FallbackCause::ALL.len()],
    /// Applications sent in this bucket that found no free worker.
    pub(crate) no_worker: u32,
    /// Requests the bureau received in this bucket (every attempt of a retried call is one).
    pub(crate) bureau_hits: u32,
    /// Rows the queue holds with a time queued in this bucket (read from it after the run).
    pub(crate) queue_rows: u32,
    /// Cache hits counted in this bucket (read back from the cache after the run).
    pub(crate) cache_hits: u32,
    /// The most workers busy at once in this bucket, as seen when each application arrived.
    pub(crate) most_busy: u32,
    /// The most requests to the bureau under way at once in this bucket (workers the bureau
    /// held), as seen when each application arrived.
    pub(crate) most_held: u32,
    /// Time from receiving to answering, of the applications sent in this bucket.
    pub(crate) latency: Histogram,
}

impl Bucket {
    pub(crate) fn new() -> Bucket {
        Bucket {
            sent: 0,
            answers: [0; Outcome::ALL.len()],
            fallbacks: [0; FallbackCause::ALL.len()],
            no_worker: 0,
            bureau_hits: 0,
            queue_rows: 0,
            cache_hits: 0,
            most_busy: 0,
            most_held: 0,
            latency: Histogram::new(),
        }
    }

    /// Adds `other`'s counts to these, and keeps the larger of the two maxima (a column of
    /// the picture is several buckets).
    pub(crate) fn add(&mut self, other: &Bucket) {
        self.sent = self.sent.saturating_add(other.sent);
        for (sum, n) in self.answers.iter_mut().zip(other.answers) {
            *sum = sum.saturating_add(n);
        }
        for (sum, n) in self.fallbacks.iter_mut().zip(other.fallbacks) {
            *sum = sum.saturating_add(n);
        }
        self.no_worker = self.no_worker.saturating_add(other.no_worker);
        self.bureau_hits = self.bureau_hits.saturating_add(other.bureau_hits);
        self.queue_rows = self.queue_rows.saturating_add(other.queue_rows);
        self.cache_hits = self.cache_hits.saturating_add(other.cache_hits);
        self.most_busy = self.most_busy.max(other.most_busy);
        self.most_held = self.most_held.max(other.most_held);
        self.latency.merge(&other.latency);
    }
}

/// The run second by second, on the run's own clock: one [`Bucket`] per second of the script,
/// allocated up front, so its memory is fixed by the script's length (under 250 KB for the 265
/// buckets of either run: about 900 bytes a bucket, most of it the latency histogram), never
/// by the number of applications.
#[derive(Clone, Debug)]
pub(crate) struct Timeline {
    width: Duration,
    buckets: Vec<Bucket>,
}

impl Timeline {
    /// Buckets of `width` covering `span`; anything later lands in the last one.
    pub(crate) fn new(width: Duration, span: Duration) -> Timeline {
        let count = (span.as_secs_f64() / width.as_secs_f64()).ceil().max(1.0) as usize;
        Timeline {
            width,
            buckets: (0..count).map(|_| Bucket::new()).collect(),
        }
    }

    /// The length of one bucket on the run's clock.
    pub(crate) fn width(&self) -> Duration {
        self.width
    }

    /// The buckets, the first starting when the run started.
    pub(crate) fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The bucket holding `at` (since the start).
    fn at(&mut self, at: Duration) -> &mut Bucket {
        let index = (at.as_secs_f64() / self.width.as_secs_f64()) as usize;
        let last = self.buckets.len() - 1;
        &mut self.buckets[index.min(last)]
    }
}

/// An application's place in the timeline, from its arrival to its answer. Dropped without an
/// answer (its handler panicked, or was dropped unfinished) it counts as crashed, so every
/// application sent is answered in the timeline exactly once.
struct Answering {
    timeline: Arc<Mutex<Timeline>>,
    /// When it arrived, since the start: the bucket it is counted in.
    arrived: Duration,
    received: Instant,
    done: bool,
}

impl Answering {
    fn new(timeline: &Arc<Mutex<Timeline>>, arrived: Duration, received: Instant) -> Answering {
        Answering {
            timeline: timeline.clone(),
            arrived,
            received,
            done: false,
        }
    }

    /// Counts the answer and its latency in the bucket the application arrived in.
    fn answered(mut self, outcome: Outcome) {
        self.done = true;
        let latency = self.received.elapsed();
        let mut timeline = lock(&self.timeline);
        let bucket = timeline.at(self.arrived);
        bucket.answers[outcome as usize] += 1;
        bucket.latency.record(latency);
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.done {
            lock(&self.timeline).at(self.arrived).answers[Outcome::Crashed as usize] += 1;
        }
    }
}

/// A deterministic pseudo-random sequence (xorshift), so every run sends the same mix.
struct Mix(u64);

impl Mix {
    fn next_percent(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % 100) as u32
    }
}

/// How one application was answered.
enum Answer {
    Decided(Decision),
    /// Found no free worker and took the fallback at once.
    Shed(Decision),
    ClientError,
    Crashed,
}

/// A store error as the run's I/O error.
fn store_error(e: store::StoreError) -> io::Error {
    io::Error::other(e.to_string())
}

/// Runs the game day on the global registry (which must hold `credit_bureau_cb`), on the queue
/// and the cache that `options.stores` names. (The example opens them itself with
/// [`run_on`], to say which they are before the run.)
#[allow(dead_code)]
pub(crate) async fn run(options: &Options) -> io::Result<Report> {
    // Marked like every store operation (wire.rs): on the paused clock, an unmarked connect
    // would see its own timeout fire as the clock jumps.
    let (queue, cache) = {
        let _io = Wire::new(options.paused_clock).store_io();
        let queue = ReviewQueue::open(&options.stores).await;
        let cache = ScoreCache::open(&options.stores).await;
        (queue.map_err(store_error)?, cache.map_err(store_error)?)
    };
    run_on(options, queue, cache).await
}

/// Runs the game day on the global registry (which must hold `credit_bureau_cb`), with this
/// queue and cache.
pub(crate) async fn run_on(
    options: &Options,
    queue: ReviewQueue,
    cache: ScoreCache,
) -> io::Result<Report> {
    let breaker = Registry::global().breaker(BREAKER);
    let bulkhead = options
        .bulkhead
        .then(|| Registry::global().bulkhead(BULKHEAD));
    let retry = (options.retry.retry_name()).map(|name| Registry::global().retry(name));
    let timeout = breaker
        .config()
        .timeout_duration()
        .unwrap_or(Duration::from_secs_f64(2.5 * options.scale));
    let script = Arc::new(Script::game_day(options.scale));
    let total = script.total();
    // One bucket per second of the script, covering the script and the longest a call can
    // outlast it (reqwest's backstop, twice the timeout).
    let (second, span) = (Duration::from_secs_f64(options.scale), total + timeout * 2);
    let timeline = Arc::new(Mutex::new(Timeline::new(second, span)));
    let initial_state = breaker.state();
    let started = SystemTime::now();
    let start = Instant::now();
    let wire = Wire::new(options.paused_clock);
    let bureau = Bureau::start(script.clone(), start, second, span, wire.clone()).await?;
    let fallback_timeline = timeline.clone();
    let buckets = lock(&timeline).buckets.len();
    // The queue's rows before the run: a table in PostgreSQL may hold earlier runs'.
    let counts_before = {
        let _io = wire.store_io();
        queue.count_by_status().await.map_err(store_error)?
    };
    let clock = RunClock {
        started,
        start,
        bucket: second,
        buckets,
    };
    // This run's application ids: unique across runs on one table.
    let run_tag = started
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let check = Arc::new(
        CreditCheck::new(bureau.addr(), timeout, queue, cache)?
            .with_bulkhead(options.bulkhead)
            .with_retry(options.retry.retry_name())
            .with_wire(wire.clone())
            .with_clock(clock)
            // Each fallback in the bucket it started in: when the breaker or the bulkhead refused
            // the call, the timeout cancelled it or it failed.
            .on_fallback(move |cause| {
                lock(&fallback_timeline).at(start.elapsed()).fallbacks[cause as usize] += 1;
            }),
    );

    // Returning applicants: 60 with a score younger than 30 days, 40 with an older one.
    // (The older ones are not stored: a cache holds a score for 30 days at most.)
    for n in 0..100u64 {
        let days = if n < 60 { 1 + n % 29 } else { 31 + n };
        let tax_id = format!("ret-{n:03}");
        let fetched = clock.now() - Duration::from_secs(days * 86_400);
        let _io = wire.store_io();
        check
            .cache()
            .put(&tax_id, bureau::score_of(&tax_id), fetched)
            .await
            .map_err(store_error)?;
    }

    let transitions = Arc::new(Mutex::new(Vec::<Transition>::new()));
    let ignored = Arc::new(AtomicU64::new(0));
    let slow = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let slow_threshold = breaker.config().slow_call_duration_threshold();
    let subscription = {
        let (transitions, ignored, check) = (transitions.clone(), ignored.clone(), check.clone());
        let slow = slow.clone();
        breaker.subscribe(move |event| {
            let at = start.elapsed();
            match event.kind() {
                EventKind::StateTransition { from, to } => lock(&transitions).push(Transition {
                    at,
                    from,
                    to,
                    sockets_opened: check.stats().sockets_opened.load(Ordering::SeqCst),
                }),
                EventKind::IgnoredError { .. } => {
                    ignored.fetch_add(1, Ordering::SeqCst);
                }
                EventKind::Success { elapsed } | EventKind::Error { elapsed }
                    if elapsed > slow_threshold =>
                {
                    slow.0.fetch_add(1, Ordering::SeqCst);
                }
                EventKind::SlowCallRateExceeded { .. } => {
                    slow.1.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
        })
    };

    // The retries made and those the budget refused, as the retry's event stream tells them.
    let retried = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let retry_subscription = retry.as_ref().map(|retry| {
        let retried = retried.clone();
        retry.subscribe(move |event| match event.kind() {
            RetryEventKind::Retry { .. } => {
                retried.0.fetch_add(1, Ordering::SeqCst);
            }
            RetryEventKind::BudgetExhausted => {
                retried.1.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        })
    });

    // The load: `rate` applications a second, each on one of `workers` workers.
    let workers = Arc::new(Semaphore::new(options.workers));
    let busy = Arc::new(AtomicUsize::new(0));
    let max_busy = Arc::new(AtomicUsize::new(0));
    let mut handlers = JoinSet::new();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(options.rate)));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Burst);
    let mut mix = Mix(0x9e37_79b9_7f4a_7c15);
    let (mut requests, mut exhausted) = (0u64, 0u64);
    loop {
        ticker.tick().await;
        let elapsed = start.elapsed();
        if elapsed >= total {
            break;
        }
        requests += 1;
        let phase = script.phase_at(elapsed);
        let roll = mix.next_percent();
        let tax_id = if roll < phase.bad_id_percent {
            format!("bad-{requests}")
        } else if roll < phase.bad_id_percent + (100 - phase.bad_id_percent) / 4 {
            format!("ret-{:03}", mix.next_percent())
        } else {
            format!("tx-{requests:06}")
        };
        let app = Application {
            id: format!("app-{run_tag}-{requests:06}"),
            tax_id,
            received: Instant::now(),
        };
        let worker = workers.clone().try_acquire_owned();
        let now_busy = match worker {
            Ok(_) => busy.fetch_add(1, Ordering::SeqCst) + 1,
            Err(_) => busy.load(Ordering::SeqCst),
        };
        max_busy.fetch_max(now_busy, Ordering::SeqCst);
        {
            // The workers busy, and those the bureau holds, as this application arrives.
            let held = lock(&check.stats().in_flight).len();
            let mut timeline = lock(&timeline);
            let bucket = timeline.at(elapsed);
            bucket.sent += 1;
            bucket.most_busy = bucket.most_busy.max(now_busy as u32);
            bucket.most_held = bucket.most_held.max(held as u32);
            if worker.is_err() {
                bucket.no_worker += 1;
            }
        }
        let answering = Answering::new(&timeline, elapsed, app.received);
        let Ok(worker) = worker else {
            // No free worker: no application is discarded (docs/CREDIT_BUREAU.md §6), so it
            // takes the fallback at once (cache or durable queue) without holding a worker.
            exhausted += 1;
            let check = check.clone();
            handlers.spawn(async move {
                let decision = check.shed(&app).await;
                answering.answered(Outcome::of(&decision));
                Answer::Shed(decision)
            });
            continue;
        };
        let (check, busy) = (check.clone(), busy.clone());
        handlers.spawn(async move {
            let answer = match check.check(&app).await {
                Ok(decision) => {
                    answering.answered(Outcome::of(&decision));
                    Answer::Decided(decision)
                }
                Err(_) => {
                    answering.answered(Outcome::ClientError);
                    Answer::ClientError
                }
            };
            busy.fetch_sub(1, Ordering::SeqCst);
            drop(worker);
            answer
        });
    }

    let (mut bureau_answers, mut cached, mut queued, mut client_errors, mut unavailable) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut crashed, mut shed_answered) = (0u64, 0u64);
    while let Some(joined) = handlers.join_next().await {
        let answer = joined.unwrap_or(Answer::Crashed);
        if let Answer::Shed(Decision::Cached { .. } | Decision::Queued) = answer {
            shed_answered += 1;
        }
        match answer {
            Answer::Decided(decision) | Answer::Shed(decision) => match decision {
                Decision::Bureau { .. } => bureau_answers += 1,
                Decision::Cached { .. } => cached += 1,
                Decision::Queued => queued += 1,
                Decision::Unavailable(_) => unavailable += 1,
            },
            Answer::ClientError => client_errors += 1,
            Answer::Crashed => crashed += 1,
        }
    }
    let end = start.elapsed();
    drop(subscription);
    drop(retry_subscription);
    let served = bureau.stop().await?;

    let stats = check.stats();
    let transitions = lock(&transitions).clone();
    let final_sockets = stats.sockets_opened.load(Ordering::SeqCst);
    let (mut time_open, mut sockets_while_open) = (Duration::ZERO, 0u64);
    for (i, t) in transitions.iter().enumerate() {
        if t.to == State::Open {
            let (left_at, sockets_then) = transitions
                .get(i + 1)
                .map_or((end, final_sockets), |next| (next.at, next.sockets_opened));
            time_open += left_at.saturating_sub(t.at);
            sockets_while_open += sockets_then - t.sockets_opened;
        }
    }
    let mut fail_fast = lock(&stats.fail_fast).clone();
    fail_fast.sort();
    let queued_ids: BTreeSet<String> = lock(&stats.queued_ids).iter().cloned().collect();
    let (queue_ids, counts_after, queue_rows_per_bucket, cache_hits_per_bucket) = {
        let _io = wire.store_io();
        let queue = check.queue();
        (
            queue.ids().await.map_err(store_error)?,
            queue.count_by_status().await.map_err(store_error)?,
            queue
                .rows_per_bucket(started, second, buckets)
                .await
                .map_err(store_error)?,
            check
                .cache()
                .hits_per_bucket(buckets)
                .await
                .map_err(store_error)?,
        )
    };
    let prefix = format!("app-{run_tag}-");
    let run_ids: Vec<&String> = queue_ids
        .iter()
        .filter(|id| id.starts_with(&prefix))
        .collect();
    let queue_counts: BTreeMap<String, u64> = counts_after
        .into_iter()
        .map(|(status, n)| {
            let before = counts_before.get(&status).copied().unwrap_or(0);
            (status, n.saturating_sub(before))
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let queue_matches = run_ids.len() == queued_ids.len()
        && run_ids
            .iter()
            .map(|id| (*id).clone())
            .collect::<BTreeSet<_>>()
            == queued_ids
        && queue_counts.get(QUEUED).copied().unwrap_or(0) == queued
        && queue_counts.len() <= 1;

    let brownout = script
        .phases
        .iter()
        .position(|p| p.bureau == Behaviour::Hanging);
    let brownout_start = script.first_start_of(Behaviour::Hanging).unwrap_or(total);
    let brownout_end = brownout.map_or(total, |i| brownout_start + script.phases[i].length);
    let mut timeline = lock(&timeline).clone();
    // The bureau counted with the same width from the same start: bucket for bucket.
    for (bucket, hits) in timeline.buckets.iter_mut().zip(&served.per_second) {
        bucket.bureau_hits = *hits;
    }
    // The queue's and the cache's own counts, with the same width from the same start.
    let to_u32 = |n: &u64| u32::try_from(*n).unwrap_or(u32::MAX);
    for (bucket, rows) in timeline.buckets.iter_mut().zip(&queue_rows_per_bucket) {
        bucket.queue_rows = to_u32(rows);
    }
    for (bucket, hits) in timeline.buckets.iter_mut().zip(&cache_hits_per_bucket) {
        bucket.cache_hits = to_u32(hits);
    }

    Ok(Report {
        breaker_name: breaker.name().to_owned(),
        scale: options.scale,
        rate: options.rate,
        workers: options.workers,
        bulkhead: bulkhead.map(|bulkhead| {
            let config = bulkhead.config();
            BulkheadSetting {
                name: bulkhead.name().to_owned(),
                max_concurrent_calls: config.max_concurrent_calls(),
                max_wait_duration: config.max_wait_duration(),
            }
        }),
        retry: retry.map(|retry| {
            let config = retry.config();
            RetrySetting {
                name: retry.name().to_owned(),
                mode: options.retry,
                max_attempts: config.max_attempts(),
                wait: config.wait_duration(),
                budget: config.budget_enabled().then(|| {
                    (
                        config.budget_ratio(),
                        config.budget_window(),
                        config.budget_min_retries_per_second(),
                    )
                }),
                retries: retried.0.load(Ordering::SeqCst),
                refused_by_budget: retried.1.load(Ordering::SeqCst),
            }
        }),
        started,
        ended: end,
        phases: script.phases.iter().map(|p| (p.name, p.length)).collect(),
        requests,
        bureau_answers,
        cached,
        queued,
        client_errors,
        unavailable,
        workers_exhausted: exhausted,
        shed_answered,
        crashed,
        fallbacks: FallbackCause::ALL.map(|cause| stats.fallbacks(cause)),
        timeouts_outlived: stats.outlived_timeout.load(Ordering::SeqCst),
        max_busy_workers: max_busy.load(Ordering::SeqCst),
        max_bureau_held: stats.most_in_flight.load(Ordering::SeqCst),
        transitions,
        time_open,
        fail_fast,
        sockets_while_open,
        bureau_hits: served.hits,
        bureau_abandoned: served.abandoned,
        ignored_errors: ignored.load(Ordering::SeqCst),
        slow_calls: slow.0.load(Ordering::SeqCst),
        slow_rate_exceeded: slow.1.load(Ordering::SeqCst),
        brownout_start,
        brownout_end,
        timeout,
        slow_threshold,
        initial_state,
        final_state: breaker.state(),
        queue_place: check.queue().describe(),
        cache_place: check.cache().describe(),
        queue_counts,
        queue_rows: run_ids.len(),
        queued_ids,
        queue_matches,
        queue_rows_per_bucket,
        cache_hits_per_bucket,
        cache_errors: stats.cache_errors.load(Ordering::SeqCst),
        timeline,
        wire_gave_up: wire.gave_up(),
    })
}
