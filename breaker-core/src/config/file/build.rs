//! Turns each section, with its `base-config` chain merged, into a [`Config`].

use std::collections::HashMap;

use super::document::{Document, Entry, Section};
use super::error::{LoadError, LoadErrorKind};
use super::resolve::{Merged, Resolver, Root};
use super::spelling::Group;
use crate::classify::ErrorKind;
use crate::config::keys::Key;
use crate::config::{Config, ConfigBuilder, ConfigError};

/// The configs a file defines, built and ready for the registry, and its tags.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) configs: Vec<(String, Config)>,
    pub(crate) instances: Vec<(String, Config)>,
    /// `tags.<name> = <value>`, checked: (label name, value, line).
    pub(crate) tags: Vec<(String, String, u32)>,
}

/// Builds the config of every section of `doc`, in order, each from its `base-config` chain.
pub(super) fn build_all(
    doc: &Document<'_>,
    code_configs: &HashMap<String, Config>,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Loaded, LoadError> {
    let mut resolver = Resolver::new(doc, code_configs);
    let mut loaded = Loaded {
        tags: doc
            .tags
            .iter()
            .map(|t| (t.name.clone(), t.value.clone(), t.line))
            .collect(),
        ..Loaded::default()
    };
    for (s, section) in doc.sections.iter().enumerate() {
        let merged = resolver.merged(s)?;
        let config = build(doc, section, &merged, kinds)?;
        let named = (section.name.clone(), config);
        match section.group {
            Group::Configs => loaded.configs.push(named),
            Group::Instances => loaded.instances.push(named),
        }
    }
    Ok(loaded)
}

/// Builds the config of `section` from its merged chain.
fn build(
    doc: &Document<'_>,
    section: &Section,
    merged: &Merged<'_>,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Config, LoadError> {
    let mut builder = match merged.root {
        Root::Defaults => Config::builder(),
        Root::Code(config) => config.to_builder(),
    };
    for &(owner, entry) in merged.entries.values() {
        builder = apply(doc, owner, entry, builder, kinds)?;
    }
    builder
        .build()
        .map_err(|e| config_error(doc, section, merged, &e))
}

/// Sets `entry`'s key on the builder. `base-config` sets nothing: the resolver has followed it.
fn apply(
    doc: &Document<'_>,
    owner: usize,
    entry: &Entry,
    b: ConfigBuilder,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<ConfigBuilder, LoadError> {
    let value = &entry.setting;
    Ok(match entry.key {
        Key::SlidingWindowType => b.sliding_window_type(value.window_type()),
        Key::SlidingWindowSize => b.sliding_window_size(value.count()),
        Key::MinimumNumberOfCalls => b.minimum_number_of_calls(value.count()),
        Key::FailureRateThreshold => b.failure_rate_threshold(value.percent()),
        Key::SlowCallRateThreshold => b.slow_call_rate_threshold(value.percent()),
        Key::SlowCallDurationThreshold => b.slow_call_duration_threshold(value.duration()),
        Key::WaitDurationInOpenState => b.wait_duration_in_open_state(value.duration()),
        Key::EnableExponentialBackoff => b.enable_exponential_backoff(value.bool()),
        Key::ExponentialBackoffMultiplier => b.exponential_backoff_multiplier(value.decimal()),
        Key::ExponentialMaxWaitDurationInOpenState => {
            b.exponential_max_wait_duration_in_open_state(Some(value.duration()))
        }
        Key::EnableRandomizedWait => b.enable_randomized_wait(value.bool()),
        Key::RandomizedWaitFactor => b.randomized_wait_factor(value.decimal()),
        Key::PermittedNumberOfCallsInHalfOpenState => {
            b.permitted_number_of_calls_in_half_open_state(value.count())
        }
        Key::AutomaticTransitionFromOpenToHalfOpenEnabled => {
            b.automatic_transition_from_open_to_half_open_enabled(value.bool())
        }
        Key::MaxWaitDurationInHalfOpenState => {
            b.max_wait_duration_in_half_open_state(value.duration())
        }
        Key::TransitionToStateAfterWaitDuration => {
            b.transition_to_state_after_wait_duration(value.state())
        }
        Key::TimeoutDuration => b.timeout_duration(Some(value.duration())),
        Key::RegisterHealthIndicator => b.register_health_indicator(value.bool()),
        Key::AllowHealthIndicatorToFail => b.allow_health_indicator_to_fail(value.bool()),
        Key::EventConsumerBufferSize => b.event_consumer_buffer_size(value.count()),
        Key::RecordExceptions => b.record_exceptions(error_kinds(doc, owner, entry, kinds)?),
        Key::IgnoreExceptions => b.ignore_exceptions(error_kinds(doc, owner, entry, kinds)?),
        Key::BaseConfig => b,
    })
}

/// The error kinds `entry` names, each registered in code.
fn error_kinds(
    doc: &Document<'_>,
    owner: usize,
    entry: &Entry,
    kinds: &HashMap<String, ErrorKind>,
) -> Result<Vec<ErrorKind>, LoadError> {
    entry
        .setting
        .kinds()
        .iter()
        .map(|name| {
            kinds
                .get(name)
                .cloned()
                .ok_or_else(|| unknown_kind(doc, owner, entry, name, kinds))
        })
        .collect()
}

fn unknown_kind(
    doc: &Document<'_>,
    owner: usize,
    entry: &Entry,
    name: &str,
    kinds: &HashMap<String, ErrorKind>,
) -> LoadError {
    let title = doc.sections[owner].title();
    let mut names: Vec<&str> = kinds.keys().map(String::as_str).collect();
    names.sort_unstable();
    let expected = if names.is_empty() {
        "an error kind registered in code, but none is: register kinds with \
         RegistryBuilder::error_kind before loading the file"
            .to_owned()
    } else {
        format!(
            "one of the error kinds registered in code: {}",
            names.join(", ")
        )
    };
    doc.error(
        LoadErrorKind::UnknownErrorKind,
        format!(
            "unknown error kind `{name}` in `{}` of {title}",
            entry.raw_key
        ),
    )
    .at(entry.line)
    .in_section(&title)
    .with_key(&entry.raw_key)
    .with_value(name)
    .with_expected(expected)
}

/// A config that did not build: blame the entry that set the rejected key (in the section,
/// or up its base chain), else the section.
fn config_error(
    doc: &Document<'_>,
    section: &Section,
    merged: &Merged<'_>,
    e: &ConfigError,
) -> LoadError {
    let culprit = merged
        .entries
        .values()
        .find(|(_, entry)| entry.key.name() == e.key());
    let (title, line, key, value) = match culprit {
        Some(&(owner, entry)) => (
            doc.sections[owner].title(),
            entry.line,
            entry.raw_key.as_str(),
            entry.raw_value.as_str(),
        ),
        None => (section.title(), section.line, e.key(), e.value()),
    };
    let mut problem = format!("invalid value `{value}` for `{key}` in {title}");
    if title != section.title() {
        problem.push_str(&format!(" (the base of {})", section.title()));
    }
    doc.error(LoadErrorKind::InvalidValue, problem)
        .at(line)
        .in_section(&title)
        .with_key(key)
        .with_value(value)
        .with_expected(e.expected())
}
