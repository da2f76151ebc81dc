//! Resilience4j's Grafana dashboard against a scrape of the export: breakers in every state,
//! calls of every kind, a bulkhead under load and retries of every outcome, rendered by a real
//! metrics-exporter-prometheus recorder configured with buckets for the call timer, parsed as
//! Prometheus parses the text format, must feed every selector of every panel the dashboard
//! draws (`grafana_dashboard.txt` lists them), for every breaker, retry and bulkhead its rows
//! repeat over; and `promtool check metrics` must find nothing to say about the scrape. Without
//! the buckets, exactly the percentile panel goes blank.
#![cfg(feature = "metrics")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use breaker_core::bulkhead::OwnedBulkheadPermit;
use breaker_core::{
    BulkheadConfig, Classifier, Config, ManualClock, MetricsExport, Outcome, Registry, RetryConfig,
    State,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use regex_automata::meta::Regex;

use crate::exposition::{self, Sample};

/// The dashboard's variables and panels, and where the file is (for error messages).
const FIXTURE: &str = include_str!("grafana_dashboard.txt");
const FIXTURE_PATH: &str = "breaker-core/tests/metrics/grafana_dashboard.txt";

/// The upper bounds of the call timer's buckets, in seconds: the ones README.md recommends
/// (1 ms to 30 s, the range of Micrometer's timer histograms, in steps of 2 to 2.5).
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The labels Prometheus gives every series of the scrape target (`instance` is the target's
/// address, `job` its scrape job's name).
const TARGET: [(&str, &str); 2] = [("instance", "127.0.0.1:9464"), ("job", "loan-service")];
/// The registry's `application` tag, which the percentile, retry and bulkhead panels filter on.
const APPLICATION: &str = "loan-service";

/// A breaker name the text format must escape (a quote and a backslash): it travels through the
/// exporter, the parser and the dashboard's regex matchers intact.
const ESCAPED_NAME: &str = r#"legacy "SOAP" \ gateway"#;

// ---------------------------------------------------------------------------------------------
// The traffic

/// A registry under traffic, exported to a recorder of its own; the bulkhead permits held
/// keep its bulkhead under load while it lives.
struct Loaded {
    handle: PrometheusHandle,
    _held: Vec<OwnedBulkheadPermit>,
}

/// Count-based windows of 4 calls, OPEN after 2 failures of 4, 10 s in OPEN, 2 trial calls.
fn config() -> Config {
    Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(10))
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap()
}

/// Three attempts, no wait, no budget.
fn attempts() -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::ZERO)
        .budget_enabled(false)
        .build()
        .unwrap()
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// The breakers, by name, with the state each is left in.
const BREAKERS: [(&str, State); 7] = [
    ("inventory", State::Closed),
    (ESCAPED_NAME, State::Closed),
    ("creditBureau", State::Open),
    ("pricing", State::HalfOpen),
    ("ledger", State::ForcedOpen),
    ("audit", State::Disabled),
    ("reports", State::MetricsOnly),
];
const RETRIES: [&str; 2] = ["pricing", "creditBureau"];
const BULKHEADS: [(&str, u32, usize); 2] = [("creditBureau", 4, 3), ("inventory", 10, 0)];

