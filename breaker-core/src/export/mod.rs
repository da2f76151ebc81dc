//! Exporters: a registry's figures in the formats of other tools, built on the public hooks of
//! [`Registry`](crate::Registry) (its event stream and its registry events), plus a timer in
//! the registry's scheduler for what changes with time alone.

mod decaying_max;
pub(crate) mod metrics;
