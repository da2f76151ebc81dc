//! The `metrics` export: Resilience4j's Micrometer names and tags, rendered by the Prometheus
//! exporter, follow every state, call and rejection; keyed breakers and breakers created before
//! the export are included; gauges and the decaying `_max` are fresh without a `refresh()`; a
//! recorder installed after the export gets every series; concurrent traffic leaves the state
//! gauges on the real state.
#![cfg(feature = "metrics")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use breaker_core::{
    Config, EventKind, ManualClock, MetricsExport, Outcome, Registry, SlidingWindowType, State,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::support::logs;

/// A registry on a manual clock, exported to a Prometheus recorder of its own.
fn exported(config: Config) -> (Registry, ManualClock, MetricsExport, PrometheusHandle) {
    let (clock, registry) = crate::support::manual_registry(config);
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(&registry, Arc::new(recorder));
    (registry, clock, export, handle)
}

fn small() -> Config {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_secs(1))
        .wait_duration_in_open_state(Duration::from_secs(10))
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap()
}

/// The value of the series `series` (name and labels exactly as rendered), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.trim().parse().ok()
    })
}

fn get(handle: &PrometheusHandle, series: &str) -> f64 {
    let text = handle.render();
    value(&text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

fn state_of(handle: &PrometheusHandle, name: &str) -> Vec<(&'static str, f64)> {
    [
        "closed",
        "open",
        "half_open",
        "disabled",
        "forced_open",
        "metrics_only",
    ]
    .into_iter()
    .map(|s| {
        let series = format!("resilience4j_circuitbreaker_state{{name=\"{name}\",state=\"{s}\"}}");
        (s, get(handle, &series))
    })
    .filter(|(_, v)| *v != 0.0)
    .collect()
}

#[test]
fn state_gauges_follow_every_transition() {
    let (registry, clock, _export, handle) = exported(small());
    let b = registry.breaker("productService");
    assert_eq!(
        state_of(&handle, "productService"),
        [("closed", 1.0)],
        "from creation"
    );
    for _ in 0..4 {
        let _ = b.call_sync(|| Err::<(), _>("down"));
    }
    assert_eq!(b.state(), State::Open);
    assert_eq!(state_of(&handle, "productService"), [("open", 1.0)]);
    let text = handle.render();
    assert!(
        text.contains(
            "resilience4j_circuitbreaker_state{name=\"productService\",state=\"open\"} 1\n"
        ),
        "the line dashboards and the credit-bureau alert read:\n{text}"
    );
    clock.advance(Duration::from_secs(11));
    let _ = b.call_sync(|| Ok::<_, ()>(()));
    assert_eq!(state_of(&handle, "productService"), [("half_open", 1.0)]);
    b.transition_to(State::ForcedOpen).unwrap();
    assert_eq!(state_of(&handle, "productService"), [("forced_open", 1.0)]);
    b.transition_to(State::Disabled).unwrap();
    assert_eq!(state_of(&handle, "productService"), [("disabled", 1.0)]);
    b.transition_to(State::MetricsOnly).unwrap();
    assert_eq!(state_of(&handle, "productService"), [("metrics_only", 1.0)]);
    b.reset();
    assert_eq!(state_of(&handle, "productService"), [("closed", 1.0)]);
}

#[test]
fn calls_rates_and_windows_use_resilience4j_names() {
    let (registry, _clock, _export, handle) = exported(small());
    let b = registry.breaker("inventory");
    let record = |outcome, secs: f64| {
        b.try_acquire()
            .unwrap()
            .record(outcome, Duration::from_secs_f64(secs));
    };
    let rate = |name: &str| {
        get(
            &handle,
            &format!("resilience4j_circuitbreaker_{name}{{name=\"inventory\"}}"),
        )
    };
    assert_eq!(
        rate("failure_rate"),
        -1.0,
        "no rate below the minimum, as Resilience4j"
    );
    assert_eq!(rate("slow_call_rate"), -1.0);

    record(Outcome::Success, 0.25);
    record(Outcome::Success, 2.0); // slow
    record(Outcome::Failure, 0.5);
    record(Outcome::Ignored, 0.125);
    assert_eq!(rate("failure_rate"), -1.0, "3 buffered calls, minimum 4");
    record(Outcome::Failure, 1.5); // slow
    assert_eq!(b.state(), State::Open, "2 of 4 failed");

    let calls = |kind: &str, part: &str| {
        get(
            &handle,
            &format!("resilience4j_circuitbreaker_calls_seconds_{part}{{kind=\"{kind}\",name=\"inventory\"}}"),
        )
    };
    assert_eq!(calls("successful", "count"), 2.0);
    assert_eq!(calls("successful", "sum"), 2.25);
    assert_eq!(calls("failed", "count"), 2.0);
    assert_eq!(calls("failed", "sum"), 2.0);
    assert_eq!(calls("ignored", "count"), 1.0);
    assert_eq!(calls("ignored", "sum"), 0.125);

    assert_eq!(rate("failure_rate"), 50.0);
    assert_eq!(rate("slow_call_rate"), 50.0);
    let by_kind = |metric: &str, kind: &str| {
        get(
            &handle,
            &format!("resilience4j_circuitbreaker_{metric}{{kind=\"{kind}\",name=\"inventory\"}}"),
        )
    };
    assert_eq!(by_kind("buffered_calls", "successful"), 2.0);
    assert_eq!(by_kind("buffered_calls", "failed"), 2.0);
    assert_eq!(by_kind("slow_calls", "successful"), 1.0);
    assert_eq!(by_kind("slow_calls", "failed"), 1.0);

    for _ in 0..3 {
        assert!(b.try_acquire().is_err());
    }
    assert_eq!(
        by_kind("not_permitted_calls_total", "not_permitted"),
        3.0,
        "Resilience4j 2.x's counter"
    );
    assert_eq!(
        by_kind("calls_total", "not_permitted"),
        3.0,
        "Resilience4j 1.x's name, which its Grafana dashboard reads"
    );
}

/// Breakers that existed before the export, and keyed ones, are exported too; installing
/// twice is one export (no double counting).
#[test]
fn existing_and_keyed_breakers_are_exported_once() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock)
        .default_config(small())
        .build();
    let early = registry.breaker("early");
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(&registry, Arc::new(recorder));
    let again = MetricsExport::install(&registry);
    assert_eq!(export.len(), 1);
    let _ = early.call_sync(|| Ok::<_, ()>(()));
    assert_eq!(
        get(
            &handle,
            "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"early\"}"
        ),
        1.0
    );
    let llm = registry.keyed("llm");
    let openai = llm.get("openai");
    for _ in 0..4 {
        let _ = openai.call_sync(|| Err::<(), _>("429"));
    }
    assert_eq!(state_of(&handle, "llm[openai]"), [("open", 1.0)]);
    assert_eq!(again.len(), 2);
}

