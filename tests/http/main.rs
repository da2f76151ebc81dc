//! Breakers and bulkheads in HTTP stacks, over loopback with real servers and clients: the
//! tower layer in front of an axum app (`tower_axum`) and behind hyper's client
//! (`tower_hyper_client`), the bulkhead's tower layer in front of an axum app
//! (`bulkhead_axum`), the reqwest middleware (`reqwest_middleware`), and the metrics example
//! scraped as Prometheus would (`prometheus_scrape`). Each module is compiled with the facade
//! feature it tests.

#[cfg(feature = "tower")]
mod bulkhead_axum;
#[cfg(feature = "metrics")]
mod prometheus_scrape;
#[cfg(feature = "reqwest")]
mod reqwest_middleware;
#[cfg(feature = "tower")]
mod tower_axum;
#[cfg(feature = "tower")]
mod tower_hyper_client;
