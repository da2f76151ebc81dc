//! TOML files, parsed by the `toml` crate (full TOML 1.0: quoting, comments, dotted keys,
//! inline tables), with the spans of every key and value so errors can name lines.
//!
//! ```toml
//! [configs.default]
//! sliding-window-size = 100
//!
//! [instances.productService]
//! base-config = "default"
//! wait-duration-in-open-state = "10s"
//! record-exceptions = ["ServerError", "Timeout"]
//! ```
//!
//! `[tags]` holds the registry's metric tags (`env = "prod"`).
//!
//! The same tables may sit under `[resilience4j.circuitbreaker]`
//! (`[resilience4j.circuitbreaker.instances.productService]`), as in a Spring `application.yml`
//! turned into TOML; every `[resilience4j.<pattern>]` of a pattern being read is read so
//! (`[resilience4j.bulkhead.instances.productService]` configures a bulkhead,
//! `[resilience4j.retry.instances.productService]` a retry), and the rest of
//! such a file (other tables, other Resilience4j modules) is skipped. Without that prefix, the
//! file is breaker's alone and only `configs` and `instances` (of the first pattern read, the
//! circuit breaker) may appear at its top.

use std::ops::Range;

use ::toml::de::{DeTable, DeValue};
use ::toml::Spanned;

use super::document::Reading;
use super::error::{LoadError, LoadErrorKind};
use super::spelling::{self, Group, Lookup};
use super::values::Raw;

/// Byte offsets of line starts, to turn spans into line numbers.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn line(&self, offset: usize) -> u32 {
        let i = self.0.partition_point(|&start| start <= offset);
        u32::try_from(i.max(1)).unwrap_or(u32::MAX)
    }

    fn of(&self, span: Range<usize>) -> u32 {
        self.line(span.start)
    }
}

pub(super) fn parse(text: &str, doc: &mut Reading<'_, '_>) -> Result<(), LoadError> {
    let lines = Lines::new(text);
    let root = DeTable::parse(text).map_err(|e| {
        let message = e.message().trim_end();
        let span = e.span();
        // The parser's "duplicate key" says which key only through its span.
        let duplicate = span
            .clone()
            .filter(|_| message == "duplicate key")
            .and_then(|span| text.get(span));
        let mut err = match duplicate {
            Some(key) => doc
                .error(
                    LoadErrorKind::DuplicateKey,
                    format!("TOML syntax error: duplicate key `{key}`"),
                )
                .with_key(key)
                .with_expected("each key and table at most once"),
            None => doc.error(
                LoadErrorKind::Syntax,
                format!("TOML syntax error: {message}"),
            ),
        };
        if let Some(span) = span {
            err = err.at(lines.of(span));
        }
        err
    })?;
    let root = root.get_ref();

    // Spring's shape (`resilience4j.circuitbreaker.*`) or breaker's own (`configs`, `instances`).
    let r4j = sorted(root)
        .into_iter()
        .find(|(k, _)| spelling::uniform(k.get_ref()) == "resilience4j");
    let Some((r4j_key, r4j_value)) = r4j else {
        return read_groups(root, 0, "", true, &lines, doc);
    };
    // Top-level `configs`/`instances` beside `resilience4j` are read too; anything else at the
    // top belongs to the rest of the application.
    read_groups(root, 0, "", false, &lines, doc)?;
    let r4j_table = table(r4j_value, r4j_key, "", &lines, doc)?;
    for (module_key, module_value) in sorted(r4j_table) {
        let module = module_key.get_ref();
        let Some(p) = doc.pattern(module) else {
            if spelling::is_resilience4j_module(module) {
                match spelling::uniform(module).as_str() {
                    "timelimiter" => note_time_limits(module_value, &lines, doc),
                    "threadpoolbulkhead" => {
                        doc.notes.thread_pool_bulkhead(lines.of(module_key.span()));
                    }
                    _ => {}
                }
                continue;
            }
            return Err(doc
                .error(
                    LoadErrorKind::UnknownKey,
                    format!("unknown key `resilience4j.{module}`: not a Resilience4j module"),
                )
                .at(lines.of(module_key.span()))
                .with_key(module)
                .with_expected(doc.modules()));
        };
        let section = table(module_value, module_key, "resilience4j.", &lines, doc)?;
        let prefix = format!("resilience4j.{module}.");
        read_groups(section, p, &prefix, true, &lines, doc)?;
    }
    Ok(())
}

