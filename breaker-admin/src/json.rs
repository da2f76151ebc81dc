//! The JSON bodies, field for field as Resilience4j's actuator writes them (its
//! `CircuitBreakerDetails`, `CircuitBreakerEventDTO`, `CircuitBreakerUpdateStateResponse`,
//! `BulkheadEndpointResponse`, `BulkheadEventDTO`, `RetryEndpointResponse`
//! and `RetryEventDTO`), plus the dashboard's summary and state history.
//!
//! Each body is a derived `Serialize` struct whose fields are in the order of the Java class's
//! fields, which is the order Jackson writes them in; serde writes a struct's fields in their
//! declared order straight to the output. (A `serde_json::Value` would not keep it: its map
//! sorts keys unless some crate in the build turns on serde_json's `preserve_order`.) Maps
//! keyed by names are `BTreeMap`s, in name order, as Resilience4j sorts its breakers.
//!
//! Resilience4j's DTOs leave a field `null` when the event has no value for it (a SUCCESS has
//! no `errorMessage`, only a STATE_TRANSITION has a `stateTransition`), and Jackson writes the
//! `null`: its event stream writes them with a plain `ObjectMapper`, and its endpoints' bodies
//! are not Spring Boot's own endpoint types, so Spring writes them with the application's
//! mapper, which includes nulls unless the service sets
//! `spring.jackson.default-property-inclusion`. The DTOs here write them as `null` too, in
//! every body, so the stream and the lists have one shape.

use std::collections::BTreeMap;

use breaker_core::{CircuitBreaker, State};
use serde::Serialize;

use crate::bulkheads::{BulkheadRecord, TrackedBulkhead};
use crate::event::{EventType, Record};
use crate::hub::Tracked;
use crate::retries::{RetryEventType, RetryRecord, TrackedRetry};
use crate::roster::Followed;
use crate::text::{percent, zoned_utc};

/// Resilience4j's `CircuitBreakerDetails`: rates and thresholds as Java prints a float, then
/// `%` (`"-1.0%"` before the minimum number of calls), counts as numbers, the state's name.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Details {
    failure_rate: String,
    slow_call_rate: String,
    failure_rate_threshold: String,
    slow_call_rate_threshold: String,
    buffered_calls: u32,
    failed_calls: u32,
    slow_calls: u32,
    slow_failed_calls: u32,
    not_permitted_calls: u64,
    state: &'static str,
}

impl Details {
    pub(crate) fn of(breaker: &CircuitBreaker) -> Details {
        let m = breaker.metrics();
        let config = breaker.config();
        Details {
            failure_rate: percent(m.failure_rate.unwrap_or(-1.0)),
            slow_call_rate: percent(m.slow_call_rate.unwrap_or(-1.0)),
            failure_rate_threshold: percent(config.failure_rate_threshold()),
            slow_call_rate_threshold: percent(config.slow_call_rate_threshold()),
            buffered_calls: m.buffered_calls,
            failed_calls: m.failed_calls,
            slow_calls: m.slow_calls,
            slow_failed_calls: m.slow_failed_calls,
            not_permitted_calls: m.not_permitted_calls,
            state: m.state.as_str(),
        }
    }
}

/// `CircuitBreakerEndpointResponse`: `{"circuitBreakers": {name: details}}`, in name order
/// (Resilience4j sorts its breakers by name into a `LinkedHashMap`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CircuitBreakersResponse<'a> {
    circuit_breakers: BTreeMap<&'a str, Details>,
}

impl<'a> CircuitBreakersResponse<'a> {
    pub(crate) fn of(
        breakers: impl IntoIterator<Item = &'a Tracked>,
    ) -> CircuitBreakersResponse<'a> {
        CircuitBreakersResponse {
            circuit_breakers: breakers
                .into_iter()
                .map(|t| (t.name(), Details::of(&t.breaker)))
                .collect(),
        }
    }
}

/// Resilience4j's `CircuitBreakerEventDTO`, its fields in its order, a field the event has no
/// value for written as `null` (see the module's docs). `errorMessage` is an ERROR or
/// IGNORED_ERROR event's error, `type: text` (the error's type name and its `Display` text, as
/// Resilience4j writes `throwable.toString()`), while the breaker's feed keeps it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventDto<'a> {
    circuit_breaker_name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    creation_time: String,
    /// Resilience4j's `throwable.toString()` on ERROR and IGNORED_ERROR; here the error's text
    /// as the caller captured it, if it did.
    error_message: Option<&'a str>,
    duration_in_ms: Option<u64>,
    state_transition: Option<String>,
}

