//! Configuration files: TOML, Spring `.properties` and Spring YAML load into exactly the configuration they
//! describe (the demo's seven lines, docs/TRACE.md; the contract of docs/CREDIT_BUREAU.md),
//! inherit as Resilience4j's Spring support does, and a bad file is rejected whole with an
//! error naming the file, the line, the key, the value and what was expected. The global
//! registry reads `BREAKER_CONFIG` once, at first use (tested in child processes, since the
//! global registry is per process).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use breaker_core::{
    Classifier, Classify, Config, ErrorKind, Format, LoadError, LoadErrorKind, ManualClock,
    Outcome, Registry, SlidingWindowType, State, WaitInterval, CONFIG_ENV,
};

use crate::support::logs;

pub(crate) fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The three formats, each with a file name of its extension.
pub(crate) const FORMATS: [(Format, &str); 3] = [
    (Format::Properties, "application.properties"),
    (Format::Yaml, "application.yml"),
    (Format::Toml, "application.toml"),
];

/// One key written `key = value` in `format`, in `resilience4j.<root>.<group>.<name>`, and the
/// line it is on. In TOML a whole number, a decimal number or a boolean is written bare, and
/// anything else as a string.
pub(crate) fn one_key(
    format: Format,
    root: &str,
    group: &str,
    name: &str,
    key: &str,
    value: &str,
) -> (String, u32) {
    match format {
        Format::Properties => (
            format!("# one key\nresilience4j.{root}.{group}.{name}.{key}={value}\n"),
            2,
        ),
        Format::Yaml => (
            format!(
                "resilience4j:\n  {root}:\n    {group}:\n      {name}:\n        {key}: {value}\n"
            ),
            5,
        ),
        Format::Toml => {
            let bare = value.parse::<i64>().is_ok()
                || value.parse::<f64>().is_ok_and(f64::is_finite)
                || value == "true"
                || value == "false";
            let value = if bare {
                value.to_owned()
            } else {
                format!("\"{value}\"")
            };
            (
                format!("[resilience4j.{root}.{group}.{name}]\n{key} = {value}\n"),
                2,
            )
        }
        _ => unreachable!("three formats"),
    }
}

pub(crate) fn load(format: Format, name: &str, text: &str) -> Result<Registry, LoadError> {
    Registry::builder()
        .load_str(format, name, text)
        .map(|b| b.build())
}

fn load_err(format: Format, name: &str, text: &str) -> LoadError {
    match load(format, name, text) {
        Ok(_) => panic!("{name} should be rejected"),
        Err(e) => e,
    }
}

/// The error names every part, both in its accessors and in its message.
fn assert_names(err: &LoadError, file: &str, line: u32, key: &str, value: &str, expected: &str) {
    let text = err.to_string();
    assert_eq!(err.file(), file, "{text}");
    assert_eq!(err.line(), Some(line), "{text}");
    assert_eq!(err.key(), Some(key), "{text}");
    assert_eq!(err.value(), Some(value), "{text}");
    assert!(
        err.expected().is_some_and(|e| e.contains(expected)),
        "expected {expected:?} in {text}"
    );
    assert!(text.starts_with(&format!("{file}:{line}: ")), "{text}");
    for part in [key, value, expected] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// The documented configurations (docs/TRACE.md, docs/CREDIT_BUREAU.md), exactly.

fn product_service_config() -> Config {
    Config::builder()
        .sliding_window_type(SlidingWindowType::CountBased)
        .sliding_window_size(10)
        .minimum_number_of_calls(5)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_secs(10))
        .permitted_number_of_calls_in_half_open_state(3)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap()
}

/// The demo's seven lines (docs/TRACE.md, with a 10 s wait), as a Spring team would paste them,
/// give exactly their configuration; every other key keeps Resilience4j's default.
#[test]
fn product_service_properties_load_into_the_exact_config() {
    let registry = Registry::from_file(data("product_service.properties")).unwrap();
    assert_eq!(
        registry.config_for("productService"),
        &product_service_config()
    );
    assert_eq!(
        registry.config_for("someOtherService"),
        &Config::default(),
        "a name the file does not mention gets the defaults"
    );
}

/// And the loaded breaker behaves as the call-by-call trace of docs/TRACE.md: CLOSED through
/// call 4, OPEN at call 5, rejecting after, HALF_OPEN by the timer after 10 s, CLOSED after 3
/// trials with one failure.
#[test]
fn product_service_loaded_breaker_runs_the_trace() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .load_file(data("product_service.properties"))
        .unwrap()
        .build();
    let b = registry.breaker("productService");
    for call in 1..=5 {
        let _ = b.call_sync(|| Err::<(), _>("IllegalStateException"));
        let expected = if call < 5 { State::Closed } else { State::Open };
        assert_eq!(b.state(), expected, "call {call}");
    }
    assert!(b
        .call_sync(|| Ok::<_, ()>("not called"))
        .unwrap_err()
        .is_rejected());
    clock.advance(Duration::from_secs(10) + Duration::from_millis(1));
    assert_eq!(b.state(), State::HalfOpen, "automatic transition");
    let _ = b.call_sync(|| Ok::<_, &str>(()));
    let _ = b.call_sync(|| Err::<(), _>("IllegalStateException"));
    let _ = b.call_sync(|| Ok::<_, &str>(()));
    assert_eq!(b.state(), State::Closed, "1 of 3 trials failed: 33% < 50%");
}

/// Spring exception lines name Java classes; registered as error kinds, they load and
/// classify.
#[test]
fn product_service_exception_lists_name_registered_kinds() {
    #[derive(Debug)]
    enum ProductError {
        Io,
        Server(u16),
        BadArgument,
    }
    let io = ErrorKind::new("java.io.IOException", |e: &ProductError| {
        matches!(e, ProductError::Io)
    });
    let server = ErrorKind::new(
        "feign.FeignException$FeignServerException",
        |e: &ProductError| matches!(e, ProductError::Server(500..=599)),
    );
    let bad_argument = ErrorKind::new("java.lang.IllegalArgumentException", |e: &ProductError| {
        matches!(e, ProductError::BadArgument)
    });
    let registry = Registry::builder()
        .error_kind(io.clone())
        .error_kind(server.clone())
        .error_kind(bad_argument.clone())
        .load_file(data("product_service_exceptions.properties"))
        .unwrap()
        .build();
    let config = registry.config_for("productService");
    assert_eq!(
        config,
        &product_service_config()
            .to_builder()
            .record_exceptions([io, server])
            .ignore_exceptions([bad_argument])
            .build()
            .unwrap()
    );
    let classify = config.classifier();
    let outcome = |e| classify.classify(&Err::<(), _>(e));
    assert_eq!(outcome(ProductError::Io), Outcome::Failure);
    assert_eq!(outcome(ProductError::Server(503)), Outcome::Failure);
    assert_eq!(outcome(ProductError::BadArgument), Outcome::Ignored);
    assert_eq!(
        outcome(ProductError::Server(404)),
        Outcome::Success,
        "with record-exceptions, other errors are successes (Resilience4j)"
    );
}

#[derive(Debug)]
enum BureauError {
    Status(u16),
    SocketTimeout,
    Connect,
}

fn bureau_kinds() -> [ErrorKind; 4] {
    [
        ErrorKind::new("ServerError", |e: &BureauError| {
            matches!(e, BureauError::Status(500..=599))
        }),
        ErrorKind::new("SocketTimeout", |e: &BureauError| {
            matches!(e, BureauError::SocketTimeout)
        }),
        ErrorKind::new("ConnectError", |e: &BureauError| {
            matches!(e, BureauError::Connect)
        }),
        ErrorKind::new("ClientError", |e: &BureauError| {
            matches!(e, BureauError::Status(400 | 404))
        }),
    ]
}

