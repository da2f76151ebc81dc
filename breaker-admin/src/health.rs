//! The health endpoint's answers, computed as Spring Boot's health endpoint computes them over
//! Resilience4j's `circuitBreakers` indicator: the statuses and how they aggregate, the
//! components and the probe groups, what a path under `/actuator/health` names, and the JSON,
//! its keys in Spring's order.
//!
//! The components, in Spring's order (by name): `circuitBreakers` (Resilience4j's
//! `CircuitBreakersHealthIndicator`), `livenessState` and `readinessState` (Spring's
//! availability indicators, with the probes on) and `ping` (always UP). The groups: `liveness`
//! (`livenessState`) and `readiness` (`readinessState`, and `circuitBreakers` when the admin
//! says so). A path resolves as Spring's `HealthEndpointSupport` resolves it: a first segment
//! that names a group selects it, the rest names a component of it (the whole when no group is
//! named); a component path is an answer only where components are shown.

use std::sync::Arc;

use breaker_core::{CircuitBreaker, State};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::hub::Tracked;
use crate::options::Options;
use crate::text::percent;

/// A health status: Spring's four, and Resilience4j's two custom ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Up,
    Down,
    OutOfService,
    Unknown,
    CircuitOpen,
    CircuitHalfOpen,
}

impl Status {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Status::Up => "UP",
            Status::Down => "DOWN",
            Status::OutOfService => "OUT_OF_SERVICE",
            Status::Unknown => "UNKNOWN",
            Status::CircuitOpen => "CIRCUIT_OPEN",
            Status::CircuitHalfOpen => "CIRCUIT_HALF_OPEN",
        }
    }

    /// Resilience4j's health indicator: CLOSED is UP, HALF_OPEN is `CIRCUIT_HALF_OPEN`, OPEN is
    /// DOWN when `allow-health-indicator-to-fail` is set and `CIRCUIT_OPEN` otherwise, and every
    /// other state (FORCED_OPEN, DISABLED, METRICS_ONLY) is UNKNOWN.
    pub(crate) fn of(state: State, allow_to_fail: bool) -> Status {
        match state {
            State::Closed => Status::Up,
            State::Open if allow_to_fail => Status::Down,
            State::Open => Status::CircuitOpen,
            State::HalfOpen => Status::CircuitHalfOpen,
            State::ForcedOpen | State::Disabled | State::MetricsOnly => Status::Unknown,
        }
    }

    /// Spring's default `StatusAggregator`: the first of DOWN, OUT_OF_SERVICE, UP, UNKNOWN
    /// among `statuses`. A status outside that order (the two custom ones) is left out, and
    /// with nothing left (no status, or only custom ones) the result is UNKNOWN.
    pub(crate) fn aggregate(statuses: impl IntoIterator<Item = Status>) -> Status {
        const ORDER: [Status; 4] = [
            Status::Down,
            Status::OutOfService,
            Status::Up,
            Status::Unknown,
        ];
        statuses
            .into_iter()
            .filter_map(|s| ORDER.iter().position(|o| *o == s))
            .min()
            .map_or(Status::Unknown, |i| ORDER[i])
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A health component, one indicator each. `ALL` is in Spring's order: a composite's
/// components are a `TreeMap`, sorted by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    CircuitBreakers,
    LivenessState,
    Ping,
    ReadinessState,
}

impl Component {
    const ALL: [Component; 4] = [
        Component::CircuitBreakers,
        Component::LivenessState,
        Component::Ping,
        Component::ReadinessState,
    ];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            Component::CircuitBreakers => "circuitBreakers",
            Component::LivenessState => "livenessState",
            Component::Ping => "ping",
            Component::ReadinessState => "readinessState",
        }
    }

    /// Whether the component exists under `options`: the availability states only with the
    /// probes.
    fn exists(self, options: &Options) -> bool {
        match self {
            Component::CircuitBreakers | Component::Ping => true,
            Component::LivenessState | Component::ReadinessState => options.health_probes,
        }
    }
}

