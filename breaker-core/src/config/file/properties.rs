//! Spring `.properties` lines, read as `java.util.Properties` reads them.
//!
//! - `key=value`, `key: value` and `key value`; blank lines; `#` and `!` comments.
//! - A line ending in an odd number of backslashes continues on the next line (whose leading
//!   whitespace is dropped); comment lines never continue.
//! - Escapes `\t`, `\n`, `\r`, `\f`, `\uXXXX` (surrogate pairs included); any other `\c` is `c`.
//!
//! Only `resilience4j.circuitbreaker.*` lines are read: `configs.<name>.<key>` and
//! `instances.<name>.<key>` (or Resilience4j 1.x's `backends.<name>.<key>`). A name containing
//! dots is written in brackets, as in Spring: `instances.[api.v2].sliding-window-size=10`. A list
//! is comma-separated (`record-exceptions=a,b`) or indexed (`record-exceptions[0]=a`). Lines of
//! other Resilience4j modules (`resilience4j.retry.*`, ...) and of anything else
//! (`server.port`, ...) are skipped, so a whole `application.properties` can be loaded.

use std::collections::BTreeMap;

use super::document::Document;
use super::error::{LoadError, LoadErrorKind};
use super::spelling::{self, Group, Lookup};
use super::values::Raw;
use crate::config::keys::{Key, ValueKind};

const SHAPE: &str = "resilience4j.circuitbreaker.instances.<name>.<key>=<value> or \
                     resilience4j.circuitbreaker.configs.<name>.<key>=<value>";

/// One element of a dotted key: `name`, `[na.me]`, optionally followed by `[index]`.
#[derive(Debug)]
struct Element {
    text: String,
    index: Option<String>,
}

/// The items of an indexed list so far: index -> (value, line).
type ListItems = BTreeMap<u64, (String, u32)>;

pub(super) fn parse(text: &str, doc: &mut Document<'_>) -> Result<(), LoadError> {
    // (section, key) -> (the key as written, the line of its first item, the items)
    let mut lists: BTreeMap<(usize, Key), (String, u32, ListItems)> = BTreeMap::new();
    for (line, logical) in logical_lines(text) {
        let (raw_key, raw_value) = split_key_value(&logical);
        let key = unescape(raw_key).map_err(|e| syntax(doc, line, e))?;
        let value = unescape(raw_value).map_err(|e| syntax(doc, line, e))?;
        let elements = split_path(&key).map_err(|e| {
            doc.error(
                LoadErrorKind::Syntax,
                format!("malformed property name `{key}`: {e}"),
            )
            .at(line)
            .with_key(&key)
            .with_expected(SHAPE)
        })?;
        let unknown = |doc: &Document<'_>, problem: String| {
            doc.error(LoadErrorKind::UnknownKey, problem)
                .at(line)
                .with_key(&key)
                .with_value(&value)
                .with_expected(SHAPE)
        };
        let [first, rest @ ..] = elements.as_slice() else {
            continue;
        };
        if spelling::uniform(&first.text) != "resilience4j" || first.index.is_some() {
            continue; // not ours: another part of an application.properties
        }
        let Some(module) = rest.first() else {
            return Err(unknown(doc, format!("unknown key `{key}`")));
        };
        if spelling::is_other_resilience4j_module(&module.text) {
            if spelling::uniform(&module.text) == "timelimiter"
                && rest
                    .last()
                    .is_some_and(|k| spelling::uniform(&k.text) == "timeoutduration")
            {
                doc.time_limits.push((line, key.clone()));
            }
            continue;
        }
        if spelling::uniform(&module.text) != "circuitbreaker" || module.index.is_some() {
            return Err(unknown(
                doc,
                format!(
                    "unknown key `{key}`: `{}` is not a Resilience4j module",
                    module.text
                ),
            ));
        }
        match &rest[1..] {
            // Spring's aspect order: nothing to order here.
            [only] if spelling::uniform(&only.text) == "circuitbreakeraspectorder" => {
                doc.ignored.push((line, key.clone()));
            }
            [group, name, setting] => {
                let Some(group_kind) = Group::lookup(&group.text).filter(|_| group.index.is_none())
                else {
                    return Err(unknown(
                        doc,
                        format!(
                            "unknown key `{key}`: `{}` is neither `instances` nor `configs`",
                            group.text
                        ),
                    ));
                };
                if name.index.is_some() {
                    return Err(unknown(
                        doc,
                        format!(
                            "unknown key `{key}`: an index after the name `{}`",
                            name.text
                        ),
                    ));
                }
                let s = doc.section(group_kind, &name.text, line)?;
                match &setting.index {
                    None => doc.set(s, &setting.text, &Raw::Text(value), line)?,
                    Some(index) => {
                        let list_key = match spelling::lookup(&setting.text) {
                            Lookup::Known(k) if k.value_kind() == ValueKind::Kinds => k,
                            _ => {
                                return Err(doc
                                    .error(
                                        LoadErrorKind::InvalidValue,
                                        format!(
                                            "`{}[{index}]` in {}: `{}` is not a list",
                                            setting.text,
                                            doc.sections[s].title(),
                                            setting.text
                                        ),
                                    )
                                    .at(line)
                                    .in_section(&doc.sections[s].title())
                                    .with_key(&setting.text)
                                    .with_value(&value)
                                    .with_expected(
                                        "an index only on record-exceptions or ignore-exceptions",
                                    ));
                            }
                        };
                        let title = doc.sections[s].title();
                        let Ok(i) = index.parse::<u64>() else {
                            return Err(doc
                                .error(
                                    LoadErrorKind::InvalidValue,
                                    format!(
                                        "bad index `[{index}]` for `{}` in {title}",
                                        setting.text
                                    ),
                                )
                                .at(line)
                                .in_section(&title)
                                .with_key(&setting.text)
                                .with_value(&value)
                                .with_expected("an index 0, 1, 2, ..."));
                        };
                        let entry = lists
                            .entry((s, list_key))
                            .or_insert_with(|| (setting.text.clone(), line, BTreeMap::new()));
                        if let Some((_, first)) = entry.2.get(&i) {
                            return Err(doc
                                .error(
                                    LoadErrorKind::DuplicateKey,
                                    format!(
                                        "`{}[{i}]` is set twice in {title} (first on line {first})",
                                        setting.text
                                    ),
                                )
                                .at(line)
                                .in_section(&title)
                                .with_key(&setting.text)
                                .with_value(&value)
                                .with_expected("each index at most once"));
                        }
                        entry.2.insert(i, (value, line));
                    }
                }
            }
            _ => return Err(unknown(doc, format!("unknown key `{key}`"))),
        }
    }
    for ((s, _), (raw_key, line, items)) in lists {
        if let Some((pos, (&i, (v, l)))) = items
            .iter()
            .enumerate()
            .find(|(pos, (&i, _))| i != *pos as u64)
        {
            let title = doc.sections[s].title();
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
        doc.set(s, &raw_key, &Raw::List(values), line)?;
    }
    Ok(())
}