fn bureau_registry(clock: &ManualClock) -> (Registry, [ErrorKind; 4]) {
    let kinds = bureau_kinds();
    let registry = kinds
        .iter()
        .cloned()
        .fold(Registry::builder().clock(clock.clone()), |b, k| {
            b.error_kind(k)
        })
        .load_file(data("credit_bureau.toml"))
        .unwrap()
        .build();
    (registry, kinds)
}

/// The credit-bureau contract (docs/CREDIT_BUREAU.md), as a TOML file, is exactly the contract:
/// count window of 100, minimum 20, 50% failures, slow at 2,000 ms and 60%, 30 s open, 10
/// trials, lazy OPEN -> HALF_OPEN, a 2,500 ms timeout, 5xx/timeouts/connect errors recorded and
/// 400/404 ignored.
#[test]
fn credit_bureau_contract_loads_into_the_exact_config() {
    let (registry, [server, timeout, connect, client]) = bureau_registry(&ManualClock::new());
    let expected = Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 100, 20)
        .failure_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_millis(2_000))
        .slow_call_rate_threshold(60.0)
        .wait_duration_in_open_state(Duration::from_secs(30))
        .permitted_number_of_calls_in_half_open_state(10)
        .automatic_transition_from_open_to_half_open_enabled(false)
        .timeout_duration(Some(Duration::from_millis(2_500)))
        .record_exceptions([server, timeout, connect])
        .ignore_exceptions([client])
        .build()
        .unwrap();
    assert_eq!(registry.config_for("credit_bureau_cb"), &expected);
}

/// The contract's 4xx rule (docs/CREDIT_BUREAU.md §5) through the file: any number of
/// 400/404s never opens the breaker; 5xx and timeouts do, at the 20th call.
#[test]
fn credit_bureau_client_errors_never_count() {
    let (registry, _) = bureau_registry(&ManualClock::new());
    let b = registry.breaker("credit_bureau_cb");
    let classify = b.config().classifier();
    for _ in 0..200 {
        let _ = b.call_sync_with(&classify, || Err::<(), _>(BureauError::Status(404)));
        let _ = b.call_sync_with(&classify, || Err::<(), _>(BureauError::Status(400)));
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(
        b.metrics().buffered_calls,
        0,
        "ignored calls are not buffered"
    );
    for i in 0..20 {
        let error = if i % 2 == 0 {
            BureauError::Status(503)
        } else {
            BureauError::SocketTimeout
        };
        let _ = b.call_sync_with(&classify, || Err::<(), _>(error));
    }
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.metrics().failure_rate, Some(100.0));
}

/// The configured kinds sit on top of a classification written in code: the code's `result`
/// predicate still applies, and its `ignore` adds to the file's.
#[test]
fn configured_kinds_combine_with_code() {
    let (registry, _) = bureau_registry(&ManualClock::new());
    let config = registry.config_for("credit_bureau_cb");
    let classify = config.classifier().with_code(
        Classifier::new()
            .ignore(|e: &BureauError| matches!(e, BureauError::Status(409)))
            .result(|status: &u16| *status == 503),
    );
    assert_eq!(classify.classify(&Ok(503)), Outcome::Failure);
    assert_eq!(classify.classify(&Ok(200)), Outcome::Success);
    let err = |e| classify.classify(&Err::<u16, _>(e));
    assert_eq!(err(BureauError::Status(404)), Outcome::Ignored, "file");
    assert_eq!(err(BureauError::Status(409)), Outcome::Ignored, "code");
    assert_eq!(err(BureauError::Connect), Outcome::Failure);
    assert_eq!(
        err(BureauError::Status(302)),
        Outcome::Success,
        "not in record-exceptions"
    );
}

// ---------------------------------------------------------------------------------------------
// Spring's shapes and spellings.

fn assert_spring_application(registry: &Registry, client: &ErrorKind, conflict: &ErrorKind) {
    let default = Config::builder()
        .sliding_window_size(20)
        .minimum_number_of_calls(10)
        .wait_duration_in_open_state(Duration::from_secs(5))
        .register_health_indicator(true)
        .build()
        .unwrap();
    assert_eq!(registry.shared_config("default"), Some(&default));
    assert_eq!(
        registry.config_for("unlisted"),
        &default,
        "configs.default is the registry's default"
    );
    assert_eq!(
        registry.config_for("inventory"),
        &default
            .to_builder()
            .failure_rate_threshold(25.0)
            .build()
            .unwrap(),
        "an instance without base-config starts from configs.default"
    );
    assert_eq!(
        registry.config_for("reports"),
        &Config::builder()
            .slow_call_duration_threshold(Duration::from_secs(2))
            .slow_call_rate_threshold(80.0)
            .sliding_window_type(SlidingWindowType::TimeBased)
            .build()
            .unwrap(),
        "base-config replaces default; a shared config starts from Resilience4j's defaults"
    );
    assert_eq!(
        registry.config_for("payments.v2"),
        &default
            .to_builder()
            .wait_duration_in_open_state(Duration::from_secs(120))
            .ignore_exceptions([client.clone(), conflict.clone()])
            .build()
            .unwrap()
    );
}

/// A whole Spring `application.properties` (camelCase, snake_case and kebab-case keys, ISO and
/// simple durations, a bracketed name, an indexed list continued over two lines, other
/// modules' lines) loads, and so does the same thing in TOML and in YAML (with `spring:`,
/// `server:`, `management:`, `resilience4j.retry` and `resilience4j.timelimiter` beside it).
#[test]
fn spring_application_files_load_in_both_formats() {
    let client = ErrorKind::of_type::<std::io::Error>("ClientError");
    let conflict = ErrorKind::of_type::<std::io::Error>("Conflict");
    for file in [
        "spring_application.properties",
        "spring_application.toml",
        "spring_application.yml",
    ] {
        let registry = Registry::builder()
            .error_kind(client.clone())
            .error_kind(conflict.clone())
            .load_file(data(file))
            .unwrap()
            .build();
        assert_spring_application(&registry, &client, &conflict);
    }
}

/// A TOML application file may keep breaker's own tables at its top beside
/// `[resilience4j.circuitbreaker]`; both are read, and a key set in both places is a duplicate.
#[test]
fn toml_tables_at_the_top_and_under_resilience4j_are_both_read() {
    let text = "[server]\nport = 8080\n\
                [instances.a]\nsliding-window-size = 3\n\
                [resilience4j.circuitbreaker.instances.b]\nsliding-window-size = 4\n";
    let registry = load(Format::Toml, "app.toml", text).unwrap();
    assert_eq!(registry.config_for("a").sliding_window_size(), 3);
    assert_eq!(registry.config_for("b").sliding_window_size(), 4);
    let text = "[instances.a]\nsliding-window-size = 3\n\
                [resilience4j.circuitbreaker.instances.a]\nslidingWindowSize = 4\n";
    let err = load_err(Format::Toml, "app.toml", text);
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
}

/// `instances.X.key=value` and `configs.X.key=value` in every relaxed spelling bind to the same
/// keys.
#[test]
fn relaxed_binding_spellings_are_one_key() {
    let spellings = [
        "sliding-window-size",
        "slidingWindowSize",
        "sliding_window_size",
        "SLIDING_WINDOW_SIZE",
    ];
    for group in ["instances", "configs"] {
        for key in spellings {
            let text = format!("resilience4j.circuitbreaker.{group}.svc.{key}=7");
            let registry = load(Format::Properties, "x.properties", &text).unwrap();
            let config = match group {
                "instances" => registry.config_for("svc").clone(),
                _ => registry.shared_config("svc").unwrap().clone(),
            };
            assert_eq!(config.sliding_window_size(), 7, "{text}");
        }
    }
    // Java properties syntax: `:` and whitespace separators, escapes.
    let text = "resilience4j.circuitbreaker.instances.svc.minimum-number-of-calls : 3\n\
                resilience4j.circuitbreaker.instances.svc.failure-rate-threshold 62.5\n\
                resilience4j.circuitbreaker.instances.svc.sliding-window-type=\\u0054IME_BASED\n";
    let registry = load(Format::Properties, "x.properties", text).unwrap();
    let c = registry.config_for("svc");
    assert_eq!(c.minimum_number_of_calls(), 3);
    assert_eq!(c.failure_rate_threshold(), 62.5);
    assert_eq!(c.sliding_window_type(), SlidingWindowType::TimeBased);
}

