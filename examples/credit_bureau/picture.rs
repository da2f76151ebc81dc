//! The game day as a picture: a self-contained HTML file whose inline SVG draws the run's
//! timeline (no script, no external stylesheet or font, so it opens offline). Top to bottom,
//! on one time axis: the script's phases with the brownout shaded, the breaker's state bands,
//! the applications per second stacked by how they were answered with the fallback's causes as
//! lines over them, the workers busy and those the bureau held against the pool and the
//! bulkhead's limit, and the p50 and p99 latency on a log axis of its own. Hovering a column
//! shows its numbers (SVG `<title>`s, which browsers show as tooltips).
//!
//! Plain string building: every text that goes into the file (the breaker's name, the phase
//! names, the labels, the text report) goes through [`escape`]. The file is well-formed XML
//! as well as HTML, so the game-day test can check it with an XML reader, and each drawn
//! column, state band and the brownout marker carry `data-` attributes with their numbers.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker::State;

use super::loan::FallbackCause;
use super::{Bucket, Histogram, Outcome, Report};

/// The file's name when `--html` is not given.
pub(crate) const DEFAULT_FILE: &str = "credit_bureau_report.html";

// The drawing's size and layout, in SVG user units (pixels at 100 % zoom).
const WIDTH: f64 = 1360.0;
const HEIGHT: f64 = 972.0;
/// The plot's left and right edges; the legend is to the right of it.
const LEFT: f64 = 100.0;
const RIGHT: f64 = 1060.0;
const LEGEND_X: f64 = 1088.0;
/// The script's phases.
const PHASES_TOP: f64 = 72.0;
/// The breaker's state bands.
const BANDS_TOP: f64 = 112.0;
const BANDS_BOTTOM: f64 = 144.0;
/// The rows of labels under the bands (when the breaker opened and closed), and their height.
const ANNOTATION_ROWS: usize = 2;
const ANNOTATION_ROW_HEIGHT: f64 = 13.0;
/// Applications per second.
const RATE_TOP: f64 = 182.0;
const RATE_BOTTOM: f64 = 472.0;
/// Workers busy and held by the bureau.
const WORKERS_TOP: f64 = 504.0;
const WORKERS_BOTTOM: f64 = 624.0;
/// Latency.
const LATENCY_TOP: f64 = 660.0;
const LATENCY_BOTTOM: f64 = 860.0;

pub(crate) const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

/// A drawn column should hold about this many applications at least, so that its rate is not
/// mostly rounding: with the compressed run's 2.2 applications per 10 ms bucket, columns are 5
/// buckets wide; in real time (220 per bucket) every bucket is a column.
const APPLICATIONS_PER_COLUMN: f64 = 10.0;

/// Escapes `text` for XML (text and attribute values alike). Characters that XML 1.0 does not
/// allow at all, even escaped (most control characters), become U+FFFD.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Writes the picture of `report` to `path` as a self-contained HTML file.
pub(crate) fn write_html(report: &Report, path: &Path) -> io::Result<()> {
    std::fs::write(path, html(report))
}

/// The whole HTML file: the picture, then the text report.
pub(crate) fn html(report: &Report) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let title = format!(
        "Credit bureau game day: {} ({}, {})",
        report.breaker_name,
        mode(report),
        utc(report.started)
    );
    // XHTML-compatible on purpose (self-closed empty elements, no HTML-only entities).
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n\
         <meta charset=\"utf-8\"/>\n<title>{}</title>\n<style>\n\
         body {{ margin: 8px; background: #ffffff; color: #212121; font-family: {FONT}; }}\n\
         pre {{ font-size: 13px; line-height: 1.35; margin: 12px 0 0 {LEFT}px; }}\n\
         h2 {{ font-size: 16px; margin: 18px 0 0 {LEFT}px; }}\n\
         </style>\n</head>\n<body>\n",
        escape(&title)
    );
    out.push_str(&svg(report));
    let _ = write!(
        out,
        "\n<h2>Text report</h2>\n<pre>{}</pre>\n</body>\n</html>\n",
        escape(&report.to_string())
    );
    out
}

/// One drawn column: `per` buckets of the timeline, added up.
struct Column {
    from: Duration,
    to: Duration,
    counts: Bucket,
}

/// The lines over the stacked answers (the fallback's causes, the applications that found no
/// free worker, the requests the bureau received, and the rows queued and the cache hits as
/// the queue and the cache counted them): the text report's names, the column's count, colour
/// and dash pattern, and a data-attribute key.
type Cause = (
    &'static str,
    fn(&Column) -> u64,
    &'static str,
    &'static str,
    &'static str,
);

/// The count of one [`FallbackCause`] in a column.
fn fallbacks(c: &Column, cause: FallbackCause) -> u64 {
    u64::from(c.counts.fallbacks[cause as usize])
}

