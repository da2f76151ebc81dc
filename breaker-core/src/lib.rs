//! The engine behind [`resilience-breaker`](https://docs.rs/resilience-breaker) (used as
//! `breaker::...`): Resilience4j's circuit-breaker state machine for Rust.
//!
//! - [`CircuitBreaker`]: the six states (CLOSED, OPEN, HALF_OPEN, DISABLED, FORCED_OPEN,
//!   METRICS_ONLY) with Resilience4j 2.x's transitions, windows and per-state metrics.
//! - [`Permit`]: permission to make one call, as a value; dropped without an outcome, it is
//!   given back, so a cancelled future never keeps a half-open trial permit. [`OwnedPermit`]
//!   holds its breaker by `Arc`, for `'static` futures, and [`CallTimeout`] applies the
//!   breaker's `timeout-duration`: what an adapter (a tower layer, a client middleware) builds
//!   its own call future from.
//! - [`Config`]: every key of Spring's `resilience4j.circuitbreaker.*`, Resilience4j's defaults,
//!   validated when built.
//! - [`Registry`]: named breakers, shared configs and per-instance overrides, keyed breakers,
//!   and one timer scheduler for the automatic OPEN -> HALF_OPEN moves.
//! - [`Retry`]: Resilience4j's retry (attempts, backoff, retry and ignore lists, a result
//!   predicate, its four metric kinds and events), with a retry budget of breaker's own; its
//!   waits are timers on the injected clock, and dropping an async call stops its retries.
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
//! assert!(breaker.call_sync(|| Ok::<_, ()>(1)).unwrap_err().is_rejected());
//! # Ok::<(), breaker_core::ConfigError>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(clippy::undocumented_unsafe_blocks)]

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod breaker;
pub mod bulkhead;
mod call;
mod classify;
mod concurrent_map;
mod config;
mod env;
mod error;
mod event;
#[cfg(feature = "metrics")]
mod export;
#[cfg(feature = "redis-hint")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis-hint")))]
pub mod hint;
mod log_safe;
mod name;
mod registry;
mod request_key;
pub mod retry;
mod site;
mod state;
mod sync;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
mod time;
mod window;

pub use crate::breaker::metrics::Metrics;
pub use crate::breaker::CircuitBreaker;
pub use crate::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, BulkheadEvent, BulkheadEventKind,
    BulkheadFull, BulkheadMetrics, BulkheadPermit, OwnedBulkheadPermit,
};
pub use crate::call::permit::{OwnedPermit, Permit};
pub use crate::call::timeout::CallTimeout;
pub use crate::classify::{
    Always, Classifier, Classify, ConfiguredClassifier, Described, ErrorKind, Never, Outcome,
    Predicate,
};
pub use crate::config::file::{Format, LoadError, LoadErrorKind, CONFIG_ENV};
pub use crate::config::{
    keys, Config, ConfigBuilder, ConfigError, SlidingWindowType, WaitInterval, DEFAULT_CONFIG,
};
pub use crate::error::{
    CallError, CallNotPermitted, CallTimedOut, IllegalTransition, MaxRetriesExceeded,
};
pub use crate::event::error_text::DescribeError;
pub use crate::event::listeners::Subscription;
pub use crate::event::{ErrorText, Event, EventKind, TransitionCause};
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::export::metrics::MetricsExport;
pub use crate::log_safe::LogSafe;
pub use crate::registry::builder::RegistryBuilder;
pub use crate::registry::global::InstallGlobalError;
pub use crate::registry::hooks::RegistryEvent;
pub use crate::registry::keyed::{Keyed, KeyedLease, KeyedLimits};
pub use crate::registry::{Registry, WeakRegistry};
pub use crate::request_key::RequestKey;
pub use crate::retry::{
    Retry, RetryConfig, RetryConfigBuilder, RetryEvent, RetryEventKind, RetryMetrics,
};
pub use crate::site::{BulkheadSite, CallSite, KeyedCallSite, RetrySite};
pub use crate::state::State;
pub use crate::time::clock::Clock;
pub use crate::time::manual::ManualClock;
pub use crate::time::timestamp::Timestamp;
