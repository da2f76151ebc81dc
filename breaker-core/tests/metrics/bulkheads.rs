//! The bulkheads in the `metrics` export: Resilience4j's two gauges with its descriptions and
//! the registry's tags, rendered by the Prometheus exporter, for bulkheads made before and after
//! the export; kept current by the export's own refresh on the registry's clock (a call, a
//! runtime limit change); a removed bulkhead leaves the export and its name's next bulkhead is
//! exported afresh.
#![cfg(feature = "metrics")]

use std::sync::Arc;

use breaker_core::{BulkheadConfig, ManualClock, MetricsExport, Registry, RegistryBuilder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

fn limit(max: u32) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .build()
        .unwrap()
}

/// A registry on a manual clock tagged `application=orders`, with the bulkheads `configure`
/// sets up.
fn tagged(configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let builder = Registry::builder()
        .clock(clock.clone())
        .tag("application", "orders")
        .unwrap();
    (configure(builder).build(), clock)
}

/// `registry` exported to a Prometheus recorder of its own.
fn exported(registry: &Registry) -> (MetricsExport, PrometheusHandle) {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let export = MetricsExport::install_with_recorder(registry, Arc::new(recorder));
    (export, handle)
}

/// The value of `metric{application="orders",name="<name>"}`, if rendered.
fn gauge(handle: &PrometheusHandle, metric: &str, name: &str) -> Option<f64> {
    let series = format!(r#"{metric}{{application="orders",name="{name}"}} "#);
    let text = handle.render();
    text.lines()
        .find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
}

fn available(handle: &PrometheusHandle, name: &str) -> Option<f64> {
    gauge(
        handle,
        "resilience4j_bulkhead_available_concurrent_calls",
        name,
    )
}

fn max_allowed(handle: &PrometheusHandle, name: &str) -> Option<f64> {
    gauge(
        handle,
        "resilience4j_bulkhead_max_allowed_concurrent_calls",
        name,
    )
}

#[test]
fn the_gauges_follow_calls_and_limit_changes_at_each_refresh() {
    let (registry, clock) = tagged(|b| {
        b.bulkhead_instance("inventory", limit(3))
            .bulkhead_instance("ledger", limit(5))
    });
    let inventory = registry.bulkhead("inventory"); // before the export
    let (export, handle) = exported(&registry);
    registry.bulkhead("ledger"); // after it
    assert_eq!(export.bulkhead_count(), 2);
    assert_eq!(export.len(), 0, "no breaker");

    let text = handle.render();
    for help in [
        "# HELP resilience4j_bulkhead_available_concurrent_calls The number of available permissions",
        "# HELP resilience4j_bulkhead_max_allowed_concurrent_calls The maximum number of available permissions",
        "# TYPE resilience4j_bulkhead_available_concurrent_calls gauge",
        "# TYPE resilience4j_bulkhead_max_allowed_concurrent_calls gauge",
    ] {
        assert!(text.lines().any(|l| l == help), "no `{help}` in:\n{text}");
    }
    assert_eq!(available(&handle, "inventory"), Some(3.0));
    assert_eq!(max_allowed(&handle, "inventory"), Some(3.0));
    assert_eq!(available(&handle, "ledger"), Some(5.0));
    assert_eq!(max_allowed(&handle, "ledger"), Some(5.0));

    // Two calls in; the export's own refresh (no `refresh()`) shows them.
    let first = inventory.try_acquire().unwrap();
    let second = inventory.try_acquire().unwrap();
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(available(&handle, "inventory"), Some(1.0));
    assert_eq!(max_allowed(&handle, "inventory"), Some(3.0));
    assert_eq!(available(&handle, "ledger"), Some(5.0));

    // A lower limit with two calls in flight: no free place until they finish.
    inventory.change_config(limit(1));
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(available(&handle, "inventory"), Some(0.0));
    assert_eq!(max_allowed(&handle, "inventory"), Some(1.0));
    drop((first, second));
    export.refresh();
    assert_eq!(available(&handle, "inventory"), Some(1.0));
}

#[test]
fn a_removed_bulkhead_leaves_the_export() {
    let (registry, clock) = tagged(|b| b.bulkhead_default_config(limit(2)));
    let (export, handle) = exported(&registry);
    let kept = registry.bulkhead("kept");
    let removed = registry.bulkhead("removed");
    assert_eq!(export.bulkhead_count(), 2);

    assert!(registry.remove_bulkhead("removed").is_some());
    assert_eq!(export.bulkhead_count(), 1);
    // The removed bulkhead's gauges are written no more; the kept one's are.
    let _in_removed = removed.try_acquire().unwrap();
    let _in_kept = kept.try_acquire().unwrap();
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    assert_eq!(available(&handle, "removed"), Some(2.0), "frozen");
    assert_eq!(available(&handle, "kept"), Some(1.0));

    // A bulkhead made again under the name is exported from its creation.
    let again = registry.bulkhead("removed");
    assert!(!again.ptr_eq(&removed));
    assert_eq!(export.bulkhead_count(), 2);
    let _in_again = again.try_acquire().unwrap();
    let _also = again.try_acquire().unwrap();
    export.refresh();
    assert_eq!(available(&handle, "removed"), Some(0.0));
}
