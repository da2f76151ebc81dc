//! A reader of Prometheus's text exposition format (version 0.0.4), as a scrape delivers it:
//! `# HELP` and `# TYPE` lines, other comments, and samples with their labels, value and
//! optional timestamp. Label values are unescaped (`\\`, `\"`, `\n`), as are HELP texts (`\\`,
//! `\n`). A line it cannot read is an error that gives its number and what was wrong, never a
//! sample skipped in silence.

#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::fmt;

/// One sample: its series (metric name and labels) and its value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

impl Sample {
    /// The value of `label`; a label the series does not carry reads as empty, as PromQL's
    /// matchers read it.
    pub(crate) fn label(&self, label: &str) -> &str {
        if label == "__name__" {
            return &self.name;
        }
        self.labels.get(label).map_or("", String::as_str)
    }
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{{", self.name)?;
        for (i, (label, value)) in self.labels.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{label}={value:?}")?;
        }
        write!(f, "}} {}", self.value)
    }
}

/// A metric family's metadata, from its `# HELP` and `# TYPE` lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Family {
    pub(crate) help: Option<String>,
    pub(crate) kind: Option<String>,
}

/// A parsed scrape.
#[derive(Debug, Default)]
pub(crate) struct Scrape {
    pub(crate) families: BTreeMap<String, Family>,
    pub(crate) samples: Vec<Sample>,
}

/// A line of the scrape that is not in the text format.
#[derive(Debug, PartialEq)]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Reads a whole scrape.
pub(crate) fn parse(text: &str) -> Result<Scrape, ParseError> {
    let mut scrape = Scrape::default();
    for (index, line) in text.lines().enumerate() {
        let error = |message: String| ParseError {
            line: index + 1,
            message,
        };
        let line = line.trim_matches(|c| c == ' ' || c == '\t');
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            metadata(comment, &mut scrape.families).map_err(error)?;
            continue;
        }
        scrape.samples.push(sample(line).map_err(error)?);
    }
    Ok(scrape)
}

/// A `# HELP` or `# TYPE` line (given without its `#`) into `families`; any other comment is
/// skipped, as the format says.
fn metadata(comment: &str, families: &mut BTreeMap<String, Family>) -> Result<(), String> {
    let mut cursor = Cursor::new(comment);
    cursor.blanks();
    let keyword = cursor.word();
    if keyword != "HELP" && keyword != "TYPE" {
        return Ok(());
    }
    cursor.blanks();
    let name = cursor.metric_name()?;
    let family = families.entry(name.to_owned()).or_default();
    if keyword == "HELP" {
        if family.help.is_some() {
            return Err(format!("a second HELP line for `{name}`"));
        }
        cursor.blank_once();
        family.help = Some(unescape(cursor.rest(), false)?);
    } else {
        if family.kind.is_some() {
            return Err(format!("a second TYPE line for `{name}`"));
        }
        cursor.blanks();
        let kind = cursor.rest().trim_end();
        if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
            return Err(format!("`{name}` has the unknown type `{kind}`"));
        }
        family.kind = Some(kind.to_owned());
    }
    Ok(())
}

/// A sample line: `name{label="value",...} value [timestamp]`.
fn sample(line: &str) -> Result<Sample, String> {
    let mut cursor = Cursor::new(line);
    let name = cursor.metric_name()?.to_owned();
    let mut labels = BTreeMap::new();
    let mut blank = cursor.blanks();
    if cursor.eat('{') {
        loop {
            cursor.blanks();
            if cursor.eat('}') {
                break;
            }
            let label = cursor.label_name()?.to_owned();
            cursor.blanks();
            if !cursor.eat('=') {
                return Err(format!(
                    "`=` expected after the label `{label}` of `{name}`"
                ));
            }
            cursor.blanks();
            let value = cursor.quoted()?;
            if labels.insert(label.clone(), value).is_some() {
                return Err(format!("`{name}` has the label `{label}` twice"));
            }
            cursor.blanks();
            if cursor.eat(',') {
                continue;
            }
            if !cursor.eat('}') {
                return Err(format!("`,` or `}}` expected in the labels of `{name}`"));
            }
            break;
        }
        blank = cursor.blanks();
    }
    if !blank {
        return Err(format!("a blank expected before the value of `{name}`"));
    }
    let value = number(cursor.word()).ok_or_else(|| format!("`{name}` has no valid value"))?;
    cursor.blanks();
    let timestamp = cursor.word();
    if !timestamp.is_empty() && timestamp.parse::<i64>().is_err() {
        return Err(format!("`{name}` has the bad timestamp `{timestamp}`"));
    }
    cursor.blanks();
    if !cursor.rest().is_empty() {
        return Err(format!("`{name}` has text after its value and timestamp"));
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// A sample's value: a Go float, or `NaN`, `+Inf`, `-Inf`.
fn number(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ if text.is_empty()
            || text.contains(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E') =>
        {
            None
        }
        _ => text.parse().ok(),
    }
}

/// `text` with its escapes replaced: `\\` and `\n`, and `\"` too in a label value
/// (`quotes`). Any other backslash is kept as it is, as Prometheus's parser keeps it.
fn unescape(text: &str, quotes: bool) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('"') if quotes => out.push('"'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => return Err("a lone `\\` at the end".to_owned()),
        }
    }
    Ok(out)
}

