//! YAML files (`application.yml`), read as Spring Boot reads them: each document is
//! flattened into Spring's dotted names, which [`spring`](super::spring) then reads as it reads
//! `.properties` lines.
//!
//! ```yaml
//! resilience4j.circuitbreaker:
//!   configs:
//!     default:
//!       slidingWindowSize: 20
//!   instances:
//!     productService:
//!       wait-duration-in-open-state: 10s
//!       record-exceptions:
//!         - ServerError
//!         - Timeout
//! ```
//!
//! The flattening is Spring's (`YamlProcessor`): map keys are joined with dots, so
//! `resilience4j.circuitbreaker:` at the top and `resilience4j: circuitbreaker:` nested are
//! the same, and a key in brackets keeps its dots (`"[payments.v2]":`); list items become
//! indexed names (`record-exceptions[0]`), an empty list an empty value. Plain scalars are read
//! as SnakeYAML reads YAML 1.1 for Spring: `~` and `null` are empty, `yes`/`no`/`on`/`off` are
//! `true`/`false`, `0x1F`, `010` and `1_000` are 31, 8 and 1000. Anchors, aliases and merge keys
//! (`<<: *defaults`) work; a key twice in one mapping is an error, as in Spring Boot.
//!
//! Several documents (`---`) are read as one, except those of a Spring profile
//! (`spring.config.activate.on-profile`, or the older `spring.profiles`), which are skipped with a
//! warning: breaker has no profiles.
//!
//! The file is parsed by `saphyr-parser` into events, each with its position, and turned here
//! into a small tree whose every node knows its line. Its depth and size are bounded, so an
//! alias that expands without end ("billion laughs") is an error, not a hang.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use super::document::Reading;
use super::error::{LoadError, LoadErrorKind};
use super::spelling;
use super::spring::Flat;

const SHAPE: &str = "resilience4j.circuitbreaker: with instances: <name>: <key>: <value> \
                     (or configs: <name>: ...) under it";

/// Deepest nesting of mappings and lists (Spring's keys need 6).
const MAX_DEPTH: usize = 64;
/// Most nodes a file may make, aliases expanded.
const MAX_NODES: usize = 100_000;

/// A YAML node with the line it starts on.
#[derive(Clone, Debug)]
enum Node {
    Scalar {
        text: String,
        line: u32,
    },
    List {
        items: Vec<Node>,
        line: u32,
        height: usize,
        size: usize,
    },
    Map {
        entries: Vec<(MapKey, Node)>,
        line: u32,
        height: usize,
        size: usize,
    },
}

/// A mapping's key: its text and line.
#[derive(Clone, Debug)]
struct MapKey {
    text: String,
    line: u32,
}

impl Node {
    fn line(&self) -> u32 {
        match self {
            Node::Scalar { line, .. } | Node::List { line, .. } | Node::Map { line, .. } => *line,
        }
    }

    /// Levels of nesting, this node's included.
    fn height(&self) -> usize {
        match self {
            Node::Scalar { .. } => 1,
            Node::List { height, .. } | Node::Map { height, .. } => *height,
        }
    }

    /// Nodes, this one included.
    fn size(&self) -> usize {
        match self {
            Node::Scalar { .. } => 1,
            Node::List { size, .. } | Node::Map { size, .. } => *size,
        }
    }
}

/// A mapping or list being read.
struct Frame {
    anchor: usize,
    line: u32,
    kind: FrameKind,
}

enum FrameKind {
    List(Vec<Node>),
    Map {
        entries: Vec<(MapKey, Node)>,
        /// Each key's first line, to find a key given twice.
        seen: HashMap<String, u32>,
        /// The key whose value comes next; `None` while a key is awaited.
        key: Option<MapKey>,
        /// Whether that key is the merge key `<<`.
        merging: bool,
        /// The values of `<<`, merged at the end of the mapping.
        merges: Vec<Node>,
    },
}

