//! Conformance with Resilience4j 2.4.0: every scenario in `tests/conformance/scenarios/` must
//! produce, byte for byte, the trace in `tests/conformance/expected/` (format and notes in
//! `tests/conformance/FORMAT.md` and `NOTES.md`).
//!
//! All but two of the expected traces are Resilience4j's own output. The two in [`OWN_TRACES`]
//! (D1 and D2 in `NOTES.md` and docs/CONFORMANCE.md) are breaker's deliberate behaviour, where
//! Resilience4j prints something else: the test holds breaker to them like to any other trace,
//! reports them apart, and checks that they are exactly the scenarios the notes name and that
//! they show breaker's side of the difference. Also checks that malformed scenarios are reported
//! on the right line, and breaker's deliberate divergence D3 (which has no trace of its own).
//!
//! The backoff traces have no oracle: their waits, and the breaker's for every kind of wait
//! interval, are checked against Resilience4j's `IntervalFunction` computed in this file.

#[path = "../examples/conformance/runner.rs"]
mod runner;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use breaker::{Config, ManualClock, Outcome, Registry, State};

use runner::{run_scenario, ScenarioError, MAX_HELD_PERMITS};

/// Scenarios whose expected trace is Resilience4j's and where breaker deliberately differs, so
/// a mismatch is expected. Empty: the traces of D1 and D2 are breaker's own ([`OWN_TRACES`]),
/// and no scenario here depends on D3. Any mismatch of any other scenario fails the test.
const KNOWN_DIVERGENCES: &[&str] = &[];

/// The expected traces that are **not** Resilience4j's output but breaker's own behaviour, with
/// the note that gives the reason (`NOTES.md`, "Where breaker deliberately differs"). Every
/// other `.out` file is what Resilience4j 2.4.0 printed.
const OWN_TRACES: &[(&str, &str)] = &[
    // `reset()` cancels the HALF_OPEN max-wait timer: the reset breaker stays CLOSED, where
    // Resilience4j's stale timer opens it at t=6001 and rejects the last call.
    ("D1", "reset_in_half_open_stale_max_wait_timer"),
    // A result arriving in OPEN entered from FORCED_OPEN (a window of size 0) is dropped, where
    // Resilience4j throws ArithmeticException at the caller.
    ("D2", "late_result_after_forced_open_to_open_no_exception"),
];

/// The expected traces of scenarios that use the project's own config keys (FORMAT.md
/// section 2b: exponential backoff in OPEN), which Resilience4j's oracle cannot run. They were
/// printed by the runner, so matching them proves nothing about the waits by itself:
/// [`derived_traces_wait_what_resilience4js_interval_function_says`] checks every wait in them
/// against Resilience4j 2.4's `IntervalFunction.ofExponentialBackoff` written out in this file
/// (the wait of attempt n, truncated to whole milliseconds at each step, capped last) and its
/// state machine's attempt count (entering OPEN or FORCED_OPEN adds one, HALF_OPEN keeps it,
/// CLOSED and reset start again).
const DERIVED_TRACES: &[&str] = &[
    "backoff_attempts_grow_and_reset_on_closed",
    "backoff_counts_manual_and_forced_opens",
];

fn is_own_trace(name: &str) -> bool {
    OWN_TRACES.iter().any(|(_, own)| *own == name)
}

fn is_derived_trace(name: &str) -> bool {
    DERIVED_TRACES.contains(&name)
}

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// `(name, path)` of every `scenarios/*.scn`, sorted by name.
fn scenarios() -> Vec<(String, PathBuf)> {
    let dir = conformance_dir().join("scenarios");
    let entries = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| {
            entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path()
        });
    let mut found: Vec<(String, PathBuf)> = entries
        .filter(|path| path.extension().is_some_and(|ext| ext == "scn"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_owned();
            Some((name, path))
        })
        .collect();
    found.sort();
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Where `actual` first differs from `expected`, as a report; `None` if they are equal.
fn first_difference(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let mut expected_lines = expected.split_inclusive('\n');
    let mut actual_lines = actual.split_inclusive('\n');
    for number in 1.. {
        match (expected_lines.next(), actual_lines.next()) {
            (Some(e), Some(a)) if e == a => continue,
            (None, None) => break,
            (e, a) => {
                return Some(format!(
                    "first difference at line {number} of the trace (1-based, as in the .out file):\n  expected: {}\n  actual:   {}",
                    e.map_or("<end of trace>".to_owned(), |l| format!("{l:?}")),
                    a.map_or("<end of trace>".to_owned(), |l| format!("{l:?}")),
                ))
            }
        }
    }
    Some("traces differ".to_owned())
}

