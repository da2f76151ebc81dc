//! The call API: classification by predicates, and the per-instance timeout.

use std::time::Duration;

use breaker_core::{CallError, Classifier, Config, ManualClock, Outcome, Registry, State};

#[derive(Debug, PartialEq)]
enum HttpError {
    Status(u16),
    Timeout,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Status(status) => write!(f, "HTTP {status}"),
            HttpError::Timeout => f.write_str("timed out"),
        }
    }
}

fn registry(config: Config) -> Registry {
    Registry::builder()
        .clock(ManualClock::new())
        .default_config(config)
        .build()
}

#[test]
fn ignored_errors_count_for_nothing_and_results_can_be_failures() {
    let b = registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    )
    .breaker("bureau");
    // The credit-bureau contract (docs/CREDIT_BUREAU.md §5): 4xx are benign; 5xx and timeouts
    // fail. A 503 in an Ok counts too.
    let classify = Classifier::new()
        .ignore(|e: &HttpError| matches!(e, HttpError::Status(400..=499)))
        .result(|status: &u16| *status >= 500);
    for _ in 0..10 {
        let out = b.call_sync_with(&classify, || Err::<u16, _>(HttpError::Status(404)));
        assert!(matches!(out, Err(CallError::Inner(HttpError::Status(404)))));
    }
    assert_eq!(b.metrics().buffered_calls, 0);
    assert_eq!(
        b.call_sync_with(&classify, || Ok::<u16, HttpError>(503))
            .unwrap(),
        503,
        "the value is still returned"
    );
    let _ = b.call_sync_with(&classify, || Err::<u16, _>(HttpError::Timeout));
    let _ = b.call_sync_with(&classify, || Ok::<u16, HttpError>(200));
    let m = b.metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (3, 2));
    let _ = b.call_sync_with(&classify, || Ok::<u16, HttpError>(200));
    assert_eq!(b.state(), State::Open, "2 of 4 = 50%");
}

