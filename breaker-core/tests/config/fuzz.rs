//! Fuzzing the two configuration parsers with proptest: whatever the bytes, loading returns a
//! registry or an error (never a panic), an error names a line that exists, and valid
//! configurations written in either format load into the same, expected `Config`.
//!
//! How long parsing takes is not asserted here (a test asserts behaviour, not speed): the bench
//! `config_parse` prints the parse time per input size, where a parser that goes quadratic
//! shows (`cargo bench -p breaker-bench --bench config_parse`).
//!
//! CI runs proptest's default number of cases (a few seconds). A long run by hand:
//!
//! ```sh
//! PROPTEST_CASES=200000 cargo test --release -p breaker-core --test config -- fuzz::
//! ```

use std::time::Duration;

use breaker_core::{Config, ErrorKind, Format, Registry, SlidingWindowType, State};
use proptest::prelude::*;

fn builder() -> breaker_core::RegistryBuilder {
    Registry::builder()
        .error_kind(ErrorKind::of_type::<std::io::Error>("A"))
        .error_kind(ErrorKind::of_type::<std::io::Error>("B"))
}

/// Loads `bytes` in `format` and checks what came back.
fn check(format: Format, bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Err(err) = builder().load_bytes(format, "fuzz", bytes) {
        let text = err.to_string();
        prop_assert!(text.starts_with("fuzz"), "{text}");
        if let Some(line) = err.line() {
            let lines = line_count(format, bytes);
            prop_assert!(
                line >= 1 && line as usize <= lines,
                "line {line} of {lines}: {text}"
            );
        }
    }
    Ok(())
}

/// Lines as each format counts them: TOML breaks at `\n` (`\r\n` included); `.properties`
/// also at a lone `\r`, as `java.util.Properties` does.
fn line_count(format: Format, bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|b| **b == b'\n').count();
    match format {
        Format::Toml => newlines + 1,
        _ => {
            let lone_cr = bytes
                .iter()
                .enumerate()
                .filter(|(i, b)| **b == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
                .count();
            newlines + lone_cr + 1
        }
    }
}

fn both(bytes: &[u8]) -> Result<(), TestCaseError> {
    check(Format::Toml, bytes)?;
    check(Format::Properties, bytes)
}

/// Pieces of real configuration, so that random inputs get past the first character.
const FRAGMENTS: &[&str] = &[
    "resilience4j.",
    "circuitbreaker.",
    "circuit-breaker.",
    "resilience4j.circuitbreaker.instances.svc.",
    "resilience4j.circuitbreaker.configs.default.",
    "instances.",
    "configs.",
    "backends.",
    "svc",
    "default",
    "[",
    "]",
    "[[",
    "]]",
    "[0]",
    "[99999999999999999999]",
    ".",
    "..",
    "=",
    ":",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\\",
    "\\\n",
    "\\u00",
    "\\uD83D",
    "\\uDE00",
    "#",
    "!",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    "{",
    "}",
    ",",
    "sliding-window-size",
    "slidingWindowType",
    "minimum_number_of_calls",
    "failure-rate-threshold",
    "slow-call-duration-threshold",
    "wait-duration-in-open-state",
    "permitted-number-of-calls-in-half-open-state",
    "automatic-transition-from-open-to-half-open-enabled",
    "transition-to-state-after-wait-duration",
    "timeout-duration",
    "record-exceptions",
    "ignore-exceptions",
    "base-config",
    "register-health-indicator",
    "10",
    "0",
    "-1",
    "150",
    "62.5",
    "1e309",
    "nan",
    "inf",
    "4294967296",
    "10s",
    "500ms",
    "2m",
    "PT",
    "PT1.5S",
    "P1DT",
    "99999999999999999999d",
    "COUNT_BASED",
    "time-based",
    "OPEN",
    "true",
    "yes",
    "A",
    "B,A",
    "C",
    "1979-05-27T07:32:00Z",
    "[instances.svc]\n",
    "[configs.a]\n",
    "[configs.b]\n",
    "base-config = \"a\"\n",
    "base-config = \"b\"\n",
    "[resilience4j.circuitbreaker.instances.x]\n",
    "é",
    "\u{0}",
];