#[test]
fn every_scenario_matches_its_expected_trace() {
    let scenarios = scenarios();
    assert!(
        !scenarios.is_empty(),
        "no scenarios found in {}",
        conformance_dir().join("scenarios").display()
    );
    let mut failures = Vec::new();
    let (mut passed, mut own_passed, mut derived_passed) = (0, 0, 0);
    for (name, path) in &scenarios {
        let expected_path = conformance_dir()
            .join("expected")
            .join(format!("{name}.out"));
        let Ok(expected) = fs::read_to_string(&expected_path) else {
            failures.push(format!(
                "{name}: no expected trace at {}",
                expected_path.display()
            ));
            continue;
        };
        let actual = match run_scenario(&read(path)) {
            Ok(trace) => trace,
            Err(error) => {
                failures.push(format!("{name}: the runner rejects it: {error}"));
                continue;
            }
        };
        let divergence = KNOWN_DIVERGENCES.contains(&name.as_str());
        match (first_difference(&expected, &actual), divergence) {
            (None, false) if is_own_trace(name) => own_passed += 1,
            (None, false) if is_derived_trace(name) => derived_passed += 1,
            (None, false) => passed += 1,
            (Some(report), false) => failures.push(format!("{name}: {report}")),
            (Some(_), true) => {
                passed += 1;
                println!("{name}: differs from Resilience4j, as listed in KNOWN_DIVERGENCES");
            }
            (None, true) => failures.push(format!(
                "{name}: listed in KNOWN_DIVERGENCES but matches: remove it from the list"
            )),
        }
    }
    for listed in KNOWN_DIVERGENCES {
        if !scenarios.iter().any(|(name, _)| name == listed) {
            failures.push(format!(
                "{listed}: in KNOWN_DIVERGENCES but no such scenario"
            ));
        }
    }
    let own = scenarios.iter().filter(|(n, _)| is_own_trace(n)).count();
    let derived = scenarios
        .iter()
        .filter(|(n, _)| is_derived_trace(n))
        .count();
    println!(
        "{passed} of {} scenarios match Resilience4j's traces; {own_passed} of {own} match \
         breaker's own traces (D1, D2); {derived_passed} of {derived} match the traces derived \
         from Resilience4j's source for the project's own keys (backoff)",
        scenarios.len() - own - derived
    );
    assert_eq!(own, OWN_TRACES.len(), "a scenario of OWN_TRACES is missing");
    assert_eq!(
        derived,
        DERIVED_TRACES.len(),
        "a scenario of DERIVED_TRACES is missing"
    );
    assert!(
        failures.is_empty(),
        "{} of {} scenarios fail:\n\n{}",
        failures.len(),
        scenarios.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_expected_trace_has_a_scenario() {
    let dir = conformance_dir().join("expected");
    let names: Vec<String> = scenarios().into_iter().map(|(name, _)| name).collect();
    let mut orphans = Vec::new();
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            if !names.iter().any(|n| n == stem) {
                orphans.push(path.display().to_string());
            }
        }
    }
    assert!(
        orphans.is_empty(),
        "expected traces without a scenario: {orphans:?}"
    );
}

#[test]
fn scenarios_are_found() {
    let count = scenarios().len();
    assert!(
        count > 0,
        "no scenarios found: the conformance test would pass vacuously"
    );
}

