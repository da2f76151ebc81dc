//! A file as the parsers read it: each pattern's sections, with their checked `key = value`
//! entries, and the notes about keys that were skipped.
//!
//! The parsers see a pattern's [`Document`] through [`Sections`], which does not name the
//! pattern's keys, and the whole file through [`Reading`]: one path reads every
//! `resilience4j.<pattern>` section, each into the document of its pattern.

use std::collections::HashMap;

use super::error::{LoadError, LoadErrorKind};
use super::spelling::{self, Group, Lookup};
use super::values::{self, Misfit, Raw};
use crate::config::table::{Pattern, TableKey, Value, ValueKind};
use crate::config::tags;

/// One `key = value` of a section, checked.
#[derive(Clone, Debug)]
pub(super) struct Entry<K> {
    pub(super) key: K,
    /// The key as the file spells it.
    pub(super) raw_key: String,
    /// The value as the file writes it.
    pub(super) raw_value: String,
    pub(super) value: Value,
    pub(super) line: u32,
}

/// `configs.<name>` or `instances.<name>` with its entries.
#[derive(Debug)]
pub(super) struct Section<K> {
    pub(super) group: Group,
    pub(super) name: String,
    /// Where the section first appears.
    pub(super) line: u32,
    pub(super) entries: Vec<Entry<K>>,
}

impl<K> Section<K> {
    /// `configs.<name>` or `instances.<name>`.
    pub(super) fn title(&self) -> String {
        section_title(self.group, &self.name)
    }
}

pub(super) fn section_title(group: Group, name: &str) -> String {
    format!("{}.{}", group.name(), name)
}

/// One `tags.<name> = <value>` of a file, checked.
#[derive(Clone, Debug)]
pub(super) struct Tag {
    /// The label name (`-` and `.` made `_`).
    pub(super) name: String,
    pub(super) value: String,
    /// The name as the file spells it.
    pub(super) raw_name: String,
    pub(super) line: u32,
}

/// A key that was skipped although it is almost a breaker key: a misspelt root, or a root
/// behind an invisible character. Noted once per distinct root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NearMiss {
    /// The first line with this root.
    pub(super) line: u32,
    /// The root as the file spells it (`resilence4j.circuitbreaker`).
    pub(super) root: String,
    /// Why it was skipped, in words.
    pub(super) why: &'static str,
    /// How many more keys had the same root.
    pub(super) more: usize,
}

/// What a file says beside its patterns' sections: the keys skipped with a note (a warning or
/// an information line when the file is loaded).
#[derive(Debug, Default)]
pub(super) struct Notes {
    /// Spring-only keys that were read and ignored: (line, key as written).
    pub(super) ignored: Vec<(u32, String)>,
    /// `resilience4j.timelimiter.*.timeout-duration` lines, not read: (line, key as written).
    pub(super) time_limits: Vec<(u32, String)>,
    /// Keys skipped that look like breaker keys.
    pub(super) near_misses: Vec<NearMiss>,
    /// YAML documents skipped because they belong to a Spring profile: (line, profile).
    pub(super) profiles: Vec<(u32, String)>,
    /// The first line of a `resilience4j.thread-pool-bulkhead` section, which is not read.
    pub(super) thread_pool_bulkhead: Option<u32>,
}

impl Notes {
    /// Notes a skipped `resilience4j.thread-pool-bulkhead` key (or TOML table) at `line`.
    pub(super) fn thread_pool_bulkhead(&mut self, line: u32) {
        self.thread_pool_bulkhead.get_or_insert(line);
    }

    /// Notes a skipped key with root `root` that looks like a breaker key.
    pub(super) fn near_miss(&mut self, line: u32, root: &str, why: &'static str) {
        match self.near_misses.iter_mut().find(|n| n.root == root) {
            Some(seen) => seen.more += 1,
            None => self.near_misses.push(NearMiss {
                line,
                root: root.to_owned(),
                why,
                more: 0,
            }),
        }
    }
}

/// One pattern's sections of a file (`resilience4j.<root>.*`), in order of first appearance,
/// and its tags.
#[derive(Debug)]
pub(super) struct Document<'f, P: Pattern> {
    pub(super) file: &'f str,
    pub(super) sections: Vec<Section<P::Key>>,
    index: HashMap<(Group, String), usize>,
    /// `tags.<name>`, in order.
    pub(super) tags: Vec<Tag>,
}

