//! Breakers and bulkheads in HTTP stacks, over loopback with real servers and clients: the
//! tower layer in front of an axum app (`tower_axum`) and behind hyper's client
//! (`tower_hyper_client`), the bulkhead's tower layer in front of an axum app
//! (`bulkhead_axum`), the reqwest middleware (`reqwest_middleware`), the metrics example
//! scraped as Prometheus would (`prometheus_scrape`), and the retry in the tower layer
//! (`retry_tower`) and in the reqwest middleware (`retry_reqwest`) against the scripted server
//! of `retry_upstream`, which counts the attempts. Each module is compiled with the facade
//! feature it tests.

#[cfg(feature = "tower")]
mod bulkhead_axum;
#[cfg(feature = "metrics")]
mod prometheus_scrape;
#[cfg(feature = "reqwest")]
mod reqwest_middleware;
#[cfg(feature = "reqwest")]
mod retry_reqwest;
#[cfg(feature = "tower")]
mod retry_tower;
#[cfg(any(feature = "tower", feature = "reqwest"))]
mod retry_upstream;
#[cfg(feature = "tower")]
mod tower_axum;
#[cfg(feature = "tower")]
mod tower_hyper_client;
