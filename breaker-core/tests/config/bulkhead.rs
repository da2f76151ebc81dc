//! Bulkheads in configuration files: `resilience4j.bulkhead.*` loads from the three formats
//! beside the breakers' sections, into the configs the registry's bulkheads are made with; a
//! bad value is rejected with the file, the line and the key, in the breaker's words; a
//! thread-pool bulkhead's section is skipped with a warning.

use std::path::Path;
use std::time::Duration;

use breaker_core::{BulkheadConfig, Format, LoadErrorKind, Registry};

use crate::files::{self, data, load, FORMATS};
use crate::support::logs;

fn bulkhead(calls: u32, wait: Duration, fair: bool, buffer: u32) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(calls)
        .max_wait_duration(wait)
        .fair_call_handling_enabled(fair)
        .event_consumer_buffer_size(buffer)
        .build()
        .unwrap()
}

/// One key of a `resilience4j.bulkhead` section in `format`, and the line it is on.
fn one_key(format: Format, group: &str, name: &str, key: &str, value: &str) -> (String, u32) {
    files::one_key(format, "bulkhead", group, name, key, value)
}

/// A Spring Boot file with breakers and bulkheads for the same backends (`configs.default`,
/// a second shared config, `base-config`, a bracketed name, tags in both sections, a
/// thread-pool bulkhead beside them) loads in each format: every bulkhead gets its instance
/// config merged over its base, a name the file does not mention gets `configs.default`,
/// the registry's bulkheads are made with those configs, and the breakers of the same names
/// keep their own configs.
#[test]
fn order_service_files_configure_breakers_and_bulkheads_together() {
    for file in [
        "order_service.properties",
        "order_service.yml",
        "order_service.toml",
    ] {
        let registry = Registry::from_file(data(file)).unwrap();
        let zero = Duration::ZERO;
        assert_eq!(
            registry.bulkhead_config_for("inventory"),
            &bulkhead(20, zero, true, 100),
            "{file}"
        );
        assert_eq!(
            registry.bulkhead_config_for("reports"),
            &bulkhead(4, Duration::from_millis(250), false, 50),
            "{file}: base-config slow"
        );
        assert_eq!(
            registry.bulkhead_config_for("payments.v2"),
            &bulkhead(10, Duration::from_millis(500), true, 100),
            "{file}: configs.default under a bracketed name"
        );
        assert_eq!(
            registry.bulkhead_config_for("unmentioned"),
            &bulkhead(10, zero, true, 100),
            "{file}: configs.default"
        );
        assert_eq!(
            registry.bulkhead_shared_config("slow"),
            Some(&bulkhead(4, Duration::from_millis(250), true, 100)),
            "{file}"
        );
        for name in ["inventory", "reports", "payments.v2", "unmentioned"] {
            let made = registry.bulkhead(name);
            assert_eq!(
                &made.config(),
                registry.bulkhead_config_for(name),
                "{file}: {name}"
            );
            assert_eq!(
                made.metrics().max_allowed_concurrent_calls(),
                made.config().max_concurrent_calls(),
                "{file}: {name}"
            );
        }
        let breaker = registry.config_for("inventory");
        assert_eq!(breaker.sliding_window_size(), 20, "{file}");
        assert_eq!(
            breaker.wait_duration_in_open_state(),
            Duration::from_secs(5),
            "{file}"
        );
        assert_eq!(
            registry.tags(),
            [
                ("app".to_owned(), "order-service".to_owned()),
                ("region".to_owned(), "eu".to_owned())
            ],
            "{file}: one tag set, a tag of both sections once"
        );
    }
}

/// Without a file, or with a file that has no bulkhead section, every bulkhead gets
/// Resilience4j's defaults; a `configs.default` given in code serves every name.
#[test]
fn bulkheads_default_to_resilience4j_or_to_the_default_given_in_code() {
    let registry = load(
        Format::Properties,
        "a.properties",
        "resilience4j.circuitbreaker.instances.x.sliding-window-size=5\n",
    )
    .unwrap();
    assert_eq!(
        registry.bulkhead_config_for("x"),
        &BulkheadConfig::default()
    );
    assert_eq!(BulkheadConfig::default().max_concurrent_calls(), 25);
    assert_eq!(
        BulkheadConfig::default().max_wait_duration(),
        Duration::ZERO
    );

    let code_default = bulkhead(3, Duration::from_millis(20), true, 100);
    let registry = Registry::builder()
        .bulkhead_default_config(code_default.clone())
        .bulkhead_instance("db", bulkhead(7, Duration::ZERO, false, 10))
        .build();
    assert_eq!(registry.bulkhead_config_for("any"), &code_default);
    assert_eq!(registry.bulkhead_config_for("db").max_concurrent_calls(), 7);
    assert_eq!(
        registry.config_for("db"),
        &breaker_core::Config::default(),
        "a bulkhead's config is not a breaker's"
    );
}