/// Keys merge one by one along the base chain, as Resilience4j merges properties: the clamp
/// of minimum-number-of-calls to the window applies to the merged keys, not to the base's
/// built config.
#[test]
fn base_chains_merge_key_by_key() {
    let text = r#"
        [configs.small]
        sliding-window-size = 5
        minimum-number-of-calls = 10

        [configs.middle]
        base-config = "small"
        failure-rate-threshold = 30

        [instances.svc]
        base-config = "middle"
        sliding-window-size = 50
    "#;
    let registry = load(Format::Toml, "chain.toml", text).unwrap();
    assert_eq!(
        registry
            .shared_config("small")
            .unwrap()
            .minimum_number_of_calls(),
        5,
        "clamped to its own window"
    );
    let svc = registry.config_for("svc");
    assert_eq!(svc.sliding_window_size(), 50);
    assert_eq!(svc.minimum_number_of_calls(), 10, "merged, then clamped");
    assert_eq!(svc.failure_rate_threshold(), 30.0);
}

/// A shared config given in code can be a file's base, and the file's sections replace the
/// code's of the same name; code set after the file replaces the file's.
#[test]
fn files_and_code_meet_by_name() {
    let code_base = Config::builder()
        .wait_duration_in_open_state(Duration::from_secs(7))
        .build()
        .unwrap();
    let registry = Registry::builder()
        .shared_config("fromCode", code_base)
        .instance(
            "a",
            Config::builder().sliding_window_size(3).build().unwrap(),
        )
        .load_str(
            Format::Toml,
            "f.toml",
            "[instances.a]\nsliding-window-size = 4\n\
             [instances.b]\nbase-config = \"fromCode\"\nfailure-rate-threshold = 20\n",
        )
        .unwrap()
        .instance(
            "c",
            Config::builder().sliding_window_size(9).build().unwrap(),
        )
        .build();
    assert_eq!(registry.config_for("a").sliding_window_size(), 4);
    let b = registry.config_for("b");
    assert_eq!(b.wait_duration_in_open_state(), Duration::from_secs(7));
    assert_eq!(b.failure_rate_threshold(), 20.0);
    assert_eq!(registry.config_for("c").sliding_window_size(), 9);
    assert_eq!(
        registry.breaker("b").config(),
        b,
        "breakers are built with the loaded config"
    );
}

/// Resilience4j: an instance without base-config whose name is also a shared config's starts
/// from that shared config.
#[test]
fn an_instance_starts_from_the_shared_config_of_its_name() {
    let text = "resilience4j.circuitbreaker.configs.default.sliding-window-size=11\n\
                resilience4j.circuitbreaker.configs.svc.sliding-window-size=22\n\
                resilience4j.circuitbreaker.instances.svc.minimum-number-of-calls=2\n";
    let registry = load(Format::Properties, "x.properties", text).unwrap();
    let svc = registry.config_for("svc");
    assert_eq!(svc.sliding_window_size(), 22);
    assert_eq!(svc.minimum_number_of_calls(), 2);
}

/// Spring-only keys are skipped; keys whose behaviour breaker lacks are errors that say what
/// to use instead; Resilience4j 1.x's `backends` is `instances`.
#[test]
fn spring_only_and_unsupported_keys() {
    let text = "resilience4j.circuitbreaker.backends.svc.register-health-indicator=true\n\
                resilience4j.circuitbreaker.backends.svc.event-consumer-buffer-size=10\n\
                resilience4j.circuitbreaker.backends.svc.sliding-window-size=8\n";
    let registry = load(Format::Properties, "x.properties", text).unwrap();
    assert_eq!(registry.config_for("svc").sliding_window_size(), 8);

    let err = load_err(
        Format::Properties,
        "x.properties",
        "resilience4j.circuitbreaker.instances.svc.initial-state=OPEN",
    );
    assert_eq!(err.kind(), LoadErrorKind::UnsupportedKey);
    assert_eq!(err.line(), Some(1));
    assert!(err.to_string().contains("transition_to_"), "{err}");

    let err = load_err(
        Format::Properties,
        "x.properties",
        "resilience4j.circuitbreaker.instances.svc.record-failure-predicate=com.example.P",
    );
    assert!(
        err.to_string().contains("RegistryBuilder::error_kind"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Errors: each names the file, the line, the key, the value and what was expected.

#[test]
fn unknown_key_names_everything_and_suggests() {
    let text = "[instances.productService]\nsliding-window-size = 10\nsliding-windw-size = 10\n";
    let err = load_err(Format::Toml, "breaker.toml", text);
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey);
    assert_names(
        &err,
        "breaker.toml",
        3,
        "sliding-windw-size",
        "10",
        "sliding-window-size",
    );
    assert!(
        err.to_string()
            .contains("did you mean `sliding-window-size`?"),
        "{err}"
    );
    assert_eq!(err.section(), Some("instances.productService"));

    let err = load_err(
        Format::Properties,
        "app.properties",
        "# header\nresilience4j.circuitbreaker.instances.svc.colour=blue\n",
    );
    assert_names(
        &err,
        "app.properties",
        2,
        "colour",
        "blue",
        "sliding-window-type",
    );
}

#[test]
fn bad_duration_names_everything() {
    let text = "resilience4j.circuitbreaker.instances.svc.sliding-window-size=10\n\
                resilience4j.circuitbreaker.instances.svc.wait-duration-in-open-state=10 seconds\n";
    let err = load_err(Format::Properties, "app.properties", text);
    assert_eq!(err.kind(), LoadErrorKind::InvalidValue);
    assert_names(
        &err,
        "app.properties",
        2,
        "wait-duration-in-open-state",
        "10 seconds",
        "a duration such as 500ms, 10s, 2m",
    );
    let err = load_err(
        Format::Toml,
        "b.toml",
        "[instances.svc]\n\n  slow-call-duration-threshold = 1.5\n",
    );
    assert_names(
        &err,
        "b.toml",
        3,
        "slow-call-duration-threshold",
        "1.5",
        "a duration",
    );
}

/// Out-of-range values are found when the config is built, and still blamed on their line,
/// even when the line is in a base config.
#[test]
fn threshold_out_of_range_names_its_line() {
    let err = Registry::from_file(data("bad_threshold.properties")).unwrap_err();
    let file = data("bad_threshold.properties").display().to_string();
    assert_eq!(err.kind(), LoadErrorKind::InvalidValue);
    assert_names(
        &err,
        &file,
        3,
        "failure-rate-threshold",
        "150",
        "a percentage greater than 0 and at most 100",
    );

    let text = "[configs.base]\nsliding-window-type = \"TIME_BASED\"\n\
                [instances.svc]\nbase-config = \"base\"\nsliding-window-size = 100000\n";
    let err = load_err(Format::Toml, "t.toml", text);
    assert_names(
        &err,
        "t.toml",
        5,
        "sliding-window-size",
        "100000",
        "from 1 to 86400 (TIME_BASED)",
    );
    let text =
        "[configs.base]\nslow-call-rate-threshold = 0\n[instances.svc]\nbase-config = \"base\"\n";
    let err = load_err(Format::Toml, "t.toml", text);
    assert_names(
        &err,
        "t.toml",
        2,
        "slow-call-rate-threshold",
        "0",
        "percentage",
    );
}

#[test]
fn unknown_base_config_lists_the_known_ones() {
    let text = "[configs.default]\nsliding-window-size = 10\n\
                [configs.slow]\nslow-call-rate-threshold = 50\n\
                [instances.svc]\nbase-config = \"sloww\"\n";
    let err = load_err(Format::Toml, "t.toml", text);
    assert_eq!(err.kind(), LoadErrorKind::UnknownBaseConfig);
    assert_names(&err, "t.toml", 6, "base-config", "sloww", "default, slow");
}

#[test]
fn a_base_config_cycle_is_named() {
    let err = Registry::from_file(data("bad_cycle.toml")).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::BaseConfigCycle);
    let text = err.to_string();
    assert!(
        text.contains("configs.a -> configs.b -> configs.a"),
        "{text}"
    );
    assert_eq!(err.line(), Some(6), "{text}");
    assert_eq!(err.key(), Some("base-config"));
    assert_eq!(err.value(), Some("a"));

    let err = load_err(
        Format::Properties,
        "p.properties",
        "resilience4j.circuitbreaker.configs.self.base-config=self",
    );
    assert_eq!(err.kind(), LoadErrorKind::BaseConfigCycle);
    assert!(
        err.to_string().contains("configs.self -> configs.self"),
        "{err}"
    );
}

#[test]
fn an_unknown_error_kind_is_an_error() {
    let text = "resilience4j.circuitbreaker.instances.svc.record-exceptions=ServerError,Tiemout\n";
    let err = Registry::builder()
        .error_kind(ErrorKind::of_type::<std::io::Error>("ServerError"))
        .error_kind(ErrorKind::of_type::<std::io::Error>("Timeout"))
        .load_str(Format::Properties, "app.properties", text)
        .unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownErrorKind);
    assert_names(
        &err,
        "app.properties",
        1,
        "record-exceptions",
        "Tiemout",
        "ServerError, Timeout",
    );
    // Registered after the file: too late, and the message says how to fix it.
    let err = load_err(Format::Properties, "app.properties", text);
    assert!(err.to_string().contains("none is"), "{err}");
}