impl<'f, P: Pattern> Document<'f, P> {
    pub(super) fn new(file: &'f str) -> Self {
        Document {
            file,
            sections: Vec::new(),
            index: HashMap::new(),
            tags: Vec::new(),
        }
    }

    /// An error in this file.
    pub(super) fn error(&self, kind: LoadErrorKind, problem: impl Into<String>) -> LoadError {
        LoadError::new(kind, self.file, problem)
    }
}

/// A pattern's [`Document`] as the parsers write into it, without naming the pattern's keys.
pub(super) trait Sections {
    /// The pattern's section under `resilience4j.` (`circuitbreaker`).
    fn root(&self) -> &'static str;
    /// The section `group.name`, created at `line` if it is new.
    fn section(&mut self, group: Group, name: &str, line: u32) -> Result<usize, LoadError>;
    /// Section `s`'s title, `configs.<name>` or `instances.<name>`.
    fn title(&self, s: usize) -> String;
    /// Sets `raw_key = raw` in section `s`, checking the key and the value; a Spring key
    /// without a meaning here is noted in `notes`.
    fn set(
        &mut self,
        s: usize,
        raw_key: &str,
        raw: &Raw,
        line: u32,
        notes: &mut Notes,
    ) -> Result<(), LoadError>;
    /// Adds the tag `raw_name = value` (Spring's `resilience4j.<root>.tags.<name>`), checking
    /// it as [`tags::check`] does.
    fn tag(&mut self, raw_name: &str, value: &str, line: u32) -> Result<(), LoadError>;
    /// What `raw_key` is among the pattern's keys: a known key's canonical name and kind.
    fn lookup(&self, raw_key: &str) -> Lookup<(&'static str, ValueKind)>;
    /// The pattern's keys whose value is a list (of error kinds), by canonical name.
    fn list_keys(&self) -> Vec<&'static str>;
}

impl<P: Pattern> Sections for Document<'_, P> {
    fn root(&self) -> &'static str {
        P::ROOT
    }

    fn section(&mut self, group: Group, name: &str, line: u32) -> Result<usize, LoadError> {
        if name.is_empty() {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("an empty name in {}", group.name()),
                )
                .at(line)
                .with_expected("an instance or shared-config name that is not empty"));
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

    fn title(&self, s: usize) -> String {
        self.sections[s].title()
    }

    fn set(
        &mut self,
        s: usize,
        raw_key: &str,
        raw: &Raw,
        line: u32,
        notes: &mut Notes,
    ) -> Result<(), LoadError> {
        let title = self.sections[s].title();
        let key = match spelling::lookup::<P>(raw_key) {
            Lookup::Known(key) => key,
            Lookup::Ignored(_) => {
                notes.ignored.push((line, raw_key.to_owned()));
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
                let names: Vec<&str> = P::Key::ALL.iter().map(|k| k.name()).collect();
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
        let value = match values::interpret(key.value_kind(), raw) {
            Ok(value) => value,
            Err(misfit) => {
                let (problem, expected) = match misfit {
                    Misfit::NotOfKind => (
                        format!("invalid value `{raw_value}` for `{raw_key}` in {title}"),
                        values::expected(key.value_kind()),
                    ),
                    Misfit::TooLarge => (
                        format!("value `{raw_value}` for `{raw_key}` in {title} is too large"),
                        key.limit().largest(key.value_kind()),
                    ),
                };
                return Err(self
                    .error(LoadErrorKind::InvalidValue, problem)
                    .at(line)
                    .in_section(&title)
                    .with_key(raw_key)
                    .with_value(&raw_value)
                    .with_expected(expected));
            }
        };
        self.sections[s].entries.push(Entry {
            key,
            raw_key: raw_key.to_owned(),
            raw_value,
            value,
            line,
        });
        Ok(())
    }

    fn tag(&mut self, raw_name: &str, value: &str, line: u32) -> Result<(), LoadError> {
        let shown = format!("tags.{raw_name}");
        let (name, value) = tags::check(raw_name, value).map_err(|p| {
            let bad = if p.part == "name" { raw_name } else { value };
            self.error(
                LoadErrorKind::InvalidValue,
                format!("invalid tag {} `{bad}` in `{shown}`", p.part),
            )
            .at(line)
            .with_key(&shown)
            .with_value(value)
            .with_expected(p.expected)
        })?;
        if let Some(first) = self.tags.iter().find(|t| t.name == name) {
            return Err(self
                .error(
                    LoadErrorKind::DuplicateKey,
                    format!(
                        "tag `{name}` is set twice (first as `tags.{}` on line {})",
                        first.raw_name, first.line
                    ),
                )
                .at(line)
                .with_key(&shown)
                .with_value(&value)
                .with_expected("each tag at most once (`-` and `.` in a name read as `_`)"));
        }
        if self.tags.len() == tags::MAX_TAGS {
            return Err(self
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("too many tags: `{shown}` is tag {}", tags::MAX_TAGS + 1),
                )
                .at(line)
                .with_key(&shown)
                .with_value(&value)
                .with_expected(format!("at most {} tags", tags::MAX_TAGS)));
        }
        self.tags.push(Tag {
            name,
            value,
            raw_name: raw_name.to_owned(),
            line,
        });
        Ok(())
    }

    fn lookup(&self, raw_key: &str) -> Lookup<(&'static str, ValueKind)> {
        spelling::lookup::<P>(raw_key).map(|key| (key.name(), key.value_kind()))
    }

    fn list_keys(&self) -> Vec<&'static str> {
        P::Key::ALL
            .iter()
            .filter(|k| k.value_kind() == ValueKind::Kinds)
            .map(|k| k.name())
            .collect()
    }
}