/// A position in one line.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(line: &'a str) -> Cursor<'a> {
        Cursor { rest: line }
    }

    /// Skips blanks (spaces and tabs); whether there were any.
    fn blanks(&mut self) -> bool {
        let before = self.rest.len();
        self.rest = self.rest.trim_start_matches([' ', '\t']);
        self.rest.len() < before
    }

    /// Skips one blank, if there is one.
    fn blank_once(&mut self) {
        if let Some(rest) = self.rest.strip_prefix([' ', '\t']) {
            self.rest = rest;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// Everything up to the next blank.
    fn word(&mut self) -> &'a str {
        let end = self.rest.find([' ', '\t']).unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word
    }

    fn rest(&mut self) -> &'a str {
        std::mem::take(&mut self.rest)
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    fn metric_name(&mut self) -> Result<&'a str, String> {
        self.name(true)
            .ok_or_else(|| format!("a metric name expected at `{}`", self.rest))
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`.
    fn label_name(&mut self) -> Result<&'a str, String> {
        self.name(false)
            .ok_or_else(|| format!("a label name expected at `{}`", self.rest))
    }

    fn name(&mut self, colons: bool) -> Option<&'a str> {
        let allowed = |c: char, first: bool| {
            c.is_ascii_alphabetic()
                || c == '_'
                || (colons && c == ':')
                || (!first && c.is_ascii_digit())
        };
        let end = self
            .rest
            .char_indices()
            .find(|&(i, c)| !allowed(c, i == 0))
            .map_or(self.rest.len(), |(i, _)| i);
        if end == 0 {
            return None;
        }
        let (name, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(name)
    }

    /// A double-quoted label value, unescaped.
    fn quoted(&mut self) -> Result<String, String> {
        if !self.eat('"') {
            return Err(format!("a quoted label value expected at `{}`", self.rest));
        }
        let mut escaped = false;
        for (i, c) in self.rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    let (inside, rest) = self.rest.split_at(i);
                    self.rest = &rest[1..];
                    return unescape(inside, true);
                }
                _ => {}
            }
        }
        Err("a label value without its closing `\"`".to_owned())
    }
}

#[test]
fn reads_escapes_special_values_timestamps_and_metadata() {
    let text = concat!(
        "# HELP calls_total Calls \\\\ with a\\nsecond line\n",
        "# TYPE calls_total counter\n",
        "# a comment the format allows\n",
        "\n",
        "calls_total{name=\"a \\\"quoted\\\" \\\\ name\",kind=\"x\\ny\",} 3 1700000000000\n",
        "calls_total 1.5e3\n",
        "ratio{le=\"+Inf\"} +Inf\n",
        "ratio{le=\"0.5\"}\t-Inf\n",
        "ratio NaN\n",
    );
    let scrape = parse(text).unwrap();
    let family = &scrape.families["calls_total"];
    assert_eq!(family.help.as_deref(), Some("Calls \\ with a\nsecond line"));
    assert_eq!(family.kind.as_deref(), Some("counter"));
    let first = &scrape.samples[0];
    assert_eq!(first.label("name"), "a \"quoted\" \\ name");
    assert_eq!(first.label("kind"), "x\ny");
    assert_eq!(first.label("missing"), "");
    assert_eq!(first.value, 3.0);
    assert_eq!(scrape.samples[1].value, 1500.0);
    assert_eq!(scrape.samples[2].value, f64::INFINITY);
    assert_eq!(scrape.samples[2].label("le"), "+Inf");
    assert_eq!(scrape.samples[3].value, f64::NEG_INFINITY);
    assert!(scrape.samples[4].value.is_nan());
    assert_eq!(scrape.samples.len(), 5);
}

#[test]
fn names_the_line_and_what_is_wrong() {
    for (text, line, wanted) in [
        ("ok 1\nbad{name=\"x} 1\n", 2, "closing"),
        ("bad{name=\"x\" 1\n", 1, "`,` or `}`"),
        ("bad{name=x} 1\n", 1, "quoted label value"),
        ("bad{} one\n", 1, "no valid value"),
        ("bad 1 soon\n", 1, "bad timestamp"),
        ("bad 1 2 3\n", 1, "text after"),
        ("# TYPE x gauge\n# TYPE x counter\n", 2, "second TYPE"),
        ("# TYPE x meter\n", 1, "unknown type"),
        ("{name=\"x\"} 1\n", 1, "metric name expected"),
        ("bad{a=\"1\",a=\"2\"} 1\n", 1, "twice"),
    ] {
        let error = parse(text).expect_err(text);
        assert_eq!(error.line, line, "{text:?}: {error}");
        assert!(error.message.contains(wanted), "{text:?}: {error}");
    }
}
