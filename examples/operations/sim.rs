//! The operations example's service: a registry with a handful of breakers (plain and keyed),
//! simulated traffic that drives them, some failing in waves so they open and recover, and the
//! admin router (actuator endpoints and the dashboard) on 127.0.0.1.
//!
//! tests/dashboard_browser.rs includes this file, starts the service on port 0 and drives the
//! dashboard in a real browser.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use breaker::{CircuitBreaker, Config, Outcome, Registry, SlidingWindowType, State};
use tokio::task::JoinHandle;

/// The plain breakers that get traffic, with how they behave.
const PLAIN: &[(&str, Profile)] = &[
    // Healthy: a failure now and then, far below the threshold.
    ("inventory", Profile::steady(0.01, 0.0)),
    // A failure wave of 15 s every minute, from 5 s in: opens, then recovers through the
    // half-open trials once the wave is over.
    (
        "payments",
        Profile::waves(60, 5, 15, (0.02, 0.0), (0.9, 0.0)),
    ),
    // Slow waves: 12 s of mostly slow calls every 45 s, from 20 s in (the slow-call rate opens
    // it).
    (
        "search",
        Profile::waves(45, 20, 12, (0.01, 0.05), (0.02, 0.85)),
    ),
    // Flaky but under the threshold: stays CLOSED with a visible failure rate.
    ("recommendations", Profile::steady(0.2, 0.1)),
    // Put in METRICS_ONLY at start: measured, never opens, whatever its failures.
    (
        "shipping",
        Profile::waves(30, 10, 10, (0.05, 0.0), (0.8, 0.0)),
    ),
    // Put in DISABLED at start: calls pass, nothing is measured.
    ("legacyLedger", Profile::steady(0.5, 0.0)),
];

/// The keyed group and its keys (one breaker per tenant), with how each tenant behaves.
pub(crate) const KEYED_GROUP: &str = "tenantApi";
const TENANTS: &[(&str, Profile)] = &[
    ("acme", Profile::steady(0.02, 0.0)),
    // Fails in waves of 12 s every 40 s, from the start.
    (
        "globex",
        Profile::waves(40, 0, 12, (0.02, 0.0), (0.95, 0.0)),
    ),
    ("initech", Profile::steady(0.05, 0.15)),
    // Always down: flaps between OPEN and HALF_OPEN.
    ("umbrella", Profile::steady(1.0, 0.0)),
];

/// The names of the idle breakers `Options::bulk` creates: `fleet-00000`, `fleet-00001`, ...
pub(crate) fn bulk_name(i: usize) -> String {
    format!("fleet-{i:05}")
}

/// What to start.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// The port on 127.0.0.1 (0: any free port).
    pub(crate) port: u16,
    /// How many idle breakers to add (`fleet-00000`...), for the dashboard's scale check.
    pub(crate) bulk: usize,
    /// Whether to run the simulated traffic.
    pub(crate) traffic: bool,
    /// The admin's stream buffer (events of every breaker kept for stream clients); `None`
    /// for the admin's default. A tiny one makes a client fall behind (`event: lagged`).
    pub(crate) stream_buffer_size: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            port: 8080,
            bulk: 0,
            traffic: true,
            stream_buffer_size: None,
        }
    }
}

/// The running service: the admin router on `addr`, the traffic in a background task. Both
/// stop when it is dropped.
#[derive(Debug)]
pub(crate) struct Service {
    /// The registry the breakers live in.
    pub(crate) registry: Registry,
    /// Where the admin router listens.
    pub(crate) addr: SocketAddr,
    server: JoinHandle<()>,
    traffic: Option<JoinHandle<()>>,
}

impl Service {
    /// The dashboard's URL.
    pub(crate) fn dashboard_url(&self) -> String {
        format!("http://{}/dashboard", self.addr)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(traffic) = &self.traffic {
            traffic.abort();
        }
    }
}

/// The default config: a count window of 20 calls (judged from 10), 50 % failures or 60 % slow
/// calls (over 500 ms) open it, 5 s in OPEN, then 3 trial calls.
pub(crate) fn default_config() -> Config {
    Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 20, 10)
        .failure_rate_threshold(50.0)
        .slow_call_rate_threshold(60.0)
        .slow_call_duration_threshold(Duration::from_millis(500))
        .wait_duration_in_open_state(Duration::from_secs(5))
        .permitted_number_of_calls_in_half_open_state(3)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .expect("a valid config")
}

/// A config that never moves by itself out of OPEN (an hour's wait, no automatic
/// transition): for breakers an operator (or a test) sets by hand.
pub(crate) fn manual_config() -> Config {
    default_config()
        .to_builder()
        .wait_duration_in_open_state(Duration::from_secs(3600))
        .automatic_transition_from_open_to_half_open_enabled(false)
        .build()
        .expect("a valid config")
}