impl<'a> EventDto<'a> {
    /// The DTO of `record`, an event of the breaker `name`; `error_message` is the error's text
    /// for an ERROR or IGNORED_ERROR (`None` when it was not captured, and for other types,
    /// which carry no error).
    pub(crate) fn new(
        name: &'a str,
        record: &Record,
        error_message: Option<&'a str>,
    ) -> EventDto<'a> {
        let has_error = matches!(record.kind, EventType::Error | EventType::IgnoredError);
        EventDto {
            circuit_breaker_name: name,
            kind: record.kind.as_str(),
            creation_time: zoned_utc(record.at),
            error_message: error_message.filter(|_| has_error),
            // Java's `Duration.toMillis()`: whole milliseconds, rounded down.
            duration_in_ms: record
                .elapsed
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            state_transition: record
                .transition
                .map(|(from, to)| format!("{}_TO_{}", from.as_str(), to.as_str())),
        }
    }
}

/// `CircuitBreakerEventsEndpointResponse`: `{"circuitBreakerEvents": [...]}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventsResponse<'a> {
    pub(crate) circuit_breaker_events: Vec<EventDto<'a>>,
}

/// `CircuitBreakerUpdateStateResponse`, as Resilience4j's write operation answers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateStateResponse {
    pub(crate) circuit_breaker_name: String,
    pub(crate) current_state: &'static str,
    pub(crate) message: String,
}

/// `BulkheadEndpointResponse`: `{"bulkheads": [name, ...]}`, sorted by name.
#[derive(Serialize)]
pub(crate) struct BulkheadsResponse {
    pub(crate) bulkheads: Vec<String>,
}

/// Resilience4j's `BulkheadEventDTO`, its fields in its order (the body is written from this
/// struct, not through a `serde_json::Value`, whose map would sort them).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkheadEventDto {
    bulkhead_name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    creation_time: String,
}

impl BulkheadEventDto {
    pub(crate) fn new(name: &str, record: &BulkheadRecord) -> BulkheadEventDto {
        BulkheadEventDto {
            bulkhead_name: name.to_owned(),
            kind: record.kind.as_str(),
            creation_time: zoned_utc(record.at),
        }
    }
}

/// `BulkheadEventsEndpointResponse`: `{"bulkheadEvents": [...]}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkheadEventsResponse {
    pub(crate) bulkhead_events: Vec<BulkheadEventDto>,
}

/// `RetryEndpointResponse`: `{"retries": [name, ...]}`, sorted by name.
#[derive(Serialize)]
pub(crate) struct RetriesResponse {
    pub(crate) retries: Vec<String>,
}

/// Resilience4j's `RetryEventDTO`, its fields in its order, `errorMessage` `null` when there is
/// none (see the module's docs). The core's events carry no error text, so `errorMessage` says
/// what the event itself tells ([`error_message`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RetryEventDto {
    retry_name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    creation_time: String,
    error_message: Option<String>,
    number_of_attempts: u32,
}

impl RetryEventDto {
    pub(crate) fn new(name: &str, record: &RetryRecord) -> RetryEventDto {
        RetryEventDto {
            retry_name: name.to_owned(),
            kind: record.kind.as_str(),
            creation_time: zoned_utc(record.at),
            error_message: error_message(record),
            number_of_attempts: record.attempts,
        }
    }
}

/// A retry event's `errorMessage`. Resilience4j writes the last error's `toString()`; the
/// core's events do not carry the error, so this says what the event tells: that an attempt
/// failed and when the next one starts (RETRY, the wait in whole milliseconds, rounded down as
/// Java's `Duration.toMillis()`), that the retry gave up (ERROR), that the error is not retried
/// (IGNORED_ERROR), that the budget refused a retry (BUDGET_EXHAUSTED). A SUCCESS has none.
pub(crate) fn error_message(record: &RetryRecord) -> Option<String> {
    Some(match record.kind {
        RetryEventType::Retry => format!(
            "the attempt failed; the next one starts in {} ms",
            record.wait.as_millis()
        ),
        RetryEventType::Error => "every attempt failed: the retry gave up".to_owned(),
        RetryEventType::IgnoredError => {
            "the error is ignored: the retry does not retry it".to_owned()
        }
        RetryEventType::BudgetExhausted => {
            "the attempt failed and the retry budget refused the next one".to_owned()
        }
        RetryEventType::Success => return None,
    })
}

