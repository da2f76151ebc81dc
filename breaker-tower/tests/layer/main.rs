//! The tower layers' tests, one binary (tower's own layout): `service` drives the breaker's
//! layer over hand-written services on a manual clock; `bulkhead` drives the bulkhead's layer,
//! alone and inside the breaker's, over the same services; `retry` drives the retry's layer,
//! alone and outermost in Spring's order; `no_alloc` counts the heap
//! allocations a request makes. The counting allocator counts each thread apart, so they share
//! a binary without one test's allocations reaching another's count.

mod bulkhead;
// The counting allocator the core's no-allocation tests use, written once.
#[path = "../../../breaker-core/tests/support/counting_alloc.rs"]
mod counting_alloc;
mod no_alloc;
mod retry;
mod service;