/// A file's bulkhead may take as its base a shared config given in code, and the file's
/// `configs.default` replaces the one given in code.
#[test]
fn a_file_builds_on_bulkhead_configs_given_in_code() {
    let registry = Registry::builder()
        .bulkhead_shared_config("small", bulkhead(2, Duration::from_millis(5), true, 100))
        .bulkhead_default_config(bulkhead(3, Duration::ZERO, true, 100))
        .load_str(
            Format::Toml,
            "app.toml",
            "[resilience4j.bulkhead.instances.db]\nbase-config = \"small\"\nmax-wait-duration = \"1s\"\n\
             [resilience4j.bulkhead.configs.default]\nmax-concurrent-calls = 8\n",
        )
        .unwrap()
        .build();
    assert_eq!(
        registry.bulkhead_config_for("db"),
        &bulkhead(2, Duration::from_secs(1), true, 100)
    );
    assert_eq!(
        registry.bulkhead_config_for("other").max_concurrent_calls(),
        8
    );
}

/// Every relaxed spelling of a key binds to it, in instances and in configs, in each format.
#[test]
fn relaxed_spellings_are_one_bulkhead_key() {
    for (format, file) in FORMATS {
        for group in ["instances", "configs"] {
            for key in [
                "max-concurrent-calls",
                "maxConcurrentCalls",
                "max_concurrent_calls",
                "MAX_CONCURRENT_CALLS",
            ] {
                let (text, _) = one_key(format, group, "svc", key, "7");
                let registry = load(format, file, &text).unwrap();
                let config = match group {
                    "instances" => registry.bulkhead_config_for("svc"),
                    _ => registry.bulkhead_shared_config("svc").unwrap(),
                };
                assert_eq!(config.max_concurrent_calls(), 7, "{text}");
            }
        }
        let (text, _) = one_key(format, "instances", "svc", "maxWaitDuration", "PT2S");
        let registry = load(format, file, &text).unwrap();
        assert_eq!(
            registry.bulkhead_config_for("svc").max_wait_duration(),
            Duration::from_secs(2)
        );
    }
}

/// `max-concurrent-calls` of 0, negative, not a number or absurdly large, in each format: the
/// error names the file, the line and the key, with the breaker's wording.
#[test]
fn bad_max_concurrent_calls_name_the_key_and_the_line() {
    let (text, _) = one_key(
        Format::Properties,
        "instances",
        "inventory",
        "max-concurrent-calls",
        "0",
    );
    let err = load(Format::Properties, "application.properties", &text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "application.properties:2: invalid value `0` for `max-concurrent-calls` in \
         instances.inventory: expected a whole number of calls from 1 to 1000000"
    );
    for (format, file) in FORMATS {
        for (value, expected) in [
            ("0", "from 1 to 1000000"),
            ("-1", "a whole number"),
            ("ten", "a whole number"),
            ("2.5", "a whole number"),
            ("1000001", "from 1 to 1000000"),
            ("99999999999", "1000000"),
        ] {
            let (text, line) = one_key(
                format,
                "instances",
                "inventory",
                "maxConcurrentCalls",
                value,
            );
            let err = load(format, file, &text).unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
            assert_eq!(err.file(), file, "{err}");
            assert_eq!(err.line(), Some(line), "{err}");
            assert_eq!(err.key(), Some("maxConcurrentCalls"), "{err}");
            assert!(
                err.expected().is_some_and(|e| e.contains(expected)),
                "{value}: {err}"
            );
            assert!(
                err.to_string().starts_with(&format!("{file}:{line}: ")),
                "{err}"
            );
        }
    }
}

/// A `max-wait-duration` that is negative, not a duration, or past 100 years is rejected the
/// same way, in each format and in a shared config.
#[test]
fn bad_max_wait_durations_name_the_key_and_the_line() {
    for (format, file) in FORMATS {
        for group in ["instances", "configs"] {
            for (value, expected) in [
                ("-1s", "a duration"),
                ("soon", "a duration"),
                ("10 parsecs", "a duration"),
                ("36501d", "at most 36500d"),
            ] {
                let (text, line) = one_key(format, group, "db", "max-wait-duration", value);
                let err = load(format, file, &text).unwrap_err();
                assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
                assert_eq!(err.line(), Some(line), "{err}");
                assert_eq!(err.key(), Some("max-wait-duration"), "{err}");
                assert_eq!(err.value(), Some(value), "{err}");
                assert!(
                    err.expected().is_some_and(|e| e.contains(expected)),
                    "{value}: {err}"
                );
            }
        }
    }
}