/// A probe group. `ALL` is sorted by name, as Spring lists a root's `groups`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    Liveness,
    Readiness,
}

impl Group {
    const ALL: [Group; 2] = [Group::Liveness, Group::Readiness];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            Group::Liveness => "liveness",
            Group::Readiness => "readiness",
        }
    }
}

/// What a path's answer is computed over: the whole (Spring's primary group, every component)
/// or one probe group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Whole,
    Group(Group),
}

/// What a scope shows beyond its status.
#[derive(Clone, Copy, Debug)]
struct Shown {
    components: bool,
    details: bool,
}

/// Why a path has no answer (Spring answers both with a bare 404).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    /// The scope does not show its components, so no path below it answers, whatever it names.
    Hidden,
    /// Nothing in the scope has that name.
    NoSuch,
}

/// The health of one registry's breakers and of the service, under one router's options.
pub(crate) struct Health<'a> {
    options: &'a Options,
    /// Every followed breaker, sorted by name.
    breakers: &'a [Arc<Tracked>],
}

impl<'a> Health<'a> {
    pub(crate) fn new(options: &'a Options, breakers: &'a [Arc<Tracked>]) -> Health<'a> {
        Health { options, breakers }
    }

    /// The answer for the path below `/actuator/health`, split at `/` (empty for the root).
    pub(crate) fn resolve(&self, path: &[&str]) -> Result<Descriptor<'a>, Missing> {
        let (scope, rest) = match path.split_first() {
            Some((first, rest)) => match self.group_named(first) {
                Some(group) => (Scope::Group(group), rest),
                None => (Scope::Whole, path),
            },
            None => (Scope::Whole, path),
        };
        let shown = self.shown(scope);
        match rest {
            [] => Ok(self.composite(scope, shown)),
            // Checked before the name, as Spring does: a hidden scope tells no names.
            _ if !shown.components => Err(Missing::Hidden),
            [name] => {
                let component = Component::ALL
                    .into_iter()
                    .find(|c| c.name() == *name && self.is_member(scope, *c))
                    .ok_or(Missing::NoSuch)?;
                Ok(Descriptor::Indicator(
                    self.indicator(component, shown.details),
                ))
            }
            // A component is a single indicator: nothing is below it.
            _ => Err(Missing::NoSuch),
        }
    }

    fn group_named(&self, name: &str) -> Option<Group> {
        if !self.options.health_probes {
            return None;
        }
        Group::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Spring's probe groups show no component and no detail; a `readiness` group the user
    /// configured (here: with the breakers in it) shows what the whole shows, as a group set
    /// up in Spring's properties inherits the endpoint's `show-components` and `show-details`.
    fn shown(&self, scope: Scope) -> Shown {
        let endpoint = Shown {
            components: self.options.health_show.components(),
            details: self.options.health_show.details,
        };
        let hidden = Shown {
            components: false,
            details: false,
        };
        match scope {
            Scope::Whole => endpoint,
            Scope::Group(Group::Readiness) if self.options.readiness_includes_circuit_breakers => {
                endpoint
            }
            Scope::Group(_) => hidden,
        }
    }

    fn is_member(&self, scope: Scope, component: Component) -> bool {
        if !component.exists(self.options) {
            return false;
        }
        match scope {
            Scope::Whole => true,
            Scope::Group(Group::Liveness) => component == Component::LivenessState,
            Scope::Group(Group::Readiness) => {
                component == Component::ReadinessState
                    || (component == Component::CircuitBreakers
                        && self.options.readiness_includes_circuit_breakers)
            }
        }
    }

    /// The scope's root: its members' statuses aggregated, the members when shown, and at the
    /// whole's root the groups' names (Spring's `SystemHealth`; always there, even with the
    /// components hidden).
    fn composite(&self, scope: Scope, shown: Shown) -> Descriptor<'a> {
        let members: Vec<(&'static str, Indicator<'a>)> = Component::ALL
            .into_iter()
            .filter(|c| self.is_member(scope, *c))
            .map(|c| (c.name(), self.indicator(c, shown.details)))
            .collect();
        let status = Status::aggregate(members.iter().map(|(_, m)| m.status));
        let groups = match scope {
            Scope::Whole if self.options.health_probes => Group::ALL.map(Group::name).to_vec(),
            _ => Vec::new(),
        };
        Descriptor::Composite {
            status,
            components: if shown.components {
                members
            } else {
                Vec::new()
            },
            groups,
        }
    }

    fn indicator(&self, component: Component, details: bool) -> Indicator<'a> {
        let status = |up: bool, otherwise: Status| if up { Status::Up } else { otherwise };
        match component {
            Component::CircuitBreakers => self.circuit_breakers(details),
            Component::LivenessState => {
                Indicator::bare(status(self.options.liveness.is_correct(), Status::Down))
            }
            Component::Ping => Indicator::bare(Status::Up),
            Component::ReadinessState => Indicator::bare(status(
                self.options.readiness.is_accepting_traffic(),
                Status::OutOfService,
            )),
        }
    }

    /// Resilience4j's `CircuitBreakersHealthIndicator`: the breakers with
    /// `register-health-indicator`, each with its own status and details, and their statuses
    /// aggregated (UNKNOWN for none).
    fn circuit_breakers(&self, details: bool) -> Indicator<'a> {
        let mut statuses = Vec::new();
        let mut breakers = Vec::new();
        for tracked in self.breakers {
            let breaker = &tracked.breaker;
            let config = breaker.config();
            if !config.register_health_indicator() {
                continue;
            }
            let allow_to_fail = config.allow_health_indicator_to_fail();
            if details {
                // The status from the same reading as the details, so the two agree.
                let d = BreakerHealthDetails::of(breaker);
                let status = Status::of(d.current, allow_to_fail);
                statuses.push(status);
                breakers.push(BreakerHealth {
                    name: tracked.name(),
                    status,
                    details: d,
                });
            } else {
                statuses.push(Status::of(breaker.state(), allow_to_fail));
            }
        }
        Indicator {
            status: Status::aggregate(statuses),
            breakers,
        }
    }
}

