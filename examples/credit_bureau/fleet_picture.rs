//! The fleet game day as a picture: a self-contained HTML file with one inline SVG panel per
//! run (without the hint, with it, with Redis killed), each with the bureau's script along the
//! top (the outage hatched), one state band per replica process over the run's time axis (the
//! killed replica's band ending where it was killed, the restarted one's starting where it came
//! up), the restart and Redis's death marked by vertical lines, and each hint-caused transition
//! marked on its band. The runs' text reports follow.
//!
//! It reuses the game day's picture's helpers (picture.rs): the XML escaping, the state colours,
//! the tick steps and the UTC time. Like that picture it is well-formed XML, and every drawn
//! band segment and marker carries `data-` attributes with its numbers, for the test to read.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use breaker::State;

use super::bureau::Behaviour;
use super::fleet::FleetRun;
use super::picture::{escape, nice_step, open_svg, state_colours, utc, Hatch, FONT};

/// The file's name when `--html` is not given.
pub(crate) const DEFAULT_FILE: &str = "credit_bureau_fleet.html";

const LEFT: f64 = 190.0;
const RIGHT: f64 = 1330.0;
const TOP: f64 = 90.0;
/// One run's panel: its title, the script, the bands, the time axis and a line of figures.
const TITLE_HEIGHT: f64 = 40.0;
const SCRIPT_HEIGHT: f64 = 22.0;
const BAND_HEIGHT: f64 = 24.0;
const BAND_GAP: f64 = 8.0;
const AXIS_HEIGHT: f64 = 72.0;
const FIGURES_HEIGHT: f64 = 40.0;
const PANEL_GAP: f64 = 30.0;

const OUTAGE_COLOUR: &str = "#37474f";
const RESTART_COLOUR: &str = "#6a1b9a";
const REDIS_COLOUR: &str = "#d32f2f";

/// Writes the picture of `runs` to `path`.
pub(crate) fn write_html(runs: &[FleetRun], path: &Path) -> io::Result<()> {
    std::fs::write(path, html(runs))
}

/// The state a replica's report names, as the breaker's own type.
fn state_named(name: &str) -> State {
    match name {
        "OPEN" => State::Open,
        "HALF_OPEN" => State::HalfOpen,
        "DISABLED" => State::Disabled,
        "FORCED_OPEN" => State::ForcedOpen,
        "METRICS_ONLY" => State::MetricsOnly,
        _ => State::Closed,
    }
}

fn panel_height(run: &FleetRun) -> f64 {
    TITLE_HEIGHT
        + SCRIPT_HEIGHT
        + BAND_GAP
        + run.replicas.len() as f64 * (BAND_HEIGHT + BAND_GAP)
        + AXIS_HEIGHT
        + FIGURES_HEIGHT
}