fn fragments() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..64).prop_map(|v| v.concat())
}

// ---------------------------------------------------------------------------------------------
// Valid configurations: the same values in both formats give the same config.

#[derive(Clone, Debug)]
struct Valid {
    time_based: bool,
    size: u32,
    minimum: u32,
    failure: u8,
    slow_rate: u8,
    slow_ms: u64,
    wait_s: u64,
    permits: u32,
    automatic: bool,
    max_wait_ms: u64,
    to_closed: bool,
    timeout_ms: Option<u64>,
    record: Vec<&'static str>,
}

fn valid() -> impl Strategy<Value = Valid> {
    (
        (
            any::<bool>(),
            1..=3600u32,
            1..=5000u32,
            1..=100u8,
            1..=100u8,
        ),
        (1..=100_000u64, 1..=86_400u64, 1..=1000u32, any::<bool>()),
        (
            0..=100_000u64,
            any::<bool>(),
            proptest::option::of(1..=60_000u64),
        ),
        prop::collection::vec(prop::sample::select(&["A", "B"][..]), 0..3),
    )
        .prop_map(
            |(
                (time_based, size, minimum, failure, slow_rate),
                (slow_ms, wait_s, permits, automatic),
                (max_wait_ms, to_closed, timeout_ms),
                record,
            )| Valid {
                time_based,
                size,
                minimum,
                failure,
                slow_rate,
                slow_ms,
                wait_s,
                permits,
                automatic,
                max_wait_ms,
                to_closed,
                timeout_ms,
                record,
            },
        )
}

impl Valid {
    fn window(&self) -> &'static str {
        if self.time_based {
            "TIME_BASED"
        } else {
            "COUNT_BASED"
        }
    }

    fn state(&self) -> &'static str {
        if self.to_closed {
            "CLOSED"
        } else {
            "OPEN"
        }
    }

    fn toml(&self) -> String {
        let mut t = format!(
            "[instances.\"svc.x\"]\nsliding-window-type = \"{}\"\nsliding-window-size = {}\n\
             minimumNumberOfCalls = {}\nfailure-rate-threshold = {}\nslow_call_rate_threshold = {}.0\n\
             slow-call-duration-threshold = \"{}ms\"\nwait-duration-in-open-state = \"PT{}S\"\n\
             permitted-number-of-calls-in-half-open-state = {}\n\
             automatic-transition-from-open-to-half-open-enabled = {}\n\
             max-wait-duration-in-half-open-state = {}\n\
             transition-to-state-after-wait-duration = \"{}\"\nrecord-exceptions = [{}]\n",
            self.window(),
            self.size,
            self.minimum,
            self.failure,
            self.slow_rate,
            self.slow_ms,
            self.wait_s,
            self.permits,
            self.automatic,
            self.max_wait_ms,
            self.state(),
            self.record
                .iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if let Some(ms) = self.timeout_ms {
            t.push_str(&format!("timeout-duration = \"{ms}ms\"\n"));
        }
        t
    }

    fn properties(&self) -> String {
        let p = "resilience4j.circuitbreaker.instances.[svc.x].";
        let mut t = format!(
            "{p}sliding-window-type={}\n{p}slidingWindowSize = {}\n{p}minimum-number-of-calls: {}\n\
             {p}failure-rate-threshold={}\n{p}slow-call-rate-threshold={}\n\
             {p}slow-call-duration-threshold={}\n{p}wait-duration-in-open-state={}s\n\
             {p}permitted-number-of-calls-in-half-open-state={}\n\
             {p}automatic-transition-from-open-to-half-open-enabled={}\n\
             {p}max-wait-duration-in-half-open-state={}ms\n\
             {p}transition-to-state-after-wait-duration={}\n{p}record-exceptions={}\n",
            self.window().to_lowercase(),
            self.size,
            self.minimum,
            self.failure,
            self.slow_rate,
            self.slow_ms,
            self.wait_s,
            self.permits,
            self.automatic,
            self.max_wait_ms,
            self.state(),
            self.record.join(","),
        );
        if let Some(ms) = self.timeout_ms {
            t.push_str(&format!(
                "{p}timeout-duration=PT{}.{:03}S\n",
                ms / 1000,
                ms % 1000
            ));
        }
        t
    }

    fn config(&self, kinds: &[ErrorKind]) -> Config {
        let kind = |name: &str| kinds.iter().find(|k| k.name() == name).cloned().unwrap();
        Config::builder()
            .sliding_window_type(if self.time_based {
                SlidingWindowType::TimeBased
            } else {
                SlidingWindowType::CountBased
            })
            .sliding_window_size(self.size)
            .minimum_number_of_calls(self.minimum)
            .failure_rate_threshold(f32::from(self.failure))
            .slow_call_rate_threshold(f32::from(self.slow_rate))
            .slow_call_duration_threshold(Duration::from_millis(self.slow_ms))
            .wait_duration_in_open_state(Duration::from_secs(self.wait_s))
            .permitted_number_of_calls_in_half_open_state(self.permits)
            .automatic_transition_from_open_to_half_open_enabled(self.automatic)
            .max_wait_duration_in_half_open_state(Duration::from_millis(self.max_wait_ms))
            .transition_to_state_after_wait_duration(if self.to_closed {
                State::Closed
            } else {
                State::Open
            })
            .timeout_duration(self.timeout_ms.map(Duration::from_millis))
            .record_exceptions(self.record.iter().map(|n| kind(n)))
            .build()
            .unwrap()
    }
}