/// One answer: a single indicator's, or a composite's (the whole or a group).
pub(crate) enum Descriptor<'a> {
    Indicator(Indicator<'a>),
    /// Spring's `CompositeHealth` (`SystemHealth` at the whole's root): `status`, then
    /// `components` and `groups`, each left out when empty.
    Composite {
        status: Status,
        components: Vec<(&'static str, Indicator<'a>)>,
        groups: Vec<&'static str>,
    },
}

impl Descriptor<'_> {
    pub(crate) fn status(&self) -> Status {
        match self {
            Descriptor::Indicator(indicator) => indicator.status,
            Descriptor::Composite { status, .. } => *status,
        }
    }
}

impl Serialize for Descriptor<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Descriptor::Indicator(indicator) => indicator.serialize(serializer),
            Descriptor::Composite {
                status,
                components,
                groups,
            } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("status", status)?;
                if !components.is_empty() {
                    map.serialize_entry("components", &Ordered(components))?;
                }
                if !groups.is_empty() {
                    map.serialize_entry("groups", groups)?;
                }
                map.end()
            }
        }
    }
}

/// One indicator's health, Spring's `Health`: `status`, then `details` when there are any. Only
/// `circuitBreakers` has details: its breakers (empty when details are hidden).
pub(crate) struct Indicator<'a> {
    status: Status,
    breakers: Vec<BreakerHealth<'a>>,
}

impl Indicator<'_> {
    fn bare(status: Status) -> Self {
        Indicator {
            status,
            breakers: Vec::new(),
        }
    }
}