/// Gauges are right when scraped, with no event and no `refresh()`: the export re-reads every
/// breaker each `REFRESH_INTERVAL` of the registry's clock, so a time-based window that empties
/// with time shows 0 buffered calls at the next refresh. `refresh` does the same at once.
#[test]
fn gauges_follow_a_window_that_empties_with_time() {
    let config = Config::builder()
        .sliding_window(SlidingWindowType::TimeBased, 10, 100)
        .build()
        .unwrap();
    let (registry, clock, export, handle) = exported(config);
    // Refreshes at every x.5 s (from the breaker's creation); the window moves at whole seconds.
    clock.advance(Duration::from_millis(500));
    let b = registry.breaker("reports");
    assert_eq!(registry.pending_timers(), 1, "the export's refresh timer");
    for _ in 0..3 {
        let _ = b.call_sync(|| Err::<(), _>("down"));
    }
    let failed = "resilience4j_circuitbreaker_buffered_calls{kind=\"failed\",name=\"reports\"}";
    let rate = "resilience4j_circuitbreaker_failure_rate{name=\"reports\"}";
    assert_eq!(get(&handle, failed), 3.0);
    clock.advance(Duration::from_secs(5));
    assert_eq!(get(&handle, failed), 3.0, "still in the window");
    clock.advance(Duration::from_secs(5));
    assert_eq!(b.metrics().failed_calls, 0, "the window moved on");
    assert_eq!(get(&handle, failed), 0.0, "no call, no refresh() since");
    assert_eq!(get(&handle, rate), -1.0);

    // Between two refreshes, `refresh` makes the gauges exact at once.
    let _ = b.call_sync(|| Err::<(), _>("down"));
    clock.advance(Duration::from_millis(9_700));
    assert_eq!(b.metrics().failed_calls, 0);
    assert_eq!(
        get(&handle, failed),
        1.0,
        "the window moved 0.2 s ago, after the last refresh"
    );
    export.refresh();
    assert_eq!(get(&handle, failed), 0.0);
}