pub(super) fn parse(text: &str, doc: &mut Reading<'_, '_>) -> Result<(), LoadError> {
    let documents = read(text, doc)?;
    let mut entries: Vec<(u32, String, String)> = Vec::new();
    for root in documents {
        let mut flat = Vec::new();
        match &root {
            Node::Map { .. } => flatten(&root, "", &mut flat),
            Node::Scalar { text, .. } if text.is_empty() => {} // an empty document
            other => {
                return Err(doc
                    .error(
                        LoadErrorKind::Syntax,
                        "a YAML document that is not a mapping of keys to values",
                    )
                    .at(other.line())
                    .with_expected(SHAPE));
            }
        }
        let profile = flat.iter().find(|(_, key, _)| {
            let u = spelling::uniform(key);
            // A list of profiles flattens to `...[0]`, `...[1]`.
            let name = u.split('[').next().unwrap_or(&u);
            name == "spring.config.activate.onprofile" || name == "spring.profiles"
        });
        if let Some((line, _, value)) = profile {
            doc.notes.profiles.push((*line, value.clone()));
            continue;
        }
        entries.extend(flat);
    }
    let mut flat = Flat::new(doc, SHAPE);
    for (line, key, value) in entries {
        flat.entry(line, &key, &value)?;
    }
    flat.finish()
}

/// Spring's flattening of a document: `(line, dotted name, value)` for every scalar.
fn flatten(node: &Node, path: &str, out: &mut Vec<(u32, String, String)>) {
    match node {
        Node::Scalar { text, line } => out.push((*line, path.to_owned(), text.clone())),
        Node::List { items, line, .. } => {
            if items.is_empty() {
                out.push((*line, path.to_owned(), String::new()));
            }
            for (i, item) in items.iter().enumerate() {
                flatten(item, &format!("{path}[{i}]"), out);
            }
        }
        Node::Map { entries, .. } => {
            for (key, value) in entries {
                let name = if path.is_empty() {
                    key.text.clone()
                } else if key.text.starts_with('[') {
                    format!("{path}{}", key.text)
                } else {
                    format!("{path}.{}", key.text)
                };
                match value {
                    // A value on the key's line or after it: the key's line names the entry.
                    Node::Scalar { text, .. } => out.push((key.line, name, text.clone())),
                    nested => flatten(nested, &name, out),
                }
            }
        }
    }
}

/// The documents of `text`, each a tree.
fn read(text: &str, doc: &Reading<'_, '_>) -> Result<Vec<Node>, LoadError> {
    let mut parser = Parser::new_from_str(text);
    let mut documents = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut nodes = 0usize;
    let error = |line: u32, problem: String| {
        doc.error(LoadErrorKind::Syntax, problem)
            .at(line)
            .with_expected("YAML that Spring Boot can read")
    };
    // The parser puts an error at the end of the text on the line after the last.
    let last_line = last_line(text);
    while let Some(event) = parser.next_event() {
        let (event, span) = event.map_err(|e| {
            error(
                line_of(e.marker().line()).min(last_line),
                format!("YAML syntax error: {}", e.info()),
            )
        })?;
        let line = start_line(&span).min(last_line);
        let node = match event {
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd
            | Event::Nothing => continue,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(error(
                        line,
                        format!("mappings and lists nested more than {MAX_DEPTH} deep"),
                    ));
                }
                let kind = if matches!(event, Event::SequenceStart(..)) {
                    FrameKind::List(Vec::new())
                } else {
                    FrameKind::Map {
                        entries: Vec::new(),
                        seen: HashMap::new(),
                        key: None,
                        merging: false,
                        merges: Vec::new(),
                    }
                };
                stack.push(Frame { anchor, line, kind });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = stack.pop() else {
                    return Err(error(line, "an end without a start".to_owned()));
                };
                let node = close(frame.kind, frame.line).map_err(|e| error(e.0, e.1))?;
                if frame.anchor != 0 {
                    anchors.insert(frame.anchor, node.clone());
                }
                node
            }
            Event::Scalar(value, style, anchor, _) => {
                let text = if matches!(style, ScalarStyle::Plain) {
                    resolve_plain(&value)
                } else {
                    value.into_owned()
                };
                nodes += 1;
                let node = Node::Scalar { text, line };
                if anchor != 0 {
                    anchors.insert(anchor, node.clone());
                }
                node
            }
            Event::Alias(anchor) => {
                let Some(node) = anchors.get(&anchor) else {
                    return Err(error(line, "an alias to an unknown anchor".to_owned()));
                };
                // Counted before it is copied, so no copy is ever larger than the budget.
                nodes += node.size();
                if nodes > MAX_NODES {
                    return Err(error(
                        line,
                        format!("more than {MAX_NODES} values (aliases expanded)"),
                    ));
                }
                node.clone()
            }
        };
        if nodes > MAX_NODES {
            return Err(error(
                line,
                format!("more than {MAX_NODES} values (aliases expanded)"),
            ));
        }
        if stack.len() + node.height() > MAX_DEPTH {
            return Err(error(
                line,
                format!("mappings and lists nested more than {MAX_DEPTH} deep (aliases expanded)"),
            ));
        }
        match stack.last_mut() {
            None => documents.push(node),
            Some(frame) => attach(frame, node, doc)?,
        }
    }
    Ok(documents)
}

