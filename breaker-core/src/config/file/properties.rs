//! Spring `.properties` lines, read as `java.util.Properties` reads them.
//!
//! - `key=value`, `key: value` and `key value`; blank lines; `#` and `!` comments.
//! - A line ending in an odd number of backslashes continues on the next line (whose leading
//!   whitespace is dropped); comment lines never continue.
//! - Escapes `\t`, `\n`, `\r`, `\f`, `\uXXXX` (surrogate pairs included); any other `\c` is `c`.
//!
//! What the lines say is read as [`spring`](super::spring) reads Spring's flat names:
//! `resilience4j.circuitbreaker.instances.<name>.<key>=<value>` and the rest; other lines are
//! skipped, so a whole `application.properties` can be loaded.
//!
//! The bytes are decoded before (see [`decode`](super::decode)): UTF-8 when they are valid
//! UTF-8, else ISO-8859-1, with a leading byte-order mark dropped.

use super::document::Reading;
use super::error::{LoadError, LoadErrorKind};
use super::spring::Flat;

const SHAPE: &str = "resilience4j.circuitbreaker.instances.<name>.<key>=<value> or \
                     resilience4j.circuitbreaker.configs.<name>.<key>=<value>";

pub(super) fn parse(text: &str, doc: &mut Reading<'_, '_>) -> Result<(), LoadError> {
    let lines = logical_lines(text);
    let mut flat = Flat::new(doc, SHAPE);
    for (line, logical) in lines {
        let (raw_key, raw_value) = split_key_value(&logical);
        let key = unescape(raw_key).map_err(|e| syntax(flat.doc(), line, e))?;
        let value = unescape(raw_value).map_err(|e| syntax(flat.doc(), line, e))?;
        flat.entry(line, &key, &value)?;
    }
    flat.finish()
}

fn syntax(doc: &Reading<'_, '_>, line: u32, problem: String) -> LoadError {
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
}