/// `calls_seconds_max`: Micrometer's decaying timer max, a ring of 3 maxima rotated every
/// minute from the breaker's creation, on the registry's clock: a call is the maximum for 2 to
/// 3 minutes, then the value decays to the longest call since, or 0.
#[test]
fn calls_seconds_max_decays_as_micrometers_timer_max() {
    let (registry, clock, _export, handle) = exported(small());
    let b = registry.breaker("search");
    let record = |outcome, millis| {
        b.try_acquire()
            .unwrap()
            .record(outcome, Duration::from_millis(millis));
    };
    let max = |kind: &str| {
        get(
            &handle,
            &format!(
                "resilience4j_circuitbreaker_calls_seconds_max{{kind=\"{kind}\",name=\"search\"}}"
            ),
        )
    };
    assert_eq!(
        (max("successful"), max("failed"), max("ignored")),
        (0.0, 0.0, 0.0),
        "from creation"
    );
    record(Outcome::Success, 250);
    record(Outcome::Success, 100);
    record(Outcome::Failure, 1_500);
    record(Outcome::Ignored, 40);
    assert_eq!(
        (max("successful"), max("failed"), max("ignored")),
        (0.25, 1.5, 0.04),
        "at once, without a refresh"
    );
    assert_eq!(MetricsExport::CALLS_MAX_ROTATION, Duration::from_secs(60));
    assert_eq!(MetricsExport::CALLS_MAX_BUFFERS, 3);
    clock.advance(Duration::from_secs(70)); // rotation 1
    record(Outcome::Success, 120);
    assert_eq!(max("successful"), 0.25);
    clock.advance(Duration::from_secs(109)); // 179 s: rotation 2, the last one of the first calls
    assert_eq!((max("successful"), max("failed")), (0.25, 1.5));
    clock.advance(Duration::from_secs(1)); // 180 s: rotation 3, no call made, no refresh()
    assert_eq!(
        (max("successful"), max("failed"), max("ignored")),
        (0.12, 0.0, 0.0),
        "rotation 0 left the window; rotation 1's call is the maximum now"
    );
    clock.advance(Duration::from_secs(60)); // 240 s: rotation 4
    assert_eq!(max("successful"), 0.0);
}

/// Issue 14, item 7: an export installed before the recorder warns (once per process), and its
/// breakers' series reach the recorder once there is one: at once with a second `install`,
/// and within `REFRESH_INTERVAL` without one. Before the fix, a second `install` returned the
/// first export untouched and the breakers made earlier were never exported.
#[test]
fn a_recorder_installed_after_the_export_gets_every_series() {
    logs::capture();
    let warning = ["WARN", "MetricsExport::install found no `metrics` recorder"];
    let early_registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(small())
        .build();
    let _export = MetricsExport::install(&early_registry);
    let _ = MetricsExport::install(&early_registry);
    let early = early_registry.breaker("early");
    let _ = early.call_sync(|| Ok::<_, ()>(()));
    let later_clock = ManualClock::new();
    let later_registry = Registry::builder()
        .clock(later_clock.clone())
        .default_config(small())
        .build();
    let _export = MetricsExport::install(&later_registry);
    let later = later_registry.breaker("later");
    for _ in 0..4 {
        let _ = later.call_sync(|| Err::<(), _>("down"));
    }
    assert_eq!(later.state(), State::Open);
    assert_eq!(
        logs::lines_with(&warning).len(),
        1,
        "{:?}",
        logs::lines_with(&["WARN"])
    );

    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).expect("the only global recorder of this binary");

    // A second install registers every handle with the recorder in place now.
    let _ = MetricsExport::install(&early_registry);
    assert_eq!(state_of(&handle, "early"), [("closed", 1.0)]);
    let _ = early.call_sync(|| Ok::<_, ()>(()));
    let successful =
        "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"early\"}";
    assert_eq!(
        get(&handle, successful),
        1.0,
        "the call made before is lost"
    );
    let text = handle.render();
    assert!(
        text.contains("# HELP resilience4j_circuitbreaker_state "),
        "{text}"
    );

    // Without a second install, the export's next refresh does it.
    assert!(!handle.render().contains("name=\"later\""));
    later_clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(state_of(&handle, "later"), [("open", 1.0)]);
    let failed = "resilience4j_circuitbreaker_buffered_calls{kind=\"failed\",name=\"later\"}";
    assert_eq!(get(&handle, failed), 4.0);
    assert!(later.try_acquire().is_err());
    let rejected = "resilience4j_circuitbreaker_not_permitted_calls_total{kind=\"not_permitted\",name=\"later\"}";
    assert_eq!(get(&handle, rejected), 1.0);
    assert_eq!(logs::lines_with(&warning).len(), 1, "still one warning");
}