/// The registry, with every breaker of the example made (and `bulk` idle ones).
pub(crate) fn registry(bulk: usize) -> Registry {
    let registry = Registry::builder()
        .default_config(default_config())
        .instance(
            "payments",
            default_config()
                .to_builder()
                .wait_duration_in_open_state(Duration::from_secs(8))
                .build()
                .expect("a valid config"),
        )
        // Set by hand at start (METRICS_ONLY, DISABLED): an operator's breakers.
        .instance("shipping", manual_config())
        .instance("legacyLedger", manual_config())
        .instance(
            "search",
            default_config()
                .to_builder()
                .sliding_window(SlidingWindowType::TimeBased, 10, 20)
                .build()
                .expect("a valid config"),
        )
        .build();
    for (name, _) in PLAIN {
        registry.breaker(name);
    }
    let tenants = registry.keyed(KEYED_GROUP);
    for (key, _) in TENANTS {
        tenants.get(key);
    }
    let set = |name: &str, state: State| {
        registry
            .breaker(name)
            .transition_to(state)
            .expect("CLOSED can move to METRICS_ONLY and DISABLED");
    };
    set("shipping", State::MetricsOnly);
    set("legacyLedger", State::Disabled);
    for i in 0..bulk {
        registry.breaker(&bulk_name(i));
    }
    registry
}

/// Builds the registry, serves the admin router on 127.0.0.1 and starts the traffic.
pub(crate) async fn start(options: &Options) -> std::io::Result<Service> {
    let registry = registry(options.bulk);
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port)))
            .await?;
    let addr = listener.local_addr()?;
    let mut admin = breaker::admin::Admin::builder(&registry);
    if let Some(events) = options.stream_buffer_size {
        admin = admin.stream_buffer_size(events);
    }
    let router = admin.build().router();
    let server = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, router).await {
            eprintln!("admin server stopped: {err}");
        }
    });
    let traffic = options
        .traffic
        .then(|| tokio::spawn(run_traffic(registry.clone())));
    Ok(Service {
        registry,
        addr,
        server,
        traffic,
    })
}

/// How one breaker's calls go: a failure and a slow-call probability, calm or in a wave.
#[derive(Clone, Copy, Debug)]
struct Profile {
    /// The wave repeats every `period` seconds (0: no waves), starts `start` seconds into the
    /// period and lasts `len` seconds.
    period: u64,
    start: u64,
    len: u64,
    /// (failure, slow) probabilities outside and inside the wave.
    calm: (f64, f64),
    storm: (f64, f64),
}

impl Profile {
    const fn steady(failure: f64, slow: f64) -> Profile {
        Profile {
            period: 0,
            start: 0,
            len: 0,
            calm: (failure, slow),
            storm: (failure, slow),
        }
    }

    const fn waves(
        period: u64,
        start: u64,
        len: u64,
        calm: (f64, f64),
        storm: (f64, f64),
    ) -> Profile {
        Profile {
            period,
            start,
            len,
            calm,
            storm,
        }
    }

    /// The (failure, slow) probabilities `secs` seconds into the run.
    fn at(&self, secs: u64) -> (f64, f64) {
        if self.period == 0 {
            return self.calm;
        }
        let phase = secs % self.period;
        if phase >= self.start && phase < self.start + self.len {
            self.storm
        } else {
            self.calm
        }
    }
}

/// A tick every 100 ms: each breaker gets 2 to 4 calls a tick (20 to 40 a second), each a
/// success or a failure, fast (20 ms) or slow (800 ms), drawn from its profile. The calls do
/// not wait: their durations are recorded as given.
async fn run_traffic(registry: Registry) {
    let mut rng = SplitMix64(0x5eed_0f0b_e5e5);
    let started = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let tenants = registry.keyed(KEYED_GROUP);
    loop {
        tick.tick().await;
        let secs = started.elapsed().as_secs();
        for (name, profile) in PLAIN {
            // Looked up each tick, so a breaker replaced or removed through the admin router
            // gets the traffic from then on.
            drive(&registry.breaker(name), profile.at(secs), &mut rng);
        }
        for (key, profile) in TENANTS {
            drive(&tenants.get(key), profile.at(secs), &mut rng);
        }
    }
}

fn drive(breaker: &CircuitBreaker, (failure, slow): (f64, f64), rng: &mut SplitMix64) {
    let calls = 2 + rng.below(3);
    for _ in 0..calls {
        let Ok(permit) = breaker.try_acquire() else {
            continue;
        };
        let outcome = if rng.chance(failure) {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        let took = if rng.chance(slow) {
            Duration::from_millis(800)
        } else {
            Duration::from_millis(20)
        };
        permit.record(outcome, took);
    }
}

/// A small deterministic generator (SplitMix64), enough for simulated traffic.
#[derive(Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in 0..n.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        // The top 53 bits as a float in [0, 1).
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}
