//! A breaker (or a bulkhead) that leaves the registry (removed, replaced, evicted) leaves the
//! metrics export at once, and its series leave a Prometheus scrape once the recorder's idle timeout has passed,
//! while the series of the breakers still in the registry stay, kept current by the export's own
//! refresh (every `REFRESH_INTERVAL` of the registry's clock) or by `refresh()`.
//!
//! Two clocks are at work. The registry's is a [`ManualClock`], advanced by one refresh
//! interval where a real one would have run the export's refresh. The idle timeout is
//! metrics-exporter-prometheus's, on a clock of its own that no test can set
//! (`PrometheusBuilder` builds its recorder on a real `quanta::Clock`), so the test waits for
//! real time, a quarter of a second. It is arranged so that only "at least `IDLE` passed" ever
//! matters, which a sleep guarantees on any machine, and never "less than `IDLE` passed", which
//! a loaded machine can break between two lines: the recorder stamps a series when a scrape
//! first sees a new value of it (a new generation: any write, even of the same value), so a
//! series the test expects in a scrape is always written between the scrape before and that
//! one, and counts as fresh however late the scrape comes.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use breaker_core::{Config, KeyedLimits, ManualClock, MetricsExport, Registry, State};
use metrics_exporter_prometheus::PrometheusBuilder;
use metrics_util::MetricKindMask;

const IDLE: Duration = Duration::from_millis(100);

fn series_of(text: &str, name: &str) -> Vec<String> {
    let label = format!("name=\"{name}\"");
    text.lines()
        .filter(|line| line.contains(&label))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_removed_breakers_series_leave_the_scrape() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .default_config(
            Config::builder()
                .sliding_window_size(2)
                .minimum_number_of_calls(2)
                .build()
                .unwrap(),
        )
        .keyed_limits(KeyedLimits::unbounded().max_idle(Duration::from_secs(60)))
        .build();
    let recorder = PrometheusBuilder::new()
        .idle_timeout(MetricKindMask::ALL, Some(IDLE))
        .build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(&registry, Arc::new(recorder));

    let kept = registry.breaker("kept");
    let removed = registry.breaker("removed");
    let replaced = registry.breaker("replaced");
    let keyed = registry.keyed("tenant");
    let evicted = keyed.get("idle");
    let _bulkhead = registry.bulkhead("bulkheadKept");
    registry.bulkhead("bulkheadRemoved");
    for b in [&kept, &removed, &replaced, &evicted] {
        let _ = b.call_sync(|| Ok::<_, ()>(()));
    }
    let _ = kept.call_sync(|| Err::<(), _>("503"));
    assert_eq!(kept.state(), State::Open);
    let _ = kept.call_sync(|| Ok::<_, ()>(()));
    export.refresh();
    let text = handle.render();
    for name in ["kept", "removed", "replaced", "tenant[idle]"] {
        assert!(
            series_of(&text, name).len() > 20,
            "{name} is exported:\n{text}"
        );
    }
    assert_eq!(export.len(), 4);

    // The leaving breakers' last writes, after that scrape: a call and a refresh give each of
    // their series a new value, so the next scrape finds them fresh, however long after this
    // one it comes.
    let _ = removed.call_sync(|| Ok::<_, ()>(()));
    export.refresh();

    registry.remove("removed");
    registry.replace("replaced", Config::default());
    registry.remove_bulkhead("bulkheadRemoved");
    assert_eq!(export.bulkhead_count(), 1);
    clock.advance(Duration::from_secs(90)); // the sweep evicts `tenant[idle]`
    assert!(keyed.find("idle").is_none() && evicted.is_detached());
    assert_eq!(export.len(), 2, "kept, and the new `replaced`");
    // The removed breakers' handles are gone; their series stop changing. Calls on a
    // detached breaker reach the export no more.
    let _ = removed.call_sync(|| Ok::<_, ()>(()));
    export.refresh();
    let before = handle.render();
    assert!(
        series_of(&before, "removed")
            .iter()
            .any(|l| l == "resilience4j_circuitbreaker_state{name=\"removed\",state=\"closed\"} 1"),
        "not idle yet:\n{before}"
    );

    // At least the idle timeout on the recorder's clock (a sleep never ends early): every
    // series left unwritten since `before` is idle at the next scrape.
    std::thread::sleep(IDLE * 5 / 2);
    clock.advance(MetricsExport::REFRESH_INTERVAL); // the export's own refresh, no refresh()
    let after = handle.render();
    assert!(series_of(&after, "removed").is_empty(), "{after}");
    assert!(series_of(&after, "tenant[idle]").is_empty(), "{after}");
    assert!(series_of(&after, "bulkheadRemoved").is_empty(), "{after}");
    let mut bulkhead_series = series_of(&after, "bulkheadKept");
    bulkhead_series.sort();
    assert_eq!(
        bulkhead_series,
        [
            "resilience4j_bulkhead_available_concurrent_calls{name=\"bulkheadKept\"} 25",
            "resilience4j_bulkhead_max_allowed_concurrent_calls{name=\"bulkheadKept\"} 25",
        ],
        "{after}"
    );
    // The breakers in the registry keep their gauges and counters.
    let kept_series = series_of(&after, "kept");
    assert!(
        kept_series
            .iter()
            .any(|l| l == "resilience4j_circuitbreaker_state{name=\"kept\",state=\"open\"} 1"),
        "{after}"
    );
    assert!(
        kept_series.iter().any(|l| l.starts_with(
            "resilience4j_circuitbreaker_not_permitted_calls_total{kind=\"not_permitted\",name=\"kept\"} 1"
        )),
        "{after}"
    );
    assert!(
        series_of(&after, "replaced")
            .iter()
            .any(|l| l == "resilience4j_circuitbreaker_state{name=\"replaced\",state=\"closed\"} 1"),
        "the new `replaced`:\n{after}"
    );
    // A histogram cannot be touched without a sample: the new `replaced` made no call for the
    // whole timeout, so the recorder dropped its histograms at that scrape. The next refresh
    // registers them again, and they count from zero.
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    let _ = registry.breaker("replaced").call_sync(|| Ok::<_, ()>(()));
    let text = handle.render();
    assert!(
        text.contains(
            "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"replaced\"} 1"
        ),
        "{text}"
    );
    // An evicted key made again is a new breaker, exported from its creation.
    let _ = keyed.get("idle").call_sync(|| Ok::<_, ()>(()));
    let text = handle.render();
    assert!(
        text.contains(
            "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"tenant[idle]\"} 1"
        ),
        "{text}"
    );
}
