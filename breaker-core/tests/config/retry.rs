//! Retries in configuration files: `resilience4j.retry.*` loads from the three formats beside
//! the breakers' and bulkheads' sections, into the configs the registry's retries are made
//! with; the built-in error kinds are named without registering them; a bad value or one of
//! Spring's keys breaker cannot load is rejected with the file, the line and the key.

use std::path::Path;
use std::time::Duration;

use breaker_core::{
    BulkheadConfig, ErrorKind, Format, LoadError, LoadErrorKind, Registry, RegistryBuilder,
    RetryConfig, State,
};

use crate::files::{self, data, load, FORMATS};

#[derive(Debug)]
enum HttpError {
    Status(u16),
}

/// The builder with the error kinds the checkout service's files name.
fn with_kinds() -> RegistryBuilder {
    Registry::builder()
        .error_kind(ErrorKind::new("ServerError", |e: &HttpError| {
            matches!(e, HttpError::Status(500..=599))
        }))
        .error_kind(ErrorKind::new("ClientError", |e: &HttpError| {
            matches!(e, HttpError::Status(400..=499))
        }))
}

/// The names of a list of error kinds.
fn names(kinds: &[ErrorKind]) -> Vec<&str> {
    kinds.iter().map(ErrorKind::name).collect()
}

/// One key of a `resilience4j.retry` section in `format`, and the line it is on.
fn one_key(format: Format, group: &str, name: &str, key: &str, value: &str) -> (String, u32) {
    files::one_key(format, "retry", group, name, key, value)
}

/// Reads one of a config's durations.
type ReadDuration = fn(&RetryConfig) -> Option<Duration>;