/// Puts a finished node into the mapping or list being read.
fn attach(frame: &mut Frame, node: Node, doc: &Reading<'_, '_>) -> Result<(), LoadError> {
    match &mut frame.kind {
        FrameKind::List(items) => items.push(node),
        FrameKind::Map {
            entries,
            seen,
            key,
            merging,
            merges,
        } => match key.take() {
            None => {
                let Node::Scalar { text, line } = node else {
                    return Err(doc
                        .error(
                            LoadErrorKind::Syntax,
                            "a YAML key that is a mapping or a list",
                        )
                        .at(node.line())
                        .with_expected("keys that are plain text, as Spring's are"));
                };
                *merging = text == "<<";
                if !*merging {
                    if let Some(first) = seen.insert(text.clone(), line) {
                        return Err(doc
                            .error(
                                LoadErrorKind::DuplicateKey,
                                format!(
                                    "key `{text}` is set twice in one YAML mapping \
                                     (first on line {first})"
                                ),
                            )
                            .at(line)
                            .with_key(&text)
                            .with_expected("each key at most once per mapping"));
                    }
                }
                *key = Some(MapKey { text, line });
            }
            Some(k) => {
                if *merging {
                    merges.push(node);
                } else {
                    entries.push((k, node));
                }
            }
        },
    }
    Ok(())
}

/// The node of a finished mapping or list: a mapping's merge keys are merged, its own keys
/// first, then those of each merged mapping in order, each key once.
fn close(kind: FrameKind, line: u32) -> Result<Node, (u32, String)> {
    Ok(match kind {
        FrameKind::List(items) => {
            let (height, size) = measure(items.iter());
            Node::List {
                items,
                line,
                height,
                size,
            }
        }
        FrameKind::Map {
            mut entries,
            mut seen,
            merges,
            ..
        } => {
            for merged in merges {
                let sources = match merged {
                    Node::Map { entries, .. } => vec![entries],
                    Node::List { items, .. } => {
                        let mut maps = Vec::new();
                        for item in items {
                            match item {
                                Node::Map { entries, .. } => maps.push(entries),
                                other => {
                                    return Err((
                                        other.line(),
                                        "a merge key (`<<`) with a list item that is not a \
                                         mapping"
                                            .to_owned(),
                                    ))
                                }
                            }
                        }
                        maps
                    }
                    Node::Scalar { line, .. } => {
                        return Err((
                            line,
                            "a merge key (`<<`) whose value is not a mapping".to_owned(),
                        ))
                    }
                };
                for (key, value) in sources.into_iter().flatten() {
                    if !seen.contains_key(&key.text) {
                        seen.insert(key.text.clone(), key.line);
                        entries.push((key, value));
                    }
                }
            }
            let (height, size) = measure(entries.iter().map(|(_, v)| v));
            Node::Map {
                entries,
                line,
                height,
                size,
            }
        }
    })
}

/// A collection's height and size, from its children.
fn measure<'n>(children: impl Iterator<Item = &'n Node>) -> (usize, usize) {
    children.fold((1, 1), |(h, s), n| (h.max(n.height() + 1), s + n.size()))
}

/// A plain scalar as SnakeYAML's YAML 1.1 resolver gives it to Spring, as text.
fn resolve_plain(value: &str) -> String {
    match value {
        "" | "~" | "null" | "Null" | "NULL" => String::new(),
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => "true".to_owned(),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            "false".to_owned()
        }
        other => yaml11_int(other).unwrap_or_else(|| other.to_owned()),
    }
}