#[test]
fn with_a_record_predicate_other_errors_are_successes() {
    let b = registry(
        Config::builder()
            .minimum_number_of_calls(1)
            .build()
            .unwrap(),
    )
    .breaker("r");
    let classify = Classifier::new().record(|e: &HttpError| *e == HttpError::Timeout);
    let _ = b.call_sync_with(&classify, || Err::<(), _>(HttpError::Status(500)));
    assert_eq!(b.metrics().failed_calls, 0);
    assert_eq!(b.metrics().successful_calls, 1);
    // Any closure over the whole result works too.
    let only_ok = |r: &Result<(), HttpError>| {
        if r.is_ok() {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    };
    let _ = b.call_sync_with(&only_ok, || Err::<(), _>(HttpError::Status(500)));
    assert_eq!(b.metrics().failed_calls, 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_longer_than_the_timeout_is_cancelled_and_recorded_as_a_failure() {
    let b = registry(
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .timeout_duration(Some(Duration::from_millis(2_500)))
            .build()
            .unwrap(),
    )
    .breaker("bureau");
    let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    struct SetOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let guard = SetOnDrop(dropped.clone());
    let out = b
        .call(async move {
            let _guard = guard;
            tokio::time::sleep(Duration::from_secs(15)).await; // the bureau's brownout
            Ok::<_, HttpError>(())
        })
        .await;
    match out {
        Err(CallError::TimedOut(t)) => assert_eq!(t.timeout(), Duration::from_millis(2_500)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        dropped.load(std::sync::atomic::Ordering::SeqCst),
        "the call was cancelled"
    );
    let m = b.metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (1, 1));
    // A fast call is unaffected.
    b.call(async { Ok::<_, HttpError>(()) }).await.unwrap();
    assert_eq!(b.metrics().buffered_calls, 2);
}

/// `record-exceptions` / `ignore-exceptions` from the configuration apply through
/// `config().classifier()`, on top of what the code says.
#[test]
fn configured_error_kinds_classify_calls() {
    use breaker_core::ErrorKind;
    let client_error = ErrorKind::new("ClientError", |e: &HttpError| {
        matches!(e, HttpError::Status(400..=499))
    });
    let timeout = ErrorKind::new("Timeout", |e: &HttpError| *e == HttpError::Timeout);
    let b = registry(
        Config::builder()
            .minimum_number_of_calls(1)
            .ignore_exceptions([client_error])
            .record_exceptions([timeout])
            .build()
            .unwrap(),
    )
    .breaker("kinds");
    let config = b.config().clone();
    let classify = config.classifier();
    let _ = b.call_sync_with(&classify, || Err::<(), _>(HttpError::Status(404)));
    assert_eq!(b.metrics().buffered_calls, 0, "a 4xx is ignored");
    let _ = b.call_sync_with(&classify, || Err::<(), _>(HttpError::Status(500)));
    assert_eq!(
        (b.metrics().successful_calls, b.metrics().failed_calls),
        (1, 0),
        "not a listed kind: a success"
    );
    let _ = b.call_sync_with(&classify, || Err::<(), _>(HttpError::Timeout));
    assert_eq!(b.metrics().failed_calls, 1, "a listed kind is a failure");
    assert_eq!(
        format!("{classify:?}"),
        r#"ConfiguredClassifier { record_exceptions: [ErrorKind("Timeout")], ignore_exceptions: [ErrorKind("ClientError")], .. }"#
    );
}

/// The configured kinds on top of a classification that describes its errors
/// ([`Described`](breaker_core::Described)): the listeners that asked for error texts get the
/// errors' `Display` text, as without the kinds.
#[test]
fn configured_kinds_keep_the_codes_error_texts() {
    use std::sync::{Arc, Mutex};
    let b = registry(Config::default()).breaker("kinds-texts");
    let texts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&texts);
    let _s = b.subscribe_with_error_texts(move |e| {
        if let Some(error) = e.error() {
            sink.lock().unwrap().push(error.text().map(str::to_owned));
        }
    });
    let config = b.config().clone();
    let described = config
        .classifier()
        .with_code(breaker_core::Described::new());
    let _ = b.call_sync_with(&described, || Err::<(), _>(HttpError::Status(503)));
    let _ = b.call_sync_with(&config.classifier(), || {
        Err::<(), _>(HttpError::Status(503))
    });
    assert_eq!(*texts.lock().unwrap(), [Some("HTTP 503".to_owned()), None]);
}

#[tokio::test(start_paused = true)]
async fn a_call_that_spends_its_whole_cooperative_budget_still_times_out() {
    let b = registry(
        Config::builder()
            .timeout_duration(Some(Duration::from_secs(1)))
            .build()
            .unwrap(),
    )
    .breaker("busy");
    // Never finishes, and spends Tokio's budget on every poll: a timer polled within the
    // budget would never see its deadline.
    let call = tokio::spawn(async move {
        b.call(async {
            loop {
                tokio::task::consume_budget().await;
            }
            #[allow(unreachable_code)]
            Ok::<(), HttpError>(())
        })
        .await
    });
    tokio::task::yield_now().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    for _ in 0..100 {
        if call.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(call.is_finished(), "the busy call did not time out");
    match call.await.unwrap() {
        Err(CallError::TimedOut(t)) => assert_eq!(t.timeout(), Duration::from_secs(1)),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// An HTTP status counts by its class: a 5xx is a failure, a 4xx ignored, anything else
/// (2xx, 3xx, and codes outside 100..=599) a success. Checked at each class's edges, and
/// through a breaker that counts a call by its status.
#[test]
fn http_statuses_count_by_their_class() {
    let by_class = [
        (200, Outcome::Success),
        (399, Outcome::Success),
        (400, Outcome::Ignored),
        (404, Outcome::Ignored),
        (499, Outcome::Ignored),
        (500, Outcome::Failure),
        (503, Outcome::Failure),
        (599, Outcome::Failure),
        (600, Outcome::Success),
    ];
    for (status, outcome) in by_class {
        assert_eq!(
            Outcome::from_http_status(status),
            outcome,
            "status {status}"
        );
    }
    let b = registry(
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .build()
            .unwrap(),
    )
    .breaker("statuses");
    let by_status = |r: &Result<u16, HttpError>| match r {
        Ok(status) => Outcome::from_http_status(*status),
        Err(_) => Outcome::Failure,
    };
    let _ = b.call_sync_with(&by_status, || Ok::<u16, HttpError>(404));
    assert_eq!(b.metrics().buffered_calls, 0, "a 4xx is ignored");
    let _ = b.call_sync_with(&by_status, || Ok::<u16, HttpError>(503));
    let _ = b.call_sync_with(&by_status, || Ok::<u16, HttpError>(200));
    let m = b.metrics();
    assert_eq!((m.buffered_calls, m.failed_calls), (2, 1), "a 5xx fails");
}

/// [`Described`](breaker_core::Described) changes how errors are described, never how they
/// count: the breaker's configured kinds apply on top of its classification exactly when they
/// would on top of the classification alone.
#[test]
fn described_counts_calls_as_its_classification_does() {
    use breaker_core::{Classify, Described, ErrorKind};

    /// A classification that applied the configured kinds itself (as the classification of
    /// an attempt through inner guards does): every error a failure, kinds already applied.
    struct KindsApplied;
    impl<T> Classify<T, HttpError> for KindsApplied {
        fn classify(&self, result: &Result<T, HttpError>) -> Outcome {
            match result {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Failure,
            }
        }
        fn applies_kinds(&self) -> bool {
            true
        }
    }

    let client_error = ErrorKind::new("ClientError", |e: &HttpError| {
        matches!(e, HttpError::Status(400..=499))
    });
    let b = registry(
        Config::builder()
            .minimum_number_of_calls(100)
            .ignore_exceptions([client_error])
            .build()
            .unwrap(),
    )
    .breaker("described");
    let _ = b.call_sync_with(&Described::new(), || Err::<(), _>(HttpError::Status(404)));
    assert_eq!(
        b.metrics().buffered_calls,
        0,
        "the configured ignore-exceptions apply on top of the default classification"
    );
    let _ = b.call_sync_with(&Described(KindsApplied), || {
        Err::<(), _>(HttpError::Status(404))
    });
    assert_eq!(
        (b.metrics().buffered_calls, b.metrics().failed_calls),
        (1, 1),
        "a classification that applied the kinds itself is taken as is"
    );
}

/// A classifier's `Debug` text names its type; its predicates are closures, which have none.
#[test]
fn a_classifier_debugs_as_its_type() {
    let classify = Classifier::new().ignore(|e: &HttpError| *e == HttpError::Timeout);
    assert_eq!(format!("{classify:?}"), "Classifier { .. }");
}