#[test]
fn duplicates_and_bad_lists_are_errors() {
    let text = "resilience4j.circuitbreaker.instances.svc.slidingWindowSize=5\n\
                resilience4j.circuitbreaker.instances.svc.sliding-window-size=6\n";
    let err = load_err(Format::Properties, "d.properties", text);
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
    assert_eq!(err.line(), Some(2));
    assert!(
        err.to_string()
            .contains("first as `slidingWindowSize` on line 1"),
        "{err}"
    );

    let text = "resilience4j.circuitbreaker.instances.svc.ignore-exceptions[0]=A\n\
                resilience4j.circuitbreaker.instances.svc.ignore-exceptions[2]=B\n";
    let err = load_err(Format::Properties, "l.properties", text);
    assert_eq!(err.kind(), LoadErrorKind::InvalidValue);
    assert_eq!(err.line(), Some(2));

    let err = load_err(
        Format::Toml,
        "l.toml",
        "[instances.svc]\nignore-exceptions = [\"A\", 3]\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::InvalidValue);
    assert_eq!(err.line(), Some(2));
}

#[test]
fn toml_syntax_errors_name_the_line() {
    let err = load_err(
        Format::Toml,
        "s.toml",
        "[instances.svc]\nsliding-window-size = 10\nwait-duration-in-open-state = \"10s\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::Syntax);
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(
        err.to_string().starts_with("s.toml:3: TOML syntax error"),
        "{err}"
    );

    let err = load_err(
        Format::Toml,
        "s.toml",
        "[instance.svc]\nsliding-window-size = 1\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey);
    assert_eq!(err.line(), Some(1));
    assert!(err.to_string().contains("[instances.<name>]"), "{err}");

    let err = load_err(Format::Toml, "s.toml", "[instances]\nsvc = 3\n");
    assert_eq!(err.line(), Some(2));
}

#[test]
fn properties_syntax_and_shape_errors_name_the_line() {
    let err = load_err(
        Format::Properties,
        "p.properties",
        "a=b\nresilience4j.circuitbreaker.instances.svc.sliding-window-size=\\u00G1\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::Syntax);
    assert_eq!(err.line(), Some(2));
    let err = load_err(
        Format::Properties,
        "p.properties",
        "resilience4j.circuitbreaker.instance.svc.sliding-window-size=1\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey);
    assert!(err.to_string().contains("instances.<name>.<key>"), "{err}");
    let err = load_err(
        Format::Properties,
        "p.properties",
        "resilience4j.circuitbrekaer.instances.svc.sliding-window-size=1\n",
    );
    assert!(
        err.to_string().contains("not a Resilience4j module"),
        "{err}"
    );
}

#[test]
fn files_are_found_by_extension_and_missing_ones_say_so() {
    let err = Registry::from_file("breaker.json").unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownFormat);
    assert!(
        err.to_string()
            .contains(".toml, .properties, .yml or .yaml"),
        "{err}"
    );
    let err = Registry::from_file(data("no_such_file.yaml")).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::Io, "a .yaml is YAML: {err}");
    let err = Registry::from_file(data("no_such_file.toml")).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::Io);
    assert!(err.to_string().contains("no_such_file.toml"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// The global registry and BREAKER_CONFIG, in child processes (one global registry each).

const CHILD: &str = "BREAKER_CONFIG_FILES_CHILD";

/// Runs `child_global_registry` in a fresh process with `BREAKER_CONFIG=file` and mode `mode`;
/// returns its stderr. The child's own assertions must pass.
fn run_child(mode: &str, file: Option<&Path>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "files::child_global_registry",
        "--ignored",
        "--nocapture",
    ])
    .env(CHILD, mode)
    .env_remove(CONFIG_ENV);
    if let Some(file) = file {
        cmd.env(CONFIG_ENV, file);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {mode} failed:\n{stdout}\n{stderr}"
    );
    stderr
}

/// Not a test of its own: run by the tests below in a child process.
#[test]
#[ignore = "run in a child process by the BREAKER_CONFIG tests"]
fn child_global_registry() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    match mode.as_str() {
        "good" => {
            let registry = Registry::try_global().expect("the file is good");
            assert_eq!(
                registry.config_for("productService"),
                &product_service_config()
            );
            assert!(std::ptr::eq(registry, Registry::global()));
        }
        "bad" => {
            let err = Registry::try_global().expect_err("the file is bad");
            assert_eq!(err.kind(), LoadErrorKind::InvalidValue);
            assert_eq!(err.line(), Some(3));
            // Rejected whole: the valid line 2 is not applied either.
            assert_eq!(
                Registry::global().config_for("productService"),
                &Config::default()
            );
            // The same error every time.
            assert_eq!(Registry::try_global().unwrap_err(), err);
        }
        "installed" => {
            // Code installs the global registry (with its error kinds) before first use,
            // loading BREAKER_CONFIG itself.
            let registry = bureau_kinds()
                .into_iter()
                .fold(Registry::builder(), |b, k| b.error_kind(k))
                .load_env()
                .unwrap()
                .build();
            Registry::install_global(registry).unwrap();
            let global = Registry::try_global().unwrap();
            assert_eq!(
                global.config_for("credit_bureau_cb").ignore_exceptions()[0].name(),
                "ClientError"
            );
            // Too late now: the global registry is in use.
            assert!(Registry::install_global(Registry::new()).is_err());
        }
        "installed-without-env" => {
            // The file BREAKER_CONFIG names would be silently ignored: refused, and said so.
            let err = Registry::install_global(Registry::new()).unwrap_err();
            assert!(!err.is_already_in_use());
            assert!(err.to_string().contains("load_env"), "{err}");
            // Nothing was installed: the global registry then reads the file itself.
            let global = Registry::try_global().expect("the file is good");
            assert_eq!(
                global.config_for("productService"),
                &product_service_config()
            );
        }
        "lazy-kinds" => {
            // The same file read lazily, with no kinds registered: rejected, and the error
            // says how to register them.
            let err = Registry::try_global().unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::UnknownErrorKind);
            assert!(
                err.to_string().contains("RegistryBuilder::error_kind"),
                "{err}"
            );
        }
        "unset" => {
            assert_eq!(
                Registry::try_global().unwrap().config_for("x"),
                &Config::default()
            );
        }
        other => panic!("unknown child mode {other}"),
    }
}

#[test]
fn global_registry_reads_breaker_config_at_first_use() {
    run_child("good", Some(&data("product_service.properties")));
    run_child("unset", None);
}

#[test]
fn installing_a_registry_that_did_not_read_breaker_config_is_refused() {
    run_child(
        "installed-without-env",
        Some(&data("product_service.properties")),
    );
}

#[test]
fn a_bad_breaker_config_is_loud_and_never_half_applied() {
    let file = data("bad_threshold.properties");
    let stderr = run_child("bad", Some(&file));
    assert!(
        stderr.contains(&format!("{}:3:", file.display())) && stderr.contains("150"),
        "the full error goes to stderr: {stderr}"
    );
}

#[test]
fn code_can_install_the_global_registry_with_kinds_and_the_env_file() {
    for file in ["credit_bureau.toml", "credit_bureau.yml"] {
        let file = data(file);
        run_child("installed", Some(&file));
        run_child("lazy-kinds", Some(&file));
    }
}

// ---------------------------------------------------------------------------------------------
// Every format: the same contract, every key in Spring's spellings, tags.

fn credit_bureau_expected(kinds: &[ErrorKind; 4]) -> Config {
    let [server, timeout, connect, client] = kinds.clone();
    Config::builder()
        .sliding_window(SlidingWindowType::CountBased, 100, 20)
        .failure_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_millis(2_000))
        .slow_call_rate_threshold(60.0)
        .wait_duration_in_open_state(Duration::from_secs(30))
        .permitted_number_of_calls_in_half_open_state(10)
        .automatic_transition_from_open_to_half_open_enabled(false)
        .timeout_duration(Some(Duration::from_millis(2_500)))
        .record_exceptions([server, timeout, connect])
        .ignore_exceptions([client])
        .build()
        .unwrap()
}

