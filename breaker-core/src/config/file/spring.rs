//! Spring's flat property names, as `.properties` lines and flattened YAML give them:
//! `resilience4j.circuitbreaker.instances.<name>.<key>=<value>` and the rest.
//!
//! Every `resilience4j.<pattern>.*` name of a pattern being read (`circuitbreaker`) is read
//! the same way: `configs.<name>.<key>` and
//! `instances.<name>.<key>` (or Resilience4j 1.x's `backends.<name>.<key>`), and
//! `tags.<name>`. A name containing dots is written in brackets, as in Spring:
//! `instances.[api.v2].sliding-window-size` or `instances[api.v2].sliding-window-size`. The
//! keyed breaker of `<key>` in the group `<name>` is `instances.<name>[<key>].<setting>` (a key
//! may hold dots, not `]`); its entry is named by its display name `name[key]`, as TOML's
//! `instances."name[key]"` names it. A list
//! is comma-separated (`record-exceptions=a,b`) or indexed (`record-exceptions[0]=a`). Names
//! of other Resilience4j modules (`resilience4j.ratelimiter.*`, ...) and of anything else
//! (`server.port`, ...) are skipped, so a whole Spring file can be loaded; a skipped name that
//! looks like a breaker key is noted for a warning.

use std::collections::BTreeMap;

use super::document::Reading;
use super::error::{LoadError, LoadErrorKind};
use super::spelling::{self, Group, Lookup};
use super::values::Raw;
use crate::config::table::ValueKind;

/// One element of a dotted name: `name`, or `[na.me]` (a bracketed element: a map key or a
/// list index).
#[derive(Debug, PartialEq, Eq)]
struct Element {
    text: String,
    bracketed: bool,
}

/// The items of an indexed list so far: index -> (value, line).
type ListItems = BTreeMap<u64, (String, u32)>;

/// Reads flat `name = value` entries into a [`Reading`]; [`Flat::finish`] adds the indexed
/// lists once every item is in.
pub(super) struct Flat<'d, 'r, 'f> {
    doc: &'d mut Reading<'r, 'f>,
    /// What a breaker key looks like in this format, for error messages ([`Flat::shape`]
    /// writes another pattern's).
    shape: &'static str,
    /// (pattern, section, key's canonical name) -> (the key as written, the line of its first
    /// item, the items)
    lists: BTreeMap<(usize, usize, &'static str), (String, u32, ListItems)>,
}

impl<'d, 'r, 'f> Flat<'d, 'r, 'f> {
    pub(super) fn new(doc: &'d mut Reading<'r, 'f>, shape: &'static str) -> Self {
        Flat {
            doc,
            shape,
            lists: BTreeMap::new(),
        }
    }

    /// The file being read.
    pub(super) fn doc(&self) -> &Reading<'r, 'f> {
        self.doc
    }

    /// What a key of pattern `p` looks like in this format, for error messages.
    fn shape(&self, p: usize) -> String {
        self.shape.replace("circuitbreaker", self.doc.root(p))
    }

