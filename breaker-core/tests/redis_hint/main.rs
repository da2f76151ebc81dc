//! The Redis advisory hint against a real `redis-server` (each test starts its own, see
//! `support::redis_server`): its rules in `hint`, Redis failing under it in `faults`.

#[path = "../support/mod.rs"]
mod support;

mod faults;
mod hint;
