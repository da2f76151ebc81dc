//! The conformance runner's logic, shared by the `conformance` example and
//! `tests/conformance.rs`.
//!
//! [`run_scenario`] parses a scenario (`.scn`, `tests/conformance/FORMAT.md` sections 1-4),
//! drives a real [`CircuitBreaker`] through its public API on a [`ManualClock`], and returns the
//! trace (section 5). There is no state machine here: every state, rate, counter and transition
//! in the trace is read back from the breaker.

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use breaker::{
    CircuitBreaker, Config, EventKind, ManualClock, Outcome, Permit, Registry, SlidingWindowType,
    State,
};

/// Most permits the runner holds at once. `acquire K` accepts any 18-digit `K`, but every
/// granted permit is kept until it is recorded or released, so the runner refuses (as a
/// scenario error) an `acquire` that could take it past this many held permits, rather than
/// exhausting memory.
pub(crate) const MAX_HELD_PERMITS: u64 = 1_000_000;

/// The name of the one breaker a scenario drives.
const BREAKER_NAME: &str = "scenario";

/// Nanoseconds per millisecond: scenario times are whole milliseconds.
const NANOS_PER_MILLI: u64 = 1_000_000;

/// A malformed scenario: where, what, and the trace produced before the error was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ScenarioError {
    /// The 1-based line of the scenario file at fault.
    pub(crate) line: usize,
    /// What is wrong with it.
    pub(crate) message: String,
    /// The trace lines printed before the error (each `\n`-terminated; possibly empty).
    pub(crate) trace: String,
}

impl fmt::Display for ScenarioError {
    /// The oracle's error line: `ERROR line <n>: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR line {}: {}", self.line, self.message)
    }
}

impl Error for ScenarioError {}

/// Runs one scenario and returns its whole trace, one `\n`-terminated line per config line and
/// step, exactly as FORMAT.md section 5 prints it.
///
/// A malformed scenario gives a [`ScenarioError`] naming the first bad line, with the trace
/// lines produced before it. Never panics, whatever the input.
pub(crate) fn run_scenario(text: &str) -> Result<String, ScenarioError> {
    let mut trace = String::new();
    match drive(text, &mut trace) {
        Ok(()) => Ok(trace),
        Err(LineError { line, message }) => Err(ScenarioError {
            line,
            message,
            trace,
        }),
    }
}

/// An error found on one line, before the trace is attached.
struct LineError {
    line: usize,
    message: String,
}

impl LineError {
    /// An error on `line`. Control characters quoted from the scenario (a stray `\r` inside a
    /// token) are escaped, so that the message stays on one visible line.
    fn new(line: usize, message: impl Into<String>) -> LineError {
        let message: String = message.into();
        let message = if message.chars().any(char::is_control) {
            message
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_default().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        } else {
            message
        };
        LineError { line, message }
    }
}

/// A non-empty line of the scenario, split into tokens.
struct Line<'a> {
    /// 1-based line number in the file.
    number: usize,
    tokens: Vec<&'a str>,
}

/// The scenario's lines with comments and whitespace removed, skipping the empty ones
/// (FORMAT.md section 1).
fn lines(text: &str) -> impl Iterator<Item = Result<Line<'_>, LineError>> {
    text.split('\n').enumerate().filter_map(|(index, raw)| {
        let number = index + 1;
        if let Some(c) = raw.chars().find(|c| !c.is_ascii()) {
            return Some(Err(LineError::new(
                number,
                format!("non-ASCII character {c:?} (scenarios are ASCII text)"),
            )));
        }
        let code = raw.find('#').map_or(raw, |hash| &raw[..hash]);
        let code = code.trim_matches([' ', '\t', '\r']);
        if code.is_empty() {
            return None;
        }
        let tokens = code.split([' ', '\t']).filter(|t| !t.is_empty()).collect();
        Some(Ok(Line { number, tokens }))
    })
}