/// A Spring Boot file with a breaker, a bulkhead and retries for the same backend
/// (`configs.default`, a second shared config on `base-config`, a bracketed name, lists as
/// comma-separated text, indexed items and YAML lists, the built-in kinds by both their names,
/// tags in two sections, the budget's keys in three spellings) loads in each format: every
/// retry gets its instance config merged over its base, a name the file does not mention gets
/// `configs.default`, and the breaker and bulkhead of the same name keep their own configs.
#[test]
fn checkout_service_files_configure_breakers_bulkheads_and_retries_together() {
    for file in [
        "checkout_service.properties",
        "checkout_service.yml",
        "checkout_service.toml",
    ] {
        let registry = with_kinds().load_file(data(file)).unwrap().build();

        let default = registry.retry_shared_config("default").unwrap();
        assert_eq!(default.max_attempts(), 4, "{file}");
        assert_eq!(
            default.wait_duration(),
            Duration::from_millis(100),
            "{file}"
        );
        assert_eq!(
            names(default.retry_exceptions()),
            [
                "java.util.concurrent.TimeoutException",
                "BulkheadFullException"
            ],
            "{file}"
        );
        assert_eq!(
            names(default.ignore_exceptions()),
            ["ClientError"],
            "{file}"
        );
        assert!(!default.enable_exponential_backoff(), "{file}");

        let backoff = registry.retry_shared_config("backoff").unwrap();
        assert_eq!(backoff.max_attempts(), 4, "{file}: from its base");
        assert!(backoff.enable_exponential_backoff(), "{file}");
        assert_eq!(backoff.exponential_backoff_multiplier(), 2.0, "{file}");
        assert_eq!(
            backoff.exponential_max_wait_duration(),
            Some(Duration::from_secs(2)),
            "{file}"
        );
        assert!(backoff.enable_randomized_wait(), "{file}");
        assert_eq!(backoff.randomized_wait_factor(), 0.25, "{file}");

        let payments = registry.retry_config_for("payments");
        assert_eq!(payments.max_attempts(), 5, "{file}");
        assert_eq!(
            payments.wait_duration(),
            Duration::from_millis(100),
            "{file}"
        );
        assert!(
            payments.enable_exponential_backoff(),
            "{file}: base-config backoff"
        );
        assert_eq!(payments.randomized_wait_factor(), 0.25, "{file}");
        assert_eq!(
            names(payments.retry_exceptions()),
            [
                "ServerError",
                "TimeoutException",
                "io.github.resilience4j.circuitbreaker.CallNotPermittedException"
            ],
            "{file}: a list replaces its base's"
        );
        assert_eq!(
            names(payments.ignore_exceptions()),
            ["ClientError"],
            "{file}"
        );
        assert!(payments.fail_after_max_attempts(), "{file}");
        assert!(
            payments.budget_enabled(),
            "{file}: the budget is on by default"
        );
        let server = &payments.retry_exceptions()[0];
        assert!(server.matches(&HttpError::Status(503)), "{file}");
        assert!(!server.matches(&HttpError::Status(404)), "{file}");

        let inventory = registry.retry_config_for("inventory");
        assert_eq!(inventory.max_attempts(), 4, "{file}: configs.default");
        assert_eq!(
            inventory.wait_duration(),
            Duration::from_millis(500),
            "{file}"
        );
        assert_eq!(inventory.budget_ratio(), 0.1, "{file}");
        assert_eq!(inventory.budget_window(), Duration::from_secs(30), "{file}");
        assert_eq!(inventory.budget_min_retries_per_second(), 2, "{file}");

        let fraud = registry.retry_config_for("fraud.v2");
        assert!(!fraud.budget_enabled(), "{file}: a bracketed name");
        assert_eq!(fraud.event_consumer_buffer_size(), 10, "{file}");
        assert_eq!(fraud.max_attempts(), 4, "{file}");

        assert_eq!(
            registry.retry_config_for("unmentioned"),
            default,
            "{file}: configs.default"
        );
        assert_eq!(
            registry.config_for("payments").sliding_window_size(),
            20,
            "{file}"
        );
        assert_eq!(
            registry
                .bulkhead_config_for("payments")
                .max_concurrent_calls(),
            8,
            "{file}"
        );
        assert_eq!(
            registry.tags(),
            [
                ("app".to_owned(), "checkout-service".to_owned()),
                ("team".to_owned(), "payments".to_owned())
            ],
            "{file}: one tag set, a tag of two sections once"
        );
    }
}

/// The built-in kinds match what a retry around a breaker or a bulkhead sees: a rejection
/// (`CallNotPermittedException`), a refusal (`BulkheadFullException`), by either name, and
/// only those.
#[test]
fn built_in_kinds_match_rejections_and_refusals() {
    let text = "resilience4j.retry.instances.a.retry-exceptions=CallNotPermittedException,\
                io.github.resilience4j.circuitbreaker.CallNotPermittedException,\
                io.github.resilience4j.bulkhead.BulkheadFullException\n\
                resilience4j.retry.instances.a.ignore-exceptions=TimeoutException,\
                java.util.concurrent.TimeoutException\n";
    let registry = load(Format::Properties, "a.properties", text).unwrap();
    let config = registry.retry_config_for("a");

    let breaker = registry.breaker("a");
    breaker.transition_to(State::ForcedOpen).unwrap();
    let rejected = breaker.call_sync(|| Ok::<(), HttpError>(())).unwrap_err();
    let rejected = rejected.rejected().unwrap();
    let bulkhead = registry.bulkhead("a");
    let _taken: Vec<_> = (0..BulkheadConfig::default().max_concurrent_calls())
        .map(|_| bulkhead.try_acquire_owned().unwrap())
        .collect();
    let full = bulkhead.try_acquire_owned().unwrap_err();

    let [by_name, by_class, bulkhead_full] = config.retry_exceptions() else {
        panic!("three kinds: {:?}", config.retry_exceptions());
    };
    for kind in [by_name, by_class] {
        assert!(kind.matches(rejected), "{kind:?}");
        assert!(!kind.matches(&full), "{kind:?}");
    }
    assert!(bulkhead_full.matches(&full));
    assert!(!bulkhead_full.matches(rejected));
    for timeout in config.ignore_exceptions() {
        assert!(!timeout.matches(rejected) && !timeout.matches(&full));
        assert!(!timeout.matches(&HttpError::Status(504)));
    }
    assert_eq!(
        ErrorKind::call_not_permitted().name(),
        "CallNotPermittedException"
    );
    assert!(ErrorKind::call_not_permitted().matches(rejected));
    assert_eq!(ErrorKind::call_timed_out().name(), "TimeoutException");
    assert!(!ErrorKind::call_timed_out().matches(rejected));

    // A kind registered under a built-in name takes its place.
    let registry = Registry::builder()
        .error_kind(ErrorKind::of_type::<HttpError>("TimeoutException"))
        .load_str(Format::Properties, "a.properties", text)
        .unwrap()
        .build();
    let timeout = &registry.retry_config_for("a").ignore_exceptions()[0];
    assert!(timeout.matches(&HttpError::Status(504)));
}

