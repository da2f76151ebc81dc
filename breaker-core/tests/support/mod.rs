//! Helpers shared by the integration tests.

pub(crate) mod logs;
pub(crate) mod redis_server;