/// The credit-bureau contract as TOML, as `.properties` and as a Spring `application.yml`
/// (camelCase keys, a YAML list and a comma string, Spring's own sections and other modules
/// beside it): the same `Config`, compared field by field.
#[test]
fn credit_bureau_contract_loads_the_same_from_every_format() {
    let kinds = bureau_kinds();
    let expected = credit_bureau_expected(&kinds);
    for file in [
        "credit_bureau.toml",
        "credit_bureau.properties",
        "credit_bureau.yml",
    ] {
        let registry = kinds
            .iter()
            .cloned()
            .fold(Registry::builder(), |b, k| b.error_kind(k))
            .load_file(data(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .build();
        assert_eq!(registry.config_for("credit_bureau_cb"), &expected, "{file}");
        assert!(
            registry.shared_config("credit_bureau_cb").is_none(),
            "{file}"
        );
    }
}

fn every_key_kinds() -> [ErrorKind; 3] {
    [
        ErrorKind::of_type::<std::io::Error>("ServerError"),
        ErrorKind::of_type::<std::io::Error>("Timeout"),
        ErrorKind::of_type::<std::io::Error>("ClientError"),
    ]
}

/// What every_key.{properties,toml,yml} say, written in code.
fn every_key_expected(kinds: &[ErrorKind; 3]) -> Config {
    let [server, timeout, client] = kinds.clone();
    Config::builder()
        .sliding_window_type(SlidingWindowType::TimeBased)
        .sliding_window_size(30)
        .minimum_number_of_calls(7)
        .failure_rate_threshold(35.5)
        .slow_call_rate_threshold(80.0)
        .slow_call_duration_threshold(Duration::from_millis(1_500))
        .wait_duration_in_open_state(Duration::from_secs(20))
        .enable_exponential_backoff(true)
        .exponential_backoff_multiplier(2.5)
        .exponential_max_wait_duration_in_open_state(Some(Duration::from_secs(300)))
        .enable_randomized_wait(true)
        .randomized_wait_factor(0.25)
        .permitted_number_of_calls_in_half_open_state(4)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .max_wait_duration_in_half_open_state(Duration::from_secs(45))
        .transition_to_state_after_wait_duration(State::Closed)
        .timeout_duration(Some(Duration::from_secs(3)))
        .register_health_indicator(true)
        .allow_health_indicator_to_fail(true)
        .event_consumer_buffer_size(25)
        .record_exceptions([server, timeout])
        .ignore_exceptions([client])
        .build()
        .unwrap()
}

/// Every key of the table, in camelCase (`instances.camel`) and kebab-case
/// (`instances.kebab`), in `.properties`, TOML and YAML: six sections, one `Config`, equal field
/// by field to the one written in code; the base config and the tags too.
#[test]
fn every_key_in_camel_and_kebab_case_loads_the_same_in_every_format() {
    let kinds = every_key_kinds();
    let expected = every_key_expected(&kinds);
    let base = Config::builder()
        .failure_rate_threshold(10.0)
        .build()
        .unwrap();
    let files = ["every_key.properties", "every_key.toml", "every_key.yml"];
    for file in files {
        let registry = kinds
            .iter()
            .cloned()
            .fold(Registry::builder(), |b, k| b.error_kind(k))
            .load_file(data(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .build();
        for instance in ["camel", "kebab"] {
            let config = registry.config_for(instance);
            assert_eq!(config, &expected, "{file}: instances.{instance}");
            assert_eq!(
                config.wait_interval(),
                WaitInterval::ExponentialRandomized {
                    initial: Duration::from_secs(20),
                    multiplier: 2.5,
                    factor: 0.25,
                    max: Some(Duration::from_secs(300)),
                },
                "{file}"
            );
        }
        assert_eq!(registry.shared_config("base"), Some(&base), "{file}");
        assert_eq!(
            registry.tags(),
            [
                ("app_version".to_owned(), "1.4.2".to_owned()),
                ("env".to_owned(), "prod".to_owned())
            ],
            "{file}"
        );
    }
    // The table has no key that every_key.* leaves out.
    let text = std::fs::read_to_string(data("every_key.properties")).unwrap();
    for key in breaker_core::keys::ALL {
        assert!(text.contains(&format!("kebab.{key}=")), "{key} missing");
    }
}

/// Tags are accepted in the three formats and stored on the registry; from code too. A file's
/// tag replaces the builder's of the same name, and names and values are checked.
#[test]
fn tags_load_from_every_format_and_from_code() {
    let texts = [
        (
            Format::Properties,
            "resilience4j.circuitbreaker.tags.region=eu-west-1\n\
             resilience4j.circuitbreaker.tags.[team.name]=payments\n",
        ),
        (
            Format::Toml,
            "[resilience4j.circuitbreaker.tags]\nregion = \"eu-west-1\"\n\"team.name\" = \"payments\"\n",
        ),
        (
            Format::Yaml,
            "resilience4j.circuitbreaker:\n  tags:\n    region: eu-west-1\n    team.name: payments\n",
        ),
        (
            Format::Toml,
            "[tags]\nregion = \"eu-west-1\"\nteam-name = \"payments\"\n",
        ),
    ];
    for (format, text) in texts {
        let registry = Registry::builder()
            .tag("region", "us-east-1")
            .unwrap()
            .tag("service", "loans")
            .unwrap()
            .load_str(format, "tags", text)
            .unwrap_or_else(|e| panic!("{format:?}: {e}"))
            .build();
        assert_eq!(
            registry.tags(),
            [
                ("region".to_owned(), "eu-west-1".to_owned()),
                ("service".to_owned(), "loans".to_owned()),
                ("team_name".to_owned(), "payments".to_owned()),
            ],
            "{format:?}"
        );
    }
    assert!(Registry::new().tags().is_empty());
}

#[test]
fn bad_tags_are_rejected_with_their_line() {
    let p = "resilience4j.circuitbreaker.tags.";
    // The tag's name and value, the part at fault, and what was expected of it.
    let cases = [
        ("9lives", "x", "name", "tag name"),
        ("name", "x", "name", "other than name"),
        ("env", "", "value", "1 to 256 bytes"),
        ("env", "${ENV}", "value", "placeholder"),
    ];
    for (name, value, part, expected) in cases {
        let text = format!("a=1\n{p}{name}={value}\n");
        let err = load_err(Format::Properties, "t.properties", &text);
        assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
        assert_eq!(err.line(), Some(2), "{err}");
        assert_eq!(err.key(), Some(format!("tags.{name}").as_str()), "{err}");
        assert_eq!(err.value(), Some(value), "{err}");
        let bad = if part == "name" { name } else { value };
        assert!(
            err.to_string()
                .contains(&format!("invalid tag {part} `{bad}`")),
            "{err}"
        );
        assert!(
            err.expected().is_some_and(|e| e.contains(expected)),
            "{expected:?} in {err}"
        );
    }
    let err = load_err(
        Format::Properties,
        "t.properties",
        &format!("{p}app.version=1\n{p}app_version=2\n"),
    );
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
    assert_eq!(err.line(), Some(2));
    let many: String = (0..33).map(|i| format!("{p}t{i}=v\n")).collect();
    let err = load_err(Format::Properties, "t.properties", &many);
    assert_eq!(err.line(), Some(33), "{err}");
    assert!(err.to_string().contains("at most 32 tags"), "{err}");
    // From code: the same rules, as a ConfigError.
    let err = Registry::builder().tag("bad name", "x").unwrap_err();
    assert_eq!((err.key(), err.value()), ("tags", "bad name"));
    let err = Registry::builder().tag("env", "a\nb").unwrap_err();
    assert_eq!(err.value(), "a\nb");
    let full = (0..32).fold(Registry::builder(), |b, i| {
        b.tag(&format!("t{i}"), "v").unwrap()
    });
    let err = full
        .load_str(
            Format::Properties,
            "more.properties",
            &format!("{p}t99=v\n"),
        )
        .unwrap_err();
    assert!(err.to_string().contains("at most 32 tags"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// YAML as Spring reads it.

#[test]
fn yaml_shapes_spring_accepts() {
    // Dotted keys at any level, `backends`, a bracketed name, a comma string and a list, an
    // empty list over a list that is not (merged from an anchor, and from a base config),
    // anchors with a merge key.
    let text = "\
resilience4j.circuitbreaker.configs.default:
  slidingWindowSize: 10
resilience4j:
  circuitbreaker:
    configs:
      listed:
        record-exceptions: [A]
    backends:
      legacy:
        sliding-window-size: 3
    instances:
      \"[api.v2]\":
        record-exceptions: A, B
      shared: &shared
        minimum-number-of-calls: 4
        ignore-exceptions: [B]
        record-exceptions: [A]
      merged:
        <<: *shared
        minimum-number-of-calls: 2
        record-exceptions: []
      emptied:
        base-config: listed
        record-exceptions: []
";
    let a = ErrorKind::of_type::<std::io::Error>("A");
    let b = ErrorKind::of_type::<std::io::Error>("B");
    let registry = Registry::builder()
        .error_kind(a.clone())
        .error_kind(b.clone())
        .load_str(Format::Yaml, "application.yml", text)
        .unwrap()
        .build();
    let default = Config::builder().sliding_window_size(10).build().unwrap();
    assert_eq!(registry.shared_config("default"), Some(&default));
    assert_eq!(registry.config_for("legacy").sliding_window_size(), 3);
    assert_eq!(
        registry.config_for("api.v2"),
        &default
            .to_builder()
            .record_exceptions([a.clone(), b.clone()])
            .build()
            .unwrap()
    );
    let shared = default
        .to_builder()
        .minimum_number_of_calls(4)
        .ignore_exceptions([b.clone()])
        .record_exceptions([a.clone()])
        .build()
        .unwrap();
    assert_eq!(registry.config_for("shared"), &shared);
    // Its own keys win over the anchor's, the empty list included; the rest is merged.
    assert_eq!(
        registry.config_for("merged"),
        &shared
            .to_builder()
            .minimum_number_of_calls(2)
            .record_exceptions([])
            .build()
            .unwrap(),
        "the empty list wins over the anchor's"
    );
    assert_eq!(
        registry.shared_config("listed"),
        Some(&Config::builder().record_exceptions([a]).build().unwrap())
    );
    assert_eq!(
        registry.config_for("emptied"),
        &Config::default(),
        "the empty list wins over the base config's"
    );
}

/// YAML errors name the file, the line, the key, the value and what was expected, as the
/// other formats' do.
#[test]
fn yaml_errors_name_the_line() {
    let text = "spring:\n  application.name: x\nresilience4j.circuitbreaker:\n  instances:\n    svc:\n      sliding-window-size: 10\n      sliding-windw-size: 10\n";
    let err = load_err(Format::Yaml, "application.yml", text);
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey);
    assert_names(
        &err,
        "application.yml",
        7,
        "sliding-windw-size",
        "10",
        "sliding-window-size",
    );
    assert!(err.to_string().contains("did you mean"), "{err}");

    let text = "resilience4j.circuitbreaker:\n  instances:\n    svc:\n\n      waitDurationInOpenState: 10 seconds\n";
    let err = load_err(Format::Yaml, "a.yaml", text);
    assert_names(
        &err,
        "a.yaml",
        5,
        "waitDurationInOpenState",
        "10 seconds",
        "a duration such as 500ms",
    );

    let text =
        "resilience4j.circuitbreaker:\n  instances:\n    svc:\n      failure-rate-threshold: 150\n";
    let err = load_err(Format::Yaml, "a.yml", text);
    assert_names(
        &err,
        "a.yml",
        4,
        "failure-rate-threshold",
        "150",
        "a percentage",
    );

    let err = load_err(
        Format::Yaml,
        "a.yml",
        "resilience4j.circuitbreaker:\n  instances:\n    svc:\n      a: [1\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::Syntax);
    assert!(err.to_string().starts_with("a.yml:"), "{err}");
    // The parser finds the unclosed list at the end of the text: blamed on the last line,
    // with or without a line break after it.
    assert_eq!(err.line(), Some(4), "{err}");
    let err = load_err(
        Format::Yaml,
        "a.yml",
        "resilience4j.circuitbreaker:\n  instances:\n    svc:\n      a: [1",
    );
    assert_eq!(err.kind(), LoadErrorKind::Syntax);
    assert_eq!(err.line(), Some(4), "{err}");

    let err = load_err(
        Format::Yaml,
        "a.yml",
        "resilience4j.circuitbreaker:\n  instances:\n    svc:\n      sliding-window-size: 1\n      sliding-window-size: 2\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
    assert_eq!(err.line(), Some(5));
    assert_eq!(err.key(), Some("sliding-window-size"));

    // The same key in two spellings, or written dotted and nested.
    let err = load_err(
        Format::Yaml,
        "a.yml",
        "resilience4j.circuitbreaker.instances.svc.slidingWindowSize: 1\nresilience4j:\n  circuitbreaker:\n    instances:\n      svc:\n        sliding-window-size: 2\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
    assert_eq!(err.line(), Some(6));

    let err = load_err(
        Format::Yaml,
        "a.yml",
        "resilience4j.circuitbreaker:\n  instances:\n    svc:\n      sliding-window-size:\n        count: 3\n",
    );
    assert!(err.to_string().contains("takes a single value"), "{err}");
    assert_eq!(err.line(), Some(5));
}

/// A Spring profile's document does not apply (breaker has no profiles): skipped, with a WARN.
#[test]
fn yaml_profile_documents_are_skipped_with_a_warning() {
    logs::capture();
    let text = "resilience4j.circuitbreaker.instances.svc.sliding-window-size: 5\n---\nspring:\n  config:\n    activate:\n      on-profile: prod\nresilience4j.circuitbreaker.instances.svc.sliding-window-size: 50\n";
    let registry = load(Format::Yaml, "profiles.yml", text).unwrap();
    assert_eq!(registry.config_for("svc").sliding_window_size(), 5);
    let warned = logs::lines_with(&["WARN", "file=profiles.yml", "profile=prod", "line=6"]);
    assert_eq!(warned.len(), 1, "{warned:?}");
}

/// The time limiter's timeout is not read, in YAML as in the other formats: a WARN says so.
/// (The file is loaded under a name of this test's own: other tests load it too, and the log
/// is the whole binary's.)
#[test]
fn yaml_time_limiter_timeouts_are_noted() {
    logs::capture();
    let kinds = bureau_kinds();
    let bytes = std::fs::read(data("credit_bureau.yml")).unwrap();
    let shown = "time-limiter-note/credit_bureau.yml";
    kinds
        .into_iter()
        .fold(Registry::builder(), |b, k| b.error_kind(k))
        .load_bytes(Format::Yaml, shown, &bytes)
        .unwrap();
    let warned = logs::lines_with(&["WARN", shown, "time limiter", "line=40"]);
    assert_eq!(warned.len(), 1, "{warned:?}");
}

// ---------------------------------------------------------------------------------------------
// `.properties` as Java and Spring Boot read them.

/// A leading UTF-8 byte-order mark is dropped; before, it became part of the first key, which
/// was then skipped: the first line was lost without a word.
#[test]
fn a_leading_bom_does_not_lose_the_first_line() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(
        b"resilience4j.circuitbreaker.instances.svc.sliding-window-size=7\n\
          resilience4j.circuitbreaker.instances.svc.minimum-number-of-calls=3\n",
    );
    for format in [Format::Properties, Format::Yaml] {
        let text = if format == Format::Yaml {
            let mut y = b"\xEF\xBB\xBF".to_vec();
            y.extend_from_slice(
                b"resilience4j.circuitbreaker.instances.svc.sliding-window-size: 7\n",
            );
            y
        } else {
            bytes.clone()
        };
        let registry = Registry::builder()
            .load_bytes(format, "bom", &text)
            .unwrap()
            .build();
        assert_eq!(
            registry.config_for("svc").sliding_window_size(),
            7,
            "{format:?}"
        );
    }
    let toml = b"\xEF\xBB\xBF[instances.svc]\nsliding-window-size = 7\n";
    let registry = Registry::builder()
        .load_bytes(Format::Toml, "bom.toml", toml)
        .unwrap()
        .build();
    assert_eq!(registry.config_for("svc").sliding_window_size(), 7);
}

/// ISO-8859-1 bytes (a Latin-1 `é` in a comment and in an unrelated line) load, as
/// `java.util.Properties` reads them; UTF-8 loads as UTF-8. Before, the Latin-1 file was
/// rejected whole as "not UTF-8".
#[test]
fn properties_are_read_as_utf8_else_iso_8859_1() {
    let latin1 = b"# caf\xE9\nspring.application.name=caf\xE9\n\
                   resilience4j.circuitbreaker.tags.owner=Ren\xE9e\n\
                   resilience4j.circuitbreaker.instances.svc.sliding-window-size=9\n";
    let registry = Registry::builder()
        .load_bytes(Format::Properties, "latin1.properties", latin1)
        .unwrap()
        .build();
    assert_eq!(registry.config_for("svc").sliding_window_size(), 9);
    assert_eq!(registry.tags()[0].1, "Ren\u{e9}e");
    let utf8 = "resilience4j.circuitbreaker.tags.owner=Ren\u{e9}e ✓\n";
    let registry = load(Format::Properties, "utf8.properties", utf8).unwrap();
    assert_eq!(registry.tags()[0].1, "Ren\u{e9}e ✓");
    // TOML and YAML stay UTF-8 only.
    let err = Registry::builder()
        .load_bytes(Format::Yaml, "latin1.yml", b"a: caf\xE9\n")
        .unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::NotUtf8);
}

/// A line that is almost a breaker key (a misspelt root, a root behind a no-break space or a
/// byte-order mark) is skipped as Spring skips it, but with a WARN naming the file and the
/// line, once per root.
#[test]
fn near_breaker_keys_are_warned_about() {
    logs::capture();
    let text = "server.port=8080\n\
                resilence4j.circuitbreaker.instances.svc.sliding-window-size=5\n\
                resilence4j.circuitbreaker.instances.svc.minimum-number-of-calls=5\n\
                \u{a0}resilience4j.circuitbreaker.instances.nbsp.sliding-window-size=5\n\
                \u{feff}resilience4j.circuitbreaker.instances.bom.sliding-window-size=5\n";
    let registry = load(Format::Properties, "near.properties", text).unwrap();
    assert_eq!(
        registry.config_for("svc"),
        &Config::default(),
        "skipped, as Spring does"
    );
    let misspelt = logs::lines_with(&[
        "WARN",
        "file=near.properties",
        "line=2",
        "root=resilence4j.circuitbreaker",
        "more_keys=1",
    ]);
    assert_eq!(misspelt.len(), 1, "{misspelt:?}");
    let invisible = logs::lines_with(&["WARN", "file=near.properties", "invisible character"]);
    assert_eq!(invisible.len(), 2, "{invisible:?}");
    assert!(
        logs::lines_with(&["file=near.properties", "line=1"]).is_empty(),
        "server.port is not near"
    );

    let yaml = "resilience4j.circuitbreaker.instances.a.sliding-window-size: 5\n\
                resilence4j:\n  circuitbreaker:\n    instances:\n      svc:\n        sliding-window-size: 5\n";
    load(Format::Yaml, "near.yml", yaml).unwrap();
    let warned = logs::lines_with(&[
        "WARN",
        "file=near.yml",
        "line=6",
        "root=resilence4j.circuitbreaker",
    ]);
    assert_eq!(warned.len(), 1, "{warned:?}");

    let toml = "[resilience4j.circuitbreaker.instances.a]\nsliding-window-size = 5\n\
                [resilence4j.circuitbreaker.instances.svc]\nsliding-window-size = 5\n";
    load(Format::Toml, "near.toml", toml).unwrap();
    let warned = logs::lines_with(&[
        "WARN",
        "file=near.toml",
        "line=3",
        "root=resilence4j.circuitbreaker",
    ]);
    assert_eq!(warned.len(), 1, "{warned:?}");
    // In a TOML file that is breaker's alone, the misspelt root is an error with a hint.
    let err = load_err(
        Format::Toml,
        "alone.toml",
        "[resilence4j.circuitbreaker.instances.svc]\nsliding-window-size = 5\n",
    );
    assert!(
        err.to_string()
            .contains("did you mean `resilience4j.circuitbreaker`?"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Messages that name the key and say "too large".

#[test]
fn a_toml_duplicate_key_is_named() {
    let err = load_err(
        Format::Toml,
        "d.toml",
        "[instances.svc]\nsliding-window-size = 5\nsliding-window-size = 6\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey);
    assert_eq!(err.line(), Some(3));
    assert_eq!(err.key(), Some("sliding-window-size"));
    assert!(
        err.to_string()
            .contains("duplicate key `sliding-window-size`"),
        "{err}"
    );
}

#[test]
fn values_too_large_say_so() {
    let p = "resilience4j.circuitbreaker.instances.svc.";
    let cases = [
        (
            format!("{p}sliding-window-size=4294967296"),
            "sliding-window-size",
            "4294967296",
            "from 1 to 10000000 (COUNT_BASED) or to 86400 (TIME_BASED)",
        ),
        (
            format!("{p}minimum-number-of-calls=99999999999"),
            "minimum-number-of-calls",
            "99999999999",
            "from 1 to 4294967295",
        ),
        (
            format!("{p}wait-duration-in-open-state=99999999999999999999s"),
            "wait-duration-in-open-state",
            "99999999999999999999s",
            "a duration of at most 36500d (100 years)",
        ),
        (
            format!("{p}wait-duration-in-open-state=999999999999d"),
            "wait-duration-in-open-state",
            "999999999999d",
            "a duration of at most 36500d",
        ),
        (
            format!("{p}slow-call-duration-threshold=P36501D"),
            "slow-call-duration-threshold",
            "P36501D",
            "a duration of at most 36500d",
        ),
    ];
    for (text, key, value, expected) in cases {
        let err = load_err(Format::Properties, "big.properties", &text);
        assert_names(&err, "big.properties", 1, key, value, expected);
        assert!(err.to_string().contains("is too large"), "{err}");
        assert!(
            !err.to_string()
                .contains("expected a whole number (for example"),
            "{err}"
        );
    }
    let err = load_err(
        Format::Toml,
        "big.toml",
        "[instances.svc]\nsliding-window-size = 4294967296\n",
    );
    assert!(err.to_string().contains("is too large"), "{err}");
    let err = load_err(
        Format::Toml,
        "big.toml",
        "[instances.svc]\nsliding-window-size = 99999999999999999999\n",
    );
    assert!(err.to_string().contains("too large"), "{err}");
    let err = load_err(
        Format::Yaml,
        "big.yml",
        "resilience4j.circuitbreaker.instances.svc.timeout-duration: 999999999999d\n",
    );
    assert!(err.to_string().contains("is too large"), "{err}");
    // The longest accepted, and the same bound in code.
    let ok = load(
        Format::Properties,
        "ok.properties",
        &format!("{p}wait-duration-in-open-state=36500d"),
    )
    .unwrap();
    assert_eq!(
        ok.config_for("svc").wait_duration_in_open_state(),
        Duration::from_secs(36_500 * 86_400)
    );
    let err = Config::builder()
        .wait_duration_in_open_state(Duration::from_secs(36_500 * 86_400 + 1))
        .build()
        .unwrap_err();
    assert_eq!(err.key(), "wait-duration-in-open-state");
    assert!(err.expected().contains("at most 36500d"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// The wait interval in OPEN: Resilience4j 2.x's backoff keys.

#[test]
fn backoff_keys_load_and_describe_the_wait_interval() {
    let p = "resilience4j.circuitbreaker.instances.";
    let text = format!(
        "{p}fixed.wait-duration-in-open-state=10s\n\
         {p}exp.wait-duration-in-open-state=10s\n{p}exp.enable-exponential-backoff=true\n\
         {p}capped.enableExponentialBackoff=true\n{p}capped.exponentialBackoffMultiplier=3\n\
         {p}capped.exponentialMaxWaitDurationInOpenState=2m\n\
         {p}random.enable-randomized-wait=true\n{p}random.randomized-wait-factor=0.1\n\
         {p}ignored.exponential-backoff-multiplier=4\n"
    );
    let registry = load(Format::Properties, "wait.properties", &text).unwrap();
    let interval = |name: &str| registry.config_for(name).wait_interval();
    let ten = Duration::from_secs(10);
    assert_eq!(interval("fixed"), WaitInterval::Fixed { wait: ten });
    assert_eq!(
        interval("exp"),
        WaitInterval::Exponential {
            initial: ten,
            multiplier: 1.5,
            max: None
        },
        "Resilience4j's default multiplier"
    );
    assert_eq!(
        interval("capped"),
        WaitInterval::Exponential {
            initial: Duration::from_secs(60),
            multiplier: 3.0,
            max: Some(Duration::from_secs(120)),
        }
    );
    assert_eq!(
        interval("random"),
        WaitInterval::Randomized {
            wait: Duration::from_secs(60),
            factor: 0.1
        }
    );
    assert!(
        interval("ignored").is_fixed(),
        "a multiplier alone enables nothing"
    );
    assert_eq!(
        registry
            .config_for("ignored")
            .exponential_backoff_multiplier(),
        4.0
    );

    // Resilience4j's checks: a multiplier above 0, a factor from 0 to 1, a maximum of at
    // least 1 ms.
    for (key, value, expected) in [
        (
            "exponential-backoff-multiplier",
            "0",
            "a number greater than 0",
        ),
        (
            "exponential-backoff-multiplier",
            "-2",
            "a number greater than 0",
        ),
        ("randomized-wait-factor", "1.5", "a number from 0 to 1"),
        ("randomized-wait-factor", "-0.1", "a number from 0 to 1"),
        (
            "exponential-max-wait-duration-in-open-state",
            "0",
            "at least 1ms",
        ),
        ("exponential-backoff-multiplier", "fast", "a decimal number"),
    ] {
        let text = format!("{p}svc.{key}={value}\n");
        let err = load_err(Format::Properties, "w.properties", &text);
        assert_names(&err, "w.properties", 1, key, value, expected);
    }
    for factor in ["0", "1", "0.5"] {
        let text = format!("{p}svc.randomized-wait-factor={factor}\n");
        assert!(
            load(Format::Properties, "w.properties", &text).is_ok(),
            "{factor}"
        );
    }
}

/// Empty mappings (every entry commented out) set nothing, as in Spring.
#[test]
fn yaml_empty_sections_set_nothing() {
    let text = "resilience4j:\n  circuitbreaker:\n    tags:\n    configs:\n    instances:\n      svc:\n      other:\n        sliding-window-size: 4\n";
    let registry = load(Format::Yaml, "empty.yml", text).unwrap();
    assert_eq!(registry.config_for("svc"), &Config::default());
    assert_eq!(registry.config_for("other").sliding_window_size(), 4);
    assert!(registry.tags().is_empty());
    load(Format::Yaml, "empty.yml", "resilience4j.circuitbreaker:\n").unwrap();
    load(Format::Yaml, "empty.yml", "").unwrap();
    load(Format::Yaml, "empty.yml", "# only a comment\n---\n").unwrap();
}

/// A malformed name outside Resilience4j's is the application's business: skipped; inside, an
/// error naming the line.
#[test]
fn malformed_names_elsewhere_are_left_alone() {
    let text = "logging.level.=INFO\nserver..port=1\n\
                resilience4j.circuitbreaker.instances.svc.sliding-window-size=4\n";
    let registry = load(Format::Properties, "m.properties", text).unwrap();
    assert_eq!(registry.config_for("svc").sliding_window_size(), 4);
    let err = load_err(
        Format::Properties,
        "m.properties",
        "a=1\nresilience4j.circuitbreaker..instances.svc.sliding-window-size=4\n",
    );
    assert_eq!(err.kind(), LoadErrorKind::Syntax);
    assert_eq!(err.line(), Some(2));
}
