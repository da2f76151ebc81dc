//! The retry engine through its public API, without waits (`wait-duration` 0): attempt
//! counts, retry-exceptions and ignore-exceptions, the result predicate,
//! fail-after-max-attempts, the events in order with their attempt numbers, and the four
//! metric kinds. Scenarios follow Resilience4j's `RetryImplTest`, `EventPublisherTest` and
//! `RetryConfigBuilderTest`. Waits on a manual clock, cancellation mid-wait, blocking waits and
//! the budget over a moving window are tested beside the engine
//! (breaker-core/src/retry/tests.rs).

use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_core::retry::{Retry, RetryConfig, RetryConfigBuilder, RetryEventKind};
use breaker_core::{CallError, Classifier, ErrorKind, Outcome, Subscription};

use RetryEventKind::{Error, IgnoredError, Success};

#[derive(Debug, PartialEq)]
enum Fault {
    Io,
    Rejected,
}

fn config() -> RetryConfigBuilder {
    RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .budget_enabled(false)
}

fn retry(name: &str, config: RetryConfigBuilder) -> Retry {
    Retry::new(name, config.build().unwrap())
}

/// Events heard, as `(kind, number of attempts)`.
type Seen = Arc<Mutex<Vec<(RetryEventKind, u32)>>>;

/// The events `retry` publishes from now on.
fn events(retry: &Retry) -> (Seen, Subscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = retry.subscribe(move |event| {
        sink.lock()
            .unwrap()
            .push((event.kind(), event.number_of_attempts()))
    });
    (seen, subscription)
}

const RETRY: RetryEventKind = RetryEventKind::Retry {
    wait: Duration::ZERO,
};

/// `(successful without, successful with, failed without, failed with)`.
fn kinds(retry: &Retry) -> [u64; 4] {
    let m = retry.metrics();
    [
        m.successful_calls_without_retry_attempt(),
        m.successful_calls_with_retry_attempt(),
        m.failed_calls_without_retry_attempt(),
        m.failed_calls_with_retry_attempt(),
    ]
}

#[test]
fn a_first_success_is_one_attempt_and_publishes_nothing() {
    let retry = retry("retry-engine:first", config());
    let (seen, _subscription) = events(&retry);
    let attempts = Cell::new(0);
    let result = retry.call_sync(|| {
        attempts.set(attempts.get() + 1);
        Ok::<_, Fault>("ok")
    });
    assert_eq!(result, Ok("ok"));
    assert_eq!(attempts.get(), 1);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(kinds(&retry), [1, 0, 0, 0]);
}

#[test]
fn a_failing_call_makes_max_attempts_and_ends_with_the_last_error() {
    let retry = retry("retry-engine:exhausted", config().max_attempts(3));
    let (seen, _subscription) = events(&retry);
    let attempts = Cell::new(0);
    let result = retry.call_sync(|| {
        attempts.set(attempts.get() + 1);
        Err::<(), _>(attempts.get())
    });
    assert_eq!(result, Err(CallError::Inner(3)), "the last error");
    assert_eq!(attempts.get(), 3);
    assert_eq!(*seen.lock().unwrap(), [(RETRY, 1), (RETRY, 2), (Error, 3)]);
    assert_eq!(kinds(&retry), [0, 0, 0, 1]);
}

#[test]
fn a_call_that_succeeds_after_retries_publishes_success_with_its_failed_attempts() {
    let retry = retry("retry-engine:recovers", config().max_attempts(5));
    let (seen, _subscription) = events(&retry);
    let attempts = Cell::new(0);
    let result = retry.call_sync(|| {
        attempts.set(attempts.get() + 1);
        if attempts.get() < 3 {
            Err(Fault::Io)
        } else {
            Ok(attempts.get())
        }
    });
    assert_eq!(result, Ok(3));
    assert_eq!(
        *seen.lock().unwrap(),
        [(RETRY, 1), (RETRY, 2), (Success, 2)]
    );
    assert_eq!(kinds(&retry), [0, 1, 0, 0]);
}