/// Notes every `timeout-duration` of a `[resilience4j.timelimiter]` table, which is not read.
fn note_time_limits(timelimiter: &Spanned<DeValue<'_>>, lines: &Lines, doc: &mut Reading<'_, '_>) {
    let DeValue::Table(groups) = timelimiter.get_ref() else {
        return;
    };
    for (group, sections) in sorted(groups) {
        let DeValue::Table(sections) = sections.get_ref() else {
            continue;
        };
        for (name, section) in sorted(sections) {
            let DeValue::Table(section) = section.get_ref() else {
                continue;
            };
            for (key, _) in sorted(section) {
                if spelling::uniform(key.get_ref()) == "timeoutduration" {
                    let shown = format!(
                        "resilience4j.timelimiter.{}.{}.{}",
                        group.get_ref(),
                        name.get_ref(),
                        key.get_ref()
                    );
                    doc.notes.time_limits.push((lines.of(key.span()), shown));
                }
            }
        }
    }
}

/// Entries of a table in file order (the table itself is sorted by key).
fn sorted<'t, 'i>(
    table: &'t DeTable<'i>,
) -> Vec<(
    &'t Spanned<std::borrow::Cow<'i, str>>,
    &'t Spanned<DeValue<'i>>,
)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

fn table<'t, 'i>(
    value: &'t Spanned<DeValue<'i>>,
    key: &Spanned<std::borrow::Cow<'i, str>>,
    prefix: &str,
    lines: &Lines,
    doc: &Reading<'_, '_>,
) -> Result<&'t DeTable<'i>, LoadError> {
    match value.get_ref() {
        DeValue::Table(t) => Ok(t),
        other => Err(doc
            .error(
                LoadErrorKind::InvalidValue,
                format!(
                    "`{prefix}{}` is {}, not a table",
                    key.get_ref(),
                    a(other.type_str())
                ),
            )
            .at(lines.of(key.span()))
            .with_key(key.get_ref())
            .with_expected(format!("a table: [{prefix}{}]", key.get_ref()))),
    }
}