/// `RetryEventsEndpointResponse`: `{"retryEvents": [...]}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RetryEventsResponse {
    pub(crate) retry_events: Vec<RetryEventDto>,
}

/// A retry in the dashboard's summary: Resilience4j's four counts and the budget's refusals,
/// since the retry's creation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RetryCounts {
    successful_without_retry: u64,
    successful_with_retry: u64,
    failed_without_retry: u64,
    failed_with_retry: u64,
    refused_by_budget: u64,
}

impl RetryCounts {
    pub(crate) fn of(tracked: &TrackedRetry) -> RetryCounts {
        let m = tracked.retry.metrics();
        RetryCounts {
            successful_without_retry: m.successful_calls_without_retry_attempt(),
            successful_with_retry: m.successful_calls_with_retry_attempt(),
            failed_without_retry: m.failed_calls_without_retry_attempt(),
            failed_with_retry: m.failed_calls_with_retry_attempt(),
            refused_by_budget: m.retries_refused_by_budget(),
        }
    }
}

/// A bulkhead in the dashboard's summary: its limit, its free places, the calls in it
/// (`inFlightCalls`, the limit less the free places) and the calls waiting for a place.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkheadGauge {
    max_allowed_concurrent_calls: u32,
    available_concurrent_calls: u32,
    in_flight_calls: u32,
    waiting_calls: u32,
}

impl BulkheadGauge {
    pub(crate) fn of(tracked: &TrackedBulkhead) -> BulkheadGauge {
        let m = tracked.bulkhead.metrics();
        let max = m.max_allowed_concurrent_calls();
        let available = m.available_concurrent_calls();
        BulkheadGauge {
            max_allowed_concurrent_calls: max,
            available_concurrent_calls: available,
            in_flight_calls: max.saturating_sub(available),
            waiting_calls: m.waiting_calls(),
        }
    }
}

/// A bulkhead no breaker shares a name with, in the dashboard's summary.
#[derive(Serialize)]
pub(crate) struct LoneBulkhead<'a> {
    name: &'a str,
    #[serde(flatten)]
    gauge: BulkheadGauge,
}

impl<'a> LoneBulkhead<'a> {
    pub(crate) fn of(tracked: &'a TrackedBulkhead) -> LoneBulkhead<'a> {
        LoneBulkhead {
            name: tracked.name(),
            gauge: BulkheadGauge::of(tracked),
        }
    }
}

/// One breaker in the dashboard's summary. Rates and thresholds are numbers here (percent,
/// -1 for "no rate yet"); `calls`, `failures`, `slow` and `rejected` count since the admin
/// started following the breaker; `bulkhead` and `retry` are the bulkhead and the retry of
/// the same name, if any.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BreakerSummary<'a> {
    name: &'a str,
    state: &'static str,
    failure_rate: f32,
    slow_call_rate: f32,
    failure_rate_threshold: f32,
    slow_call_rate_threshold: f32,
    buffered_calls: u32,
    failed_calls: u32,
    slow_calls: u32,
    not_permitted_calls: u64,
    calls: u64,
    failures: u64,
    slow: u64,
    rejected: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    bulkhead: Option<BulkheadGauge>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<RetryCounts>,
}