/// Without a file, or with a file that has no retry section, every retry gets Resilience4j's
/// defaults and the budget's; a `configs.default` given in code serves every name, and a
/// file's retry may take a shared config given in code as its base.
#[test]
fn retries_default_to_resilience4j_or_to_the_configs_given_in_code() {
    let registry = load(
        Format::Properties,
        "a.properties",
        "resilience4j.circuitbreaker.instances.x.sliding-window-size=5\n",
    )
    .unwrap();
    let config = registry.retry_config_for("x");
    assert_eq!(config, &RetryConfig::default());
    assert_eq!(config.max_attempts(), 3);
    assert_eq!(config.wait_duration(), Duration::from_millis(500));
    assert!(config.budget_enabled());

    let code_default = RetryConfig::builder().max_attempts(2).build().unwrap();
    let quick = RetryConfig::builder()
        .wait_duration(Duration::from_millis(5))
        .build()
        .unwrap();
    let registry = Registry::builder()
        .retry_default_config(code_default.clone())
        .retry_shared_config("quick", quick.clone())
        .retry_instance("db", quick.clone())
        .load_str(
            Format::Toml,
            "app.toml",
            "[resilience4j.retry.instances.cache]\nbase-config = \"quick\"\nmax-attempts = 7\n",
        )
        .unwrap()
        .build();
    assert_eq!(registry.retry_config_for("any"), &code_default);
    assert_eq!(registry.retry_config_for("db"), &quick);
    assert_eq!(registry.retry_shared_config("quick"), Some(&quick));
    assert_eq!(registry.retry_shared_config("missing"), None);
    let cache = registry.retry_config_for("cache");
    assert_eq!(cache.max_attempts(), 7);
    assert_eq!(cache.wait_duration(), Duration::from_millis(5), "from code");
    assert_eq!(
        registry.bulkhead_config_for("db"),
        &BulkheadConfig::default(),
        "a retry's config is not a bulkhead's"
    );
}

/// Every relaxed spelling of a key binds to it, in instances and in configs, in each format.
#[test]
fn relaxed_spellings_are_one_retry_key() {
    for (format, file) in FORMATS {
        for group in ["instances", "configs"] {
            for key in [
                "max-attempts",
                "maxAttempts",
                "max_attempts",
                "MAX_ATTEMPTS",
            ] {
                let (text, _) = one_key(format, group, "svc", key, "7");
                let registry = load(format, file, &text).unwrap();
                let config = match group {
                    "instances" => registry.retry_config_for("svc"),
                    _ => registry.retry_shared_config("svc").unwrap(),
                };
                assert_eq!(config.max_attempts(), 7, "{text}");
            }
        }
        let two = Duration::from_secs(2);
        let read: [(&str, ReadDuration); 3] = [
            ("waitDuration", |c| Some(c.wait_duration())),
            ("EXPONENTIAL_MAX_WAIT_DURATION", |c| {
                c.exponential_max_wait_duration()
            }),
            ("budget_window", |c| Some(c.budget_window())),
        ];
        for (key, get) in read {
            let (text, _) = one_key(format, "instances", "svc", key, "PT2S");
            let registry = load(format, file, &text).unwrap();
            assert_eq!(get(registry.retry_config_for("svc")), Some(two), "{text}");
        }
    }
}