/// The line number of the last line of `text` (where a missing config line is reported).
fn last_line_number(text: &str) -> usize {
    text.strip_suffix('\n').unwrap_or(text).split('\n').count()
}

/// Parses the scenario line by line and runs each step as soon as it is parsed, appending to
/// `trace`, so that an error leaves the lines before it in the trace.
fn drive(text: &str, trace: &mut String) -> Result<(), LineError> {
    let mut lines = lines(text);
    let first = match lines.next() {
        Some(line) => line?,
        None => {
            return Err(LineError::new(
                last_line_number(text),
                "no `config` line: the first non-empty line must be `config key=value ...`",
            ))
        }
    };
    let config_line = ConfigLine::parse(&first)?;
    let config = config_line
        .build()
        .map_err(|message| LineError::new(first.number, message))?;

    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance(BREAKER_NAME, config)
        .build();
    let breaker = registry.breaker(BREAKER_NAME);
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let _subscription = {
        let sink = Arc::clone(&transitions);
        breaker.subscribe(move |event| {
            if let EventKind::StateTransition { from, to } = event.kind() {
                lock(&sink).push(format!("{from}>{to}"));
            }
        })
    };
    let mut run = Run {
        start: clock.now().unix_nanos(),
        clock,
        breaker: &breaker,
        held: VecDeque::new(),
        transitions,
    };
    run.print(trace, 0, &config_line.echo(), "ok");

    for (step_number, line) in (1u64..).zip(lines) {
        let line = line?;
        let step = Step::parse(&line, first.number)?;
        let outcome = run
            .execute(&step)
            .map_err(|message| LineError::new(line.number, message))?;
        run.print(trace, step_number, &step.to_string(), &outcome);
    }
    Ok(())
}

/// Locks `mutex`, ignoring poisoning (the runner never panics while holding it).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// Tokens

/// Parses an `INT`: `0|[1-9][0-9]*`, at most 18 digits.
fn parse_int(token: &str, what: &str) -> Result<u64, String> {
    let well_formed = !token.is_empty()
        && token.len() <= 18
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    if !well_formed {
        return Err(format!(
            "{what}: `{token}` is not an INT (0, or 1 to 18 digits without a leading zero)"
        ));
    }
    token
        .parse::<u64>()
        .map_err(|e| format!("{what}: `{token}` is not an INT ({e})"))
}

/// Parses an `INT` that must be at least 1.
fn parse_positive_int(token: &str, what: &str) -> Result<u64, String> {
    match parse_int(token, what)? {
        0 => Err(format!("{what}: must be at least 1, got 0")),
        n => Ok(n),
    }
}

/// Parses a `DEC`: `(0|[1-9][0-9]*)(\.[0-9]+)?`, rounded to the nearest binary32.
fn parse_dec(token: &str, what: &str) -> Result<f32, String> {
    let (whole, fraction) = match token.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (token, None),
    };
    let whole_ok = !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && (whole == "0" || !whole.starts_with('0'));
    let fraction_ok =
        fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    if !(whole_ok && fraction_ok) {
        return Err(format!(
            "{what}: `{token}` is not a DEC (digits without a leading zero, optionally `.digits`)"
        ));
    }
    token
        .parse::<f32>()
        .map_err(|e| format!("{what}: `{token}` is not a DEC ({e})"))
}

/// A whole number of milliseconds as a [`Duration`].
fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

// ---------------------------------------------------------------------------------------------
// The config line

/// The config keys in the order of FORMAT.md section 2's table, with their default text.
const KEYS: [(&str, &str); 11] = [
    ("window", "COUNT_BASED"),
    ("size", "100"),
    ("min", "100"),
    ("failure_rate", "50"),
    ("slow_rate", "100"),
    ("slow_ms", "60000"),
    ("wait_open_ms", "60000"),
    ("half_open_permits", "10"),
    ("auto_half_open", "false"),
    ("half_open_max_wait_ms", "0"),
    ("half_open_max_wait_to", "OPEN"),
];