/// Runs the traffic on a registry exported to a recorder from `recorder`.
fn loaded(recorder: PrometheusBuilder) -> Loaded {
    let clock = ManualClock::new();
    let mut builder = Registry::builder()
        .clock(clock.clone())
        .tag("application", APPLICATION)
        .unwrap()
        .default_config(config());
    for (name, max, _) in BULKHEADS {
        let limit = BulkheadConfig::builder()
            .max_concurrent_calls(max)
            .build()
            .unwrap();
        builder = builder.bulkhead_instance(name, limit);
    }
    for name in RETRIES {
        builder = builder.retry_instance(name, attempts());
    }
    let registry = builder.build();
    let recorder = recorder.build_recorder();
    let handle = recorder.handle();
    MetricsExport::install_with_recorder(&registry, Arc::new(recorder));

    let record = |name: &str, calls: &[(Outcome, u64)]| {
        let breaker = registry.breaker(name);
        for &(outcome, ms) in calls {
            breaker.try_acquire().unwrap().record(outcome, millis(ms));
        }
        breaker
    };
    let (success, failure, ignored) = (Outcome::Success, Outcome::Failure, Outcome::Ignored);

    // HALF_OPEN: opened by failures, then a trial call once the wait is over (one trial left).
    let pricing = record(
        "pricing",
        &[
            (failure, 900),
            (failure, 2_500),
            (success, 30),
            (failure, 4_000),
        ],
    );
    assert_eq!(pricing.state(), State::Open);
    clock.advance(Duration::from_secs(11));
    record("pricing", &[(success, 7)]);
    assert_eq!(pricing.state(), State::HalfOpen);

    // CLOSED, with calls of all three recorded kinds across the buckets.
    let inventory = record(
        "inventory",
        &[
            (success, 3),
            (success, 40),
            (failure, 200),
            (ignored, 1_200),
            (success, 8),
        ],
    );
    assert_eq!(inventory.state(), State::Closed);
    record(ESCAPED_NAME, &[(success, 12), (ignored, 60)]);

    // OPEN, refusing calls.
    let bureau = record("creditBureau", &[(failure, 2_000); 4]);
    assert_eq!(bureau.state(), State::Open);
    for _ in 0..3 {
        assert!(bureau.try_acquire().is_err());
    }

    // FORCED_OPEN (refusing), DISABLED and METRICS_ONLY, moved by hand.
    let ledger = record("ledger", &[(success, 15)]);
    ledger.transition_to(State::ForcedOpen).unwrap();
    assert!(ledger.try_acquire().is_err());
    record("audit", &[(success, 5)])
        .transition_to(State::Disabled)
        .unwrap();
    record("reports", &[(success, 5)])
        .transition_to(State::MetricsOnly)
        .unwrap();
    record("reports", &[(failure, 350)]);
    for (name, state) in BREAKERS {
        assert_eq!(registry.breaker(name).state(), state, "{name}");
    }

    // Retries of every outcome: at once, after retries, failed without retry (an error the
    // retry ignores), failed after every attempt.
    let retry = registry.retry("pricing");
    let _ = retry.call_sync(|| Ok::<_, &str>(()));
    let mut attempt = 0;
    let _ = retry.call_sync(|| {
        attempt += 1;
        if attempt < 3 {
            Err("busy")
        } else {
            Ok(())
        }
    });
    let ignore_all = Classifier::new().ignore(|_: &&str| true);
    let _ = retry.call_sync_with(&ignore_all, || Err::<(), _>("bad request"));
    let _ = retry.call_sync(|| Err::<(), _>("down"));
    let _ = registry
        .retry("creditBureau")
        .call_sync(|| Err::<(), _>("down"));

    // The bulkheads under load: permits held while the scrape is read.
    let mut held = Vec::new();
    for (name, _, busy) in BULKHEADS {
        let bulkhead = registry.bulkhead(name);
        for _ in 0..busy {
            held.push(bulkhead.try_acquire_owned().unwrap());
        }
    }

    // The export's own refresh writes the retries' and bulkheads' series.
    clock.advance(MetricsExport::REFRESH_INTERVAL);
    Loaded {
        handle,
        _held: held,
    }
}

/// The recorder with the call timer's buckets, as README.md shows it.
fn with_buckets() -> PrometheusBuilder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(MetricsExport::CALLS.to_owned()), &BUCKETS)
        .unwrap()
}

