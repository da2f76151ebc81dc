//! The operations surface over HTTP on 127.0.0.1: the actuator's circuit breakers, bulkheads,
//! retries, events, health and links index, the server-sent event stream, the write operation
//! and the dashboard; a client written from Resilience4j's sources (`resilience4j_client`); and
//! the event ring under loom (`ring_loom`); the log line of a write (`logging`, through the
//! capturing subscriber of `support::logs`, installed once for the whole binary). Helpers in
//! `support`.

#[path = "../support/mod.rs"]
mod support;

// `src/ring.rs` compiled with loom's atomics, for `ring_loom`: the ring reaches its atomics
// through `crate::sync`.
#[allow(dead_code, unreachable_pub)]
mod sync {
    pub(crate) use loom::sync::atomic::{fence, AtomicU64};
}
#[allow(dead_code, unreachable_pub)]
#[path = "../../src/ring.rs"]
mod ring;

mod bulkheads;
mod circuit_breakers;
mod dashboard;
mod error_messages;
mod events;
mod hardening;
mod health;
mod index;
mod logging;
mod resilience4j_client;
mod retries;
mod ring_loom;
mod stream;
mod stream_slots;
mod write_operation;