const CAUSES: [Cause; 8] = [
    (
        "refused by OPEN/HALF_OPEN",
        |c| fallbacks(c, FallbackCause::Refused),
        "#b71c1c",
        "none",
        "refused",
    ),
    (
        "bulkhead full",
        |c| fallbacks(c, FallbackCause::BulkheadFull),
        "#1a237e",
        "none",
        "bulkhead-full",
    ),
    (
        "timed out",
        |c| fallbacks(c, FallbackCause::TimedOut),
        "#ef6c00",
        "none",
        "timed-out",
    ),
    (
        "5xx/socket error",
        |c| fallbacks(c, FallbackCause::Failed),
        "#5d4037",
        "7 3",
        "failed",
    ),
    (
        "no free worker",
        |c| u64::from(c.counts.no_worker),
        "#000000",
        "2 2",
        "no-worker",
    ),
    // Not a fallback: the bureau's own count of the requests it received (every retry is
    // one), to read against the applications sent (the stack's height).
    (
        "requests the bureau received",
        |c| u64::from(c.counts.bureau_hits),
        "#00897b",
        "1 3",
        "bureau-hits",
    ),
    // Not fallbacks either: the fallback's parts' own counts, read back from them after the
    // run (PostgreSQL's rows by `queued_at`, Redis's hit counters), to read against the queued
    // and the cached answers in the stack.
    (
        "rows queued (from queue)",
        |c| u64::from(c.counts.queue_rows),
        "#6a1b9a",
        "5 2 1 2",
        "queue-rows",
    ),
    (
        "cache hits (from cache)",
        |c| u64::from(c.counts.cache_hits),
        "#2e7d32",
        "5 2 1 2",
        "cache-hits",
    ),
];

const BUSY_COLOUR: &str = "#455a64";
const HELD_COLOUR: &str = "#d81b60";
const POOL_COLOUR: &str = "#212121";
const BULKHEAD_COLOUR: &str = "#1a237e";

fn outcome_colour(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::BureauAnswer => "#1e88e5",
        Outcome::Cached => "#4db6ac",
        Outcome::Queued => "#9575cd",
        Outcome::ClientError => "#bdbdbd",
        Outcome::Unavailable => "#3e2723",
        Outcome::Crashed => "#f50057",
    }
}

/// A hatch pattern for a span of the drawing (the brownout, the outage): diagonal strokes in
/// `colour` over a tint of it.
pub(crate) struct Hatch<'a> {
    /// The pattern's id, for `fill="url(#id)"`.
    pub(crate) id: &'a str,
    pub(crate) colour: &'a str,
    /// The tint's and the strokes' opacities, as SVG writes them.
    pub(crate) fill_opacity: &'a str,
    pub(crate) stroke_opacity: &'a str,
}

/// Opens a drawing [`WIDTH`] wide and `height` high, labelled by the element `title_id`, with
/// `hatch` defined and a white background: what both pictures (the game day's, the fleet's)
/// start with.
pub(crate) fn open_svg(out: &mut String, height: f64, title_id: &str, hatch: &Hatch<'_>) {
    let Hatch {
        id,
        colour,
        fill_opacity,
        stroke_opacity,
    } = hatch;
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"{FONT}\" font-size=\"12\" \
         role=\"img\" aria-labelledby=\"{title_id}\">"
    );
    let _ = writeln!(
        out,
        "<defs><pattern id=\"{id}\" width=\"8\" height=\"8\" \
         patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
         <rect width=\"8\" height=\"8\" fill=\"{colour}\" fill-opacity=\"{fill_opacity}\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"{colour}\" \
         stroke-opacity=\"{stroke_opacity}\" stroke-width=\"3\"/></pattern></defs>"
    );
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height:.0}\" fill=\"#ffffff\"/>"
    );
}

/// The band's fill and its label's colour.
pub(crate) fn state_colours(state: State) -> (&'static str, &'static str) {
    match state {
        State::Closed => ("#43a047", "#ffffff"),
        State::Open => ("#e53935", "#ffffff"),
        State::HalfOpen => ("#fbc02d", "#212121"),
        _ => ("#9e9e9e", "#212121"),
    }
}

const STATES: [State; 3] = [State::Closed, State::Open, State::HalfOpen];

const P50_COLOUR: &str = "#1565c0";
const P99_COLOUR: &str = "#c2185b";
const BROWNOUT_COLOUR: &str = "#37474f";

/// How the time axis counts: milliseconds for a compressed run, seconds in real time.
#[derive(Clone, Copy)]
struct TimeUnit {
    per_second: f64,
    name: &'static str,
}

impl TimeUnit {
    fn of(domain: Duration) -> TimeUnit {
        if domain < Duration::from_secs(20) {
            TimeUnit {
                per_second: 1000.0,
                name: "ms",
            }
        } else {
            TimeUnit {
                per_second: 1.0,
                name: "s",
            }
        }
    }

    /// `d` in this unit, to one decimal, with the unit.
    fn show(self, d: Duration) -> String {
        format!("{:.1} {}", d.as_secs_f64() * self.per_second, self.name)
    }
}

/// The picture's scales.
struct Frame {
    domain: Duration,
    unit: TimeUnit,
}

impl Frame {
    fn x(&self, t: Duration) -> f64 {
        let share = t.as_secs_f64() / self.domain.as_secs_f64();
        LEFT + share.clamp(0.0, 1.0) * (RIGHT - LEFT)
    }
}