/// Reads pattern `p`'s `configs`, `instances` and `tags` from `t` (the root, or
/// `resilience4j.<root>`). Other keys are errors if `strict`, else skipped (and the root's
/// `tags` too: in a file that is not breaker's alone, they are the application's).
fn read_groups(
    t: &DeTable<'_>,
    p: usize,
    prefix: &str,
    strict: bool,
    lines: &Lines,
    doc: &mut Reading<'_, '_>,
) -> Result<(), LoadError> {
    let aspect_order = format!("{}aspectorder", doc.root(p));
    for (group_key, group_value) in sorted(t) {
        let raw = group_key.get_ref();
        if spelling::uniform(raw) == "tags" && (strict || !prefix.is_empty()) {
            read_tags(group_value, group_key, p, prefix, lines, doc)?;
            continue;
        }
        let Some(group) = Group::lookup(raw) else {
            // The first key under it, for a root misspelt as a whole (`[resilence4j.circuitbreaker]`).
            let dotted = match group_value.get_ref() {
                DeValue::Table(inner) => match sorted(inner).first() {
                    Some((child, _)) => format!("{prefix}{raw}.{}", child.get_ref()),
                    None => format!("{prefix}{raw}"),
                },
                _ => format!("{prefix}{raw}"),
            };
            let near = prefix
                .is_empty()
                .then(|| spelling::near_breaker_key(&dotted))
                .flatten();
            if !strict {
                if let Some((root, why)) = near {
                    doc.notes.near_miss(lines.of(group_key.span()), &root, why);
                }
                continue;
            }
            if !prefix.is_empty() && spelling::uniform(raw) == aspect_order {
                doc.notes
                    .ignored
                    .push((lines.of(group_key.span()), raw.to_string()));
                continue;
            }
            let hint = match near {
                Some(_) => " (did you mean `resilience4j.circuitbreaker`?)",
                None => "",
            };
            return Err(doc
                .error(
                    LoadErrorKind::UnknownKey,
                    format!("unknown key `{prefix}{raw}`{hint}"),
                )
                .at(lines.of(group_key.span()))
                .with_key(raw)
                .with_expected(format!(
                    "[{prefix}instances.<name>], [{prefix}configs.<name>] or [{prefix}tags] \
                     tables"
                )));
        };
        let sections = table(group_value, group_key, prefix, lines, doc)?;
        for (name_key, section_value) in sorted(sections) {
            let name = name_key.get_ref();
            let line = lines.of(name_key.span());
            let full = format!("{prefix}{raw}.{name}");
            let section = table(
                section_value,
                name_key,
                &format!("{prefix}{raw}."),
                lines,
                doc,
            )
            .map_err(|e| e.with_expected(format!("a table: [{full}] with the breaker's keys")))?;
            let s = doc.section(p, group, name, line)?;
            for (key, value) in sorted(section) {
                let line = lines.of(key.span());
                match to_raw(value, key.get_ref(), &doc.title(p, s), lines, doc) {
                    Ok(raw) => doc.set(p, s, key.get_ref(), &raw, line)?,
                    Err(type_error) => {
                        // An unknown key is the better message, whatever its value.
                        if let Lookup::Unknown(_) | Lookup::Unsupported(..) =
                            doc.lookup(p, key.get_ref())
                        {
                            let shown = Raw::Text(value.get_ref().type_str().to_owned());
                            doc.set(p, s, key.get_ref(), &shown, line)?;
                        }
                        return Err(type_error);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The `[tags]` table: each `name = value` a tag (a number or a boolean is its text).
fn read_tags(
    value: &Spanned<DeValue<'_>>,
    key: &Spanned<std::borrow::Cow<'_, str>>,
    p: usize,
    prefix: &str,
    lines: &Lines,
    doc: &mut Reading<'_, '_>,
) -> Result<(), LoadError> {
    let tags = table(value, key, prefix, lines, doc)?;
    for (name, value) in sorted(tags) {
        let line = lines.of(name.span());
        let text = match value.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i.as_str().to_owned(),
            DeValue::Float(f) => f.as_str().to_owned(),
            DeValue::Boolean(b) => b.to_string(),
            other => {
                return Err(doc
                    .error(
                        LoadErrorKind::InvalidValue,
                        format!("tag `{}` is {}", name.get_ref(), a(other.type_str())),
                    )
                    .at(line)
                    .with_key(&format!("tags.{}", name.get_ref()))
                    .with_value(other.type_str())
                    .with_expected("a string: tags.<name> = \"<value>\""));
            }
        };
        doc.tag(p, name.get_ref(), &text, line)?;
    }
    Ok(())
}

/// A TOML value as a [`Raw`]: strings, integers, floats, booleans and arrays of strings.
fn to_raw(
    value: &Spanned<DeValue<'_>>,
    key: &str,
    title: &str,
    lines: &Lines,
    doc: &Reading<'_, '_>,
) -> Result<Raw, LoadError> {
    let bad = |what: &str, span: Range<usize>, shown: String| {
        doc.error(
            LoadErrorKind::InvalidValue,
            format!("invalid value for `{key}` in {title}: {what}"),
        )
        .at(lines.of(span))
        .in_section(title)
        .with_key(key)
        .with_value(&shown)
        .with_expected("a string, a number, a boolean, or an array of strings")
    };
    Ok(match value.get_ref() {
        DeValue::String(s) => Raw::Text(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Raw::Integer(n),
            Err(_) => {
                let what = if i.as_str().starts_with('-') {
                    "an integer out of range"
                } else {
                    "an integer too large for any key"
                };
                return Err(bad(what, value.span(), i.as_str().to_owned()));
            }
        },
        DeValue::Float(f) => match f.as_str().parse::<f64>() {
            Ok(x) => Raw::Float(x),
            Err(_) => return Err(bad("not a number", value.span(), f.as_str().to_owned())),
        },
        DeValue::Boolean(b) => Raw::Bool(*b),
        DeValue::Array(items) => {
            let mut strings = Vec::with_capacity(items.len());
            for item in items.iter() {
                match item.get_ref() {
                    DeValue::String(s) => strings.push(s.to_string()),
                    other => {
                        return Err(bad(
                            &format!("an array item that is {}", a(other.type_str())),
                            item.span(),
                            format!("{} item", other.type_str()),
                        ))
                    }
                }
            }
            Raw::List(strings)
        }
        other => {
            return Err(bad(
                &a(other.type_str()),
                value.span(),
                other.type_str().to_owned(),
            ))
        }
    })
}

/// "an integer", "a string".
fn a(noun: &str) -> String {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {noun}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_map_offsets() {
        let l = Lines::new("a\nbb\n\nc");
        assert_eq!(l.line(0), 1);
        assert_eq!(l.line(1), 1);
        assert_eq!(l.line(2), 2);
        assert_eq!(l.line(5), 3);
        assert_eq!(l.line(6), 4);
        assert_eq!(l.line(100), 4);
    }
}
