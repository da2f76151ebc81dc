//! A pattern's configuration: the key table machinery ([`table`]), the circuit breaker's keys
//! with Spring's names and Resilience4j's defaults, and configuration files ([`file`]).

#[macro_use]
mod table;
pub(crate) mod bulkhead;
mod circuit_breaker;
mod error;
pub(crate) mod file;
pub(crate) mod retry;
pub(crate) mod tags;
mod wait;
mod window_type;

pub use circuit_breaker::{keys, Config, ConfigBuilder};
pub use error::ConfigError;
pub use wait::WaitInterval;
pub use window_type::SlidingWindowType;

/// The name of the shared config that every breaker without one of its own uses.
pub const DEFAULT_CONFIG: &str = "default";