    /// Reads the entry `key = value` of line `line`.
    pub(super) fn entry(&mut self, line: u32, key: &str, value: &str) -> Result<(), LoadError> {
        let doc = &mut *self.doc;
        let shape = self.shape;
        let elements = match split_path(key) {
            Ok(elements) => elements,
            // A malformed name outside Resilience4j's is the rest of the application's.
            Err(_) if !spelling::uniform(key).starts_with("resilience4j") => {
                if let Some((root, why)) = spelling::near_breaker_key(key) {
                    doc.notes.near_miss(line, &root, why);
                }
                return Ok(());
            }
            Err(e) => {
                return Err(doc
                    .error(
                        LoadErrorKind::Syntax,
                        format!("malformed property name `{key}`: {e}"),
                    )
                    .at(line)
                    .with_key(key)
                    .with_expected(shape))
            }
        };
        let unknown_as = |doc: &Reading<'_, '_>, problem: String, shape: &str| {
            doc.error(LoadErrorKind::UnknownKey, problem)
                .at(line)
                .with_key(key)
                .with_value(value)
                .with_expected(shape)
        };
        let unknown = |doc: &Reading<'_, '_>, problem: String| unknown_as(doc, problem, shape);
        let [first, rest @ ..] = elements.as_slice() else {
            return Ok(());
        };
        if spelling::uniform(&first.text) != "resilience4j" || first.bracketed {
            // Not ours: another part of a Spring file, unless it looks like a breaker key.
            if let Some((root, why)) = spelling::near_breaker_key(key) {
                doc.notes.near_miss(line, &root, why);
            }
            return Ok(());
        }
        // An empty YAML mapping (`instances:` with every entry commented out) flattens to
        // its name with an empty value: it sets nothing.
        let empty_container = |after: &[Element]| {
            value.is_empty()
                && match after {
                    [] => true,
                    [group] => {
                        Group::lookup(&group.text).is_some()
                            || spelling::uniform(&group.text) == "tags"
                    }
                    [group, _] => Group::lookup(&group.text).is_some(),
                    _ => false,
                }
        };
        let Some(module) = rest.first() else {
            if value.is_empty() {
                return Ok(());
            }
            return Err(unknown(doc, format!("unknown key `{key}`")));
        };
        let pattern = (!module.bracketed)
            .then(|| doc.pattern(&module.text))
            .flatten();
        let Some(p) = pattern else {
            if spelling::is_resilience4j_module(&module.text) && !module.bracketed {
                match spelling::uniform(&module.text).as_str() {
                    "timelimiter"
                        if rest
                            .last()
                            .is_some_and(|k| spelling::uniform(&k.text) == "timeoutduration") =>
                    {
                        doc.notes.time_limits.push((line, key.to_owned()));
                    }
                    "threadpoolbulkhead" if !value.is_empty() => {
                        doc.notes.thread_pool_bulkhead(line);
                    }
                    _ => {}
                }
                return Ok(());
            }
            return Err(unknown(
                doc,
                format!(
                    "unknown key `{key}`: `{}` is not a Resilience4j module",
                    module.text
                ),
            ));
        };
        let pattern_shape = self.shape(p);
        let doc = &mut *self.doc;
        let unknown =
            |doc: &Reading<'_, '_>, problem: String| unknown_as(doc, problem, &pattern_shape);
        let plain = |e: &Element| !e.bracketed;
        let aspect_order = format!("{}aspectorder", doc.root(p));
        if empty_container(&rest[1..]) {
            return Ok(());
        }
        match &rest[1..] {
            // Spring's aspect order: nothing to order here.
            [only] if plain(only) && spelling::uniform(&only.text) == aspect_order => {
                doc.notes.ignored.push((line, key.to_owned()));
                Ok(())
            }
            // `tags.<name>`: the rest of the name, dots and all, is the tag's name.
            [tags, name @ ..] if plain(tags) && spelling::uniform(&tags.text) == "tags" => {
                match name {
                    [] => Err(unknown(doc, format!("`{key}` names no tag"))
                        .with_expected("tags.<name>=<value>")),
                    [only] => doc.tag(p, &only.text, value, line),
                    many if many.iter().all(plain) => {
                        let joined: Vec<&str> = many.iter().map(|e| e.text.as_str()).collect();
                        doc.tag(p, &joined.join("."), value, line)
                    }
                    _ => Err(unknown(doc, format!("`{key}`: a tag is not a list"))
                        .with_expected("tags.<name>=<value>")),
                }
            }
            [group, name, setting] if plain(group) && plain(setting) => {
                let s = self.section(p, line, key, value, group, &name.text)?;
                self.doc
                    .set(p, s, &setting.text, &Raw::Text(value.to_owned()), line)
            }
            [group, name, setting, index] if plain(group) && plain(setting) && index.bracketed => {
                let s = self.section(p, line, key, value, group, &name.text)?;
                self.list_item(p, s, line, &setting.text, &index.text, value)
            }
            // `instances.<name>[<key>].<setting>`: the keyed breaker of `<key>` in the group
            // `<name>`, whose entry is named by its display name `name[key]`.
            [group, name, id, setting] if plain(group) && id.bracketed && plain(setting) => {
                let s = self.keyed_section(p, line, key, value, group, name, id)?;
                self.doc
                    .set(p, s, &setting.text, &Raw::Text(value.to_owned()), line)
            }
            [group, name, id, setting, index]
                if plain(group) && id.bracketed && plain(setting) && index.bracketed =>
            {
                let s = self.keyed_section(p, line, key, value, group, name, id)?;
                self.list_item(p, s, line, &setting.text, &index.text, value)
            }
            // `instances.<name>.<key>.<more>`: a known key given a nested value.
            [group, _, setting, _, ..]
                if plain(group)
                    && Group::lookup(&group.text).is_some()
                    && matches!(doc.lookup(p, &setting.text), Lookup::Known(_)) =>
            {
                Err(unknown(
                    doc,
                    format!(
                        "`{key}`: `{}` takes a single value, not a nested one",
                        setting.text
                    ),
                ))
            }
            _ => Err(unknown(doc, format!("unknown key `{key}`"))),
        }
    }