impl Serialize for Indicator<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("status", &self.status)?;
        if !self.breakers.is_empty() {
            map.serialize_entry("details", &Breakers(&self.breakers))?;
        }
        map.end()
    }
}

/// One breaker in the `circuitBreakers` details: `{"status", "details"}`.
struct BreakerHealth<'a> {
    name: &'a str,
    status: Status,
    details: BreakerHealthDetails,
}

/// The `circuitBreakers` details, `{name: {"status", "details"}}`, in the breakers' name order
/// (Resilience4j collects them into a `HashMap`, whose order is its hashes').
struct Breakers<'b, 'a>(&'b [BreakerHealth<'a>]);

impl Serialize for Breakers<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'e> {
            status: Status,
            details: &'e BreakerHealthDetails,
        }
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for b in self.0 {
            map.serialize_entry(
                b.name,
                &Entry {
                    status: b.status,
                    details: &b.details,
                },
            )?;
        }
        map.end()
    }
}

/// `(key, value)` pairs written as one JSON object, in the slice's order.
struct Ordered<'s, V>(&'s [(&'static str, V)]);

impl<V: Serialize> Serialize for Ordered<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A breaker's details in the `circuitBreakers` component, in the order Resilience4j's health
/// indicator adds them (which is not `CircuitBreakerDetails`' order): rates and thresholds as
/// Java prints a float, then `%`; counts as numbers; the state's name.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BreakerHealthDetails {
    failure_rate: String,
    failure_rate_threshold: String,
    slow_call_rate: String,
    slow_call_rate_threshold: String,
    buffered_calls: u32,
    slow_calls: u32,
    slow_failed_calls: u32,
    failed_calls: u32,
    not_permitted_calls: u64,
    state: &'static str,
    #[serde(skip)]
    current: State,
}

impl BreakerHealthDetails {
    fn of(breaker: &CircuitBreaker) -> BreakerHealthDetails {
        let m = breaker.metrics();
        let config = breaker.config();
        BreakerHealthDetails {
            failure_rate: percent(m.failure_rate.unwrap_or(-1.0)),
            failure_rate_threshold: percent(config.failure_rate_threshold()),
            slow_call_rate: percent(m.slow_call_rate.unwrap_or(-1.0)),
            slow_call_rate_threshold: percent(config.slow_call_rate_threshold()),
            buffered_calls: m.buffered_calls,
            slow_calls: m.slow_calls,
            slow_failed_calls: m.slow_failed_calls,
            failed_calls: m.failed_calls,
            not_permitted_calls: m.not_permitted_calls,
            state: m.state.as_str(),
            current: m.state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Status::{self, *};
    use breaker_core::State;

    #[test]
    fn spring_aggregates_only_the_statuses_it_orders() {
        assert_eq!(Status::aggregate([]), Unknown);
        assert_eq!(Status::aggregate([Up, Down]), Down);
        assert_eq!(Status::aggregate([Up, CircuitOpen]), Up);
        assert_eq!(Status::aggregate([CircuitOpen]), Unknown);
        assert_eq!(Status::aggregate([CircuitHalfOpen, CircuitOpen]), Unknown);
        assert_eq!(Status::aggregate([Unknown, Up]), Up);
        assert_eq!(Status::aggregate([OutOfService, Up]), OutOfService);
        assert_eq!(Status::aggregate([OutOfService, Down]), Down);
    }

    #[test]
    fn states_map_as_resilience4j_maps_them() {
        assert_eq!(Status::of(State::Closed, false), Up);
        assert_eq!(Status::of(State::Open, false), CircuitOpen);
        assert_eq!(Status::of(State::Open, true), Down);
        assert_eq!(Status::of(State::HalfOpen, true), CircuitHalfOpen);
        for s in [State::ForcedOpen, State::Disabled, State::MetricsOnly] {
            assert_eq!(Status::of(s, true), Unknown);
        }
    }
}
