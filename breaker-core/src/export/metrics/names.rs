//! What the series are called: Resilience4j's metric names (and the retry budget's, ours),
//! their descriptions, and one breaker's, bulkhead's or retry's keys (name, labels and the registry's tags, sorted by label name).

use std::sync::Arc;

use metrics::{Key, KeyName, Label, Recorder, SharedString, Unit};

use crate::state::State;

pub(super) const STATE: &str = "resilience4j_circuitbreaker_state";
pub(super) const CALLS: &str = "resilience4j_circuitbreaker_calls_seconds";
pub(super) const CALLS_MAX: &str = "resilience4j_circuitbreaker_calls_seconds_max";
pub(super) const NOT_PERMITTED_CALLS: &str =
    "resilience4j_circuitbreaker_not_permitted_calls_total";
pub(super) const NOT_PERMITTED_CALLS_1X: &str = "resilience4j_circuitbreaker_calls_total";
pub(super) const FAILURE_RATE: &str = "resilience4j_circuitbreaker_failure_rate";
pub(super) const SLOW_CALL_RATE: &str = "resilience4j_circuitbreaker_slow_call_rate";
pub(super) const BUFFERED_CALLS: &str = "resilience4j_circuitbreaker_buffered_calls";
pub(super) const SLOW_CALLS: &str = "resilience4j_circuitbreaker_slow_calls";
pub(super) const BULKHEAD_AVAILABLE_CONCURRENT_CALLS: &str =
    "resilience4j_bulkhead_available_concurrent_calls";
pub(super) const BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS: &str =
    "resilience4j_bulkhead_max_allowed_concurrent_calls";
pub(super) const RETRY_CALLS_TOTAL: &str = "resilience4j_retry_calls_total";
pub(super) const RETRY_CALLS: &str = "resilience4j_retry_calls";
pub(super) const RETRY_REFUSED_BY_BUDGET: &str = "resilience4j_retry_refused_by_budget_total";

/// The `kind` of each call timer, in the order of `Keys::calls` and of the handles and maxima
/// built from them.
const CALL_KINDS: [&str; 3] = ["successful", "failed", "ignored"];
/// The `kind` of each window gauge, in the order of `Keys::buffered` and `Keys::slow`.
const WINDOW_KINDS: [&str; 2] = ["successful", "failed"];

/// A breaker's series: its name, labels and the registry's tags, sorted by label name.
pub(super) struct Keys {
    pub(super) states: [Key; 6],
    pub(super) calls: [Key; 3],
    pub(super) max: [Key; 3],
    pub(super) not_permitted: Key,
    pub(super) not_permitted_1x: Key,
    pub(super) failure_rate: Key,
    pub(super) slow_call_rate: Key,
    pub(super) buffered: [Key; 2],
    pub(super) slow: [Key; 2],
}

impl Keys {
    /// The keys of the breaker shown as `name`, each with the registry's `tags`.
    pub(super) fn new(name: &str, tags: &[Label]) -> Keys {
        let name = shared(name);
        let key = |metric, own: &[(&'static str, &'static str)]| labelled(metric, own, &name, tags);
        let kind = |metric, kind| key(metric, &[("kind", kind)]);
        Keys {
            states: State::ALL.map(|state| key(STATE, &[("state", state.as_tag())])),
            calls: CALL_KINDS.map(|k| kind(CALLS, k)),
            max: CALL_KINDS.map(|k| kind(CALLS_MAX, k)),
            not_permitted: kind(NOT_PERMITTED_CALLS, "not_permitted"),
            not_permitted_1x: kind(NOT_PERMITTED_CALLS_1X, "not_permitted"),
            failure_rate: key(FAILURE_RATE, &[]),
            slow_call_rate: key(SLOW_CALL_RATE, &[]),
            buffered: WINDOW_KINDS.map(|k| kind(BUFFERED_CALLS, k)),
            slow: WINDOW_KINDS.map(|k| kind(SLOW_CALLS, k)),
        }
    }
}

/// A bulkhead's series: its name and the registry's tags, sorted by label name.
pub(super) struct BulkheadKeys {
    pub(super) available: Key,
    pub(super) max_allowed: Key,
}

impl BulkheadKeys {
    /// The keys of the bulkhead named `name`, each with the registry's `tags`.
    pub(super) fn new(name: &str, tags: &[Label]) -> BulkheadKeys {
        let name = shared(name);
        BulkheadKeys {
            available: labelled(BULKHEAD_AVAILABLE_CONCURRENT_CALLS, &[], &name, tags),
            max_allowed: labelled(BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS, &[], &name, tags),
        }
    }
}