#[test]
fn max_attempts_one_never_retries_and_counts_as_failed_with_retry() {
    // Resilience4j: numOfAttempts (1) >= maxAttempts (1) is "failed after retry".
    let retry = retry("retry-engine:one", config().max_attempts(1));
    let (seen, _subscription) = events(&retry);
    assert_eq!(
        retry.call_sync(|| Err::<(), _>(Fault::Io)),
        Err(CallError::Inner(Fault::Io))
    );
    assert_eq!(*seen.lock().unwrap(), [(Error, 1)]);
    assert_eq!(kinds(&retry), [0, 0, 0, 1]);
}

#[test]
fn ignore_exceptions_end_the_call_at_once_and_win_over_retry_exceptions() {
    let io = ErrorKind::new("IOException", |e: &Fault| *e == Fault::Io);
    let rejected = ErrorKind::new("Rejected", |e: &Fault| *e == Fault::Rejected);
    let retry = retry(
        "retry-engine:ignored",
        config()
            .max_attempts(3)
            .retry_exceptions([io.clone(), rejected.clone()])
            .ignore_exceptions([rejected]),
    );
    let (seen, _subscription) = events(&retry);
    let attempts = Cell::new(0);
    let result = retry.call_sync(|| {
        attempts.set(attempts.get() + 1);
        Err::<(), _>(Fault::Rejected)
    });
    assert_eq!(result, Err(CallError::Inner(Fault::Rejected)));
    assert_eq!(attempts.get(), 1);
    assert_eq!(*seen.lock().unwrap(), [(IgnoredError, 0)]);
    assert_eq!(kinds(&retry), [0, 0, 1, 0]);
}

#[test]
fn retry_exceptions_retry_only_their_kinds() {
    let io = ErrorKind::new("IOException", |e: &Fault| *e == Fault::Io);
    let retry = retry(
        "retry-engine:only-io",
        config().max_attempts(3).retry_exceptions([io]),
    );
    let attempts = Cell::new(0);
    let run = |fault: fn() -> Fault| {
        attempts.set(0);
        let _ = retry.call_sync(|| {
            attempts.set(attempts.get() + 1);
            Err::<(), _>(fault())
        });
        attempts.get()
    };
    assert_eq!(run(|| Fault::Io), 3);
    // Not listed: not retried. Resilience4j's exception predicate is false for it, and the
    // call fails at once, counted as failed without retry.
    let (seen, _subscription) = events(&retry);
    assert_eq!(run(|| Fault::Rejected), 1);
    assert_eq!(*seen.lock().unwrap(), [(IgnoredError, 0)]);
    assert_eq!(kinds(&retry), [0, 0, 1, 1]);
}

#[test]
fn the_result_predicate_retries_an_ok_and_returns_the_last_one() {
    let retry = retry("retry-engine:result", config().max_attempts(3));
    let (seen, _subscription) = events(&retry);
    let status = Cell::new(500);
    let classify = Classifier::new().result(|status: &u16| *status == 503);
    let result = retry.call_sync_with(&classify, || {
        status.set(status.get() + 1);
        Ok::<u16, Fault>(503)
    });
    assert_eq!(
        result,
        Ok(503),
        "the last result, without fail-after-max-attempts"
    );
    assert_eq!(status.get(), 503, "three attempts");
    assert_eq!(*seen.lock().unwrap(), [(RETRY, 1), (RETRY, 2), (Error, 3)]);
    assert_eq!(kinds(&retry), [0, 0, 0, 1]);
    // An `Ok` the predicate does not match ends the call.
    assert_eq!(
        retry.call_sync_with(&classify, || Ok::<u16, Fault>(200)),
        Ok(200)
    );
}

#[test]
fn fail_after_max_attempts_turns_the_last_retried_result_into_max_retries_exceeded() {
    let retry = retry(
        "retry-engine:fail-after",
        config().max_attempts(2).fail_after_max_attempts(true),
    );
    let classify = |result: &Result<u16, Fault>| match result {
        Ok(503) | Err(_) => Outcome::Failure,
        Ok(_) => Outcome::Success,
    };
    let result = retry.call_sync_with(&classify, || Ok::<u16, Fault>(503));
    let exhausted = result.unwrap_err();
    assert!(exhausted.is_retries_exhausted());
    let exhausted = exhausted.retries_exhausted().unwrap();
    assert_eq!(exhausted.retry_name(), "retry-engine:fail-after");
    assert_eq!(exhausted.attempts(), 2);
    assert_eq!(
        exhausted.to_string(),
        "Retry 'retry-engine:fail-after' has exhausted all attempts (2)"
    );
    assert_eq!(
        std::io::Error::from(exhausted.clone()).kind(),
        std::io::ErrorKind::Other
    );
    // An error that runs out is still the error itself.
    assert_eq!(
        retry.call_sync_with(&classify, || Err::<u16, _>(Fault::Io)),
        Err(CallError::Inner(Fault::Io))
    );
}