/// A YAML 1.1 integer (`0b101`, `017`, `1_000`, `0x1F`, signed) in decimal, if `s` is one.
fn yaml11_int(s: &str) -> Option<String> {
    let (sign, body) = match s.as_bytes().first()? {
        b'-' => ("-", &s[1..]),
        b'+' => ("", &s[1..]),
        _ => ("", s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0b") {
        (2, d)
    } else if let Some(d) = body.strip_prefix("0x") {
        (16, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Plain decimal text stays as written (a leading `+` aside): only a value of another form
    // is rewritten, and one too large for 128 bits stays text.
    if radix == 10 && !body.contains('_') {
        return Some(format!("{sign}{digits}"));
    }
    let n = u128::from_str_radix(&digits, radix).ok()?;
    Some(format!("{sign}{n}"))
}

/// The number of the last line of `text` (breaks: `\n`, `\r\n` and a lone `\r`, as in YAML).
/// A break at the very end ends the last line; it does not start another, so a file whose
/// four lines each end with a break has four lines, as an editor shows it.
fn last_line(text: &str) -> u32 {
    let breaks =
        text.matches('\n').count() + text.matches('\r').count() - text.matches("\r\n").count();
    let ended = usize::from(text.ends_with(['\n', '\r']));
    // `ended` is 1 only when there is a break, so this is at least 1.
    u32::try_from(breaks + 1 - ended).unwrap_or(u32::MAX)
}

fn line_of(line: usize) -> u32 {
    u32::try_from(line.max(1)).unwrap_or(u32::MAX)
}

fn start_line(span: &Span) -> u32 {
    line_of(span.start.line())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(text: &str) -> Vec<(u32, String, String)> {
        let doc = Reading::new("t.yml", Vec::new());
        let mut out = Vec::new();
        for root in read(text, &doc).unwrap() {
            flatten(&root, "", &mut out);
        }
        out
    }

    #[test]
    fn flattens_as_spring_does() {
        let text = "a.b:\n  c: 1\n  \"[d.e]\":\n    f: [x, y]\n  g: []\n  h:\n";
        assert_eq!(
            flat(text),
            [
                (2, "a.b.c".into(), "1".into()),
                (4, "a.b[d.e].f[0]".into(), "x".into()),
                (4, "a.b[d.e].f[1]".into(), "y".into()),
                (5, "a.b.g".into(), "".into()),
                (6, "a.b.h".into(), "".into()),
            ]
        );
    }

    #[test]
    fn plain_scalars_resolve_as_yaml_1_1() {
        for (raw, read) in [
            ("~", ""),
            ("yes", "true"),
            ("Off", "false"),
            ("0x1F", "31"),
            ("010", "8"),
            ("1_000", "1000"),
            ("-0b11", "-3"),
            ("+7", "7"),
            ("10s", "10s"),
            ("0", "0"),
            ("62.5", "62.5"),
            ("y", "y"),
        ] {
            assert_eq!(resolve_plain(raw), read, "{raw}");
        }
        assert_eq!(
            flat("a: '010'\nb: \"yes\"\n")[0].2,
            "010",
            "quoted stays text"
        );
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let text = "base: &b\n  x: 1\n  y: 2\nother: &o\n  z: 3\nc:\n  <<: [*b, *o]\n  y: 9\n";
        let entries = flat(text);
        let c: Vec<(&str, &str)> = entries
            .iter()
            .filter(|(_, k, _)| k.starts_with("c."))
            .map(|(_, k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(c, [("c.y", "9"), ("c.x", "1"), ("c.z", "3")]);
    }

    #[test]
    fn aliases_that_explode_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let doc = Reading::new("t.yml", Vec::new());
        let err = read(&text, &doc).unwrap_err();
        assert!(err.to_string().contains("more than 100000 values"), "{err}");
        let deep = "[".repeat(100);
        assert!(read(&deep, &doc)
            .unwrap_err()
            .to_string()
            .contains("nested more than 64"));
    }

    #[test]
    fn a_key_twice_in_one_mapping_is_an_error() {
        let doc = Reading::new("t.yml", Vec::new());
        let err = read("a:\n  b: 1\n  b: 2\n", &doc).unwrap_err();
        assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
        assert_eq!(err.line(), Some(3));
        assert_eq!(err.key(), Some("b"));
    }
}