/// The project's own config keys, beyond Resilience4j's oracle (tests/conformance/FORMAT.md
/// section 2b): exponential backoff of the wait in OPEN. Echoed on line 0 only when given, so
/// the oracle's traces are unchanged.
const BACKOFF_KEYS: [&str; 2] = ["backoff_multiplier", "backoff_max_ms"];

/// The config line: the text of every key's value, as written or the default.
struct ConfigLine<'a> {
    values: [&'a str; 11],
    /// `backoff_multiplier` and `backoff_max_ms`, if given.
    backoff: [Option<&'a str>; 2],
}

impl<'a> ConfigLine<'a> {
    /// Reads `config key=value ...`: known keys, each at most once. The values are checked by
    /// [`ConfigLine::build`].
    fn parse(line: &Line<'a>) -> Result<ConfigLine<'a>, LineError> {
        let error = |message: String| LineError::new(line.number, message);
        match line.tokens.first() {
            Some(&"config") => {}
            Some(other) => {
                return Err(error(format!(
                    "expected `config` on the first non-empty line, found `{other}`"
                )))
            }
            None => return Err(error("expected `config`".to_owned())),
        }
        let mut given: [Option<&'a str>; 11] = [None; 11];
        let mut backoff: [Option<&'a str>; 2] = [None; 2];
        for &token in &line.tokens[1..] {
            let Some((key, value)) = token.split_once('=') else {
                return Err(error(format!(
                    "config: `{token}` is not `key=value` (no spaces around `=`)"
                )));
            };
            let slot = if let Some(index) = KEYS.iter().position(|(name, _)| *name == key) {
                &mut given[index]
            } else if let Some(index) = BACKOFF_KEYS.iter().position(|name| *name == key) {
                &mut backoff[index]
            } else {
                return Err(error(format!("config: unknown key `{key}`")));
            };
            if slot.replace(value).is_some() {
                return Err(error(format!("config: key `{key}` given more than once")));
            }
        }
        let mut values = [""; 11];
        for ((slot, value), (_, default)) in values.iter_mut().zip(given).zip(KEYS) {
            *slot = value.unwrap_or(default);
        }
        Ok(ConfigLine { values, backoff })
    }

    /// The values, parsed and checked against FORMAT.md section 2.
    fn settings(&self) -> Result<Settings, String> {
        let [window, size, min, failure_rate, slow_rate, slow_ms, wait_open_ms, half_open_permits, auto_half_open, max_wait_ms, max_wait_to] =
            self.values;
        let window = match window {
            "COUNT_BASED" => SlidingWindowType::CountBased,
            "TIME_BASED" => SlidingWindowType::TimeBased,
            other => {
                return Err(format!(
                    "window: `{other}` is not COUNT_BASED or TIME_BASED"
                ))
            }
        };
        let auto_half_open = match auto_half_open {
            "true" => true,
            "false" => false,
            other => return Err(format!("auto_half_open: `{other}` is not true or false")),
        };
        let max_wait_to = match max_wait_to {
            "OPEN" => State::Open,
            "CLOSED" => State::Closed,
            other => {
                return Err(format!(
                    "half_open_max_wait_to: `{other}` is not OPEN or CLOSED"
                ))
            }
        };
        Ok(Settings {
            window,
            size: count("size", size)?,
            min: count("min", min)?,
            failure_rate: percent("failure_rate", failure_rate)?,
            slow_rate: percent("slow_rate", slow_rate)?,
            slow: millis(parse_positive_int(slow_ms, "slow_ms")?),
            wait_open: millis(parse_positive_int(wait_open_ms, "wait_open_ms")?),
            half_open_permits: count("half_open_permits", half_open_permits)?,
            auto_half_open,
            max_wait: millis(parse_int(max_wait_ms, "half_open_max_wait_ms")?),
            max_wait_to,
            backoff_multiplier: match self.backoff[0] {
                Some(token) => Some(f64::from(parse_dec(token, "backoff_multiplier")?)),
                None => None,
            },
            backoff_max: match self.backoff[1] {
                Some(token) => Some(millis(parse_positive_int(token, "backoff_max_ms")?)),
                None => None,
            },
        })
    }

    /// Builds the breaker's [`Config`]; values the builder rejects are errors too.
    fn build(&self) -> Result<Config, String> {
        let s = self.settings()?;
        Config::builder()
            .sliding_window_type(s.window)
            .sliding_window_size(s.size)
            .minimum_number_of_calls(s.min)
            .failure_rate_threshold(s.failure_rate)
            .slow_call_rate_threshold(s.slow_rate)
            .slow_call_duration_threshold(s.slow)
            .wait_duration_in_open_state(s.wait_open)
            .permitted_number_of_calls_in_half_open_state(s.half_open_permits)
            .automatic_transition_from_open_to_half_open_enabled(s.auto_half_open)
            .max_wait_duration_in_half_open_state(s.max_wait)
            .transition_to_state_after_wait_duration(s.max_wait_to)
            .enable_exponential_backoff(s.backoff_multiplier.is_some())
            .exponential_backoff_multiplier(s.backoff_multiplier.unwrap_or(1.5))
            .exponential_max_wait_duration_in_open_state(s.backoff_max)
            .build()
            .map_err(|e| format!("config: breaker rejects it: {e}"))
    }

    /// Line 0's echo: all 11 keys in table order, then the backoff keys that were given.
    fn echo(&self) -> String {
        let mut echo = String::from("config");
        let oracle = KEYS.iter().map(|(key, _)| *key).zip(self.values);
        let backoff = BACKOFF_KEYS
            .iter()
            .zip(self.backoff)
            .filter_map(|(key, value)| Some((*key, value?)));
        for (key, value) in oracle.chain(backoff) {
            echo.push(' ');
            echo.push_str(key);
            echo.push('=');
            echo.push_str(value);
        }
        echo
    }
}

/// The config values, parsed.
struct Settings {
    window: SlidingWindowType,
    size: u32,
    min: u32,
    failure_rate: f32,
    slow_rate: f32,
    slow: Duration,
    wait_open: Duration,
    half_open_permits: u32,
    auto_half_open: bool,
    max_wait: Duration,
    max_wait_to: State,
    backoff_multiplier: Option<f64>,
    backoff_max: Option<Duration>,
}

/// An `INT >= 1` that the breaker takes as a `u32`.
fn count(key: &str, token: &str) -> Result<u32, String> {
    let n = parse_positive_int(token, key)?;
    u32::try_from(n).map_err(|_| format!("{key}: {n} is too large (at most {})", u32::MAX))
}

/// A `DEC` with `0 < x <= 100` (checked on the binary32 value, as Resilience4j does).
fn percent(key: &str, token: &str) -> Result<f32, String> {
    let x = parse_dec(token, key)?;
    if x > 0.0 && x <= 100.0 {
        Ok(x)
    } else {
        Err(format!(
            "{key}: `{token}` is not a percentage with 0 < x <= 100"
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Steps

/// How a call ends in a `call` or `record` step.
#[derive(Clone, Copy)]
enum CallOutcome {
    Ok,
    Fail,
    Ignored,
}

impl CallOutcome {
    fn parse(token: &str) -> Result<CallOutcome, String> {
        match token {
            "ok" => Ok(CallOutcome::Ok),
            "fail" => Ok(CallOutcome::Fail),
            "ignored" => Ok(CallOutcome::Ignored),
            other => Err(format!("`{other}` is not an outcome (ok, fail, ignored)")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Fail => "fail",
            CallOutcome::Ignored => "ignored",
        }
    }

    fn outcome(self) -> Outcome {
        match self {
            CallOutcome::Ok => Outcome::Success,
            CallOutcome::Fail => Outcome::Failure,
            CallOutcome::Ignored => Outcome::Ignored,
        }
    }
}

/// One step (FORMAT.md section 4). Its `Display` is the canonical echo.
enum Step {
    Call(CallOutcome, u64),
    Acquire(u64),
    Record(CallOutcome, u64),
    Release,
    Advance(u64),
    Transition(State),
    Reset,
    Observe,
}

impl Step {
    /// Parses a step line; `config_line` is where the (only) config line was.
    fn parse(line: &Line<'_>, config_line: usize) -> Result<Step, LineError> {
        let error = |message: String| LineError::new(line.number, message);
        let (name, args) = match line.tokens.split_first() {
            Some((name, args)) => (*name, args),
            None => return Err(error("empty step".to_owned())),
        };
        let arity = |usage: &str, min: usize, max: usize| {
            if (min..=max).contains(&args.len()) {
                Ok(())
            } else {
                Err(error(format!(
                    "`{name}` takes {}; usage: {usage}",
                    match (min, max) {
                        (0, 0) => "no arguments".to_owned(),
                        (a, b) if a == b =>
                            format!("{a} argument{}", if a == 1 { "" } else { "s" }),
                        (a, b) => format!("{a} to {b} arguments"),
                    }
                )))
            }
        };
        let outcome_and_duration = |usage: &str| {
            arity(usage, 1, 2)?;
            let outcome = CallOutcome::parse(args[0]).map_err(|m| error(format!("{name}: {m}")))?;
            let duration = match args.get(1) {
                Some(d) => parse_int(d, &format!("{name} duration")).map_err(error)?,
                None => 0,
            };
            Ok((outcome, duration))
        };
        match name {
            "config" => Err(error(format!(
                "`config` may appear only once (it is on line {config_line})"
            ))),
            "call" => {
                let (outcome, d) = outcome_and_duration("call OUTCOME [D]")?;
                Ok(Step::Call(outcome, d))
            }
            "record" => {
                let (outcome, d) = outcome_and_duration("record OUTCOME [D]")?;
                Ok(Step::Record(outcome, d))
            }
            "acquire" => {
                arity("acquire K", 1, 1)?;
                Ok(Step::Acquire(
                    parse_positive_int(args[0], "acquire K").map_err(error)?,
                ))
            }
            "advance" => {
                arity("advance N", 1, 1)?;
                Ok(Step::Advance(
                    parse_int(args[0], "advance N").map_err(error)?,
                ))
            }
            "transition" => {
                arity("transition STATE", 1, 1)?;
                match State::from_name(args[0]) {
                    Some(state) => Ok(Step::Transition(state)),
                    None => Err(error(format!(
                        "transition: `{}` is not a state (CLOSED, OPEN, HALF_OPEN, FORCED_OPEN, \
                         DISABLED, METRICS_ONLY)",
                        args[0]
                    ))),
                }
            }
            "release" => arity("release", 0, 0).map(|()| Step::Release),
            "reset" => arity("reset", 0, 0).map(|()| Step::Reset),
            "observe" => arity("observe", 0, 0).map(|()| Step::Observe),
            other => Err(error(format!(
                "unknown step `{other}` (call, acquire, record, release, advance, transition, \
                 reset, observe)"
            ))),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Call(outcome, d) => write!(f, "call {} {d}", outcome.as_str()),
            Step::Acquire(k) => write!(f, "acquire {k}"),
            Step::Record(outcome, d) => write!(f, "record {} {d}", outcome.as_str()),
            Step::Release => f.write_str("release"),
            Step::Advance(n) => write!(f, "advance {n}"),
            Step::Transition(state) => write!(f, "transition {state}"),
            Step::Reset => f.write_str("reset"),
            Step::Observe => f.write_str("observe"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Driving the breaker

/// The breaker under test and what the runner keeps around it.
struct Run<'b> {
    clock: ManualClock,
    /// The clock at scenario time 0, in Unix nanoseconds.
    start: u64,
    breaker: &'b CircuitBreaker,
    /// Held permits, oldest first: `record` and `release` complete the oldest.
    held: VecDeque<Permit<'b>>,
    /// `FROM>TO` of every state-transition event since the last step's line was printed.
    transitions: Arc<Mutex<Vec<String>>>,
}

impl Run<'_> {
    /// Runs one step and returns its outcome token, or a message if the step cannot run.
    fn execute(&mut self, step: &Step) -> Result<String, String> {
        let outcome = match *step {
            Step::Call(outcome, d) => match self.breaker.try_acquire() {
                Ok(permit) => {
                    permit.record(outcome.outcome(), millis(d));
                    "permitted".to_owned()
                }
                Err(_) => "not_permitted".to_owned(),
            },
            Step::Acquire(k) => {
                let held = self.held.len() as u64;
                if k > MAX_HELD_PERMITS.saturating_sub(held) {
                    return Err(format!(
                        "acquire {k}: with {held} permits held, this could hold more than \
                         {MAX_HELD_PERMITS} permits (a limit of this runner)"
                    ));
                }
                let mut granted = 0u64;
                for _ in 0..k {
                    if let Ok(permit) = self.breaker.try_acquire() {
                        self.held.push_back(permit);
                        granted += 1;
                    }
                }
                format!("granted={granted}/{k}")
            }
            Step::Record(outcome, d) => {
                let permit = self
                    .held
                    .pop_front()
                    .ok_or("record: no held permit (held=0)")?;
                permit.record(outcome.outcome(), millis(d));
                "recorded".to_owned()
            }
            Step::Release => {
                let permit = self
                    .held
                    .pop_front()
                    .ok_or("release: no held permit (held=0)")?;
                permit.release();
                "released".to_owned()
            }
            Step::Advance(n) => {
                let now = self.clock.now().unix_nanos();
                let reachable = n
                    .checked_mul(NANOS_PER_MILLI)
                    .and_then(|nanos| now.checked_add(nanos))
                    .is_some();
                if !reachable {
                    return Err(format!(
                        "advance {n}: the breaker's clock (u64 nanoseconds since 1970) cannot \
                         go that far (a limit of this runner)"
                    ));
                }
                self.clock.advance(millis(n));
                "advanced".to_owned()
            }
            Step::Transition(state) => match self.breaker.transition_to(state) {
                Ok(()) => "ok".to_owned(),
                Err(_) => "illegal".to_owned(),
            },
            Step::Reset => {
                self.breaker.reset();
                "ok".to_owned()
            }
            Step::Observe => "ok".to_owned(),
        };
        Ok(outcome)
    }

    /// Appends one trace line: the step, its outcome, and the status read now.
    fn print(&self, trace: &mut String, number: u64, echo: &str, outcome: &str) {
        use std::fmt::Write as _;

        let t = self.clock.now().unix_nanos().saturating_sub(self.start) / NANOS_PER_MILLI;
        let m = self.breaker.metrics();
        let transitions = {
            let mut list = lock(&self.transitions);
            let joined = if list.is_empty() {
                "-".to_owned()
            } else {
                list.join(",")
            };
            list.clear();
            joined
        };
        // Writing to a String cannot fail.
        let _ = writeln!(
            trace,
            "{number} t={t} {echo} -> {outcome} | state={} fr={} sr={} buf={} fail={} slow={} \
             notp={} held={} tr={transitions}",
            m.state.as_str(),
            rate(m.failure_rate),
            rate(m.slow_call_rate),
            m.buffered_calls,
            m.failed_calls,
            m.slow_calls,
            m.not_permitted_calls,
            self.held.len(),
        );
    }
}

/// A rate as the trace prints it: `-1.00` when not computed, else two decimals, half to even
/// on the exact binary32 value.
fn rate(rate: Option<f32>) -> String {
    match rate {
        Some(x) => format!("{x:.2}"),
        None => "-1.00".to_owned(),
    }
}