fn syntax(doc: &Document<'_>, line: u32, problem: String) -> LoadError {
    doc.error(LoadErrorKind::Syntax, problem)
        .at(line)
        .with_expected("a `\\uXXXX` escape with four hex digits")
}

/// The logical lines (continuations joined, comments and blank lines dropped), each with the
/// 1-based number of the natural line it starts on.
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut naturals = natural_lines(text).into_iter().peekable();
    let mut out = Vec::new();
    while let Some((line, natural)) = naturals.next() {
        let trimmed = natural.trim_start_matches([' ', '\t', '\u{c}']);
        if trimmed.is_empty() || trimmed.starts_with(['#', '!']) {
            continue;
        }
        let mut logical = String::from(trimmed);
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match naturals.next() {
                Some((_, next)) => {
                    logical.push_str(next.trim_start_matches([' ', '\t', '\u{c}']));
                }
                None => break,
            }
        }
        out.push((line, logical));
    }
    out
}

/// Lines split at `\n`, `\r\n` or `\r`, numbered from 1.
fn natural_lines(text: &str) -> Vec<(u32, &str)> {
    let mut lines = Vec::new();
    let mut number: u32 = 1;
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        lines.push((number, &rest[..end]));
        number = number.saturating_add(1);
        let after = &rest[end..];
        rest = if let Some(r) = after.strip_prefix("\r\n") {
            r
        } else if after.is_empty() {
            after
        } else {
            &after[1..]
        };
    }
    lines
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|b| *b == b'\\').count() % 2 == 1
}

/// The key and the value of a logical line, both still escaped.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut i = 0;
    let mut key_end = bytes.len();
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => {
                key_end = i;
                break;
            }
            _ => i += 1,
        }
    }
    let key_end = key_end.min(bytes.len());
    let mut j = key_end;
    while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\x0c') {
        j += 1;
    }
    if j < bytes.len() && matches!(bytes[j], b'=' | b':') {
        j += 1;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\x0c') {
            j += 1;
        }
    }
    // Both cut points sit next to ASCII bytes (a separator or whitespace), so they are char
    // boundaries; `get` keeps that from ever panicking all the same.
    let key = line.get(..key_end).unwrap_or(line);
    let value = line.get(j..).unwrap_or("");
    (key, value)
}