/// The export writes the state gauges from the breaker's state when a transition's event
/// reaches it, not from the state the event names: events are published after the breaker's
/// lock is released, so two transitions on two threads can reach the export in the reverse
/// order. Here a listener of the breaker's own, which hears each event before the registry's
/// listeners (the export among them), holds the event of one thread's FORCED_OPEN until
/// another thread has moved the breaker on to CLOSED and that event has been exported.
#[test]
fn a_transition_event_exported_late_leaves_the_gauges_on_the_current_state() {
    let (registry, _clock, _export, handle) = exported(small());
    let b = registry.breaker("late");
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let _sub = b.subscribe(move |e| {
        if let EventKind::StateTransition {
            to: State::ForcedOpen,
            ..
        } = e.kind()
        {
            held_tx.send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
        }
    });
    let mover = {
        let b = b.clone();
        thread::spawn(move || b.transition_to(State::ForcedOpen).unwrap())
    };
    held_rx.recv().unwrap(); // FORCED_OPEN entered; its event not exported yet
    assert_eq!(b.state(), State::ForcedOpen);
    b.transition_to(State::Closed).unwrap();
    assert_eq!(state_of(&handle, "late"), [("closed", 1.0)]);
    release_tx.send(()).unwrap();
    mover.join().unwrap();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(
        state_of(&handle, "late"),
        [("closed", 1.0)],
        "the FORCED_OPEN event, exported after the move to CLOSED, names a state already left"
    );
}

/// Four threads moving one breaker by hand at once, round after round: after each round the
/// state gauges show the state the breaker was left in. A listener of the breaker's own, which
/// hears each event before the export does, yields on every transition, so that two threads'
/// transitions often reach the export in the reverse order of the moves.
#[test]
fn racing_moves_leave_the_gauges_on_the_real_state() {
    let (registry, _clock, _export, handle) = exported(small());
    let b = registry.breaker("racing");
    let _yield = b.subscribe(|e| {
        if let EventKind::StateTransition { .. } = e.kind() {
            thread::yield_now();
        }
    });
    // Every move between these four states is legal, in any order.
    let moves = [
        State::ForcedOpen,
        State::Closed,
        State::MetricsOnly,
        State::Disabled,
    ];
    for round in 0..200 {
        let start = Arc::new(Barrier::new(4));
        let movers: Vec<_> = (0..4)
            .map(|t| {
                let (b, start) = (b.clone(), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    for i in 0..20 {
                        b.transition_to(moves[(i + t + round) % 4]).unwrap();
                    }
                })
            })
            .collect();
        for mover in movers {
            mover.join().unwrap();
        }
        let settled = b.state();
        assert_eq!(
            state_of(&handle, "racing"),
            [(settled.as_tag(), 1.0)],
            "round {round}: the gauges, with the breaker {settled}"
        );
    }
}

/// Four threads making `calls` calls each, of a fixed mix of outcomes. With `move_every`, the
/// first thread also moves the breaker by hand before every that many of its calls, through
/// FORCED_OPEN, CLOSED, METRICS_ONLY and a reset, while the other three keep calling. Returns
/// the successes recorded and the FORCED_OPEN periods entered.
fn traffic(b: &breaker_core::CircuitBreaker, calls: u32, move_every: Option<u32>) -> (u64, u64) {
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let b = b.clone();
            thread::spawn(move || {
                let (mut ok, mut forced_open, mut moves) = (0u64, 0u64, 0u32);
                for i in 0..calls {
                    if t == 0 && move_every.is_some_and(|every| i % every == 0) {
                        match moves % 4 {
                            0 => {
                                b.transition_to(State::ForcedOpen).unwrap();
                                forced_open += 1;
                            }
                            1 => b.transition_to(State::Closed).unwrap(),
                            2 => b.transition_to(State::MetricsOnly).unwrap(),
                            _ => b.reset(),
                        }
                        moves += 1;
                    }
                    if let Ok(permit) = b.try_acquire() {
                        let outcome = if (i + t) % 3 == 0 {
                            Outcome::Failure
                        } else {
                            Outcome::Success
                        };
                        if outcome == Outcome::Success {
                            ok += 1;
                        }
                        permit.record(outcome, Duration::from_millis(1));
                    }
                }
                (ok, forced_open)
            })
        })
        .collect();
    workers
        .into_iter()
        .map(|w| w.join().unwrap())
        .fold((0, 0), |(ok, fo), (o, f)| (ok + o, fo + f))
}