proptest! {
    // Failures print their minimal input; no regression files are written into the tree.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_load_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        both(&bytes)?;
    }

    #[test]
    fn arbitrary_text_loads_or_fails_cleanly(text in any::<String>()) {
        both(text.as_bytes())?;
    }

    #[test]
    fn config_like_text_loads_or_fails_cleanly(text in fragments()) {
        both(text.as_bytes())?;
        // And the same inside a properties line, past the prefix.
        let line = format!("resilience4j.circuitbreaker.instances.svc.{text}");
        check(Format::Properties, line.as_bytes())?;
    }

    #[test]
    fn valid_configs_load_the_same_in_both_formats(v in valid()) {
        let a = ErrorKind::of_type::<std::io::Error>("A");
        let b = ErrorKind::of_type::<std::io::Error>("B");
        let kinds = [a.clone(), b.clone()];
        let load = |format, text: &str| {
            Registry::builder()
                .error_kind(a.clone())
                .error_kind(b.clone())
                .load_str(format, "valid", text)
                .map(|b| b.build())
        };
        let expected = v.config(&kinds);
        let toml = load(Format::Toml, &v.toml());
        prop_assert!(toml.is_ok(), "{:?}\n{}", toml.err().map(|e| e.to_string()), v.toml());
        let properties = load(Format::Properties, &v.properties());
        prop_assert!(
            properties.is_ok(),
            "{:?}\n{}",
            properties.err().map(|e| e.to_string()),
            v.properties()
        );
        let (toml, properties) = (toml.unwrap(), properties.unwrap());
        prop_assert_eq!(toml.config_for("svc.x"), &expected);
        prop_assert_eq!(properties.config_for("svc.x"), &expected);
    }
}

// ---------------------------------------------------------------------------------------------
// YAML: the same checks as the other formats get.

/// Pieces of Spring YAML, so that random inputs get past the first character.
const YAML_FRAGMENTS: &[&str] = &[
    "resilience4j.circuitbreaker:\n",
    "resilience4j:\n",
    "  circuitbreaker:\n",
    "  instances:\n",
    "  configs:\n",
    "  backends:\n",
    "  tags:\n",
    "    svc:\n",
    "    default:\n",
    "    \"[svc.x]\":\n",
    "    env: prod\n",
    "      ",
    "  ",
    "\t",
    "sliding-window-size: ",
    "slidingWindowType: ",
    "minimum_number_of_calls: ",
    "wait-duration-in-open-state: ",
    "enable-exponential-backoff: ",
    "exponential-backoff-multiplier: ",
    "randomized-wait-factor: ",
    "record-exceptions:",
    "ignore-exceptions: ",
    "base-config: ",
    "timeout-duration: ",
    "spring.config.activate.on-profile: p\n",
    "resilience4j.timelimiter.configs.default.timeout-duration: 1s\n",
    "resilence4j.circuitbreaker.instances.x.y: 1\n",
    "- ",
    "- A\n",
    "[A, B]",
    "[]",
    "{",
    "}",
    "[",
    "]",
    ": ",
    ":",
    ",",
    "&a ",
    "*a",
    "*b",
    "<<: ",
    "---\n",
    "...\n",
    "\"",
    "'",
    "|\n",
    ">\n",
    "# c\n",
    "!!str ",
    "!x ",
    "? ",
    "~",
    "null",
    "yes",
    "0x1F",
    "010",
    "1_000",
    "10",
    "0",
    "-1",
    "62.5",
    "4294967296",
    "10s",
    "PT1.5S",
    "999999999999d",
    "COUNT_BASED",
    "OPEN",
    "A",
    "B,A",
    "\n",
    "\r\n",
    "\r",
    "\u{feff}",
    "\u{a0}",
    "é",
    "\u{0}",
];

