//! One breaker's handles, one per series, registered with a recorder from its [`Keys`].

use metrics::{Counter, Gauge, Histogram, Key, Level, Metadata, Recorder};

use crate::breaker::metrics::Metrics;
use crate::export::metrics::names::Keys;
use crate::state::State;

/// What the `metrics` macros would pass for a registration from this module.
const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// A breaker's handles, one per series.
#[derive(Clone)]
pub(super) struct Handles {
    states: [Gauge; 6],
    pub(super) calls: [Histogram; 3],
    pub(super) max: [Gauge; 3],
    pub(super) not_permitted: Counter,
    pub(super) not_permitted_1x: Counter,
    failure_rate: Gauge,
    slow_call_rate: Gauge,
    buffered: [Gauge; 2],
    slow: [Gauge; 2],
}

impl Handles {
    /// Registers every series of `keys` with `recorder`.
    pub(super) fn register(recorder: &dyn Recorder, keys: &Keys) -> Handles {
        let gauge = |key: &Key| recorder.register_gauge(key, &METADATA);
        let counter = |key: &Key| recorder.register_counter(key, &METADATA);
        Handles {
            states: keys.states.each_ref().map(gauge),
            calls: Handles::histograms(recorder, &keys.calls),
            max: keys.max.each_ref().map(gauge),
            not_permitted: counter(&keys.not_permitted),
            not_permitted_1x: counter(&keys.not_permitted_1x),
            failure_rate: gauge(&keys.failure_rate),
            slow_call_rate: gauge(&keys.slow_call_rate),
            buffered: keys.buffered.each_ref().map(gauge),
            slow: keys.slow.each_ref().map(gauge),
        }
    }

    fn histograms(recorder: &dyn Recorder, keys: &[Key; 3]) -> [Histogram; 3] {
        keys.each_ref()
            .map(|key| recorder.register_histogram(key, &METADATA))
    }

    /// These handles with the histograms registered again.
    pub(super) fn with_calls(&self, recorder: &dyn Recorder, keys: &[Key; 3]) -> Handles {
        Handles {
            calls: Handles::histograms(recorder, keys),
            ..self.clone()
        }
    }

    /// Writes the gauges a metrics snapshot gives: the rates and the window's counts.
    pub(super) fn set_snapshot(&self, m: &Metrics) {
        self.failure_rate
            .set(m.failure_rate.map_or(-1.0, f64::from));
        self.slow_call_rate
            .set(m.slow_call_rate.map_or(-1.0, f64::from));
        let [successful, failed] = &self.buffered;
        successful.set(f64::from(m.successful_calls));
        failed.set(f64::from(m.failed_calls));
        let [successful, failed] = &self.slow;
        successful.set(f64::from(m.slow_successful_calls));
        failed.set(f64::from(m.slow_failed_calls));
    }

    /// Sets the state gauges: 1 for `current`, 0 for the five others.
    pub(super) fn set_state(&self, current: State) {
        for (state, gauge) in State::ALL.iter().zip(&self.states) {
            gauge.set(if *state == current { 1.0 } else { 0.0 });
        }
    }
}