/// The SVG element.
fn svg(report: &Report) -> String {
    let timeline = &report.timeline;
    let width = timeline.width();
    let buckets = timeline.buckets();
    let script: Duration = report.phases.iter().map(|(_, length)| *length).sum();
    // The buckets to draw: the whole run, and any bucket with something in it.
    let last_used = buckets
        .iter()
        .rposition(|b| b.sent > 0 || b.fallbacks.iter().any(|&n| n > 0))
        .map_or(0, |i| i + 1);
    let span = script.max(report.ended);
    let needed = (span.as_secs_f64() / width.as_secs_f64()).ceil() as usize;
    let count = needed.max(last_used).max(1);
    let per_bucket = f64::from(report.rate) * width.as_secs_f64();
    let per = (APPLICATIONS_PER_COLUMN / per_bucket).ceil().max(1.0) as usize;
    let columns = columns(report, count, per);
    let frame = Frame {
        domain: width * (columns.len() * per) as u32,
        unit: TimeUnit::of(width * (columns.len() * per) as u32),
    };

    let mut out = String::with_capacity(256 * 1024);
    // The brownout's hatching.
    let hatch = Hatch {
        id: "brownout-hatch",
        colour: BROWNOUT_COLOUR,
        fill_opacity: "0.06",
        stroke_opacity: "0.22",
    };
    open_svg(&mut out, HEIGHT, "picture-title", &hatch);
    title(&mut out, report, &frame, per);
    phases(&mut out, report, &frame);
    let in_state = bands(&mut out, report, &frame);
    rates(&mut out, &columns, &frame);
    workers(&mut out, report, &columns, &frame);
    latencies(&mut out, report, &columns, &frame);
    time_axis(&mut out, &frame);
    legend(&mut out, report, &columns, &in_state);
    out.push_str("</svg>");
    out
}

/// Adds up the timeline's buckets `per` at a time, over the first `count` buckets.
fn columns(report: &Report, count: usize, per: usize) -> Vec<Column> {
    let width = report.timeline.width();
    let buckets = report.timeline.buckets();
    (0..count.div_ceil(per))
        .map(|c| {
            let mut counts = Bucket::new();
            for bucket in buckets.iter().skip(c * per).take(per) {
                counts.add(bucket);
            }
            Column {
                from: width * (c * per) as u32,
                to: width * ((c + 1) * per) as u32,
                counts,
            }
        })
        .collect()
}

/// "real time" or "compressed (every duration x 0.01)".
fn mode(report: &Report) -> String {
    if report.scale == 1.0 {
        "real-time run".to_owned()
    } else {
        format!("compressed run, every duration x {}", report.scale)
    }
}

/// The title, the run's parameters and how to read the columns.
fn title(out: &mut String, report: &Report, frame: &Frame, per: usize) {
    let heading = match &report.bulkhead {
        Some(bulkhead) => format!(
            "Credit bureau game day: breaker {} and bulkhead {} through a brownout",
            report.breaker_name, bulkhead.name
        ),
        None => format!(
            "Credit bureau game day: breaker {} through a brownout, no bulkhead",
            report.breaker_name
        ),
    };
    let _ = writeln!(
        out,
        "<text id=\"picture-title\" x=\"{LEFT}\" y=\"30\" font-size=\"20\" font-weight=\"bold\">{}</text>",
        escape(&heading)
    );
    let lost = report.lost();
    let bulkhead = report.bulkhead.as_ref().map_or_else(
        || "no bulkhead".to_owned(),
        |b| format!("bulkhead of {}", b.max_concurrent_calls),
    );
    let parameters = format!(
        "{} \u{b7} started {} \u{b7} {} applications/s \u{b7} {} workers \u{b7} {bulkhead} \u{b7} {} applications, {} lost \u{b7} final state {}",
        mode(report),
        utc(report.started),
        report.rate,
        report.workers,
        thousands(report.requests),
        thousands(lost),
        report.final_state
    );
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"52\" font-size=\"14\">{}</text>",
        escape(&parameters)
    );
    let width = report.timeline.width() * per as u32;
    let script_seconds =
        (per as f64 * report.timeline.width().as_secs_f64() / report.scale).round();
    let column = if report.scale == 1.0 {
        format!("Each column is {} of the run", frame.unit.show(width))
    } else {
        format!(
            "Each column is {} of the run ({script_seconds:.0} s of the real-time script)",
            frame.unit.show(width)
        )
    };
    let retried = report.retry.as_ref().map_or_else(String::new, |r| {
        let budget = match r.budget {
            Some(_) => format!("; {} refused by the budget", thousands(r.refused_by_budget)),
            None => ", no budget".to_owned(),
        };
        format!(
            " Retry {} (--retry {}): {} retries made{budget}.",
            r.name,
            r.mode.key(),
            thousands(r.retries)
        )
    });
    let notes = [
        format!("{column}; rates are per second of the run's clock.{retried}"),
        "Answers are counted in the column the application arrived in; the fallback's causes in \
         the column the fallback started in; the bureau's requests as it received them; workers \
         as each application arrived."
            .to_owned(),
        "Latency: from the loan service receiving an application to its answer (bureau, cache, \
         queue or 4xx). Hover a column for its numbers."
            .to_owned(),
    ];
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"{LEFT}\" y=\"{}\" font-size=\"12\" fill=\"#616161\">{}</text>",
            LATENCY_BOTTOM + 66.0 + 16.0 * i as f64,
            escape(note)
        );
    }
}

