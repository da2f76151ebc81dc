//! `base-config` chains: where each section's keys start from, and which keys it inherits.
//!
//! An instance starts from its `base-config`, else from the shared config of its own name if
//! there is one, else from `configs.default`; a shared config starts from its `base-config`,
//! else from Resilience4j's defaults. A base may be a shared config of the file or one given in
//! code. Keys are merged one by one along the chain: a child's key replaces its base's, and
//! lists are replaced, not merged.

use std::collections::{BTreeMap, HashMap};

use super::document::{Document, Entry};
use super::error::{LoadError, LoadErrorKind};
use super::spelling::Group;
use crate::config::table::{Pattern, TableKey};
use crate::config::DEFAULT_CONFIG;

/// Where a section's keys start from.
pub(super) enum Root<'a, P> {
    /// The pattern's defaults (Resilience4j's).
    Defaults,
    /// A config given in code.
    Code(&'a P),
}

// Not derived: a derive would ask `P: Clone`, `P: Copy`.
impl<P> Clone for Root<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Root<'_, P> {}

/// A section with its base chain merged: the root it starts from and every key along the
/// chain (the nearest definition wins).
pub(super) struct Merged<'a, P: Pattern> {
    pub(super) root: Root<'a, P>,
    /// Every key along the chain, with the section that sets it.
    pub(super) entries: BTreeMap<P::Key, (usize, &'a Entry<P::Key>)>,
}

// Not derived: a derive would ask `P: Clone` of the root it only borrows.
impl<P: Pattern> Clone for Merged<'_, P> {
    fn clone(&self) -> Self {
        Merged {
            root: self.root,
            entries: self.entries.clone(),
        }
    }
}

/// Follows the `base-config`s of one pattern's document.
pub(super) struct Resolver<'a, P: Pattern> {
    doc: &'a Document<'a, P>,
    code_configs: &'a HashMap<String, P>,
    /// The document's shared configs by name.
    configs: HashMap<&'a str, usize>,
    memo: HashMap<usize, Merged<'a, P>>,
}

impl<'a, P: Pattern> Resolver<'a, P> {
    /// A resolver for `doc`, whose bases may also be the shared configs given in code.
    pub(super) fn new(doc: &'a Document<'a, P>, code_configs: &'a HashMap<String, P>) -> Self {
        let configs = doc
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| s.group == Group::Configs)
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        Resolver {
            doc,
            code_configs,
            configs,
            memo: HashMap::new(),
        }
    }

    /// The section the keys of section `s` inherit from, if any, else its root.
    fn base_of(&self, s: usize) -> Result<Result<usize, Root<'a, P>>, LoadError> {
        let section = &self.doc.sections[s];
        let base = section
            .entries
            .iter()
            .find(|e| e.key == P::Key::BASE_CONFIG)
            .map(|e| (e, e.value.name()));
        if let Some((entry, name)) = base {
            if let Some(&i) = self.configs.get(name) {
                return Ok(Ok(i));
            }
            if let Some(config) = self.code_configs.get(name) {
                return Ok(Err(Root::Code(config)));
            }
            let mut names: Vec<&str> = self
                .configs
                .keys()
                .copied()
                .chain(self.code_configs.keys().map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            let expected = if names.is_empty() {
                "the name of a shared config, but none is defined (configs.<name>)".to_owned()
            } else {
                format!("one of the shared configs: {}", names.join(", "))
            };
            return Err(self
                .doc
                .error(
                    LoadErrorKind::UnknownBaseConfig,
                    format!(
                        "`{}` of {} names `{name}`, which is not a shared config",
                        entry.raw_key,
                        section.title()
                    ),
                )
                .at(entry.line)
                .in_section(&section.title())
                .with_key(&entry.raw_key)
                .with_value(name)
                .with_expected(expected));
        }
        let own_name = section.name.as_str();
        match section.group {
            Group::Instances => {
                // Resilience4j: a shared config of the instance's own name, else `default`.
                for name in [own_name, DEFAULT_CONFIG] {
                    if let Some(&i) = self.configs.get(name) {
                        return Ok(Ok(i));
                    }
                    if let Some(config) = self.code_configs.get(name) {
                        return Ok(Err(Root::Code(config)));
                    }
                }
                Ok(Err(Root::Defaults))
            }
            Group::Configs => Ok(Err(Root::Defaults)),
        }
    }

    /// Section `s` with its chain merged. Iterative, so a long chain cannot overflow the stack;
    /// memoised, so every section is walked once.
    pub(super) fn merged(&mut self, s: usize) -> Result<Merged<'a, P>, LoadError> {
        let mut chain = vec![s];
        let root = loop {
            let last = chain[chain.len() - 1];
            if let Some(m) = self.memo.get(&last) {
                chain.pop();
                break m.clone();
            }
            match self.base_of(last)? {
                Ok(base) => {
                    if let Some(at) = chain.iter().position(|&c| c == base) {
                        return Err(self.cycle(&chain[at..], base));
                    }
                    chain.push(base);
                }
                Err(root) => {
                    break Merged {
                        root,
                        entries: BTreeMap::new(),
                    }
                }
            }
        };
        let mut merged = root;
        for &c in chain.iter().rev() {
            for entry in &self.doc.sections[c].entries {
                if entry.key != P::Key::BASE_CONFIG {
                    merged.entries.insert(entry.key, (c, entry));
                }
            }
            self.memo.insert(c, merged.clone());
        }
        Ok(merged)
    }

    fn cycle(&self, cycle: &[usize], back_to: usize) -> LoadError {
        let titles: Vec<String> = cycle
            .iter()
            .chain(std::iter::once(&back_to))
            .map(|&c| self.doc.sections[c].title())
            .collect();
        // Report it at the base-config that closes the cycle.
        let closing = &self.doc.sections[cycle[cycle.len() - 1]];
        let entry = closing
            .entries
            .iter()
            .find(|e| e.key == P::Key::BASE_CONFIG);
        let mut err = self
            .doc
            .error(
                LoadErrorKind::BaseConfigCycle,
                format!(
                    "`base-config` in {} makes a cycle: {}",
                    closing.title(),
                    titles.join(" -> ")
                ),
            )
            .in_section(&closing.title())
            .with_expected("base-configs that end at a config without one");
        if let Some(entry) = entry {
            err = err
                .at(entry.line)
                .with_key(&entry.raw_key)
                .with_value(&entry.raw_value);
        }
        err
    }
}