impl<'a> BreakerSummary<'a> {
    pub(crate) fn of(
        tracked: &'a Tracked,
        bulkhead: Option<&TrackedBulkhead>,
        retry: Option<&TrackedRetry>,
    ) -> BreakerSummary<'a> {
        use std::sync::atomic::Ordering::Relaxed;
        let breaker = &tracked.breaker;
        let m = breaker.metrics();
        let config = breaker.config();
        let feed = &tracked.feed;
        BreakerSummary {
            name: tracked.name(),
            state: m.state.as_str(),
            failure_rate: m.failure_rate.unwrap_or(-1.0),
            slow_call_rate: m.slow_call_rate.unwrap_or(-1.0),
            failure_rate_threshold: config.failure_rate_threshold(),
            slow_call_rate_threshold: config.slow_call_rate_threshold(),
            buffered_calls: m.buffered_calls,
            failed_calls: m.failed_calls,
            slow_calls: m.slow_calls,
            not_permitted_calls: m.not_permitted_calls,
            calls: feed.calls(),
            failures: feed.failures.load(Relaxed),
            slow: feed.slow.load(Relaxed),
            rejected: feed.rejected.load(Relaxed),
            bulkhead: bulkhead.map(BulkheadGauge::of),
            retry: retry.map(RetryCounts::of),
        }
    }
}

/// Breakers per state, every state named even at 0.
#[derive(Default, Serialize)]
pub(crate) struct StateCounts {
    #[serde(rename = "CLOSED")]
    closed: usize,
    #[serde(rename = "OPEN")]
    open: usize,
    #[serde(rename = "HALF_OPEN")]
    half_open: usize,
    #[serde(rename = "FORCED_OPEN")]
    forced_open: usize,
    #[serde(rename = "DISABLED")]
    disabled: usize,
    #[serde(rename = "METRICS_ONLY")]
    metrics_only: usize,
}

impl StateCounts {
    pub(crate) fn add(&mut self, state: State) {
        let slot = match state {
            State::Closed => &mut self.closed,
            State::Open => &mut self.open,
            State::HalfOpen => &mut self.half_open,
            State::ForcedOpen => &mut self.forced_open,
            State::Disabled => &mut self.disabled,
            State::MetricsOnly => &mut self.metrics_only,
        };
        *slot += 1;
    }
}

/// The dashboard's `GET /dashboard/api/breakers` body.
#[derive(Serialize)]
pub(crate) struct Summary<'a> {
    pub(crate) total: usize,
    pub(crate) matched: usize,
    pub(crate) states: StateCounts,
    pub(crate) now: u64,
    pub(crate) breakers: Vec<BreakerSummary<'a>>,
    /// The bulkheads whose name no breaker has (see `routes/dashboard.rs`).
    pub(crate) bulkheads: Vec<LoneBulkhead<'a>>,
    #[serde(rename = "bulkheadsMatched")]
    pub(crate) bulkheads_matched: usize,
}

/// One state change in the dashboard's state history: a STATE_TRANSITION with its
/// `stateTransition` and `from` (as the event DTO writes them), or a RESET, which carries no
/// `from`. `to` is the state from `creationTime` on.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateChange {
    #[serde(rename = "type")]
    kind: &'static str,
    creation_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_transition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'static str>,
    to: &'static str,
}

impl StateChange {
    /// The change a STATE_TRANSITION or RESET record makes; `None` for any other record.
    fn of(record: &Record) -> Option<StateChange> {
        let (from, to) = match (record.kind, record.transition) {
            (EventType::StateTransition, Some((from, to))) => (Some(from), to),
            (EventType::Reset, _) => (None, State::Closed),
            _ => return None,
        };
        Some(StateChange {
            kind: record.kind.as_str(),
            creation_time: zoned_utc(record.at),
            state_transition: from.map(|from| format!("{}_TO_{}", from.as_str(), to.as_str())),
            from: from.map(State::as_str),
            to: to.as_str(),
        })
    }
}

/// The dashboard's `GET /dashboard/api/breakers/{name}/states` body: the breaker's state when
/// the admin started following it (`since`, `initialState`), then its newest state changes,
/// oldest first; `dropped` counts the older ones no longer kept (0: the list is every change
/// since `since`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateHistory<'a> {
    name: &'a str,
    since: String,
    initial_state: &'static str,
    dropped: u64,
    transitions: Vec<StateChange>,
}

impl<'a> StateHistory<'a> {
    pub(crate) fn of(tracked: &'a Tracked) -> StateHistory<'a> {
        let (records, dropped) = tracked.feed.state_changes();
        StateHistory {
            name: tracked.name(),
            since: zoned_utc(tracked.since),
            initial_state: tracked.initial_state.as_str(),
            dropped,
            transitions: records.iter().filter_map(StateChange::of).collect(),
        }
    }
}