/// The traces that are breaker's own are exactly [`OWN_TRACES`]: the scenarios whose header
/// says they diverge, and the rows of docs/CONFORMANCE.md's table, name the same two; and each
/// shows breaker's side of the difference, not Resilience4j's.
#[test]
fn own_traces_are_exactly_d1_and_d2() {
    let mut own: Vec<&str> = OWN_TRACES.iter().map(|(_, name)| *name).collect();
    own.sort();

    let marked: Vec<String> = scenarios()
        .into_iter()
        .filter(|(_, path)| {
            read(path)
                .lines()
                .take_while(|l| l.starts_with('#'))
                .any(|l| l.contains("Deliberate divergence from Resilience4j"))
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(marked, own, "scenarios whose header says they diverge");

    let doc = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFORMANCE.md"));
    let rows: Vec<(String, String)> = doc
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("| **D")?;
            let (number, rest) = rest.split_once("** | `")?;
            let (name, _) = rest.split_once('`')?;
            Some((format!("D{number}"), name.to_owned()))
        })
        .collect();
    let listed: Vec<(String, String)> = OWN_TRACES
        .iter()
        .map(|(d, name)| ((*d).to_owned(), (*name).to_owned()))
        .collect();
    assert_eq!(
        rows, listed,
        "docs/CONFORMANCE.md's table of breaker's own traces"
    );

    let trace = |name: &str| {
        read(
            &conformance_dir()
                .join("expected")
                .join(format!("{name}.out")),
        )
    };
    // D1: after the reset no transition at all, and the last call is permitted in CLOSED
    // (Resilience4j: `tr=CLOSED>OPEN` at t=6001, then the call is rejected).
    let d1 = trace(OWN_TRACES[0].1);
    let after_reset = d1
        .split_once(" reset -> ")
        .map(|(_, rest)| rest)
        .expect("D1's trace has the reset");
    assert_eq!(
        after_reset.matches(" tr=").count() - after_reset.matches(" tr=-").count(),
        1,
        "only the reset's own HALF_OPEN>CLOSED:\n{d1}"
    );
    let last = d1.lines().last().unwrap();
    assert!(
        last.contains("call ok 0 -> permitted | state=CLOSED"),
        "{last}"
    );
    // D2: no exception reaches the caller; the late result is dropped and counts for nothing
    // (Resilience4j: `exception=ArithmeticException`).
    let d2 = trace(OWN_TRACES[1].1);
    assert!(!d2.contains("exception="), "{d2}");
    let last = d2.lines().last().unwrap();
    assert!(
        last.contains("record fail 0 -> recorded | state=OPEN") && last.contains(" buf=0 fail=0 "),
        "{last}"
    );
}

// ---------------------------------------------------------------------------------------------
// Malformed scenarios

const CONFIG: &str = "config size=4 min=4 wait_open_ms=1000 half_open_permits=2";

fn error_of(text: &str) -> ScenarioError {
    match run_scenario(text) {
        Ok(trace) => panic!("accepted a malformed scenario:\n{text}\ntrace:\n{trace}"),
        Err(error) => error,
    }
}