    /// Pattern `p`'s section `group.name` of the entry `key = value`.
    fn section(
        &mut self,
        p: usize,
        line: u32,
        key: &str,
        value: &str,
        group: &Element,
        name: &str,
    ) -> Result<usize, LoadError> {
        let Some(group_kind) = Group::lookup(&group.text) else {
            return Err(self
                .doc
                .error(
                    LoadErrorKind::UnknownKey,
                    format!(
                        "unknown key `{key}`: `{}` is neither `instances` nor `configs`",
                        group.text
                    ),
                )
                .at(line)
                .with_key(key)
                .with_value(value)
                .with_expected(self.shape(p)));
        };
        self.doc.section(p, group_kind, name, line)
    }

    /// The section of the keyed breaker `name[id]`: only an instance takes a key.
    #[allow(clippy::too_many_arguments)]
    fn keyed_section(
        &mut self,
        p: usize,
        line: u32,
        key: &str,
        value: &str,
        group: &Element,
        name: &Element,
        id: &Element,
    ) -> Result<usize, LoadError> {
        if Group::lookup(&group.text) != Some(Group::Instances) {
            return Err(self
                .doc
                .error(
                    LoadErrorKind::UnknownKey,
                    format!(
                        "unknown key `{key}`: a key after the name `{}` (only an instance takes \
                         a key: `instances.<name>[<key>].<setting>`)",
                        name.text
                    ),
                )
                .at(line)
                .with_key(key)
                .with_value(value)
                .with_expected(self.shape(p)));
        }
        let keyed = crate::name::keyed_display(&name.text, &id.text);
        self.section(p, line, key, value, group, &keyed)
    }