/// A file being read: the document of every pattern it may configure, found by its root, and
/// the notes about skipped keys. The parsers read every `resilience4j.<root>` section through
/// it; a root of Resilience4j without a pattern here is skipped.
pub(super) struct Reading<'r, 'f> {
    file: &'f str,
    patterns: Vec<&'r mut dyn Sections>,
    pub(super) notes: Notes,
}

impl<'r, 'f> Reading<'r, 'f> {
    /// Reading `file` into `patterns`' documents. The first is also the one a TOML file's
    /// top-level `[configs.<name>]` and `[instances.<name>]` tables configure.
    pub(super) fn new(file: &'f str, patterns: Vec<&'r mut dyn Sections>) -> Self {
        Reading {
            file,
            patterns,
            notes: Notes::default(),
        }
    }

    /// An error in this file.
    pub(super) fn error(&self, kind: LoadErrorKind, problem: impl Into<String>) -> LoadError {
        LoadError::new(kind, self.file, problem)
    }

    /// The pattern whose root `raw` names, in any of Spring's relaxed spellings.
    pub(super) fn pattern(&self, raw: &str) -> Option<usize> {
        let u = spelling::uniform(raw);
        self.patterns.iter().position(|p| p.root() == u)
    }

    /// Pattern `p`'s root (`circuitbreaker`).
    pub(super) fn root(&self, p: usize) -> &'static str {
        self.patterns[p].root()
    }

    /// The sections read, in words: `resilience4j.circuitbreaker, resilience4j.bulkhead or
    /// resilience4j.retry`.
    pub(super) fn modules(&self) -> String {
        let names: Vec<String> = self
            .patterns
            .iter()
            .map(|p| format!("resilience4j.{}", p.root()))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }

    /// Pattern `p`'s section `group.name`, created at `line` if it is new.
    pub(super) fn section(
        &mut self,
        p: usize,
        group: Group,
        name: &str,
        line: u32,
    ) -> Result<usize, LoadError> {
        self.patterns[p].section(group, name, line)
    }

    /// The title of pattern `p`'s section `s`.
    pub(super) fn title(&self, p: usize, s: usize) -> String {
        self.patterns[p].title(s)
    }

    /// Sets `raw_key = raw` in pattern `p`'s section `s`.
    pub(super) fn set(
        &mut self,
        p: usize,
        s: usize,
        raw_key: &str,
        raw: &Raw,
        line: u32,
    ) -> Result<(), LoadError> {
        self.patterns[p].set(s, raw_key, raw, line, &mut self.notes)
    }

    /// Adds a tag to pattern `p`.
    pub(super) fn tag(
        &mut self,
        p: usize,
        raw_name: &str,
        value: &str,
        line: u32,
    ) -> Result<(), LoadError> {
        self.patterns[p].tag(raw_name, value, line)
    }

    /// What `raw_key` is among pattern `p`'s keys.
    pub(super) fn lookup(&self, p: usize, raw_key: &str) -> Lookup<(&'static str, ValueKind)> {
        self.patterns[p].lookup(raw_key)
    }

    /// Pattern `p`'s list keys, in words: `record-exceptions or ignore-exceptions`.
    pub(super) fn list_keys(&self, p: usize) -> String {
        self.patterns[p].list_keys().join(" or ")
    }
}
