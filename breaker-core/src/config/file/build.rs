//! Turns each section of a pattern's document, with its `base-config` chain merged, into the
//! pattern's config.

use std::collections::HashMap;

use super::document::{Document, Entry, Section};
use super::error::{LoadError, LoadErrorKind};
use super::resolve::{Merged, Resolver, Root};
use super::spelling::Group;
use crate::classify::BUILT_IN_NAMES;
use crate::config::table::{ErrorKinds, Pattern, TableKey};
use crate::config::ConfigError;

/// The configs of one pattern that a file defines, built and ready for the registry, and its
/// tags.
#[derive(Debug)]
pub(crate) struct Built<P> {
    pub(crate) configs: Vec<(String, P)>,
    pub(crate) instances: Vec<(String, P)>,
    /// `tags.<name> = <value>`, checked: (label name, value, line).
    pub(crate) tags: Vec<(String, String, u32)>,
}

/// Builds the config of every section of `doc`, in order, each from its `base-config` chain.
pub(super) fn build_all<P: Pattern>(
    doc: &Document<'_, P>,
    code_configs: &HashMap<String, P>,
    kinds: &ErrorKinds,
) -> Result<Built<P>, LoadError> {
    let mut resolver = Resolver::new(doc, code_configs);
    let mut built = Built {
        configs: Vec::new(),
        instances: Vec::new(),
        tags: doc
            .tags
            .iter()
            .map(|t| (t.name.clone(), t.value.clone(), t.line))
            .collect(),
    };
    for (s, section) in doc.sections.iter().enumerate() {
        let merged = resolver.merged(s)?;
        let config = build(doc, section, &merged, kinds)?;
        let named = (section.name.clone(), config);
        match section.group {
            Group::Configs => built.configs.push(named),
            Group::Instances => built.instances.push(named),
        }
    }
    Ok(built)
}

/// Builds the config of `section` from its merged chain.
fn build<P: Pattern>(
    doc: &Document<'_, P>,
    section: &Section<P::Key>,
    merged: &Merged<'_, P>,
    kinds: &ErrorKinds,
) -> Result<P, LoadError> {
    let mut builder = match merged.root {
        Root::Defaults => P::defaults(),
        Root::Code(config) => config.starting_from(),
    };
    for &(owner, entry) in merged.entries.values() {
        P::apply(&mut builder, entry.key, &entry.value, kinds)
            .map_err(|name| unknown_kind(doc, owner, entry, &name, kinds))?;
    }
    P::build(builder).map_err(|e| config_error(doc, section, merged, &e))
}

fn unknown_kind<P: Pattern>(
    doc: &Document<'_, P>,
    owner: usize,
    entry: &Entry<P::Key>,
    name: &str,
    kinds: &ErrorKinds,
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
    let built_in: Vec<String> = BUILT_IN_NAMES.iter().map(|n| format!("`{n}`")).collect();
    let expected = format!("{expected}, or a built-in kind: {}", built_in.join(", "));
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
fn config_error<P: Pattern>(
    doc: &Document<'_, P>,
    section: &Section<P::Key>,
    merged: &Merged<'_, P>,
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