    /// Item `index` of the list `setting` of pattern `p`'s section `s`.
    fn list_item(
        &mut self,
        p: usize,
        s: usize,
        line: u32,
        setting: &str,
        index: &str,
        value: &str,
    ) -> Result<(), LoadError> {
        let doc = &mut *self.doc;
        let title = doc.title(p, s);
        let list_key = match doc.lookup(p, setting) {
            Lookup::Known((name, ValueKind::Kinds)) => name,
            _ => {
                return Err(doc
                    .error(
                        LoadErrorKind::InvalidValue,
                        format!("`{setting}[{index}]` in {title}: `{setting}` is not a list"),
                    )
                    .at(line)
                    .in_section(&title)
                    .with_key(setting)
                    .with_value(value)
                    .with_expected(format!("an index only on {}", doc.list_keys(p))));
            }
        };
        let Ok(i) = index.parse::<u64>() else {
            return Err(doc
                .error(
                    LoadErrorKind::InvalidValue,
                    format!("bad index `[{index}]` for `{setting}` in {title}"),
                )
                .at(line)
                .in_section(&title)
                .with_key(setting)
                .with_value(value)
                .with_expected("an index 0, 1, 2, ..."));
        };
        let entry = self
            .lists
            .entry((p, s, list_key))
            .or_insert_with(|| (setting.to_owned(), line, BTreeMap::new()));
        if let Some((_, first)) = entry.2.get(&i) {
            return Err(doc
                .error(
                    LoadErrorKind::DuplicateKey,
                    format!("`{setting}[{i}]` is set twice in {title} (first on line {first})"),
                )
                .at(line)
                .in_section(&title)
                .with_key(setting)
                .with_value(value)
                .with_expected("each index at most once"));
        }
        entry.2.insert(i, (value.to_owned(), line));
        Ok(())
    }

    /// Sets every indexed list, now that all its items are in.
    pub(super) fn finish(self) -> Result<(), LoadError> {
        let doc = self.doc;
        for ((p, s, _), (raw_key, line, items)) in self.lists {
            if let Some((pos, (&i, (v, l)))) = items
                .iter()
                .enumerate()
                .find(|(pos, (&i, _))| i != *pos as u64)
            {
                let title = doc.title(p, s);
                return Err(doc
                    .error(
                        LoadErrorKind::InvalidValue,
                        format!("`{raw_key}[{i}]` in {title} leaves a gap in the list"),
                    )
                    .at(*l)
                    .in_section(&title)
                    .with_key(&raw_key)
                    .with_value(v)
                    .with_expected(format!(
                        "indexes 0, 1, 2, ... without gaps (index {pos} next)"
                    )));
            }
            let values = items.into_values().map(|(v, _)| v).collect();
            doc.set(p, s, &raw_key, &Raw::List(values), line)?;
        }
        Ok(())
    }
}

/// Splits `a.b.[c.d].e[0]` into elements, as Spring's `ConfigurationPropertyName` does: a
/// bracketed element may follow a dot or stand right after another element.
fn split_path(key: &str) -> Result<Vec<Element>, String> {
    let mut elements = Vec::new();
    let mut rest = key;
    loop {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| "a `[` without its `]`".to_owned())?;
            elements.push(Element {
                text: after[..end].to_owned(),
                bracketed: true,
            });
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err("an empty element (two dots in a row, or a dot at an end)".to_owned());
            }
            elements.push(Element {
                text: rest[..end].to_owned(),
                bracketed: false,
            });
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return Ok(elements);
        }
        if rest.starts_with('[') {
            continue;
        }
        rest = rest
            .strip_prefix('.')
            .ok_or_else(|| "something after `]` other than a dot or a `[`".to_owned())?;
        if rest.is_empty() {
            return Err("a dot at the end".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_with_brackets_and_indexes() {
        let p =
            split_path("resilience4j.circuitbreaker.instances.[a.b].record-exceptions[1]").unwrap();
        let texts: Vec<(&str, bool)> = p.iter().map(|e| (e.text.as_str(), e.bracketed)).collect();
        assert_eq!(
            texts,
            [
                ("resilience4j", false),
                ("circuitbreaker", false),
                ("instances", false),
                ("a.b", true),
                ("record-exceptions", false),
                ("1", true),
            ]
        );
        assert_eq!(
            split_path("instances[a.b].x").unwrap(),
            split_path("instances.[a.b].x").unwrap(),
            "Spring's two ways to bracket a map key"
        );
        for bad in ["a..b", ".a", "a.", "a.[b", "a[0", "a[0]b"] {
            assert!(split_path(bad).is_err(), "{bad}");
        }
    }
}
