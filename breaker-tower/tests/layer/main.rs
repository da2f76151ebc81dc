//! The tower layer's tests, one binary (tower's own layout): `service` drives the layer over
//! hand-written services on a manual clock; `no_alloc` counts the heap allocations a request
//! makes. The counting allocator counts each thread apart, so the two share a binary without
//! one test's allocations reaching another's count.

// The counting allocator the core's no-allocation tests use, written once.
#[path = "../../../breaker-core/tests/support/counting_alloc.rs"]
mod counting_alloc;
mod no_alloc;
mod service;