/// Many threads calling, alone and then while one of them moves the breaker by hand: events are
/// published out of order, yet after the dust settles the state gauges show the breaker's real
/// state, and the exported call count is exact.
///
/// The export counts a call when the breaker publishes its event, and the breaker publishes an
/// event for every call it records: in CLOSED, OPEN (a late call), HALF_OPEN and METRICS_ONLY.
/// A call that completes in FORCED_OPEN or DISABLED is recorded nowhere and publishes nothing
/// (`complete_locked` in breaker/machine.rs), and no caller can tell that this happened to its
/// call: `Permit::record` returns nothing, and the state can change between any reading of it
/// and the record. So:
/// - on a breaker that no one moves, the count equals the successes made, exactly;
/// - with them, it equals exactly the `Success` events another listener heard, and falls short
///   of the successes made by at most one call per calling thread per FORCED_OPEN period (a
///   thread's call can be caught by a transition to FORCED_OPEN only if it was permitted before
///   it, and its next call is refused until FORCED_OPEN is left); the thread that moves the
///   breaker never loses a call of its own, and its first success after each move to CLOSED is
///   exported, so the count is never 0.
#[test]
fn concurrent_traffic_leaves_the_gauges_on_the_real_state() {
    let successes_exported = |handle: &PrometheusHandle, name: &str| {
        get(
            handle,
            &format!(
                "resilience4j_circuitbreaker_calls_seconds_count{{kind=\"successful\",name=\"{name}\"}}"
            ),
        ) as u64
    };
    let count_successes = |b: &breaker_core::CircuitBreaker| {
        let heard = Arc::new(AtomicU64::new(0));
        let sink = heard.clone();
        let sub = b.subscribe(move |e| {
            if let EventKind::Success { .. } = e.kind() {
                sink.fetch_add(1, Ordering::SeqCst);
            }
        });
        (heard, sub)
    };

    // Alone, on a breaker that stays CLOSED (it would take 100 failures in a row to open it):
    // every success made is exported.
    let steady = Config::builder()
        .sliding_window_size(100)
        .minimum_number_of_calls(100)
        .failure_rate_threshold(100.0)
        .build()
        .unwrap();
    let (registry, _clock, _export, handle) = exported(steady);
    let b = registry.breaker("steady");
    let (heard, _sub) = count_successes(&b);
    let (made, _) = traffic(&b, 5_000, None);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(state_of(&handle, "steady"), [("closed", 1.0)]);
    assert_eq!(made, 4 * 5_000 * 2 / 3, "two calls in three succeed");
    assert_eq!(successes_exported(&handle, "steady"), made);
    assert_eq!(heard.load(Ordering::SeqCst), made);

    // While one of the calling threads moves the breaker by hand through FORCED_OPEN, CLOSED,
    // METRICS_ONLY and a reset (and the small window opens it on its own now and then).
    let (registry, _clock, _export, handle) = exported(small());
    let b = registry.breaker("busy");
    let (heard, _sub) = count_successes(&b);
    let (made, forced_open_periods) = traffic(&b, 5_000, Some(10));
    // Read before anything else moves the breaker: what the racing threads left.
    let settled = b.state();
    assert_eq!(
        state_of(&handle, "busy"),
        [(settled.as_tag(), 1.0)],
        "the gauges after the traffic, with the breaker {settled}"
    );
    let exported = successes_exported(&handle, "busy");
    assert_eq!(
        exported,
        heard.load(Ordering::SeqCst),
        "the export counts exactly the Success events published"
    );
    assert_eq!(forced_open_periods, 5_000 / 10 / 4);
    assert!(
        exported > 0 && exported <= made && made - exported <= 3 * forced_open_periods,
        "{exported} exported of {made} successes made, {forced_open_periods} FORCED_OPEN periods"
    );
}