/// The script's phases along the top, each start a dashed line down the plot, and the
/// brownout hatched over the whole height.
fn phases(out: &mut String, report: &Report, frame: &Frame) {
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#424242\">bureau script</text>",
        LEFT - 8.0,
        PHASES_TOP + 21.0
    );
    let mut start = Duration::ZERO;
    for (name, length) in &report.phases {
        let end = start + *length;
        let (x0, x1) = (frame.x(start), frame.x(end));
        if start > Duration::ZERO {
            let _ = writeln!(
                out,
                "<line class=\"phase-start\" x1=\"{x0:.1}\" y1=\"{PHASES_TOP}\" x2=\"{x0:.1}\" \
                 y2=\"{LATENCY_BOTTOM}\" stroke=\"#9e9e9e\" stroke-dasharray=\"4 3\"/>"
            );
        }
        let brownout = start == report.brownout_start && end == report.brownout_end;
        if brownout {
            let _ = writeln!(
                out,
                "<g class=\"brownout\" data-from-ms=\"{:.1}\" data-to-ms=\"{:.1}\">\
                 <rect x=\"{x0:.1}\" y=\"{PHASES_TOP}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"url(#brownout-hatch)\" stroke=\"{BROWNOUT_COLOUR}\" stroke-opacity=\"0.5\"/>\
                 <title>{}</title></g>",
                ms(start),
                ms(end),
                x1 - x0,
                LATENCY_BOTTOM - PHASES_TOP,
                escape(&format!(
                    "brownout: {name}, {} to {}",
                    frame.unit.show(start),
                    frame.unit.show(end)
                ))
            );
        }
        let (weight, colour) = if brownout {
            ("bold", BROWNOUT_COLOUR)
        } else {
            ("normal", "#424242")
        };
        let lines = wrap(name, x1 - x0 - 6.0, 12.0);
        let first_y = if lines.len() == 1 {
            PHASES_TOP + 21.0
        } else {
            PHASES_TOP + 14.0
        };
        let _ = write!(
            out,
            "<text class=\"phase\" x=\"{:.1}\" y=\"{first_y}\" text-anchor=\"middle\" \
             font-weight=\"{weight}\" fill=\"{colour}\">",
            (x0 + x1) / 2.0
        );
        for (i, line) in lines.iter().enumerate() {
            let _ = write!(
                out,
                "<tspan x=\"{:.1}\" dy=\"{}\">{}</tspan>",
                (x0 + x1) / 2.0,
                if i == 0 { 0.0 } else { 14.0 },
                escape(line)
            );
        }
        out.push_str("</text>\n");
        start = end;
    }
}

/// The breaker's state bands, from the event stream's transitions; returns the time spent in
/// each of [`STATES`].
fn bands(out: &mut String, report: &Report, frame: &Frame) -> [Duration; 3] {
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#424242\">breaker state</text>",
        LEFT - 8.0,
        (BANDS_TOP + BANDS_BOTTOM) / 2.0 + 4.0
    );
    let mut spans = Vec::with_capacity(report.transitions.len() + 1);
    let mut state = report.initial_state;
    let mut since = Duration::ZERO;
    for t in &report.transitions {
        spans.push((state, since, t.at));
        (state, since) = (t.to, t.at);
    }
    spans.push((state, since, report.ended.max(since)));
    let mut in_state = [Duration::ZERO; 3];
    out.push_str("<g class=\"state-bands\">\n");
    for &(state, from, to) in &spans {
        if let Some(i) = STATES.iter().position(|&s| s == state) {
            in_state[i] += to - from;
        }
        let (fill, ink) = state_colours(state);
        let (x0, x1) = (frame.x(from), frame.x(to));
        // A band of a few milliseconds (a HALF_OPEN that failed its trials at once) is drawn
        // 2 px wide so that it can be seen; its data attributes keep its real times.
        let drawn = (x1 - x0).max(2.0);
        let name = state.to_string();
        let _ = writeln!(
            out,
            "<rect class=\"state-band\" data-state=\"{}\" data-from-ms=\"{:.1}\" \
             data-to-ms=\"{:.1}\" x=\"{x0:.1}\" y=\"{BANDS_TOP}\" width=\"{drawn:.1}\" \
             height=\"{}\" fill=\"{fill}\"><title>{}</title></rect>",
            escape(&name),
            ms(from),
            ms(to),
            BANDS_BOTTOM - BANDS_TOP,
            escape(&format!(
                "{name} from {} to {} ({})",
                frame.unit.show(from),
                frame.unit.show(to),
                frame.unit.show(to - from)
            ))
        );
        if text_width(&name, 12.0) + 8.0 <= x1 - x0 {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\" \
                 fill=\"{ink}\">{}</text>",
                (x0 + x1) / 2.0,
                (BANDS_TOP + BANDS_BOTTOM) / 2.0 + 4.0,
                escape(&name)
            );
        }
    }
    out.push_str("</g>\n");
    // The two moments an operator looks for: when the breaker opened from CLOSED (and how long
    // into the brownout, if it was in it), and when its trials closed it again. Each label goes
    // right of its line (left, if it would run past the plot), on the first of the rows under
    // the bands where it overlaps no earlier label; the last row takes it otherwise.
    let mut rows: [Vec<(f64, f64)>; ANNOTATION_ROWS] = Default::default();
    for t in &report.transitions {
        let in_brownout = (report.brownout_start..report.brownout_end).contains(&t.at);
        let text = match (t.from, t.to) {
            (State::Closed, State::Open) if in_brownout => format!(
                "{} \u{2192} {} at {}, {} into the brownout",
                t.from,
                t.to,
                frame.unit.show(t.at),
                frame.unit.show(t.at - report.brownout_start)
            ),
            (State::Closed, State::Open) | (State::HalfOpen, State::Closed) => {
                format!("{} \u{2192} {} at {}", t.from, t.to, frame.unit.show(t.at))
            }
            _ => continue,
        };
        let x = frame.x(t.at);
        let width = text_width(&text, 11.0);
        let (anchor, text_x, span) = if x + 3.0 + width > RIGHT {
            ("end", x - 3.0, (x - 3.0 - width, x))
        } else {
            ("start", x + 3.0, (x, x + 3.0 + width))
        };
        let row = rows
            .iter()
            .position(|taken| taken.iter().all(|&(a, b)| span.1 < a || b < span.0))
            .unwrap_or(ANNOTATION_ROWS - 1);
        rows[row].push(span);
        let baseline = BANDS_BOTTOM + 13.0 + ANNOTATION_ROW_HEIGHT * row as f64;
        let _ = writeln!(
            out,
            "<line class=\"annotation\" x1=\"{x:.1}\" y1=\"{BANDS_BOTTOM}\" x2=\"{x:.1}\" \
             y2=\"{:.1}\" stroke=\"#212121\"/><text x=\"{text_x:.1}\" y=\"{baseline:.1}\" \
             text-anchor=\"{anchor}\" font-size=\"11\" fill=\"#212121\">{}</text>",
            baseline + 1.0,
            escape(&text)
        );
    }
    in_state
}