/// Each case: the scenario, the line of its error, and how many trace lines precede it.
#[test]
fn malformed_scenarios_report_their_line() {
    let cases: &[(&str, usize, usize)] = &[
        // Config line.
        ("", 1, 0),
        ("# only a comment\n\n", 2, 0),
        ("call ok\n", 1, 0),
        ("\n# header\nconfig sizes=4\n", 3, 0),
        ("config size=4 size=5\n", 1, 0),
        ("config size=010\n", 1, 0),
        ("config size=0\n", 1, 0),
        ("config size=1234567890123456789\n", 1, 0),
        ("config size=4294967296\n", 1, 0),
        ("config size=20000000\n", 1, 0), // fits u32, the builder rejects it
        ("config window=TIME_BASED size=100000\n", 1, 0),
        ("config size = 4\n", 1, 0),
        ("config size=\n", 1, 0),
        ("config size=4=4\n", 1, 0),
        ("config size=+4\n", 1, 0),
        ("config failure_rate=0\n", 1, 0),
        ("config failure_rate=100.5\n", 1, 0),
        ("config failure_rate=50.\n", 1, 0),
        ("config failure_rate=.5\n", 1, 0),
        ("config failure_rate=05\n", 1, 0),
        ("config failure_rate=5e1\n", 1, 0),
        ("config slow_rate=-1\n", 1, 0),
        ("config slow_ms=0\n", 1, 0),
        ("config wait_open_ms=0\n", 1, 0),
        ("config half_open_permits=0\n", 1, 0),
        ("config auto_half_open=TRUE\n", 1, 0),
        ("config half_open_max_wait_to=HALF_OPEN\n", 1, 0),
        ("config window=count_based\n", 1, 0),
        ("Config\n", 1, 0),
        ("config\u{e9}\n", 1, 0),
        // Steps: the line number counts comments and blank lines; the trace keeps what came
        // before.
        ("config\nconfig\n", 2, 1),
        ("config\ncall ok\n\n# comment\nrecord ok\n", 5, 2),
        ("config\nacquire 1\nrecord ok\nrelease\n", 4, 3),
        ("config\ncal ok\n", 2, 1),
        ("config\ncall OK\n", 2, 1),
        ("config\ncall\n", 2, 1),
        ("config\ncall ok 5 6\n", 2, 1),
        ("config\ncall ok 05\n", 2, 1),
        ("config\ncall ok -5\n", 2, 1),
        ("config\ncall ok 5ms\n", 2, 1),
        ("config\nacquire 0\n", 2, 1),
        ("config\nacquire\n", 2, 1),
        ("config\nadvance 1_000\n", 2, 1),
        ("config\nadvance 1000000000000000000\n", 2, 1), // 19 digits
        ("config\nadvance 1\nadvance 999999999999999999\n", 3, 2), // past the clock's range
        ("config\nobserve now\n", 2, 1),
        ("config\nreset 1\n", 2, 1),
        ("config\nrelease 1\n", 2, 1),
        ("config\ntransition half_open\n", 2, 1),
        ("config\ntransition CLOSED OPEN\n", 2, 1),
        ("config\nobserve\ncall\u{a0}ok\n", 3, 2),
        ("config\r\nobserve\r\ncall\rok\r\n", 3, 2),
    ];
    let mut wrong = Vec::new();
    for &(text, line, lines_before) in cases {
        match run_scenario(text) {
            Ok(trace) => wrong.push(format!("{text:?}: accepted, trace:\n{trace}")),
            Err(error) => {
                let printed = error.trace.lines().count();
                if error.line != line || printed != lines_before || error.message.is_empty() {
                    wrong.push(format!(
                        "{text:?}: expected ERROR line {line} after {lines_before} trace lines, \
                         got `{error}` after {printed}"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn error_display_is_the_oracle_format() {
    let error = error_of(&format!("{CONFIG}\nobserve\n\n   # c\nrecord fail 10\n"));
    assert_eq!(error.line, 5);
    assert_eq!(
        error.to_string(),
        format!("ERROR line 5: {}", error.message),
        "stderr line"
    );
    assert!(error.message.contains("held=0"), "{}", error.message);
    assert_eq!(error.trace.lines().count(), 2);
    assert!(error
        .trace
        .starts_with("0 t=0 config window=COUNT_BASED size=4 min=4 "));
    assert!(error.trace.ends_with(" tr=-\n"));
}

#[test]
fn acquire_beyond_the_runner_limit_is_an_error_not_an_abort() {
    let error = error_of(&format!(
        "{CONFIG}\nacquire 1\nacquire {MAX_HELD_PERMITS}\n"
    ));
    assert_eq!(error.line, 3);
    assert_eq!(error.trace.lines().count(), 2);
}

#[test]
fn crlf_tabs_comments_and_defaults_are_accepted() {
    let trace = run_scenario(
        "# header\r\n\t config \tsize=2   min=2 # trailing comment\r\n\r\ncall\tfail\t7\r\n  \
         call fail # second\r\nobserve",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let expected = "\
0 t=0 config window=COUNT_BASED size=2 min=2 failure_rate=50 slow_rate=100 slow_ms=60000 wait_open_ms=60000 half_open_permits=10 auto_half_open=false half_open_max_wait_ms=0 half_open_max_wait_to=OPEN -> ok | state=CLOSED fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=0 tr=-
1 t=0 call fail 7 -> permitted | state=CLOSED fr=-1.00 sr=-1.00 buf=1 fail=1 slow=0 notp=0 held=0 tr=-
2 t=0 call fail 0 -> permitted | state=OPEN fr=100.00 sr=0.00 buf=2 fail=2 slow=0 notp=0 held=0 tr=CLOSED>OPEN
3 t=0 observe -> ok | state=OPEN fr=100.00 sr=0.00 buf=2 fail=2 slow=0 notp=0 held=0 tr=-
";
    assert_eq!(first_difference(expected, &trace), None);
}

/// Truncating or deleting any line of any scenario gives a trace or an error, never a panic.
#[test]
fn mutilated_scenarios_never_panic() {
    for (_, path) in scenarios() {
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let mut without = lines.clone();
            without.remove(i);
            let _ = run_scenario(&without.join("\n"));
            let line = lines[i];
            for cut in (0..line.len()).filter(|&c| line.is_char_boundary(c)) {
                let mut cut_lines = lines.clone();
                cut_lines[i] = &line[..cut];
                let _ = run_scenario(&cut_lines.join("\n"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// D3 (tests/conformance/NOTES.md): a released or ignored permit gives a trial back to HALF_OPEN
// only if that HALF_OPEN state granted it. Expected traces derived by hand from the notes;
// Resilience4j would print `granted=1/1 ... held=2` on step 7.

const D3_HEAD: &str = "\
0 t=0 config window=COUNT_BASED size=2 min=2 failure_rate=50 slow_rate=100 slow_ms=60000 wait_open_ms=1000 half_open_permits=1 auto_half_open=false half_open_max_wait_ms=0 half_open_max_wait_to=OPEN -> ok | state=CLOSED fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=0 tr=-
1 t=0 acquire 1 -> granted=1/1 | state=CLOSED fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=1 tr=-
2 t=0 call fail 0 -> permitted | state=CLOSED fr=-1.00 sr=-1.00 buf=1 fail=1 slow=0 notp=0 held=1 tr=-
3 t=0 call fail 0 -> permitted | state=OPEN fr=100.00 sr=0.00 buf=2 fail=2 slow=0 notp=0 held=1 tr=CLOSED>OPEN
4 t=1001 advance 1001 -> advanced | state=OPEN fr=100.00 sr=0.00 buf=2 fail=2 slow=0 notp=0 held=1 tr=-
5 t=1001 acquire 1 -> granted=1/1 | state=HALF_OPEN fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=2 tr=OPEN>HALF_OPEN
";

const D3_TAIL: &str = "\
7 t=1001 acquire 1 -> granted=0/1 | state=HALF_OPEN fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=1 held=1 tr=-
8 t=1001 record ok 0 -> recorded | state=CLOSED fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=0 tr=HALF_OPEN>CLOSED
";

fn d3_scenario(give_back: &str) -> String {
    format!(
        "config size=2 min=2 wait_open_ms=1000 half_open_permits=1\n\
         acquire 1\ncall fail\ncall fail\nadvance 1001\nacquire 1\n\
         {give_back}   # the CLOSED-era permit, the oldest held\n\
         acquire 1\nrecord ok\n"
    )
}

#[test]
fn d3_release_of_a_closed_era_permit_gives_no_trial_back() {
    let trace = run_scenario(&d3_scenario("release")).unwrap_or_else(|e| panic!("{e}"));
    let expected = format!(
        "{D3_HEAD}6 t=1001 release -> released | state=HALF_OPEN fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=1 tr=-\n{D3_TAIL}"
    );
    assert_eq!(first_difference(&expected, &trace), None);
}

#[test]
fn d3_ignored_result_of_a_closed_era_permit_gives_no_trial_back() {
    let trace = run_scenario(&d3_scenario("record ignored")).unwrap_or_else(|e| panic!("{e}"));
    let expected = format!(
        "{D3_HEAD}6 t=1001 record ignored 0 -> recorded | state=HALF_OPEN fr=-1.00 sr=-1.00 buf=0 fail=0 slow=0 notp=0 held=1 tr=-\n{D3_TAIL}"
    );
    assert_eq!(first_difference(&expected, &trace), None);
}

// ---------------------------------------------------------------------------------------------
// Backoff: the waits in OPEN as Resilience4j 2.4's `IntervalFunction` computes them, written
// out here from its source, so that neither the traces of DERIVED_TRACES (which the runner
// printed) nor the breaker are checked against themselves.

/// `IntervalFunction.ofExponentialBackoff(initial, multiplier[, max])` for `attempt` (from 1):
/// the initial wait multiplied `attempt - 1` times, truncated to whole milliseconds at each
/// step (Java's `(long) (x * multiplier)`), then at most `max`.
fn exponential_wait(initial: u64, multiplier: f64, max: Option<u64>, attempt: u32) -> u64 {
    let mut wait = initial;
    for _ in 1..attempt {
        wait = (wait as f64 * multiplier) as u64;
    }
    max.map_or(wait, |max| wait.min(max))
}

/// The whole milliseconds that `IntervalFunctionCompanion.randomize(wait, factor)`, truncated
/// by `(long)`, can give: it draws from `[wait - factor * wait, wait + factor * wait)`. As an
/// inclusive range.
fn randomized_waits(wait: u64, factor: f64) -> std::ops::RangeInclusive<u64> {
    let delta = factor * wait as f64;
    let (low, high) = (wait as f64 - delta, wait as f64 + delta);
    let last = if high.fract() == 0.0 && high > low {
        high as u64 - 1
    } else {
        high as u64
    };
    (low as u64)..=last
}

/// One line of a trace (FORMAT.md section 5): the clock after the step, the step's echo, its
/// outcome, the state after it and the transitions it published.
struct TraceLine<'a> {
    t: u64,
    echo: &'a str,
    outcome: &'a str,
    state: &'a str,
    transitions: Vec<(&'a str, &'a str)>,
}

fn not_a_trace_line(line: &str) -> ! {
    panic!("not a trace line: {line}")
}

fn trace_line(line: &str) -> TraceLine<'_> {
    let (step, status) = line
        .split_once(" | ")
        .unwrap_or_else(|| not_a_trace_line(line));
    let (head, outcome) = step
        .split_once(" -> ")
        .unwrap_or_else(|| not_a_trace_line(line));
    let mut head = head.splitn(3, ' ');
    let _number = head.next();
    let t = head
        .next()
        .and_then(|t| t.strip_prefix("t="))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| not_a_trace_line(line));
    let echo = head.next().unwrap_or_else(|| not_a_trace_line(line));
    let field = |name: &str| {
        status
            .split(' ')
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| not_a_trace_line(line))
    };
    let transitions = match field("tr") {
        "-" => Vec::new(),
        list => list
            .split(',')
            .map(|tr| tr.split_once('>').unwrap_or_else(|| not_a_trace_line(line)))
            .collect(),
    };
    TraceLine {
        t,
        echo,
        outcome,
        state: field("state"),
        transitions,
    }
}

/// The value of `key` on a trace's line 0 (the config echo), if given.
fn config_value<'a>(trace: &'a str, key: &str) -> Option<&'a str> {
    let echo = trace_line(trace.lines().next()?).echo;
    echo.split(' ')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// Every OPEN of every trace in DERIVED_TRACES waits what `exponential_wait` says for its
/// attempt, counted as FORMAT.md section 2b says (entering OPEN or FORCED_OPEN adds one,
/// HALF_OPEN keeps the count, CLOSED, DISABLED, METRICS_ONLY and `reset` start it again): each
/// call refused in it comes at most that long after it was entered, and the call that leaves
/// it for HALF_OPEN comes in the first millisecond after (the scenarios probe that
/// millisecond for each wait).
#[test]
fn derived_traces_wait_what_resilience4js_interval_function_says() {
    for name in DERIVED_TRACES {
        let trace = read(
            &conformance_dir()
                .join("expected")
                .join(format!("{name}.out")),
        );
        let number = |key: &str| config_value(&trace, key).map(|v| v.parse::<u64>().unwrap());
        // These traces leave OPEN on a call only (no timers), as the checks below assume.
        assert_eq!(
            config_value(&trace, "auto_half_open"),
            Some("false"),
            "{name}"
        );
        assert_eq!(number("half_open_max_wait_ms"), Some(0), "{name}");
        let initial = number("wait_open_ms").unwrap();
        // A DEC is read as a binary32, as the runner and the oracle read every DEC.
        let multiplier = config_value(&trace, "backoff_multiplier")
            .map(|m| f64::from(m.parse::<f32>().unwrap()))
            .unwrap_or_else(|| panic!("{name}: no backoff_multiplier"));
        let max = number("backoff_max_ms");
        let wait = |attempt| exponential_wait(initial, multiplier, max, attempt);

        let mut attempts = 0u32;
        // The OPEN the breaker is in: when it was entered, and its wait.
        let mut open: Option<(u64, u64)> = None;
        let mut waits_checked = Vec::new();
        for line in trace.lines().skip(1) {
            let step = trace_line(line);
            let at = |what: &str| format!("{name}: {what} at t={}: {line}", step.t);
            let refused = step.outcome == "not_permitted"
                || (step.outcome.starts_with("granted=0/") && step.echo.starts_with("acquire"));
            if let (true, Some((entered, wait))) = (refused, open) {
                if step.transitions.is_empty() && step.state == "OPEN" {
                    assert!(
                        step.t <= entered + wait,
                        "{}",
                        at(&format!(
                            "refused after OPEN's wait of {wait} ms from t={entered}"
                        ))
                    );
                }
            }
            let mut entered_open = false;
            for &(from, to) in &step.transitions {
                if let (Some((entered, wait)), "OPEN", "HALF_OPEN") = (open, from, to) {
                    assert_eq!(
                        step.t,
                        entered + wait + 1,
                        "{}",
                        at(&format!(
                            "left OPEN entered at t={entered}, whose wait is {wait} ms"
                        ))
                    );
                    waits_checked.push(wait);
                }
                open = None;
                match to {
                    "OPEN" | "FORCED_OPEN" => attempts += 1,
                    "CLOSED" | "DISABLED" | "METRICS_ONLY" => attempts = 0,
                    _ => {}
                }
                if to == "OPEN" {
                    open = Some((step.t, wait(attempts)));
                    entered_open = true;
                }
            }
            // A move to the state the breaker is in publishes no event, yet enters it anew.
            if step.transitions.is_empty() && step.outcome == "ok" {
                match step.echo {
                    "transition OPEN" => {
                        attempts += 1;
                        open = Some((step.t, wait(attempts)));
                        entered_open = true;
                    }
                    "transition FORCED_OPEN" => attempts += 1,
                    "reset" | "transition CLOSED" => attempts = 0,
                    _ => {}
                }
            }
            if entered_open {
                assert_eq!(step.state, "OPEN", "{}", at("entered OPEN"));
            }
        }
        assert_eq!(
            waits_checked.len(),
            trace.matches("OPEN>HALF_OPEN").count(),
            "{name}: every OPEN left for HALF_OPEN was checked"
        );
        println!("{name}: waits {waits_checked:?} ms, as the formula says");
    }
}

/// The waits of a breaker with `config` for its first `attempts` OPEN states, in
/// milliseconds. Each is read from the call refused as OPEN is entered (`retry_after`, on a
/// manual clock that has not moved) and shown on the clock: a call at the end of the wait is
/// refused, and one a millisecond later is let through as the HALF_OPEN trial, which fails,
/// so that the next OPEN is the next attempt.
fn waits_of(config: Config, attempts: u32) -> Vec<u64> {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .random_seed(25)
        .default_config(config)
        .build();
    let b = registry.breaker("backoff");
    while b.state() == State::Closed {
        let permit = b.try_acquire().unwrap();
        permit.record(Outcome::Failure, Duration::ZERO);
    }
    (1..=attempts)
        .map(|attempt| {
            assert_eq!(b.state(), State::Open, "attempt {attempt}");
            let wait = b.try_acquire().unwrap_err().retry_after().unwrap();
            let ms = u64::try_from(wait.as_millis()).unwrap();
            assert_eq!(wait, Duration::from_millis(ms), "attempt {attempt}");
            clock.advance(wait);
            assert!(
                b.try_acquire().is_err(),
                "attempt {attempt}: let through at the end of its wait of {ms} ms"
            );
            clock.advance(Duration::from_millis(1));
            let trial = b.try_acquire().unwrap_or_else(|e| {
                panic!("attempt {attempt}: refused 1 ms after its wait of {ms} ms: {e}")
            });
            trial.record(Outcome::Failure, Duration::ZERO);
            ms
        })
        .collect()
}

/// The breaker's waits in OPEN against Resilience4j's interval functions, computed here: the
/// exponential backoff with its multiplier (truncated at each step) and its maximum, the
/// randomized wait within its bounds, and both at once (randomized, then bounded).
#[test]
fn the_breaker_waits_what_resilience4js_interval_functions_say() {
    let ms = Duration::from_millis;
    let config = || {
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .permitted_number_of_calls_in_half_open_state(1)
    };

    // 7, 10 (10.5 truncated), 15, 22, 33, then 40 (49 over the maximum).
    let exponential = config()
        .wait_duration_in_open_state(ms(7))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(1.5)
        .exponential_max_wait_duration_in_open_state(Some(ms(40)))
        .build()
        .unwrap();
    let expected: Vec<u64> = (1..=8)
        .map(|n| exponential_wait(7, 1.5, Some(40), n))
        .collect();
    assert_eq!(
        waits_of(exponential, 8),
        expected,
        "exponential, at most 40 ms"
    );

    // No maximum, and a multiplier that is no binary fraction.
    let unbounded = config()
        .wait_duration_in_open_state(ms(1_000))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(1.3)
        .build()
        .unwrap();
    let expected: Vec<u64> = (1..=10)
        .map(|n| exponential_wait(1_000, 1.3, None, n))
        .collect();
    assert_eq!(waits_of(unbounded, 10), expected, "exponential, no maximum");

    // Randomized: every wait within its bounds, and drawn across them.
    let randomized = config()
        .wait_duration_in_open_state(ms(1_000))
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.5)
        .build()
        .unwrap();
    let waits = waits_of(randomized, 64);
    let bounds = randomized_waits(1_000, 0.5);
    assert_eq!(bounds, 500..=1_499);
    assert!(
        waits.iter().all(|w| bounds.contains(w)),
        "not all within {bounds:?}: {waits:?}"
    );
    assert!(
        waits.iter().any(|w| *w < 750) && waits.iter().any(|w| *w >= 1_250),
        "drawn from the whole range, not one part of it: {waits:?}"
    );

    // Both: the exponential wait of the attempt, randomized, then at most the maximum.
    let both = config()
        .wait_duration_in_open_state(ms(1_000))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(2.0)
        .exponential_max_wait_duration_in_open_state(Some(ms(5_000)))
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.25)
        .build()
        .unwrap();
    for (attempt, wait) in (1..).zip(waits_of(both, 6)) {
        let drawn = randomized_waits(exponential_wait(1_000, 2.0, None, attempt), 0.25);
        let bounds = *drawn.start().min(&5_000)..=*drawn.end().min(&5_000);
        assert!(
            bounds.contains(&wait),
            "attempt {attempt}: {wait} ms, not within {bounds:?}"
        );
    }
}