/// The `kind` of each retry call count, Resilience4j's, in the order of `RetryKeys::calls_total`
/// and `RetryKeys::calls`.
const RETRY_KINDS: [&str; 4] = [
    "successful_without_retry",
    "successful_with_retry",
    "failed_without_retry",
    "failed_with_retry",
];

/// A retry's series: its name and the registry's tags, sorted by label name.
pub(super) struct RetryKeys {
    pub(super) calls_total: [Key; 4],
    pub(super) calls: [Key; 4],
    pub(super) refused_by_budget: Key,
}

impl RetryKeys {
    /// The keys of the retry named `name`, each with the registry's `tags`.
    pub(super) fn new(name: &str, tags: &[Label]) -> RetryKeys {
        let name = shared(name);
        let by_kind =
            |metric| RETRY_KINDS.map(|kind| labelled(metric, &[("kind", kind)], &name, tags));
        RetryKeys {
            calls_total: by_kind(RETRY_CALLS_TOTAL),
            calls: by_kind(RETRY_CALLS),
            refused_by_budget: labelled(RETRY_REFUSED_BY_BUDGET, &[], &name, tags),
        }
    }
}

/// The key of `metric` with the labels `own`, `name` and the registry's `tags`, sorted by label
/// name as Micrometer sorts its tags.
fn labelled(
    metric: &'static str,
    own: &[(&'static str, &'static str)],
    name: &SharedString,
    tags: &[Label],
) -> Key {
    let mut labels: Vec<Label> = own
        .iter()
        .map(|&(label, value)| Label::new(label, value))
        .chain([Label::new("name", name.clone())])
        .chain(tags.iter().cloned())
        .collect();
    labels.sort_by(|a, b| a.key().cmp(b.key()));
    Key::from_parts(KeyName::from_const_str(metric), labels)
}

/// A label value shared by every series that carries it (a reference count, not a copy).
pub(super) fn shared(text: &str) -> SharedString {
    SharedString::from(Arc::<str>::from(text))
}

/// Gives `recorder` each metric's unit and description.
pub(super) fn describe_to(recorder: &dyn Recorder) {
    let name = KeyName::from_const_str;
    let text = SharedString::const_str;
    recorder.describe_gauge(name(STATE), None, text("The states of the circuit breaker"));
    recorder.describe_histogram(
        name(CALLS),
        Some(Unit::Seconds),
        text("Calls recorded by the circuit breaker: successful, failed, or failed with an ignored error"),
    );
    recorder.describe_gauge(
        name(CALLS_MAX),
        Some(Unit::Seconds),
        text("The longest call recorded by the circuit breaker in the last 2 to 3 minutes"),
    );
    recorder.describe_counter(
        name(NOT_PERMITTED_CALLS),
        None,
        text("Total number of not permitted calls"),
    );
    recorder.describe_counter(
        name(NOT_PERMITTED_CALLS_1X),
        None,
        text("Total number of not permitted calls (Resilience4j 1.x name)"),
    );
    recorder.describe_gauge(
        name(FAILURE_RATE),
        None,
        text("The failure rate of the circuit breaker"),
    );
    recorder.describe_gauge(
        name(SLOW_CALL_RATE),
        None,
        text("The slow call rate of the circuit breaker"),
    );
    recorder.describe_gauge(
        name(BUFFERED_CALLS),
        None,
        text("The number of buffered calls stored in the sliding window"),
    );
    recorder.describe_gauge(
        name(SLOW_CALLS),
        None,
        text("The number of slow calls which were slower than the slow call duration threshold"),
    );
    recorder.describe_gauge(
        name(BULKHEAD_AVAILABLE_CONCURRENT_CALLS),
        None,
        text("The number of available permissions"),
    );
    recorder.describe_gauge(
        name(BULKHEAD_MAX_ALLOWED_CONCURRENT_CALLS),
        None,
        text("The maximum number of available permissions"),
    );
    // Micrometer's Prometheus registry writes one HELP per name, the first meter's: the
    // `successful_without_retry` count's description.
    recorder.describe_counter(
        name(RETRY_CALLS_TOTAL),
        None,
        text("The number of successful calls without a retry attempt"),
    );
    recorder.describe_gauge(
        name(RETRY_CALLS),
        None,
        text("The number of successful calls without a retry attempt"),
    );
    recorder.describe_counter(
        name(RETRY_REFUSED_BY_BUDGET),
        None,
        text("The number of retries the retry budget refused (breaker's own metric, not Resilience4j's)"),
    );
}
