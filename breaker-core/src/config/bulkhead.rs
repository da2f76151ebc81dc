//! The bulkhead's configuration: its key table, with Spring's names
//! (`resilience4j.bulkhead.*`) and Resilience4j's defaults.

use std::time::Duration;

use super::error::ConfigError;
use super::table::{
    fits, ErrorKinds, Field, Limit, Pattern, TableKey, Value, ValueKind, MAX_EVENT_BUFFER_SIZE,
};

/// The most calls one bulkhead may let run at once: far above any real limit, low enough that
/// a typo (an extra digit or three) is caught when the file loads.
pub(crate) const MAX_CONCURRENT_CALLS: u32 = 1_000_000;

/// Spring keys without a meaning here (stack traces of Java exceptions): accepted so a pasted
/// Spring file loads, and ignored.
const IGNORED: &[&str] = &["writable-stack-trace-enabled"];

/// Spring keys with behaviour breaker does not have: an error that says what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[];

config_table! {
    /// The bulkhead's configuration keys, spelled as in Spring's `resilience4j.bulkhead.*`
    /// properties.
    ///
    /// Each constant is one key's canonical (kebab-case) name. A configuration file may spell a
    /// key in any of Spring's relaxed forms (`maxConcurrentCalls`, `MAX_CONCURRENT_CALLS`, ...).
    pub mod keys;

    /// A validated bulkhead configuration.
    ///
    /// Built with [`BulkheadConfig::builder`]; the defaults are Resilience4j's. A value of this
    /// type has passed validation.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BulkheadConfig;

    /// Builds a [`BulkheadConfig`]; [`BulkheadConfigBuilder::build`] checks every value.
    #[derive(Clone, Debug)]
    pub struct BulkheadConfigBuilder;

    /// A bulkhead's configuration key.
    pub(crate) enum Key;

    spring: { root: "bulkhead", ignored: IGNORED, unsupported: UNSUPPORTED }

    across: check_across;

    extra {}

    rows {
        /// Calls the bulkhead lets run at once (default 25), from 1 to 1,000,000. Resilience4j
        /// also accepts 0, a bulkhead that refuses every call; here that is an error, since a
        /// service that must stop calling a dependency forces its breaker open instead.
        MaxConcurrentCalls: max_concurrent_calls: u32 = 25, value {
            name: MAX_CONCURRENT_CALLS = "max-concurrent-calls",
            rule: Limit::Calls { max: Some(MAX_CONCURRENT_CALLS) },
        }
        /// How long a call waits for a free place when the bulkhead is full (default 0: it is
        /// refused at once).
        MaxWaitDuration: max_wait_duration: Duration = Duration::ZERO, value {
            name: MAX_WAIT_DURATION = "max-wait-duration",
            rule: Limit::None,
        }
        /// Waiting calls get places in the order they came (default true); when false, a call
        /// that arrives while others wait may take a place freed before them.
        FairCallHandlingEnabled: fair_call_handling_enabled: bool = true, value {
            name: FAIR_CALL_HANDLING_ENABLED = "fair-call-handling-enabled",
            rule: Limit::None,
        }
        /// Recent events the operations surface keeps for this bulkhead (feature `admin`;
        /// default 100; 0 keeps none), up to 100,000.
        EventConsumerBufferSize: event_consumer_buffer_size: u32 = 100, value {
            name: EVENT_CONSUMER_BUFFER_SIZE = "event-consumer-buffer-size",
            rule: Limit::Events { max: MAX_EVENT_BUFFER_SIZE },
        }
    }
}

impl BulkheadConfig {
    /// The bulkhead's keys have no checks across each other.
    fn check_across(&mut self) -> Result<(), ConfigError> {
        Ok(())
    }
}