/// The error for a bad base's value names the base's line, as for breakers; a breaker's key in
/// a bulkhead's section is unknown there, with the bulkhead's keys listed; a typo gets a
/// suggestion.
#[test]
fn bulkhead_sections_are_checked_against_the_bulkheads_keys() {
    let text = "resilience4j.bulkhead.configs.tight.max-concurrent-calls=0\n\
                resilience4j.bulkhead.instances.db.base-config=tight\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(
        (err.line(), err.key()),
        (Some(1), Some("max-concurrent-calls")),
        "{err}"
    );

    let (text, line) = one_key(Format::Yaml, "instances", "db", "sliding-window-size", "5");
    let err = load(Format::Yaml, "a.yml", &text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
    assert_eq!(err.line(), Some(line));
    assert_eq!(
        err.expected(),
        Some(
            "one of max-concurrent-calls, max-wait-duration, fair-call-handling-enabled, \
             event-consumer-buffer-size, base-config"
        )
    );

    let (text, _) = one_key(Format::Toml, "instances", "db", "maxConcurentCalls", "5");
    let err = load(Format::Toml, "a.toml", &text).unwrap_err();
    assert!(
        err.to_string()
            .contains("did you mean `max-concurrent-calls`?"),
        "{err}"
    );

    let text = "resilience4j.bulkhead.instances.db.base-config=nowhere\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownBaseConfig, "{err}");

    let text = "resilience4j.bulkhead.instancez.db.max-concurrent-calls=3\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
    assert!(
        err.expected()
            .is_some_and(|e| e.starts_with("resilience4j.bulkhead.instances.<name>.<key>")),
        "the bulkhead's shape: {err}"
    );
}

/// `writable-stack-trace-enabled` (a Java exception's stack trace) is read and ignored, as in
/// a breaker's section; a tag given different values in the two sections is an error.
#[test]
fn spring_only_keys_are_ignored_and_tags_must_agree() {
    for (format, file) in FORMATS {
        let (text, _) = one_key(
            format,
            "instances",
            "db",
            "writableStackTraceEnabled",
            "false",
        );
        let registry = load(format, file, &text).unwrap();
        assert_eq!(
            registry.bulkhead_config_for("db"),
            &BulkheadConfig::default()
        );
    }
    let text = "resilience4j.circuitbreaker.tags.app=orders\n\
                resilience4j.bulkhead.tags.app=billing\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey, "{err}");
    assert_eq!(
        (err.line(), err.key()),
        (Some(2), Some("tags.app")),
        "{err}"
    );
}

/// A `resilience4j.thread-pool-bulkhead` section is skipped with one WARN naming the file and
/// the line, and saying that the semaphore bulkhead is supported. (Each file is loaded under a
/// name of this test's own: other tests load it too, and the log is the whole binary's.)
#[test]
fn thread_pool_bulkheads_are_skipped_with_a_warning() {
    logs::capture();
    for (format, file, line) in [
        (Format::Properties, "order_service.properties", 25),
        (Format::Yaml, "order_service.yml", 46),
        (Format::Toml, "order_service.toml", 41),
    ] {
        let bytes = std::fs::read(data(file)).unwrap();
        let shown = format!("thread-pool-note/{file}");
        let registry = Registry::builder()
            .load_bytes(format, &shown, &bytes)
            .unwrap()
            .build();
        assert_eq!(
            registry
                .bulkhead_config_for("reports")
                .max_concurrent_calls(),
            4,
            "the semaphore bulkhead of the same name is read"
        );
        let warned = logs::lines_with(&[
            "WARN",
            &format!("file={shown} line={line}"),
            "skipped `resilience4j.thread-pool-bulkhead`",
            "semaphore bulkhead (`resilience4j.bulkhead`",
        ]);
        assert_eq!(warned.len(), 1, "{file}: {warned:?}");
    }
}

/// The README's bulkhead example (its section "Bulkheads") loads into what its comments say,
/// and the error the README quotes is the one the example gives with a 0.
#[test]
fn the_readme_example_loads_and_its_quoted_error_is_exact() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let section = &readme[readme.find("### Bulkheads").expect("the README's section")..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml = &section[start..start + section[start..].find("```").unwrap()];
    let registry = load(Format::Yaml, "application.yml", yaml).unwrap();
    assert_eq!(
        registry.bulkhead_config_for("inventory"),
        &bulkhead(20, Duration::from_millis(50), true, 100)
    );
    assert_eq!(
        registry.bulkhead_config_for("other").max_concurrent_calls(),
        10
    );
    assert_eq!(registry.config_for("inventory").sliding_window_size(), 20);

    let zero = yaml.replace("maxConcurrentCalls: 20", "maxConcurrentCalls: 0");
    let err = load(Format::Yaml, "application.yml", &zero).unwrap_err();
    let quoted = format!("``{err}``");
    assert!(
        section.contains(&quoted),
        "the README should quote {quoted}"
    );
}