/// Resolves escapes as `java.util.Properties` does.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut high: Option<u16> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if high.is_some() {
                return Err("a lone UTF-16 surrogate in a `\\u` escape".to_owned());
            }
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            break; // a trailing backslash is dropped
        };
        if e != 'u' && high.is_some() {
            return Err("a lone UTF-16 surrogate in a `\\u` escape".to_owned());
        }
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!("malformed \\uxxxx escape `\\u{hex}`"));
                }
                let unit = u16::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                let lone = || "a lone UTF-16 surrogate in a `\\u` escape".to_owned();
                match high.take() {
                    Some(h) if (0xDC00..=0xDFFF).contains(&unit) => {
                        let c = char::decode_utf16([h, unit])
                            .next()
                            .and_then(Result::ok)
                            .ok_or_else(lone)?;
                        out.push(c);
                    }
                    Some(_) => return Err(lone()),
                    None if (0xD800..=0xDBFF).contains(&unit) => high = Some(unit),
                    None => out.push(char::from_u32(u32::from(unit)).ok_or_else(lone)?),
                }
            }
            other => out.push(other),
        }
    }
    if high.is_some() {
        return Err("a lone UTF-16 surrogate in a `\\u` escape".to_owned());
    }
    Ok(out)
}

/// Splits `a.b.[c.d].e[0]` into elements.
fn split_path(key: &str) -> Result<Vec<Element>, String> {
    let mut elements = Vec::new();
    let mut rest = key;
    loop {
        let text;
        if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| "a `[` without its `]`".to_owned())?;
            text = after[..end].to_owned();
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err("an empty element (two dots in a row, or a dot at an end)".to_owned());
            }
            text = rest[..end].to_owned();
            rest = &rest[end..];
        }
        let mut index = None;
        if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| "a `[` without its `]`".to_owned())?;
            index = Some(after[..end].to_owned());
            rest = &after[end + 1..];
        }
        elements.push(Element { text, index });
        if rest.is_empty() {
            return Ok(elements);
        }
        rest = rest
            .strip_prefix('.')
            .ok_or_else(|| "something after `]` other than a dot".to_owned())?;
        if rest.is_empty() {
            return Err("a dot at the end".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_continue_and_comments_do_not() {
        let text = "# comment \\\nkey = a\\\n    b\n! other\n\n  spaced:value\r\nlast value\rx";
        let lines = logical_lines(text);
        assert_eq!(
            lines,
            vec![
                (2, "key = ab".to_owned()),
                (6, "spaced:value".to_owned()),
                (7, "last value".to_owned()),
                (8, "x".to_owned()),
            ]
        );
    }

    #[test]
    fn key_and_value_split_like_java() {
        assert_eq!(split_key_value("a=b"), ("a", "b"));
        assert_eq!(split_key_value("a = b "), ("a", "b "));
        assert_eq!(split_key_value("a:b"), ("a", "b"));
        assert_eq!(split_key_value("a b"), ("a", "b"));
        assert_eq!(split_key_value("a\\=x=b"), ("a\\=x", "b"));
        assert_eq!(split_key_value("a"), ("a", ""));
        assert_eq!(split_key_value("a=b=c"), ("a", "b=c"));
    }

    #[test]
    fn escapes_resolve() {
        assert_eq!(unescape("a\\tb\\u0041\\=\\\\").unwrap(), "a\tbA=\\");
        assert_eq!(unescape("\\uD83D\\uDE00").unwrap(), "\u{1F600}");
        assert!(unescape("\\u12").is_err());
        assert!(unescape("\\uZZZZ").is_err());
        assert!(unescape("\\uD83D").is_err());
        assert!(unescape("\\uDE00").is_err());
        assert!(unescape("\\uD83Dx").is_err());
    }

    #[test]
    fn paths_split_with_brackets_and_indexes() {
        let p =
            split_path("resilience4j.circuitbreaker.instances.[a.b].record-exceptions[1]").unwrap();
        let texts: Vec<&str> = p.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "resilience4j",
                "circuitbreaker",
                "instances",
                "a.b",
                "record-exceptions"
            ]
        );
        assert_eq!(p[4].index.as_deref(), Some("1"));
        for bad in ["a..b", ".a", "a.", "a.[b", "a[0", "a[0]b"] {
            assert!(split_path(bad).is_err(), "{bad}");
        }
    }
}