#[tokio::test]
async fn the_async_call_makes_a_fresh_attempt_each_time() {
    let retry = retry("retry-engine:async", config().max_attempts(4));
    let (seen, _subscription) = events(&retry);
    let attempts = Arc::new(Mutex::new(0));
    let result = retry
        .call(|| {
            let attempts = Arc::clone(&attempts);
            async move {
                let mut n = attempts.lock().unwrap();
                *n += 1;
                if *n < 4 {
                    Err(Fault::Io)
                } else {
                    Ok(*n)
                }
            }
        })
        .await;
    assert_eq!(result, Ok(4));
    assert_eq!(
        *seen.lock().unwrap(),
        [(RETRY, 1), (RETRY, 2), (RETRY, 3), (Success, 3)]
    );
    assert_eq!(kinds(&retry), [0, 1, 0, 0]);
}

/// The async call's future is `Send` when the attempts' futures are, whatever the result's
/// types (none is held across a wait), so it can be spawned on a multi-thread runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_call_can_be_spawned() {
    fn send<F: std::future::Future + Send>(f: F) -> F {
        f
    }
    let retry = retry("retry-engine:spawned", config().max_attempts(2));
    let spawned = tokio::spawn(async move {
        let failed = Arc::new(Mutex::new(false));
        let call = retry.call(|| {
            let failed = Arc::clone(&failed);
            // A result type that is not `Send` (`Rc`): the call is `Send` only because no
            // attempt's result is held across the wait that follows it.
            async move {
                if std::mem::replace(&mut *failed.lock().unwrap(), true) {
                    Ok(std::rc::Rc::new(7))
                } else {
                    Err(std::rc::Rc::new(Fault::Io))
                }
            }
        });
        send(call)
            .await
            .map(|n| *n)
            .map_err(|e| e.inner().is_some())
    });
    assert_eq!(spawned.await.unwrap(), Ok::<_, bool>(7));
}

#[test]
fn the_four_kinds_count_every_way_a_call_ends() {
    let ignored = ErrorKind::new("Rejected", |e: &Fault| *e == Fault::Rejected);
    let retry = retry(
        "retry-engine:kinds",
        config().max_attempts(2).ignore_exceptions([ignored]),
    );
    let _ = retry.call_sync(|| Ok::<_, Fault>(()));
    let _ = retry.call_sync(|| Ok::<_, Fault>(()));
    let failed_once = Cell::new(false);
    let _ = retry.call_sync(|| {
        if failed_once.replace(true) {
            Ok(())
        } else {
            Err(Fault::Io)
        }
    });
    let _ = retry.call_sync(|| Err::<(), _>(Fault::Rejected));
    let _ = retry.call_sync(|| Err::<(), _>(Fault::Io));
    assert_eq!(kinds(&retry), [2, 1, 1, 1]);
    assert_eq!(retry.metrics().retries_refused_by_budget(), 0);
}

#[test]
fn events_read_as_resilience4j_names_them() {
    assert_eq!(RETRY.as_str(), "RETRY");
    assert_eq!(Success.as_str(), "SUCCESS");
    assert_eq!(Error.as_str(), "ERROR");
    assert_eq!(IgnoredError.as_str(), "IGNORED_ERROR");
    assert_eq!(RetryEventKind::BudgetExhausted.as_str(), "BUDGET_EXHAUSTED");
    let retry = retry("retry-engine:display", config().max_attempts(2));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let _subscription = retry.subscribe(move |e| sink.lock().unwrap().push(e.to_string()));
    let _ = retry.call_sync(|| Err::<(), _>(Fault::Io));
    assert_eq!(
        *lines.lock().unwrap(),
        [
            "Retry 'retry-engine:display', waiting 0ns until attempt '2'.",
            "Retry 'retry-engine:display' recorded a failed retry attempt. Number of retry attempts: '2'. Giving up.",
        ]
    );
}