/// Loads `text` and returns its error, which must be an invalid value at `line` of `file`
/// under `key`, expecting something that contains `expected`.
fn assert_invalid(format: Format, file: &str, text: &str, line: u32, key: &str, expected: &str) {
    let err = load(format, file, text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::InvalidValue, "{err}");
    assert_eq!(err.file(), file, "{err}");
    assert_eq!(err.line(), Some(line), "{err}");
    assert_eq!(err.key(), Some(key), "{err}");
    assert!(
        err.expected().is_some_and(|e| e.contains(expected)),
        "expected `{expected}`: {err}"
    );
    assert!(
        err.to_string().starts_with(&format!("{file}:{line}: ")),
        "{err}"
    );
}

/// Each key's bad values, in each format and both groups: the error names the file, the line
/// and the key, with what the key takes.
#[test]
fn bad_values_name_the_key_and_the_line() {
    let bad = [
        (
            "max-attempts",
            "0",
            "a whole number of calls from 1 to 1000",
        ),
        ("maxAttempts", "1001", "from 1 to 1000"),
        ("max-attempts", "-1", "a whole number"),
        ("max-attempts", "three", "a whole number"),
        ("max-attempts", "99999999999", "1000"),
        ("wait-duration", "-1s", "a duration"),
        ("waitDuration", "soon", "a duration"),
        ("wait-duration", "36501d", "at most 36500d"),
        (
            "exponential-backoff-multiplier",
            "0",
            "a number greater than 0",
        ),
        (
            "exponential-backoff-multiplier",
            "-1.5",
            "a number greater than 0",
        ),
        ("exponentialBackoffMultiplier", "fast", "a decimal number"),
        (
            "exponential-max-wait-duration",
            "0s",
            "a duration of at least 1ms",
        ),
        ("randomized-wait-factor", "1.5", "a number from 0 to 1"),
        ("randomizedWaitFactor", "-0.1", "a number from 0 to 1"),
        ("budget-window", "500ms", "a duration of at least 1s"),
        ("budgetWindow", "0", "a duration of at least 1s"),
        ("budget-ratio", "0", "a number greater than 0"),
        (
            "budget-min-retries-per-second",
            "1000001",
            "from 0 to 1000000",
        ),
        ("event-consumer-buffer-size", "100001", "from 0 to 100000"),
        ("enable-exponential-backoff", "maybe", "true or false"),
        ("fail-after-max-attempts", "sometimes", "true or false"),
    ];
    for (format, file) in FORMATS {
        for group in ["instances", "configs"] {
            for (key, value, expected) in bad {
                let (text, line) = one_key(format, group, "payments", key, value);
                assert_invalid(format, file, &text, line, key, expected);
            }
        }
    }
    let (text, _) = one_key(Format::Yaml, "instances", "payments", "maxAttempts", "0");
    let err = load(Format::Yaml, "application.yml", &text).unwrap_err();
    assert_eq!(
        err.to_string(),
        "application.yml:5: invalid value `0` for `maxAttempts` in instances.payments: \
         expected a whole number of calls from 1 to 1000"
    );
}

