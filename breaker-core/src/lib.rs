//! The engine behind [`breaker`](https://docs.rs/breaker): Resilience4j's circuit-breaker
//! state machine for Rust.
//!
//! - [`CircuitBreaker`]: the six states (CLOSED, OPEN, HALF_OPEN, DISABLED, FORCED_OPEN,
//!   METRICS_ONLY) with Resilience4j 2.x's transitions, windows and per-state metrics.
//! - [`Permit`]: permission to make one call, as a value; dropped without an outcome, it is
//!   given back, so a cancelled future never keeps a half-open trial permit.
//! - [`Config`]: every key of Spring's `resilience4j.circuitbreaker.*`, Resilience4j's defaults,
//!   validated when built.
//! - [`Registry`]: named breakers, shared configs and per-instance overrides, keyed breakers,
//!   and one timer scheduler for the automatic OPEN -> HALF_OPEN moves.
//! - [`Clock`] and [`ManualClock`]: all time is injected, so every behaviour is testable
//!   without sleeping.
//!
//! ```
//! use std::time::Duration;
//! use breaker_core::{Config, ManualClock, Registry, State};
//!
//! let clock = ManualClock::new();
//! let registry = Registry::builder()
//!     .clock(clock.clone())
//!     .instance(
//!         "productService",
//!         Config::builder()
//!             .sliding_window_size(10)
//!             .minimum_number_of_calls(5)
//!             .wait_duration_in_open_state(Duration::from_secs(10))
//!             .build()?,
//!     )
//!     .build();
//! let breaker = registry.breaker("productService");
//! for _ in 0..5 {
//!     let _ = breaker.call_sync(|| Err::<(), _>("product-service is down"));
//! }
//! assert_eq!(breaker.state(), State::Open);
//! assert!(breaker.call_sync(|| Ok::<_, ()>(1)).unwrap_err().is_not_permitted());
//! # Ok::<(), breaker_core::ConfigError>(())
//! ```

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod breaker;
mod call;
mod clock;
mod closed_window;
mod concurrent_map;
pub mod config;
mod error;
mod event;
mod file_config;
#[cfg(feature = "redis-hint")]
pub mod hint;
#[cfg(feature = "metrics")]
mod metrics_export;
mod name;
mod permit;
mod registry;
mod reject_log;
mod scheduler;
mod site;
mod state;
mod sync;
mod window;

pub use breaker::{CircuitBreaker, Metrics};
pub use call::{Always, Classifier, Classify, Never, Predicate};
pub use clock::{Clock, ManualClock, Timestamp};
pub use config::{Config, ConfigBuilder, ConfigError, SlidingWindowType};
pub use config::{ConfiguredClassifier, ErrorKind};
pub use error::{CallError, CallNotPermitted, CallTimedOut, IllegalTransition};
pub use event::{Event, EventKind, Subscription, TransitionCause};
pub use file_config::{Format, LoadError, LoadErrorKind, CONFIG_ENV};
#[cfg(feature = "metrics")]
pub use metrics_export::MetricsExport;
pub use permit::{Outcome, Permit};
pub use registry::{
    GlobalAlreadySet, Keyed, Registry, RegistryBuilder, WeakRegistry, DEFAULT_CONFIG,
};
pub use site::{CallSite, KeyedCallSite};
pub use state::State;
