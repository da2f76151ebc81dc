//! Exporters: a registry's figures in the formats of other tools, built only on the public
//! hooks of [`Registry`](crate::Registry) (its event stream and its registry events).

pub(crate) mod metrics;