/// Applications per second: the answers stacked, one group per column with its numbers, and
/// the fallback's causes as lines over them.
fn rates(out: &mut String, columns: &[Column], frame: &Frame) {
    let seconds = |c: &Column| (c.to - c.from).as_secs_f64();
    let mut top: f64 = 1.0;
    for c in columns {
        let answered: u64 = c.counts.answers.iter().map(|&n| u64::from(n)).sum();
        let most = CAUSES.iter().map(|cause| (cause.1)(c)).max().unwrap_or(0);
        top = top.max(answered.max(u64::from(c.counts.sent)).max(most) as f64 / seconds(c));
    }
    let step = nice_step(top / 5.0);
    let top = (top / step).ceil() * step;
    let y = |rate: f64| RATE_BOTTOM - rate / top * (RATE_BOTTOM - RATE_TOP);

    // Grid and axis.
    grid(out, top, step, y);
    axis_title(
        out,
        (RATE_TOP + RATE_BOTTOM) / 2.0,
        "applications per second (answers stacked)",
    );

    out.push_str("<g class=\"columns\" shape-rendering=\"crispEdges\">\n");
    for c in columns {
        let (x0, x1) = (frame.x(c.from), frame.x(c.to));
        let _ = write!(
            out,
            "<g class=\"column\" data-from-ms=\"{:.1}\" data-to-ms=\"{:.1}\" data-sent=\"{}\"",
            ms(c.from),
            ms(c.to),
            c.counts.sent
        );
        for (outcome, n) in Outcome::ALL.iter().zip(c.counts.answers) {
            let _ = write!(out, " data-{}=\"{n}\"", outcome.key());
        }
        for cause in &CAUSES {
            let _ = write!(out, " data-{}=\"{}\"", cause.4, (cause.1)(c));
        }
        let _ = write!(
            out,
            " data-most-busy=\"{}\" data-most-held=\"{}\">",
            c.counts.most_busy, c.counts.most_held
        );
        let _ = write!(out, "<title>{}</title>", escape(&tooltip(c, frame.unit)));
        // An invisible rect the height of the three panels, so the tooltip shows anywhere in
        // the column.
        let _ = write!(
            out,
            "<rect x=\"{x0:.2}\" y=\"{RATE_TOP}\" width=\"{:.2}\" height=\"{}\" fill=\"#000000\" \
             fill-opacity=\"0\"/>",
            x1 - x0,
            LATENCY_BOTTOM - RATE_TOP
        );
        let mut stacked = 0.0;
        for (outcome, n) in Outcome::ALL.iter().zip(c.counts.answers) {
            if n == 0 {
                continue;
            }
            let rate = n as f64 / seconds(c);
            let _ = write!(
                out,
                "<rect x=\"{x0:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{}\"/>",
                y(stacked + rate),
                x1 - x0,
                y(stacked) - y(stacked + rate),
                outcome_colour(*outcome)
            );
            stacked += rate;
        }
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n");

    // The causes, each over a white halo so that it reads over the stacked colours.
    for cause in &CAUSES {
        let points: Vec<String> = columns
            .iter()
            .map(|c| {
                let x = (frame.x(c.from) + frame.x(c.to)) / 2.0;
                format!("{x:.1},{:.1}", y((cause.1)(c) as f64 / seconds(c)))
            })
            .collect();
        let points = points.join(" ");
        let _ = writeln!(
            out,
            "<polyline class=\"cause\" data-cause=\"{}\" points=\"{points}\" fill=\"none\" \
             stroke=\"#ffffff\" stroke-opacity=\"0.8\" stroke-width=\"4\" stroke-linejoin=\"round\"/>\
             <polyline points=\"{points}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" \
             stroke-dasharray=\"{}\" stroke-linejoin=\"round\"/>",
            cause.4, cause.2, cause.3
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{RATE_BOTTOM}\" x2=\"{RIGHT}\" y2=\"{RATE_BOTTOM}\" stroke=\"#424242\"/>\
         <line x1=\"{LEFT}\" y1=\"{RATE_TOP}\" x2=\"{LEFT}\" y2=\"{RATE_BOTTOM}\" stroke=\"#424242\"/>"
    );
}

/// The workers: per column, the most busy at once and the most held by requests to the bureau,
/// on a scale up to the pool, with the pool's size and the bulkhead's limit marked.
fn workers(out: &mut String, report: &Report, columns: &[Column], frame: &Frame) {
    let most = columns
        .iter()
        .map(|c| c.counts.most_busy.max(c.counts.most_held))
        .max()
        .unwrap_or(0);
    let top = (report.workers as f64).max(f64::from(most)).max(1.0);
    let step = nice_step(top / 4.0);
    let top = (top / step).ceil() * step;
    let y = |workers: f64| WORKERS_BOTTOM - workers / top * (WORKERS_BOTTOM - WORKERS_TOP);
    grid(out, top, step, y);
    axis_title(out, (WORKERS_TOP + WORKERS_BOTTOM) / 2.0, "workers");
    // The pool and the bulkhead's limit, each labelled above its line.
    let mut limits = vec![("worker pool", report.workers as f64, POOL_COLOUR)];
    if let Some(bulkhead) = &report.bulkhead {
        limits.push((
            "bulkhead max-concurrent-calls",
            f64::from(bulkhead.max_concurrent_calls),
            BULKHEAD_COLOUR,
        ));
    }
    for (label, limit, colour) in limits {
        let text = format!("{label} {}", thousands(limit as u64));
        limit_line(out, y(limit), colour, &text, true);
    }
    for (key, colour, most) in [
        (
            "busy",
            BUSY_COLOUR,
            (|c: &Column| c.counts.most_busy) as fn(&Column) -> u32,
        ),
        ("held", HELD_COLOUR, |c: &Column| c.counts.most_held),
    ] {
        let points: Vec<String> = columns
            .iter()
            .map(|c| {
                let x = (frame.x(c.from) + frame.x(c.to)) / 2.0;
                format!("{x:.1},{:.1}", y(f64::from(most(c))))
            })
            .collect();
        let _ = writeln!(
            out,
            "<polyline class=\"workers\" data-workers=\"{key}\" points=\"{}\" fill=\"none\" \
             stroke=\"{colour}\" stroke-width=\"2\" stroke-linejoin=\"round\"/>",
            points.join(" ")
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{WORKERS_BOTTOM}\" x2=\"{RIGHT}\" y2=\"{WORKERS_BOTTOM}\" stroke=\"#424242\"/>\
         <line x1=\"{LEFT}\" y1=\"{WORKERS_TOP}\" x2=\"{LEFT}\" y2=\"{WORKERS_BOTTOM}\" stroke=\"#424242\"/>"
    );
}

/// p50 and p99 of the time from receiving an application to answering it, per column, on a
/// log axis, with the configuration's timeout and slow-call threshold marked.
fn latencies(out: &mut String, report: &Report, columns: &[Column], frame: &Frame) {
    let to_ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |c: &Column, q: f64| c.counts.latency.percentile(q).map(to_ms);
    let low = columns
        .iter()
        .filter_map(|c| p(c, 50.0))
        .fold(f64::INFINITY, f64::min);
    let high = columns
        .iter()
        .filter_map(|c| p(c, 99.0))
        .fold(to_ms(report.timeout), f64::max);
    let (mut first, mut last) = if low.is_finite() && low > 0.0 {
        (low.log10().floor(), high.log10().ceil())
    } else {
        (-2.0, high.log10().ceil())
    };
    first = first.max(-3.0);
    if last <= first {
        last = first + 1.0;
    }
    let y = |latency_ms: f64| {
        let share = (latency_ms.max(1e-9).log10() - first) / (last - first);
        LATENCY_BOTTOM - share.clamp(0.0, 1.0) * (LATENCY_BOTTOM - LATENCY_TOP)
    };
    let mut decade = first;
    while decade <= last {
        let value = 10f64.powf(decade);
        let label = if decade < 0.0 {
            format!("{value}")
        } else {
            thousands(value.round() as u64)
        };
        grid_line(out, y(value), &label);
        decade += 1.0;
    }
    axis_title(
        out,
        (LATENCY_TOP + LATENCY_BOTTOM) / 2.0,
        "latency (ms, log scale)",
    );
    // The configuration's two limits: the timeout above the threshold, each labelled on its
    // own side of its line so that the two labels never overlap.
    for (label, limit, colour, above) in [
        ("timeout-duration", report.timeout, "#ef6c00", true),
        (
            "slow-call-duration-threshold",
            report.slow_threshold,
            "#8d6e63",
            false,
        ),
    ] {
        let text = format!("{label} {}", latency(limit));
        limit_line(out, y(to_ms(limit)), colour, &text, above);
    }
    for (q, colour, key) in [(50.0, P50_COLOUR, "p50"), (99.0, P99_COLOUR, "p99")] {
        // A column without applications has no latency: the line breaks there.
        let mut path = String::new();
        let mut pen_down = false;
        for c in columns {
            match p(c, q) {
                Some(value) => {
                    let x = (frame.x(c.from) + frame.x(c.to)) / 2.0;
                    let _ = write!(
                        path,
                        "{}{x:.1},{:.1} ",
                        if pen_down { "L" } else { "M" },
                        y(value)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        if !path.is_empty() {
            let _ = writeln!(
                out,
                "<path class=\"latency\" data-percentile=\"{key}\" d=\"{}\" fill=\"none\" \
                 stroke=\"{colour}\" stroke-width=\"2\" stroke-linejoin=\"round\"/>",
                path.trim_end()
            );
        }
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{LATENCY_BOTTOM}\" x2=\"{RIGHT}\" y2=\"{LATENCY_BOTTOM}\" stroke=\"#424242\"/>\
         <line x1=\"{LEFT}\" y1=\"{LATENCY_TOP}\" x2=\"{LEFT}\" y2=\"{LATENCY_BOTTOM}\" stroke=\"#424242\"/>"
    );
}

/// The time axis under the latency panel.
fn time_axis(out: &mut String, frame: &Frame) {
    let domain = frame.domain.as_secs_f64() * frame.unit.per_second;
    let step = nice_step(domain / 12.0);
    let mut tick = 0.0;
    while tick <= domain + step / 1000.0 {
        let x = frame.x(Duration::from_secs_f64(tick / frame.unit.per_second));
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{LATENCY_BOTTOM}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#424242\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            LATENCY_BOTTOM + 5.0,
            LATENCY_BOTTOM + 19.0,
            escape(&thousands(tick.round() as u64))
        );
        tick += step;
    }
    let label = format!("time since the run started ({})", frame.unit.name);
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
        (LEFT + RIGHT) / 2.0,
        LATENCY_BOTTOM + 42.0,
        escape(&label)
    );
}

/// The legend, right of the plot: what every colour and line is, with the run's totals.
fn legend(out: &mut String, report: &Report, columns: &[Column], in_state: &[Duration; 3]) {
    let unit = TimeUnit::of(report.ended);
    let mut y = PHASES_TOP + 2.0;
    let header = |out: &mut String, y: &mut f64, text: &str| {
        let _ = writeln!(
            out,
            "<text x=\"{LEGEND_X}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>",
            *y,
            escape(text)
        );
        *y += 18.0;
    };
    let entry = |out: &mut String, y: &mut f64, swatch: &str, label: &str, value: &str| {
        let _ = writeln!(
            out,
            "{swatch}<text x=\"{}\" y=\"{:.1}\">{}</text>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEGEND_X + 24.0,
            *y,
            escape(label),
            WIDTH - 10.0,
            *y,
            escape(value)
        );
        *y += 17.0;
    };
    let square = |y: f64, fill: &str| {
        format!(
            "<rect x=\"{LEGEND_X}\" y=\"{:.1}\" width=\"16\" height=\"12\" fill=\"{fill}\"/>",
            y - 10.0
        )
    };
    let stroke = |y: f64, colour: &str, dash: &str| {
        format!(
            "<line x1=\"{LEGEND_X}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"{colour}\" \
             stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
            y - 4.0,
            LEGEND_X + 16.0
        )
    };

    header(out, &mut y, "breaker state (time in it)");
    for (state, time) in STATES.iter().zip(in_state) {
        let swatch = square(y, state_colours(*state).0);
        entry(out, &mut y, &swatch, &state.to_string(), &unit.show(*time));
    }
    let swatch = format!(
        "<rect x=\"{LEGEND_X}\" y=\"{:.1}\" width=\"16\" height=\"12\" fill=\"url(#brownout-hatch)\" \
         stroke=\"{BROWNOUT_COLOUR}\" stroke-opacity=\"0.5\"/>",
        y - 10.0
    );
    entry(
        out,
        &mut y,
        &swatch,
        "brownout (script)",
        &unit.show(report.brownout_end - report.brownout_start),
    );

    y = RATE_TOP + 18.0;
    header(out, &mut y, "answers (stacked; total)");
    for (i, outcome) in Outcome::ALL.iter().enumerate().rev() {
        let total: u64 = columns.iter().map(|c| u64::from(c.counts.answers[i])).sum();
        let swatch = square(y, outcome_colour(*outcome));
        entry(out, &mut y, &swatch, outcome.label(), &thousands(total));
    }
    y += 8.0;
    header(out, &mut y, "lines (total)");
    for cause in &CAUSES {
        let total: u64 = columns.iter().map(cause.1).sum();
        let swatch = stroke(y, cause.2, cause.3);
        entry(out, &mut y, &swatch, cause.0, &thousands(total));
    }

    y = WORKERS_TOP + 4.0;
    header(out, &mut y, "workers (most at once)");
    let limit = report.bulkhead.as_ref().map_or_else(
        || "none".to_owned(),
        |b| thousands(u64::from(b.max_concurrent_calls)),
    );
    for (colour, dash, label, value) in [
        (
            BUSY_COLOUR,
            "none",
            "busy",
            thousands(report.max_busy_workers as u64),
        ),
        (
            HELD_COLOUR,
            "none",
            "held by the bureau",
            thousands(report.max_bureau_held as u64),
        ),
        (
            POOL_COLOUR,
            "6 4",
            "worker pool",
            thousands(report.workers as u64),
        ),
        (BULKHEAD_COLOUR, "6 4", "bulkhead limit", limit),
    ] {
        let swatch = stroke(y, colour, dash);
        entry(out, &mut y, &swatch, label, &value);
    }

    y = LATENCY_TOP + 4.0;
    header(out, &mut y, "latency, received to answered");
    let mut all = Histogram::new();
    for c in columns {
        all.merge(&c.counts.latency);
    }
    for (q, colour, label) in [(50.0, P50_COLOUR, "p50"), (99.0, P99_COLOUR, "p99")] {
        let swatch = stroke(y, colour, "none");
        let whole = all
            .percentile(q)
            .map_or_else(|| "n/a".to_owned(), |d| format!("run: {}", latency(d)));
        entry(out, &mut y, &swatch, label, &whole);
    }
    let swatch = stroke(y, "#ef6c00", "6 4");
    entry(
        out,
        &mut y,
        &swatch,
        "timeout-duration",
        &latency(report.timeout),
    );
    let swatch = stroke(y, "#8d6e63", "6 4");
    entry(
        out,
        &mut y,
        &swatch,
        "slow-call threshold",
        &latency(report.slow_threshold),
    );
}

/// Grey lines across the plot every `step` from 0 to `top`, each labelled with its count on
/// the left; `y` places a count.
fn grid(out: &mut String, top: f64, step: f64, y: impl Fn(f64) -> f64) {
    let mut tick = 0.0;
    while tick <= top + step / 2.0 {
        grid_line(out, y(tick), &thousands(tick as u64));
        tick += step;
    }
}

/// One grey line across the plot at height `y`, labelled `label` on the left.
fn grid_line(out: &mut String, y: f64, label: &str) {
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\" stroke=\"#e0e0e0\"/>\
         <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        LEFT - 6.0,
        y + 4.0,
        escape(label)
    );
}

/// A dashed line across the plot at height `y`, labelled with `text` at its right end, above
/// the line or below it.
fn limit_line(out: &mut String, y: f64, colour: &str, text: &str, above: bool) {
    let _ = writeln!(
        out,
        "<line class=\"limit\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\" \
         stroke=\"{colour}\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" fill=\"{colour}\">{}</text>",
        RIGHT - 4.0,
        if above { y - 4.0 } else { y + 12.0 },
        escape(text)
    );
}

/// A rotated axis title left of a panel, centred on `middle`.
fn axis_title(out: &mut String, middle: f64, text: &str) {
    let x = LEFT - 62.0;
    let _ = writeln!(
        out,
        "<text x=\"{x}\" y=\"{middle:.1}\" text-anchor=\"middle\" font-size=\"13\" \
         transform=\"rotate(-90 {x} {middle:.1})\">{}</text>",
        escape(text)
    );
}

/// What a column's tooltip says.
fn tooltip(c: &Column, unit: TimeUnit) -> String {
    let mut text = format!(
        "{} to {}: {} applications sent",
        unit.show(c.from),
        unit.show(c.to),
        c.counts.sent
    );
    for (outcome, n) in Outcome::ALL.iter().zip(c.counts.answers) {
        let _ = write!(text, "\n  {}: {n}", outcome.label());
    }
    for cause in &CAUSES {
        let _ = write!(text, "\n{}: {}", cause.0, (cause.1)(c));
    }
    let _ = write!(
        text,
        "\nworkers busy (most): {}\nheld by the bureau (most): {}",
        c.counts.most_busy, c.counts.most_held
    );
    match (
        c.counts.latency.percentile(50.0),
        c.counts.latency.percentile(99.0),
    ) {
        (Some(p50), Some(p99)) => {
            let _ = write!(text, "\nlatency p50 {}, p99 {}", latency(p50), latency(p99));
        }
        _ => text.push_str("\nno latency (no application arrived)"),
    }
    text
}

/// Milliseconds, for data attributes.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A latency in the unit that suits it.
fn latency(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} \u{b5}s")
    } else if us < 1e6 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// `n` with thousands separators.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&step| step >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// About how wide `text` is in the sans-serif font at `size` (no font metrics without a
/// browser; 0.6 em a character is on the wide side, so an estimate that fits does fit).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// `text` on one line if it fits `room`, else on two, split at the space nearest the middle.
fn wrap(text: &str, room: f64, size: f64) -> Vec<String> {
    if text_width(text, size) <= room {
        return vec![text.to_owned()];
    }
    let middle = text.len() / 2;
    match text
        .match_indices(' ')
        .map(|(i, _)| i)
        .min_by_key(|&i| i.abs_diff(middle))
    {
        Some(i) => vec![text[..i].to_owned(), text[i + 1..].to_owned()],
        None => vec![text.to_owned()],
    }
}

/// `at` as "YYYY-MM-DD HH:MM UTC".
pub(crate) fn utc(at: SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // The proleptic Gregorian calendar from a day count: shift the epoch to 0000-03-01, so
    // that leap days fall at the end of a year, then count 400-year eras, years and months.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}
