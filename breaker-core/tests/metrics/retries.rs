//! The retries in the `metrics` export: Resilience4j's `resilience4j_retry_calls_total` counters
//! (and the `resilience4j_retry_calls` gauges of its releases 1.0 to 1.2) with their four kinds,
//! their description and the registry's tags, and the budget's refusals
//! (breaker's own counter), rendered by the Prometheus exporter, for retries made before and
//! after the export; written by the export's own refresh on the registry's clock, not by the
//! calls; a removed retry leaves the export and its name's next retry is exported afresh.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use breaker_core::retry::Retry;
use breaker_core::{Classifier, ManualClock, MetricsExport, Registry, RetryConfig};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// Three attempts, no wait between them; the budget as `budget` says, with no floor: one call
/// allows 0.2 retries, so its first retry is refused.
fn attempts(budget: bool) -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .budget_enabled(budget)
        .budget_min_retries_per_second(0)
        .build()
        .unwrap()
}

/// A registry on a manual clock tagged `application=orders`, with a retry `inventory` without
/// budget and a retry `ledger` with one.
fn registry() -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .tag("application", "orders")
        .unwrap()
        .retry_instance("inventory", attempts(false))
        .retry_instance("ledger", attempts(true))
        .build();
    (registry, clock)
}

/// `registry` exported to a Prometheus recorder of its own.
fn exported(registry: &Registry) -> (MetricsExport, PrometheusHandle) {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(registry, Arc::new(recorder));
    (export, handle)
}

/// The value of `series` (name and labels exactly as rendered), if rendered.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.trim().parse().ok()
    })
}

/// The four `resilience4j_retry_calls` gauges of the retry `name`, in Resilience4j's order of
/// kinds.
fn calls(handle: &PrometheusHandle, name: &str) -> [Option<f64>; 4] {
    series_by_kind(handle, "resilience4j_retry_calls", name)
}

/// The four `resilience4j_retry_calls_total` counters of the retry `name`, in the same order.
fn calls_total(handle: &PrometheusHandle, name: &str) -> [Option<f64>; 4] {
    series_by_kind(handle, "resilience4j_retry_calls_total", name)
}

/// The four series `metric` of the retry `name`, one per kind of call.
fn series_by_kind(handle: &PrometheusHandle, metric: &str, name: &str) -> [Option<f64>; 4] {
    let text = handle.render();
    [
        "successful_without_retry",
        "successful_with_retry",
        "failed_without_retry",
        "failed_with_retry",
    ]
    .map(|kind| {
        let series = format!(r#"{metric}{{application="orders",kind="{kind}",name="{name}"}}"#);
        value(&text, &series)
    })
}

fn refused(handle: &PrometheusHandle, name: &str) -> Option<f64> {
    let series = format!(
        r#"resilience4j_retry_refused_by_budget_total{{application="orders",name="{name}"}}"#
    );
    value(&handle.render(), &series)
}

/// A call whose first `failures` attempts fail and the next succeeds.
fn succeed_after(retry: &Retry, failures: u32) {
    let mut attempt = 0;
    let _ = retry.call_sync(|| {
        attempt += 1;
        if attempt > failures {
            Ok(())
        } else {
            Err("down")
        }
    });
}

fn fail(retry: &Retry) {
    let _ = retry.call_sync(|| Err::<(), _>("down"));
}

#[test]
fn the_four_kinds_and_the_refusals_follow_the_calls_at_each_refresh() {
    let (registry, clock) = registry();
    let inventory = registry.retry("inventory"); // before the export
    let (export, handle) = exported(&registry);
    let ledger = registry.retry("ledger"); // after it
    assert_eq!(export.retry_count(), 2);
    assert_eq!(export.len(), 0, "no breaker");

    let text = handle.render();
    for line in [
        "# HELP resilience4j_retry_calls_total The number of successful calls without a retry attempt",
        "# TYPE resilience4j_retry_calls_total counter",
        "# HELP resilience4j_retry_calls The number of successful calls without a retry attempt",
        "# TYPE resilience4j_retry_calls gauge",
        "# HELP resilience4j_retry_refused_by_budget_total The number of retries the retry budget refused (breaker's own metric, not Resilience4j's)",
        "# TYPE resilience4j_retry_refused_by_budget_total counter",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    let zero = [Some(0.0); 4];
    assert_eq!(calls(&handle, "inventory"), zero);
    assert_eq!(calls(&handle, "ledger"), zero);
    assert_eq!(refused(&handle, "ledger"), Some(0.0));

    // 1 success at once, 2 after a retry, 3 ignored errors, 4 calls out of attempts.
    succeed_after(&inventory, 0);
    for _ in 0..2 {
        succeed_after(&inventory, 2);
    }
    let ignored = Classifier::new().ignore(|_: &&str| true);
    for _ in 0..3 {
        let _ = inventory.call_sync_with(&ignored, || Err::<(), _>("bad request"));
    }
    for _ in 0..4 {
        fail(&inventory);
    }
    // The budget refuses the first retry of a lone call.
    fail(&ledger);
    assert_eq!(ledger.metrics().retries_refused_by_budget(), 1);

    // Written by the export's own refresh (no `refresh()`), not by the calls.
    assert_eq!(calls(&handle, "inventory"), zero, "not on the call path");
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(
        calls(&handle, "inventory"),
        [Some(1.0), Some(2.0), Some(3.0), Some(4.0)]
    );
    assert_eq!(
        calls_total(&handle, "inventory"),
        calls(&handle, "inventory"),
        "the counters of Resilience4j 1.3 and later, and the gauges of 1.0 to 1.2"
    );
    assert_eq!(refused(&handle, "inventory"), Some(0.0));
    assert_eq!(refused(&handle, "ledger"), Some(1.0));
    let ledger_calls: f64 = calls(&handle, "ledger").iter().map(|v| v.unwrap()).sum();
    assert_eq!(ledger_calls, 1.0, "the refused call counts once");

    // `refresh()` writes at a moment of the caller's choosing.
    succeed_after(&inventory, 0);
    export.refresh();
    assert_eq!(calls(&handle, "inventory")[0], Some(2.0));
}

#[test]
fn a_removed_retry_leaves_the_export() {
    let (registry, clock) = registry();
    let (export, handle) = exported(&registry);
    let kept = registry.retry("inventory");
    let removed = registry.retry("ledger");
    assert_eq!(export.retry_count(), 2);

    assert!(registry.remove_retry("ledger").is_some());
    assert_eq!(export.retry_count(), 1);
    // The removed retry's series are written no more; the kept one's are.
    succeed_after(&removed, 0);
    succeed_after(&kept, 0);
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(calls(&handle, "ledger")[0], Some(0.0), "frozen");
    assert_eq!(calls(&handle, "inventory")[0], Some(1.0));

    // A retry made again under the name is exported from its creation, counting afresh.
    let again = registry.retry("ledger");
    assert!(!again.ptr_eq(&removed));
    assert_eq!(export.retry_count(), 2);
    fail(&again);
    export.refresh();
    let total: f64 = calls(&handle, "ledger").iter().map(|v| v.unwrap()).sum();
    assert_eq!(total, 1.0);
}