fn yaml_fragments() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(YAML_FRAGMENTS), 0..64).prop_map(|v| v.concat())
}

impl Valid {
    fn yaml(&self) -> String {
        let record = if self.record.is_empty() {
            "      recordExceptions: []\n".to_owned()
        } else {
            let items: String = self
                .record
                .iter()
                .map(|k| format!("        - {k}\n"))
                .collect();
            format!("      record-exceptions:\n{items}")
        };
        let mut t = format!(
            "spring:\n  application.name: fuzz\nresilience4j.circuitbreaker:\n  instances:\n    \
             \"[svc.x]\":\n      sliding-window-type: {}\n      slidingWindowSize: {}\n      \
             minimum_number_of_calls: {}\n      failure-rate-threshold: {}\n      \
             slow-call-rate-threshold: {}.0\n      slow-call-duration-threshold: {}ms\n      \
             wait-duration-in-open-state: PT{}S\n      \
             permitted-number-of-calls-in-half-open-state: {}\n      \
             automatic-transition-from-open-to-half-open-enabled: {}\n      \
             max-wait-duration-in-half-open-state: {}\n      \
             transition-to-state-after-wait-duration: '{}'\n{record}",
            self.window(),
            self.size,
            self.minimum,
            self.failure,
            self.slow_rate,
            self.slow_ms,
            self.wait_s,
            self.permits,
            if self.automatic { "on" } else { "off" },
            self.max_wait_ms,
            self.state(),
        );
        if let Some(ms) = self.timeout_ms {
            t.push_str(&format!("      timeout-duration: \"{ms}ms\"\n"));
        }
        t
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn yaml_arbitrary_bytes_load_or_fail_cleanly(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        check(Format::Yaml, &bytes)?;
    }

    #[test]
    fn yaml_arbitrary_text_loads_or_fails_cleanly(text in any::<String>()) {
        check(Format::Yaml, text.as_bytes())?;
    }

    #[test]
    fn yaml_config_like_text_loads_or_fails_cleanly(text in yaml_fragments()) {
        check(Format::Yaml, text.as_bytes())?;
        // And the same below a breaker's section.
        let nested = format!("resilience4j.circuitbreaker:\n  instances:\n    svc:\n      {text}");
        check(Format::Yaml, nested.as_bytes())?;
    }

    /// Valid configurations written in Spring's YAML (relaxed spellings, YAML 1.1 booleans,
    /// a quoted state, a list or an empty one) load into the same `Config` as in the other
    /// formats.
    #[test]
    fn valid_configs_load_the_same_in_yaml(v in valid()) {
        let a = ErrorKind::of_type::<std::io::Error>("A");
        let b = ErrorKind::of_type::<std::io::Error>("B");
        let kinds = [a.clone(), b.clone()];
        let yaml = v.yaml();
        let loaded = Registry::builder()
            .error_kind(a)
            .error_kind(b)
            .load_str(Format::Yaml, "valid.yml", &yaml)
            .map(|b| b.build());
        prop_assert!(loaded.is_ok(), "{:?}\n{}", loaded.as_ref().err().map(|e| e.to_string()), yaml);
        let registry = loaded.unwrap();
        prop_assert_eq!(registry.config_for("svc.x"), &v.config(&kinds));
    }
}