/// The scrape's samples, each with the target's labels, as Prometheus stores them.
fn scraped(text: &str) -> Vec<Sample> {
    let scrape = exposition::parse(text).unwrap_or_else(|e| panic!("{e} in the scrape:\n{text}"));
    scrape
        .samples
        .into_iter()
        .map(|mut sample| {
            for (label, value) in TARGET {
                sample.labels.insert(label.to_owned(), value.to_owned());
            }
            sample
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The tests

#[test]
fn every_panel_of_resilience4js_dashboard_finds_its_series() {
    let loaded = loaded(with_buckets());
    let text = loaded.handle.render();
    let samples = scraped(&text);
    let dashboard = Dashboard::parse(FIXTURE).unwrap_or_else(|e| panic!("{e}"));

    // The variables list what the registry holds, as Grafana's drop-downs would.
    let values = dashboard.variable_values(&samples);
    let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(values["application"], names(&[APPLICATION]));
    assert_eq!(values["instance"], names(&[TARGET[0].1]));
    assert_eq!(
        values["circuitbreaker_name"],
        names(&BREAKERS.map(|(n, _)| n))
    );
    assert_eq!(values["retry_name"], names(&RETRIES));
    assert_eq!(
        values["bulkhead_name"],
        names(&BULKHEADS.map(|(n, _, _)| n))
    );

    let problems = dashboard.problems(&samples);
    assert!(
        problems.is_empty(),
        "{} selector(s) of the dashboard find nothing:\n{}\nin the scrape:\n{text}",
        problems.len(),
        problems.join("\n")
    );

    // The summary row's numbers: sum() over the state gauges.
    let sum = |selector: &str| -> f64 { select(&samples, selector).map(|s| s.value).sum() };
    assert_eq!(
        sum(r#"resilience4j_circuitbreaker_state{state="closed"}"#),
        2.0
    );
    assert_eq!(
        sum(r#"resilience4j_circuitbreaker_state{state=~"open|forced_open"}"#),
        2.0
    );
    assert_eq!(
        sum(r#"resilience4j_circuitbreaker_state{state="half_open"}"#),
        1.0
    );

    // The bulkhead under load: 3 of its 4 places taken.
    let bulkhead = |metric: &str| sum(&format!(r#"{metric}{{name="creditBureau"}}"#));
    assert_eq!(
        bulkhead("resilience4j_bulkhead_max_allowed_concurrent_calls"),
        4.0
    );
    assert_eq!(
        bulkhead("resilience4j_bulkhead_available_concurrent_calls"),
        1.0
    );

    // One retry call of each kind.
    for kind in [
        "successful_without_retry",
        "successful_with_retry",
        "failed_without_retry",
        "failed_with_retry",
    ] {
        let selector = format!(r#"resilience4j_retry_calls_total{{name="pricing",kind="{kind}"}}"#);
        assert_eq!(sum(&selector), 1.0, "{selector}");
    }

    assert_buckets_make_histograms(&samples);
}

/// Every `_bucket` series group (one breaker, one kind) is a histogram `histogram_quantile`
/// can read: the configured bounds and `+Inf`, cumulative counts, `+Inf` equal to `_count`.
fn assert_buckets_make_histograms(samples: &[Sample]) {
    let mut groups: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for sample in select(samples, "resilience4j_circuitbreaker_calls_seconds_bucket") {
        let bound = match sample.label("le") {
            "+Inf" => f64::INFINITY,
            le => le.parse().unwrap_or_else(|_| panic!("bad le in {sample}")),
        };
        let group = (
            sample.label("name").to_owned(),
            sample.label("kind").to_owned(),
        );
        groups.entry(group).or_default().push((bound, sample.value));
    }
    assert_eq!(groups.len(), BREAKERS.len() * 3, "{groups:?}");
    let mut bounds: Vec<f64> = BUCKETS.to_vec();
    bounds.push(f64::INFINITY);
    let mut recorded = 0.0;
    for ((name, kind), mut buckets) in groups {
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(
            buckets.iter().map(|b| b.0).collect::<Vec<_>>(),
            bounds,
            "{name} {kind}"
        );
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "{name} {kind}: {buckets:?}"
        );
        let count = format!(
            r#"resilience4j_circuitbreaker_calls_seconds_count{{name="{}",kind="{kind}"}}"#,
            name.replace('\\', r"\\").replace('"', "\\\"")
        );
        let count: Vec<f64> = select(samples, &count).map(|s| s.value).collect();
        assert_eq!(count, [buckets[buckets.len() - 1].1], "{name} {kind}");
        recorded += count[0];
    }
    assert_eq!(recorded, 20.0, "every recorded call is in a bucket");
}

/// With the recorder's default (a summary per histogram), the dashboard loses exactly its
/// percentile panel, once for each breaker its row repeats over; the message names the panel
/// and the selector.
#[test]
fn without_buckets_only_the_percentile_panel_goes_blank() {
    let loaded = loaded(PrometheusBuilder::new());
    let samples = scraped(&loaded.handle.render());
    let dashboard = Dashboard::parse(FIXTURE).unwrap_or_else(|e| panic!("{e}"));
    let problems = dashboard.problems(&samples);
    assert_eq!(problems.len(), BREAKERS.len(), "{problems:#?}");
    for problem in &problems {
        assert!(
            problem.contains("panel `CircuitBreaker / Call duration percentiles`")
                && problem.contains("resilience4j_circuitbreaker_calls_seconds_bucket{")
                && problem.contains("finds no series"),
            "{problem}"
        );
    }
    assert!(
        select(
            &samples,
            r#"resilience4j_circuitbreaker_calls_seconds{quantile="0.99"}"#
        )
        .next()
        .is_some(),
        "the default renders a summary"
    );
}

/// `promtool check metrics` (Prometheus's own linter, from Debian's `prometheus` package) finds
/// nothing in the scrape: HELP on every family, `_total` on every counter and only there, no
/// reserved suffix or label misused, valid syntax.
#[test]
fn promtool_check_metrics_is_clean_on_the_scrape() {
    let loaded = loaded(with_buckets());
    let text = loaded.handle.render();
    let (status, out) = match promtool_check_metrics(&text) {
        Ok(result) => result,
        Err(e) if e.kind() == io::ErrorKind::NotFound => panic!(
            "promtool is not installed: `apt-get install -y --no-install-recommends prometheus` \
             (Debian's package ships /usr/bin/promtool; scripts/test.sh installs it)"
        ),
        Err(e) => panic!("running promtool: {e}"),
    };
    assert!(
        status && out.trim().is_empty(),
        "promtool check metrics:\n{out}\non:\n{text}"
    );

    // The linter does speak up: a counter without `_total` is reported.
    let (status, out) =
        promtool_check_metrics("# HELP calls Calls.\n# TYPE calls counter\ncalls 1\n").unwrap();
    assert!(!status && out.contains("_total"), "{out}");
}

/// Runs `promtool check metrics` on `text`: whether it passed, and what it printed.
fn promtool_check_metrics(text: &str) -> io::Result<(bool, String)> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())?;
    let output = child.wait_with_output()?;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok((output.status.success(), printed))
}

#[test]
fn the_fixture_reader_names_the_line_and_what_is_wrong() {
    for (text, wanted) in [
        ("panel A / B\n    nothing{", "line 2: "),
        ("    up\n", "line 1: a selector outside a panel"),
        (
            "panel A / B\n    up{job=~\"$nope\"}\n",
            "line 2: unknown variable `$nope`",
        ),
        ("panel A / B\n    up{job~\"x\"}\n", "line 2: "),
        ("panel A / B\n    up by job\n", "line 2: "),
        (
            "panel A / B\n    absent up\n",
            "line 2: `because` and a reason expected",
        ),
        ("variable v = label_values(up)\n", "line 1: "),
        ("frobnicate\n", "line 1: "),
    ] {
        let error = Dashboard::parse(text)
            .err()
            .unwrap_or_else(|| panic!("{text:?} parsed"));
        assert!(error.contains(FIXTURE_PATH), "{error}");
        assert!(error.contains(wanted), "{text:?}: {error}");
    }
}

// ---------------------------------------------------------------------------------------------
// The dashboard's fixture

/// The dashboard: its template variables and its panels.
struct Dashboard {
    variables: Vec<Variable>,
    panels: Vec<Panel>,
}

/// `variable NAME = label_values(SELECTOR, LABEL)`.
struct Variable {
    name: String,
    selector: Selector,
    label: String,
}

struct Panel {
    title: String,
    checks: Vec<Check>,
}

/// One selector of a panel, and what it must find.
struct Check {
    line: usize,
    written: String,
    selector: Selector,
    expect: Expect,
}

enum Expect {
    /// At least one series, and one for each of these values of the label, if any.
    Series(Option<(String, Vec<String>)>),
    /// No series, for the reason given.
    Absent(String),
}

impl Dashboard {
    /// Reads the fixture's text; an error names the file, the line and what is wrong.
    fn parse(text: &str) -> Result<Dashboard, String> {
        let mut dashboard = Dashboard {
            variables: Vec::new(),
            panels: Vec::new(),
        };
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            dashboard
                .line(raw, line)
                .map_err(|e| format!("{FIXTURE_PATH}: line {line}: {e}"))?;
        }
        Ok(dashboard)
    }

    fn line(&mut self, raw: &str, line: usize) -> Result<(), String> {
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        if raw.starts_with(' ') {
            let Some(panel) = self.panels.last_mut() else {
                return Err("a selector outside a panel".to_owned());
            };
            let check = Check::parse(text, line, &self.variables)?;
            panel.checks.push(check);
        } else if let Some(title) = text.strip_prefix("panel ") {
            self.panels.push(Panel {
                title: title.trim().to_owned(),
                checks: Vec::new(),
            });
        } else if let Some(rest) = text.strip_prefix("variable ") {
            let (name, query) = rest
                .split_once('=')
                .ok_or("`variable NAME = label_values(SELECTOR, LABEL)` expected")?;
            let args = query
                .trim()
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .ok_or("`label_values(SELECTOR, LABEL)` expected")?;
            let (selector, rest) = Selector::parse(args)?;
            let label = rest
                .trim()
                .strip_prefix(',')
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .ok_or("`, LABEL` expected after the selector")?;
            self.variables.push(Variable {
                name: name.trim().to_owned(),
                selector,
                label: label.to_owned(),
            });
        } else {
            return Err(format!(
                "`panel`, `variable` or an indented selector expected, not `{text}`"
            ));
        }
        Ok(())
    }

    /// Each variable's values in `samples`, as Grafana's `label_values` lists them.
    fn variable_values(&self, samples: &[Sample]) -> BTreeMap<String, BTreeSet<String>> {
        self.variables
            .iter()
            .map(|v| {
                let bound = v.selector.bind(&BTreeMap::new()).expect("no variables");
                let values = bound
                    .select(samples)
                    .map(|s| s.label(&v.label).to_owned())
                    .filter(|value| !value.is_empty())
                    .collect();
                (v.name.clone(), values)
            })
            .collect()
    }

    /// What the dashboard misses in `samples`: one line per selector and variable binding that
    /// finds no series (or not each value its panel splits by), or that finds series where the
    /// fixture says it should find none.
    fn problems(&self, samples: &[Sample]) -> Vec<String> {
        let values = self.variable_values(samples);
        let mut problems = Vec::new();
        for variable in &self.variables {
            if values[&variable.name].is_empty() {
                problems.push(format!(
                    "variable `${}` has no values: no series has the label `{}`",
                    variable.name, variable.label
                ));
            }
        }
        for panel in &self.panels {
            for check in &panel.checks {
                for binding in bindings(&check.selector.variables(), &values) {
                    let bound = check.selector.bind(&binding).expect("checked when read");
                    let found: Vec<&Sample> = bound.select(samples).collect();
                    let at = format!(
                        "panel `{}` ({FIXTURE_PATH}: line {}): `{}`{}",
                        panel.title,
                        check.line,
                        check.written,
                        shown(&binding)
                    );
                    match &check.expect {
                        Expect::Series(_) if found.is_empty() => {
                            problems.push(format!("{at} finds no series"));
                        }
                        Expect::Series(Some((label, wanted))) => {
                            let have: BTreeSet<&str> =
                                found.iter().map(|s| s.label(label)).collect();
                            for value in wanted.iter().filter(|v| !have.contains(v.as_str())) {
                                problems
                                    .push(format!("{at} finds no series with {label}={value:?}"));
                            }
                        }
                        Expect::Series(None) => {}
                        Expect::Absent(why) => {
                            if let Some(sample) = found.first() {
                                problems.push(format!(
                                    "{at} finds {sample}, though the fixture says it finds nothing \
                                     because {why}"
                                ));
                            }
                        }
                    }
                }
            }
        }
        problems
    }
}

impl Check {
    /// `SELECTOR`, `SELECTOR by LABEL: V1 V2`, or `absent SELECTOR because WHY`.
    fn parse(text: &str, line: usize, variables: &[Variable]) -> Result<Check, String> {
        let (absent, text) = match text.strip_prefix("absent ") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (selector, rest) = Selector::parse(text)?;
        let written = text[..text.len() - rest.len()].trim().to_owned();
        for name in selector.variables() {
            if !variables.iter().any(|v| v.name == name) {
                return Err(format!("unknown variable `${name}`"));
            }
        }
        let rest = rest.trim();
        let expect = if absent {
            let why = rest
                .strip_prefix("because ")
                .filter(|why| !why.trim().is_empty())
                .ok_or("`because` and a reason expected after an absent selector")?;
            Expect::Absent(why.trim().to_owned())
        } else if rest.is_empty() {
            Expect::Series(None)
        } else {
            let (label, wanted) = rest
                .strip_prefix("by ")
                .and_then(|by| by.split_once(':'))
                .ok_or_else(|| format!("`by LABEL: VALUES` or nothing expected, not `{rest}`"))?;
            let wanted: Vec<String> = wanted.split_whitespace().map(str::to_owned).collect();
            if wanted.is_empty() {
                return Err(format!("no values after `by {label}:`"));
            }
            Expect::Series(Some((label.trim().to_owned(), wanted)))
        };
        Ok(Check {
            line,
            written,
            selector,
            expect,
        })
    }
}

/// Every assignment of values to `names`, each name taking each of its values in turn; one
/// empty assignment when there is no name.
fn bindings(
    names: &BTreeSet<String>,
    values: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<BTreeMap<String, String>> {
    let mut all = vec![BTreeMap::new()];
    for name in names {
        all = all
            .into_iter()
            .flat_map(|binding| {
                values[name].iter().map(move |value| {
                    let mut next = binding.clone();
                    next.insert(name.clone(), value.clone());
                    next
                })
            })
            .collect();
    }
    all
}

/// ` with $a="x", $b="y"`, or nothing for no variable.
fn shown(binding: &BTreeMap<String, String>) -> String {
    if binding.is_empty() {
        return String::new();
    }
    let values: Vec<String> = binding
        .iter()
        .map(|(name, value)| format!("${name}={value:?}"))
        .collect();
    format!(" with {}", values.join(", "))
}

/// The samples `selector` (a PromQL series selector without variables) finds.
fn select<'a>(samples: &'a [Sample], selector: &str) -> impl Iterator<Item = &'a Sample> {
    let (parsed, rest) = Selector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
    assert!(rest.trim().is_empty(), "{selector}: `{rest}` left over");
    let bound = parsed.bind(&BTreeMap::new()).unwrap();
    samples.iter().filter(move |s| bound.matches(s))
}

// ---------------------------------------------------------------------------------------------
// PromQL series selectors

/// `metric{label="value", label=~"regex", ...}`, the metric name as a `__name__` matcher;
/// values may hold Grafana variables (`$name` or `${name}`).
struct Selector {
    matchers: Vec<LabelMatcher>,
}

struct LabelMatcher {
    label: String,
    op: Op,
    value: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Equal,
    NotEqual,
    Matches,
    NotMatches,
}

/// A selector with its variables replaced and its regexes compiled.
struct Bound {
    matchers: Vec<(String, Test)>,
}

enum Test {
    Equal(String),
    NotEqual(String),
    Matches(Regex),
    NotMatches(Regex),
}

impl Selector {
    /// Reads a selector at the start of `text`; returns it and the text after it.
    fn parse(text: &str) -> Result<(Selector, &str), String> {
        let mut rest = text.trim_start();
        let mut matchers = Vec::new();
        let name_len = rest
            .char_indices()
            .find(|&(i, c)| {
                !(c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
            })
            .map_or(rest.len(), |(i, _)| i);
        if name_len > 0 {
            matchers.push(LabelMatcher {
                label: "__name__".to_owned(),
                op: Op::Equal,
                value: rest[..name_len].to_owned(),
            });
            rest = &rest[name_len..];
        }
        if let Some(inside) = rest.strip_prefix('{') {
            rest = inside;
            loop {
                rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix('}') {
                    rest = after;
                    break;
                }
                let label_len = rest
                    .char_indices()
                    .find(|&(i, c)| {
                        !(c.is_ascii_alphabetic() || c == '_' || (i > 0 && c.is_ascii_digit()))
                    })
                    .map_or(rest.len(), |(i, _)| i);
                if label_len == 0 {
                    return Err(format!("a label name or `}}` expected at `{rest}`"));
                }
                let label = rest[..label_len].to_owned();
                rest = rest[label_len..].trim_start();
                let (op, after) = [
                    ("=~", Op::Matches),
                    ("!~", Op::NotMatches),
                    ("!=", Op::NotEqual),
                    ("=", Op::Equal),
                ]
                .into_iter()
                .find_map(|(token, op)| rest.strip_prefix(token).map(|after| (op, after)))
                .ok_or_else(|| format!("`=`, `!=`, `=~` or `!~` expected after `{label}`"))?;
                let (value, after) = string_literal(after.trim_start())?;
                matchers.push(LabelMatcher { label, op, value });
                rest = after.trim_start();
                if let Some(after) = rest.strip_prefix(',') {
                    rest = after;
                } else if !rest.starts_with('}') {
                    return Err(format!("`,` or `}}` expected at `{rest}`"));
                }
            }
        } else if name_len == 0 {
            return Err(format!("a series selector expected at `{text}`"));
        }
        if matchers.is_empty() {
            return Err("a selector with no matcher".to_owned());
        }
        Ok((Selector { matchers }, rest))
    }

    /// The Grafana variables its values name.
    fn variables(&self) -> BTreeSet<String> {
        self.matchers
            .iter()
            .flat_map(|m| variables_in(&m.value))
            .collect()
    }

    /// With each variable replaced by its value in `binding` (regex-escaped in a regex, as
    /// Grafana escapes a multi-value variable's value), regexes compiled anchored at both
    /// ends, as PromQL's are.
    fn bind(&self, binding: &BTreeMap<String, String>) -> Result<Bound, String> {
        let mut matchers = Vec::new();
        for m in &self.matchers {
            let regex = matches!(m.op, Op::Matches | Op::NotMatches);
            let mut value = m.value.clone();
            for name in variables_in(&m.value) {
                let replacement = binding
                    .get(&name)
                    .ok_or_else(|| format!("no value for `${name}`"))?;
                let replacement = if regex {
                    regex_syntax::escape(replacement)
                } else {
                    replacement.clone()
                };
                value = value
                    .replace(&format!("${{{name}}}"), &replacement)
                    .replace(&format!("${name}"), &replacement);
            }
            let compile = |value: &str| {
                Regex::new(&format!("^(?:{value})$"))
                    .map_err(|e| format!("bad regex `{value}`: {e}"))
            };
            let test = match m.op {
                Op::Equal => Test::Equal(value),
                Op::NotEqual => Test::NotEqual(value),
                Op::Matches => Test::Matches(compile(&value)?),
                Op::NotMatches => Test::NotMatches(compile(&value)?),
            };
            matchers.push((m.label.clone(), test));
        }
        Ok(Bound { matchers })
    }
}

impl Bound {
    fn matches(&self, sample: &Sample) -> bool {
        self.matchers.iter().all(|(label, test)| {
            let value = sample.label(label);
            match test {
                Test::Equal(v) => value == v,
                Test::NotEqual(v) => value != v,
                Test::Matches(r) => r.is_match(value),
                Test::NotMatches(r) => !r.is_match(value),
            }
        })
    }

    fn select<'a>(&'a self, samples: &'a [Sample]) -> impl Iterator<Item = &'a Sample> + 'a {
        samples.iter().filter(|s| self.matches(s))
    }
}

/// The names of the variables in `text` (`$name` or `${name}`).
fn variables_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let braced = rest.starts_with('{');
        let start = usize::from(braced);
        let len = rest[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len() - start);
        if len > 0 {
            names.push(rest[start..start + len].to_owned());
        }
        rest = &rest[start + len..];
    }
    names
}

/// A PromQL string literal (double or single quotes; `\\`, `\"`, `\'`, `\n`, `\t` escapes) at
/// the start of `text`: its value and the text after it.
fn string_literal(text: &str) -> Result<(String, &str), String> {
    let quote = text
        .chars()
        .next()
        .filter(|&c| c == '"' || c == '\'')
        .ok_or_else(|| format!("a quoted string expected at `{text}`"))?;
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '\\')) => value.push('\\'),
                Some((_, '"')) => value.push('"'),
                Some((_, '\'')) => value.push('\''),
                Some((_, 'n')) => value.push('\n'),
                Some((_, 't')) => value.push('\t'),
                Some((_, other)) => return Err(format!("the unknown escape `\\{other}`")),
                None => break,
            },
            c if c == quote => return Ok((value, &text[i + 1..])),
            c => value.push(c),
        }
    }
    Err(format!("an unterminated string at `{text}`"))
}
