//! A file as the parsers read it: its sections, each with its checked `key = value` entries.

use std::collections::HashMap;

use super::error::{LoadError, LoadErrorKind};
use super::spelling::{self, Group, Lookup};
use super::values::{self, Raw, Setting};
use crate::config::keys::Key;

/// One `key = value` of a section, checked.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) key: Key,
    /// The key as the file spells it.
    pub(super) raw_key: String,
    /// The value as the file writes it.
    pub(super) raw_value: String,
    pub(super) setting: Setting,
    pub(super) line: u32,
}

/// `configs.<name>` or `instances.<name>` with its entries.
#[derive(Debug)]
pub(super) struct Section {
    pub(super) group: Group,
    pub(super) name: String,
    /// Where the section first appears.
    pub(super) line: u32,
    pub(super) entries: Vec<Entry>,
}

impl Section {
    /// `configs.<name>` or `instances.<name>`.
    pub(super) fn title(&self) -> String {
        section_title(self.group, &self.name)
    }
}

pub(super) fn section_title(group: Group, name: &str) -> String {
    format!("{}.{}", group.name(), name)
}

/// What the parsers build: the sections of one file, in order of first appearance.
#[derive(Debug)]
pub(super) struct Document<'f> {
    pub(super) file: &'f str,
    pub(super) sections: Vec<Section>,
    index: HashMap<(Group, String), usize>,
    /// Spring-only keys that were read and ignored: (line, key as written).
    pub(super) ignored: Vec<(u32, String)>,
    /// `resilience4j.timelimiter.*.timeout-duration` lines, not read: (line, key as written).
    pub(super) time_limits: Vec<(u32, String)>,
}

impl<'f> Document<'f> {
    pub(super) fn new(file: &'f str) -> Document<'f> {
        Document {
            file,
            sections: Vec::new(),
            index: HashMap::new(),
            ignored: Vec::new(),
            time_limits: Vec::new(),
        }
    }

    /// An error in this file.
    pub(super) fn error(&self, kind: LoadErrorKind, problem: impl Into<String>) -> LoadError {
        LoadError::new(kind, self.file, problem)
    }

    /// The section `group.name`, created at `line` if it is new.
    pub(super) fn section(
        &mut self,
        group: Group,
        name: &str,
        line: u32,
    ) -> Result<usize, LoadError> {
        if name.is_empty() {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("an empty name in {}", group.name()),
                )
                .at(line)
                .with_expected("a breaker or shared-config name that is not empty"));
        }
        if let Some(&i) = self.index.get(&(group, name.to_owned())) {
            return Ok(i);
        }
        self.sections.push(Section {
            group,
            name: name.to_owned(),
            line,
            entries: Vec::new(),
        });
        let i = self.sections.len() - 1;
        self.index.insert((group, name.to_owned()), i);
        Ok(i)
    }

    /// Sets `raw_key = raw` in section `s`, checking the key and the value.
    pub(super) fn set(
        &mut self,
        s: usize,
        raw_key: &str,
        raw: &Raw,
        line: u32,
    ) -> Result<(), LoadError> {
        let title = self.sections[s].title();
        let key = match spelling::lookup(raw_key) {
            Lookup::Known(key) => key,
            Lookup::Ignored(_) => {
                self.ignored.push((line, raw_key.to_owned()));
                return Ok(());
            }
            Lookup::Unsupported(name, why) => {
                return Err(self
                    .error(
                        LoadErrorKind::UnsupportedKey,
                        if raw_key == name {
                            format!("`{raw_key}` in {title} is not supported: {why}")
                        } else {
                            format!("`{raw_key}` ({name}) in {title} is not supported: {why}")
                        },
                    )
                    .at(line)
                    .in_section(&title)
                    .with_key(raw_key)
                    .with_value(&raw.display()));
            }
            Lookup::Unknown(suggestion) => {
                let shown = raw.display();
                let problem = match suggestion {
                    Some(near) => format!(
                        "unknown key `{raw_key}` (= `{shown}`) in {title} \
                         (did you mean `{near}`?)"
                    ),
                    None => format!("unknown key `{raw_key}` (= `{shown}`) in {title}"),
                };
                let names: Vec<&str> = Key::ALL.iter().map(|k| k.name()).collect();
                return Err(self
                    .error(LoadErrorKind::UnknownKey, problem)
                    .at(line)
                    .in_section(&title)
                    .with_key(raw_key)
                    .with_value(&raw.display())
                    .with_expected(format!("one of {}", names.join(", "))));
            }
        };
        if let Some(first) = self.sections[s].entries.iter().find(|e| e.key == key) {
            return Err(self
                .error(
                    LoadErrorKind::DuplicateKey,
                    format!(
                        "`{raw_key}` is set twice in {title} (first as `{}` on line {})",
                        first.raw_key, first.line
                    ),
                )
                .at(line)
                .in_section(&title)
                .with_key(raw_key)
                .with_value(&raw.display())
                .with_expected("each key at most once per section"));
        }
        let raw_value = raw.display();
        let Some(setting) = values::interpret(key.value_kind(), raw) else {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("invalid value `{raw_value}` for `{raw_key}` in {title}"),
                )
                .at(line)
                .in_section(&title)
                .with_key(raw_key)
                .with_value(&raw_value)
                .with_expected(values::expected(key.value_kind())));
        };
        self.sections[s].entries.push(Entry {
            key,
            raw_key: raw_key.to_owned(),
            raw_value,
            setting,
            line,
        });
        Ok(())
    }
}