/// A bad value in a base is blamed on the base's line; a key of another pattern is unknown in
/// a retry's section, with the retry's keys listed; a typo gets a suggestion; an index on a
/// key that is not a list names the retry's lists.
#[test]
fn retry_sections_are_checked_against_the_retrys_keys() {
    let text = "resilience4j.retry.instances.db.base-config=tight\n\
                resilience4j.retry.configs.tight.max-attempts=0\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(
        (err.line(), err.key()),
        (Some(2), Some("max-attempts")),
        "{err}"
    );
    assert!(
        err.to_string().contains("(the base of instances.db)"),
        "{err}"
    );

    let (text, line) = one_key(Format::Yaml, "instances", "db", "max-concurrent-calls", "5");
    let err = load(Format::Yaml, "a.yml", &text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
    assert_eq!(err.line(), Some(line));
    let listed = err.expected().unwrap();
    assert!(
        listed.starts_with("one of max-attempts, wait-duration, "),
        "{err}"
    );
    assert!(
        listed.ends_with("budget-min-retries-per-second, base-config"),
        "{err}"
    );

    let (text, _) = one_key(Format::Toml, "instances", "db", "maxAtempts", "5");
    let err = load(Format::Toml, "a.toml", &text).unwrap_err();
    assert!(
        err.to_string().contains("did you mean `max-attempts`?"),
        "{err}"
    );

    let text = "resilience4j.retry.instances.db.max-attempts[0]=3\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(
        err.expected(),
        Some("an index only on retry-exceptions or ignore-exceptions"),
        "{err}"
    );

    let text = "resilience4j.retry.instances.db.base-config=nowhere\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownBaseConfig, "{err}");

    let text = "resilience4j.retry.instancez.db.max-attempts=3\n";
    let err = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
    assert!(
        err.expected()
            .is_some_and(|e| e.starts_with("resilience4j.retry.instances.<name>.<key>")),
        "the retry's shape: {err}"
    );

    let text = "[resilience4j.retyr.instances.db]\nmax-attempts = 3\n";
    let err = load(Format::Toml, "a.toml", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::UnknownKey, "{err}");
    assert_eq!(
        err.expected(),
        Some("resilience4j.circuitbreaker, resilience4j.bulkhead or resilience4j.retry")
    );
}

/// An error kind no code registered, in either list and in each format, is rejected at its
/// line, listing the registered kinds and the built-in ones.
#[test]
fn an_unknown_error_kind_names_the_line_and_the_kinds_there_are() {
    for (format, file) in FORMATS {
        for key in ["retry-exceptions", "ignoreExceptions"] {
            let (text, line) = one_key(format, "instances", "payments", key, "IOException");
            let text = match format {
                Format::Toml => text.replace("\"IOException\"", "[\"IOException\"]"),
                _ => text,
            };
            let err = with_kinds()
                .load_str(format, file, &text)
                .map(|_| ())
                .unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::UnknownErrorKind, "{err}");
            assert_eq!(err.line(), Some(line), "{err}");
            assert_eq!(err.key(), Some(key), "{err}");
            assert_eq!(err.value(), Some("IOException"), "{err}");
            assert_eq!(
                err.expected(),
                Some(
                    "one of the error kinds registered in code: ClientError, ServerError, or a \
                     built-in kind: `BulkheadFullException`, `CallNotPermittedException`, \
                     `TimeoutException`"
                ),
                "{err}"
            );
        }
    }
}