/// The whole HTML file.
pub(crate) fn html(runs: &[FleetRun]) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = match runs.first() {
        Some(run) => format!(
            "Credit bureau fleet game day ({}, time scale {})",
            utc(run.started),
            run.scale
        ),
        None => "Credit bureau fleet game day".to_owned(),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n\
         <meta charset=\"utf-8\"/>\n<title>{}</title>\n<style>\n\
         body {{ margin: 8px; background: #ffffff; color: #212121; font-family: {FONT}; }}\n\
         pre {{ font-size: 12px; line-height: 1.35; margin: 12px 0 0 20px; }}\n\
         h2 {{ font-size: 16px; margin: 18px 0 0 20px; }}\n\
         </style>\n</head>\n<body>\n",
        escape(&title)
    );
    let height = TOP
        + runs
            .iter()
            .map(|r| panel_height(r) + PANEL_GAP)
            .sum::<f64>();
    let hatch = Hatch {
        id: "outage-hatch",
        colour: OUTAGE_COLOUR,
        fill_opacity: "0.10",
        stroke_opacity: "0.30",
    };
    open_svg(&mut out, height, "fleet-title", &hatch);
    let _ = writeln!(
        out,
        "<text id=\"fleet-title\" x=\"20\" y=\"30\" font-size=\"20\" font-weight=\"bold\">{}</text>",
        escape(&title)
    );
    let notes = [
        "One band per replica process: green CLOSED, red OPEN, yellow HALF_OPEN; the bureau's \
         outage hatched. A triangle marks a transition the Redis hint caused.",
        "Purple lines: the restart (the replica killed with SIGKILL, then a new process with no \
         local history). Red line: Redis killed. Hover a band for its transition's numbers.",
    ];
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            "<text x=\"20\" y=\"{}\" font-size=\"13\" fill=\"#616161\">{}</text>",
            52 + 16 * i,
            escape(note)
        );
    }
    let mut y = TOP;
    for run in runs {
        panel(&mut out, run, y);
        y += panel_height(run) + PANEL_GAP;
    }
    out.push_str("</svg>\n");
    for run in runs {
        let _ = write!(
            out,
            "<h2>{}</h2>\n<pre>{}</pre>\n",
            escape(&format!("Run {}", run.mode.label())),
            escape(&run.to_string())
        );
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// One run's panel, its top at `top`.
fn panel(out: &mut String, run: &FleetRun, top: f64) {
    let script_end = run.phases.last().map_or(0.0, |p| p.2);
    let domain = run.ended_ms.max(script_end).max(1.0);
    let x = |ms: f64| LEFT + (ms / domain).clamp(0.0, 1.0) * (RIGHT - LEFT);
    let bands_top = top + TITLE_HEIGHT + SCRIPT_HEIGHT + BAND_GAP;
    let bands_bottom = bands_top + run.replicas.len() as f64 * (BAND_HEIGHT + BAND_GAP);
    let _ = writeln!(
        out,
        "<g class=\"run\" data-mode=\"{}\" data-outage-start-ms=\"{:.1}\" data-outage-end-ms=\"{:.1}\">",
        run.mode.key(),
        run.outage_ms.0,
        run.outage_ms.1
    );
    let _ = writeln!(
        out,
        "<text x=\"20\" y=\"{:.1}\" font-size=\"16\" font-weight=\"bold\">{}</text>",
        top + 22.0,
        escape(&format!(
            "Run {}: {} applications, {} lost",
            run.mode.label(),
            run.sent,
            run.lost()
        ))
    );

    // The script, and the outage hatched over the bands.
    let script_top = top + TITLE_HEIGHT;
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#424242\">bureau script</text>",
        LEFT - 8.0,
        script_top + 15.0
    );
    for (name, from, to, behaviour) in &run.phases {
        let fill = match behaviour {
            Behaviour::Healthy => "#e8f5e9",
            Behaviour::Hanging => "#cfd8dc",
            Behaviour::ServerErrors => "#ffccbc",
        };
        let _ = writeln!(
            out,
            "<rect class=\"phase\" x=\"{:.1}\" y=\"{script_top:.1}\" width=\"{:.1}\" height=\"{SCRIPT_HEIGHT}\" \
             fill=\"{fill}\" stroke=\"#9e9e9e\" data-from-ms=\"{from:.1}\" data-to-ms=\"{to:.1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            x(*from),
            (x(*to) - x(*from)).max(0.0),
            (x(*from) + x(*to)) / 2.0,
            script_top + 15.0,
            escape(name)
        );
    }
    let _ = writeln!(
        out,
        "<rect class=\"outage\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"url(#outage-hatch)\"/>",
        x(run.outage_ms.0),
        bands_top - BAND_GAP / 2.0,
        (x(run.outage_ms.1) - x(run.outage_ms.0)).max(0.0),
        bands_bottom - bands_top
    );

    // One band per replica process.
    for (i, replica) in run.replicas.iter().enumerate() {
        let y = bands_top + i as f64 * (BAND_HEIGHT + BAND_GAP);
        let end = replica.killed_ms.unwrap_or(run.ended_ms);
        let label = if replica.restarted {
            format!("{} (new process)", replica.name)
        } else {
            replica.name.clone()
        };
        let _ = writeln!(
            out,
            "<g class=\"replica-band\" data-replica=\"{}\" data-restarted=\"{}\" \
             data-from-ms=\"{:.1}\" data-to-ms=\"{end:.1}\">\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            escape(&replica.name),
            replica.restarted,
            replica.offset_ms,
            LEFT - 8.0,
            y + BAND_HEIGHT / 2.0 + 4.0,
            escape(&label)
        );
        // The segments: CLOSED from the start to the first transition, then each state to the
        // next transition, the last to the band's end.
        let mut state = State::Closed;
        let mut from = replica.offset_ms;
        let mut cause = "start".to_owned();
        let mut told = "the replica started".to_owned();
        let mut segments = Vec::new();
        for t in &replica.report.transitions {
            let at = replica.offset_ms + t.at_ms;
            segments.push((state, from, at, cause.clone(), told.clone()));
            state = state_named(&t.to);
            from = at;
            cause.clone_from(&t.cause);
            told = format!(
                "entered ({}) after {} recorded calls, {} failed, {} slow, {} bureau requests",
                t.cause, t.recorded_calls, t.failed_calls, t.slow_calls, t.bureau_requests
            );
        }
        segments.push((state, from, end.max(from), cause, told));
        for (state, from, to, cause, told) in segments {
            let (fill, _) = state_colours(state);
            let _ = writeln!(
                out,
                "<rect class=\"state\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{BAND_HEIGHT}\" \
                 fill=\"{fill}\" data-state=\"{state}\" data-from-ms=\"{from:.1}\" data-to-ms=\"{to:.1}\" \
                 data-cause=\"{}\"><title>{}</title></rect>",
                x(from),
                (x(to) - x(from)).max(0.0),
                escape(&cause),
                escape(&format!(
                    "{}: {state} from {from:.0} ms to {to:.0} ms; {told}",
                    replica.name
                ))
            );
        }
        for t in replica
            .report
            .transitions
            .iter()
            .filter(|t| t.cause == "Hint")
        {
            let at = x(replica.offset_ms + t.at_ms);
            let _ = writeln!(
                out,
                "<path class=\"hint-transition\" d=\"M {at:.1} {:.1} l -6 -9 l 12 0 z\" fill=\"#212121\" \
                 data-at-ms=\"{:.1}\" data-from=\"{}\" data-to=\"{}\"><title>{}</title></path>",
                y,
                replica.offset_ms + t.at_ms,
                escape(&t.from),
                escape(&t.to),
                escape(&format!(
                    "{}: the hint moved {} -> {} after {} recorded calls",
                    replica.name, t.from, t.to, t.recorded_calls
                ))
            );
        }
        out.push_str("</g>\n");
    }

    // The restart and Redis's death.
    // Each marker's label on a row of its own under the bands, so that close markers' labels
    // do not overlap.
    let mut row = 0.0;
    let mut marker = |class: &str, at: f64, colour: &str, text: &str| {
        row += 1.0;
        let _ = writeln!(
            out,
            "<g class=\"{class}\" data-at-ms=\"{at:.1}\"><line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" \
             stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\
             <text x=\"{3:.1}\" y=\"{4:.1}\" font-size=\"11\" fill=\"{colour}\">{5}</text></g>",
            x(at),
            bands_top - BAND_GAP,
            bands_bottom,
            x(at) + 3.0,
            bands_bottom + 12.0 * row,
            escape(text)
        );
    };
    for replica in &run.replicas {
        if let Some(killed) = replica.killed_ms {
            marker(
                "restart",
                killed,
                RESTART_COLOUR,
                &format!("{} killed", replica.name),
            );
        }
        if replica.restarted {
            marker(
                "restart",
                replica.offset_ms,
                RESTART_COLOUR,
                &format!("{} started", replica.name),
            );
        }
    }
    if let Some(at) = run.redis_killed_ms {
        marker("redis-killed", at, REDIS_COLOUR, "Redis killed");
    }

    // The time axis.
    let axis = bands_bottom + 42.0;
    let seconds = domain / 1000.0;
    let step = nice_step(seconds / 10.0);
    let mut tick = 0.0;
    while tick <= seconds + step / 1000.0 {
        let tx = x(tick * 1000.0);
        let _ = writeln!(
            out,
            "<line x1=\"{tx:.1}\" y1=\"{axis:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#424242\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{tick:.1}</text>",
            axis + 5.0,
            axis + 17.0
        );
        tick += step;
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{axis:.1}\" x2=\"{RIGHT}\" y2=\"{axis:.1}\" stroke=\"#424242\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\">seconds since the run started</text>",
        (LEFT + RIGHT) / 2.0,
        axis + 32.0
    );

    // The figures: bureau requests spent in the outage before each breaker opened.
    let figures: Vec<String> = run
        .replicas
        .iter()
        .map(|r| {
            let n = r
                .requests_before_open(run.outage_ms.0)
                .map_or_else(|| "never opened".to_owned(), |n| n.to_string());
            format!("{} {n}", r.name)
        })
        .collect();
    let _ = writeln!(
        out,
        "<text class=\"figures\" x=\"20\" y=\"{:.1}\" font-size=\"13\">{}</text>",
        axis + AXIS_HEIGHT + 8.0,
        escape(&format!(
            "Bureau requests spent in the outage before the breaker opened: {}",
            figures.join(", ")
        ))
    );
    out.push_str("</g>\n");
}