/// Spring's retry keys that name Java classes, and Resilience4j's older attempt count, are
/// refused at their line with what to do instead; `writable-stack-trace-enabled` is read and
/// ignored.
#[test]
fn spring_keys_breaker_cannot_load_say_what_to_do_instead() {
    for (format, file) in FORMATS {
        for (key, hint) in [
            ("retryExceptionPredicate", "register an error kind in code"),
            ("result-predicate", "give the result predicate in code"),
            (
                "intervalFunction",
                "use wait-duration with enable-exponential-backoff",
            ),
            (
                "interval-bi-function",
                "use wait-duration with enable-exponential-backoff",
            ),
            ("maxRetryAttempts", "replaced by max-attempts"),
            ("consumeResultBeforeRetryAttempt", "Retry::subscribe"),
        ] {
            let (text, line) = one_key(format, "instances", "payments", key, "com.acme.Custom");
            let err = load(format, file, &text).unwrap_err();
            assert_eq!(err.kind(), LoadErrorKind::UnsupportedKey, "{err}");
            assert_eq!(err.line(), Some(line), "{err}");
            assert_eq!(err.key(), Some(key), "{err}");
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("{file}:{line}: `{key}`")),
                "{shown}"
            );
            assert!(shown.contains("is not supported"), "{shown}");
            assert!(shown.contains(hint), "{hint}: {shown}");
        }
        let (text, _) = one_key(
            format,
            "instances",
            "db",
            "writableStackTraceEnabled",
            "false",
        );
        let registry = load(format, file, &text).unwrap();
        assert_eq!(registry.retry_config_for("db"), &RetryConfig::default());
    }
}

/// A tag the retry's section gives another value than a breaker's or a bulkhead's section is
/// an error at the later line, naming the three sections.
#[test]
fn the_retrys_tags_join_the_registrys_one_set() {
    let text = "resilience4j.bulkhead.tags.app=orders\n\
                resilience4j.retry.tags.app=billing\n";
    let err: LoadError = load(Format::Properties, "a.properties", text).unwrap_err();
    assert_eq!(err.kind(), LoadErrorKind::DuplicateKey, "{err}");
    assert_eq!(
        (err.line(), err.key()),
        (Some(2), Some("tags.app")),
        "{err}"
    );
    assert_eq!(
        err.expected(),
        Some(
            "one value per tag across resilience4j.circuitbreaker.tags, \
             resilience4j.bulkhead.tags, resilience4j.retry.tags"
        )
    );
    let registry = load(
        Format::Properties,
        "a.properties",
        "resilience4j.retry.tags.app=orders\n",
    )
    .unwrap();
    assert_eq!(registry.tags(), [("app".to_owned(), "orders".to_owned())]);
}

/// The README's retry example (its section "Retries") loads into what its comments say, and
/// the error the README quotes is the one the example gives with a multiplier of 0.
#[test]
fn the_readme_example_loads_and_its_quoted_error_is_exact() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let section = &readme[readme.find("### Retries").expect("the README's section")..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml = &section[start..start + section[start..].find("```").unwrap()];
    let registry = Registry::builder()
        .error_kind(ErrorKind::new("ServerError", |e: &HttpError| {
            matches!(e, HttpError::Status(500..=599))
        }))
        .load_str(Format::Yaml, "application.yml", yaml)
        .unwrap()
        .build();
    let payments = registry.retry_config_for("payments");
    assert_eq!(payments.max_attempts(), 4);
    assert_eq!(payments.wait_duration(), Duration::from_millis(200));
    assert!(payments.enable_exponential_backoff());
    assert_eq!(payments.exponential_backoff_multiplier(), 2.0);
    assert_eq!(
        payments.exponential_max_wait_duration(),
        Some(Duration::from_secs(2))
    );
    assert_eq!(
        names(payments.retry_exceptions()),
        ["ServerError", "TimeoutException"]
    );
    assert_eq!(payments.budget_ratio(), 0.1);
    assert_eq!(registry.retry_config_for("other").max_attempts(), 3);
    assert_eq!(registry.config_for("payments").sliding_window_size(), 20);

    let zero = yaml.replace(
        "exponentialBackoffMultiplier: 2",
        "exponentialBackoffMultiplier: 0",
    );
    assert_ne!(zero, yaml);
    let err = Registry::builder()
        .error_kind(ErrorKind::new("ServerError", |_: &HttpError| true))
        .load_str(Format::Yaml, "application.yml", &zero)
        .map(|_| ())
        .unwrap_err();
    let quoted = format!("``{err}``");
    assert!(
        section.contains(&quoted),
        "the README should quote {quoted}"
    );
}
