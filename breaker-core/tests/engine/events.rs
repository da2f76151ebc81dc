//! The event stream: one event per transition, even when threads race; listeners that panic
//! poison nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use breaker_core::{
    CircuitBreaker, Config, EventKind, Outcome, SlidingWindowType, State, TransitionCause,
};

use crate::support::manual_registry;

#[test]
fn racing_failures_publish_exactly_one_open_event() {
    // Each round is one interleaving of 16 threads; Miri (scripts/sanitizers.sh) interprets
    // every thread's start, so it runs fewer rounds, each on its own random schedule.
    let rounds = if cfg!(miri) { 8 } else { 50 };
    for _round in 0..rounds {
        let (_clock, registry) = manual_registry(
            Config::builder()
                .sliding_window_size(8)
                .minimum_number_of_calls(8)
                .build()
                .unwrap(),
        );
        let b = registry.breaker("race");
        let transitions = Arc::new(Mutex::new(Vec::new()));
        let sink = transitions.clone();
        let _sub = b.subscribe(move |e| {
            if let EventKind::StateTransition { from, to } = e.kind() {
                sink.lock().unwrap().push((from, to));
            }
        });
        let barrier = Barrier::new(16);
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    barrier.wait();
                    if let Ok(p) = b.try_acquire() {
                        p.record(Outcome::Failure, Duration::ZERO);
                    }
                });
            }
        });
        assert_eq!(b.state(), State::Open);
        assert_eq!(
            *transitions.lock().unwrap(),
            vec![(State::Closed, State::Open)]
        );
    }
}

#[test]
fn every_kind_of_event_is_published() {
    let (clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .slow_call_duration_threshold(Duration::from_millis(10))
            .slow_call_rate_threshold(50.0)
            .wait_duration_in_open_state(Duration::from_secs(1))
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = registry.subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    let b = registry.breaker("all");
    let ms = Duration::from_millis;
    b.try_acquire().unwrap().record(Outcome::Success, ms(20));
    b.try_acquire().unwrap().record(Outcome::Ignored, ms(1));
    b.try_acquire().unwrap().record(Outcome::Failure, ms(1));
    assert!(b.try_acquire().is_err());
    clock.advance(ms(1_001));
    b.try_acquire().unwrap().record(Outcome::Success, ms(1));
    b.reset();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            EventKind::Success { elapsed: ms(20) },
            EventKind::IgnoredError { elapsed: ms(1) },
            EventKind::Error { elapsed: ms(1) },
            EventKind::FailureRateExceeded { rate: 50.0 },
            EventKind::SlowCallRateExceeded { rate: 50.0 },
            EventKind::StateTransition {
                from: State::Closed,
                to: State::Open
            },
            EventKind::NotPermitted,
            EventKind::StateTransition {
                from: State::Open,
                to: State::HalfOpen
            },
            EventKind::Success { elapsed: ms(1) },
            EventKind::StateTransition {
                from: State::HalfOpen,
                to: State::Closed
            },
            EventKind::Reset,
        ]
    );
}

#[test]
fn a_panicking_listener_is_skipped_and_the_breaker_goes_on() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("p");
    let _bad = b.subscribe(|_| panic!("listener bug"));
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let _good = b.subscribe(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    for _ in 0..3 {
        b.call_sync(|| Ok::<_, ()>(())).unwrap();
    }
    b.transition_to(State::ForcedOpen).unwrap();
    assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
    assert_eq!(b.metrics().not_permitted_calls, 1);
    assert_eq!(
        count.load(Ordering::Relaxed),
        5,
        "3 successes, one transition and one rejection"
    );
}

#[test]
fn dropping_the_subscription_unsubscribes() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("u");
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let sub = b.subscribe(move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    b.call_sync(|| Ok::<_, ()>(())).unwrap();
    drop(sub);
    b.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert_eq!(count.load(Ordering::Relaxed), 1);
}

#[test]
fn a_hint_opens_only_a_closed_breaker_without_local_history() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    );
    let causes = Arc::new(Mutex::new(Vec::new()));
    let sink = causes.clone();
    let _sub = registry.subscribe(move |e| {
        if let EventKind::StateTransition { to, .. } = e.kind() {
            sink.lock()
                .unwrap()
                .push((e.breaker_name().to_owned(), to, e.cause()));
        }
    });
    let fresh = registry.breaker("fresh");
    assert!(fresh.open_from_hint());
    assert_eq!(fresh.state(), State::Open);
    assert!(!fresh.open_from_hint(), "already OPEN");

    let used = registry.breaker("used");
    used.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert!(
        !used.open_from_hint(),
        "one local success is local evidence"
    );
    assert_eq!(used.state(), State::Closed);

    let half_open = registry.breaker("half_open");
    half_open.transition_to(State::Open).unwrap();
    half_open.transition_to(State::HalfOpen).unwrap();
    assert!(!half_open.open_from_hint(), "a hint never moves HALF_OPEN");
    assert_eq!(half_open.state(), State::HalfOpen);

    // The stale-hint rule (docs/REDIS_HINT.md): recovered through its own trials, so CLOSED
    // with a fresh, empty window; its own stale hint must not re-open it.
    let recovered = registry.breaker("recovered");
    recovered.transition_to(State::Open).unwrap();
    recovered.transition_to(State::HalfOpen).unwrap();
    for _ in 0..4 {
        recovered.call_sync(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(recovered.state(), State::Closed);
    assert_eq!(recovered.metrics().buffered_calls, 0);
    assert!(
        !recovered.open_from_hint(),
        "local evidence wins over a stale hint"
    );

    // Calls that were only ignored are no history.
    let ignored_only = registry.breaker("ignored_only");
    ignored_only
        .try_acquire()
        .unwrap()
        .record(Outcome::Ignored, Duration::ZERO);
    assert!(ignored_only.open_from_hint());

    let causes = causes.lock().unwrap().clone();
    assert_eq!(
        causes[0],
        ("fresh".to_owned(), State::Open, Some(TransitionCause::Hint))
    );
    assert_eq!(causes[1].2, Some(TransitionCause::Manual));
}

/// With nobody listening, CLOSED records without the lock and sets no history flag; the call
/// must count as local evidence all the same, and an ignored call still must not.
#[test]
fn a_call_recorded_without_the_lock_is_local_history() {
    let (_clock, registry) = manual_registry(Config::default());
    let used = registry.breaker("used-quietly");
    used.call_sync(|| Ok::<_, ()>(())).unwrap();
    assert!(
        !used.open_from_hint(),
        "a lock-free success is local evidence"
    );
    assert_eq!(used.state(), State::Closed);

    let failed = registry.breaker("failed-quietly");
    failed.call_sync(|| Err::<(), _>(())).unwrap_err();
    assert!(
        !failed.open_from_hint(),
        "a lock-free failure is local evidence"
    );

    let ignored = registry.breaker("ignored-quietly");
    ignored
        .try_acquire()
        .unwrap()
        .record(Outcome::Ignored, Duration::ZERO);
    assert!(ignored.open_from_hint(), "an ignored call is no history");
}

#[test]
fn a_rejection_made_without_the_lock_still_carries_the_metrics() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("view");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = b.subscribe(move |e| {
        if e.kind() == EventKind::NotPermitted {
            sink.lock().unwrap().push(e.metrics());
        }
    });
    for ok in [true, false, false, false] {
        let _ = b.call_sync(|| if ok { Ok(()) } else { Err(()) });
    }
    assert_eq!(b.state(), State::Open);
    assert!(b.try_acquire().is_err());
    assert!(b.try_acquire().is_err());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1],
        b.metrics(),
        "the event's metrics are the breaker's"
    );
    assert_eq!(seen[1].failure_rate, Some(75.0));
    assert_eq!(seen[0].not_permitted_calls, 1);
}

/// A rejection made without the lock carries the breaker's metrics with every figure, slow
/// calls and rates included, whether OPEN carries on CLOSED's window or was entered from
/// HALF_OPEN (whose figures OPEN keeps as a copy).
#[test]
fn a_rejection_carries_every_figure_of_the_breaker_s_metrics() {
    let (clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .failure_rate_threshold(100.0)
            .slow_call_duration_threshold(Duration::from_millis(10))
            .slow_call_rate_threshold(75.0)
            .wait_duration_in_open_state(Duration::from_secs(1))
            .permitted_number_of_calls_in_half_open_state(4)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("figures");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = b.subscribe(move |e| {
        if e.kind() == EventKind::NotPermitted {
            sink.lock().unwrap().push(e.metrics());
        }
    });
    let ms = Duration::from_millis;
    // Slow successes, slow failures and a fast failure: slow rate 75 %, failure rate 50 %.
    let calls = [
        (Outcome::Success, ms(20)),
        (Outcome::Failure, ms(20)),
        (Outcome::Failure, ms(1)),
        (Outcome::Success, ms(30)),
    ];
    for (outcome, took) in calls {
        b.try_acquire().unwrap().record(outcome, took);
    }
    assert_eq!(b.state(), State::Open);
    assert!(b.try_acquire().is_err());
    // The same four calls as HALF_OPEN's trials: OPEN again, from HALF_OPEN.
    clock.advance(ms(1_001));
    for (outcome, took) in calls {
        b.try_acquire().unwrap().record(outcome, took);
    }
    assert_eq!(b.state(), State::Open);
    assert!(b.try_acquire().is_err());
    let metrics = b.metrics();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for (n, heard) in seen.iter().enumerate() {
        let from = ["CLOSED", "HALF_OPEN"][n];
        assert_eq!(
            (
                heard.slow_calls,
                heard.slow_failed_calls,
                heard.slow_successful_calls
            ),
            (3, 1, 2),
            "OPEN from {from}: {heard:?}"
        );
        assert_eq!(
            (heard.buffered_calls, heard.failed_calls),
            (4, 2),
            "OPEN from {from}"
        );
        assert_eq!(
            (heard.failure_rate, heard.slow_call_rate),
            (Some(50.0), Some(75.0)),
            "OPEN from {from}"
        );
        assert_eq!(heard.not_permitted_calls, 1, "OPEN from {from}");
    }
    assert_eq!(seen[1], metrics, "the event's metrics are the breaker's");
}

/// What a listener heard: each event's kind and error text.
type Heard = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// An owned permit records the outcome it is completed with, as a borrowed one does: a failure,
/// and a success with the duration the caller measured.
#[test]
fn an_owned_permit_records_what_it_is_told() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .slow_call_duration_threshold(Duration::from_millis(10))
            .build()
            .unwrap(),
    );
    let b = registry.breaker("owned-by-hand");
    b.try_acquire_owned().unwrap().failure();
    b.try_acquire_owned()
        .unwrap()
        .record(Outcome::Success, Duration::from_millis(20));
    let m = b.metrics();
    assert_eq!(
        (m.buffered_calls, m.failed_calls, m.slow_successful_calls),
        (2, 1, 1),
        "{m:?}"
    );
}

/// A permit completed by hand as ignored publishes an ignored error, borrowed or owned; a permit
/// dropped without an outcome publishes nothing.
#[test]
fn a_permit_completed_as_ignored_publishes_an_ignored_error() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("ignored-by-hand");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = heard.clone();
    let _sub = b.subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    b.try_acquire().unwrap().ignore();
    b.try_acquire_owned().unwrap().ignore();
    drop(b.try_acquire().unwrap());
    drop(b.try_acquire_owned().unwrap());
    let ignored = EventKind::IgnoredError {
        elapsed: Duration::ZERO,
    };
    assert_eq!(*heard.lock().unwrap(), vec![ignored, ignored]);
    assert_eq!(
        b.metrics().buffered_calls,
        0,
        "ignored calls count for nothing"
    );
}

/// A failed call's error is formatted only when a listener asked for error texts: with none
/// (a plain listener only), its `Display` never runs, so a failure nobody reads costs no text.
#[test]
fn an_error_is_formatted_only_for_a_listener_that_asked() {
    #[derive(Debug)]
    struct Counted(Arc<AtomicUsize>);
    impl std::fmt::Display for Counted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fetch_add(1, Ordering::SeqCst);
            f.write_str("counted")
        }
    }
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(100)
            .minimum_number_of_calls(100)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("formatted");
    let formatted = Arc::new(AtomicUsize::new(0));
    // `Described`: the error's `Display` is its text, for the listeners that ask.
    let described = breaker_core::Described::new();
    let fail = || b.call_sync_with(&described, || Err::<(), _>(Counted(formatted.clone())));
    let plain = b.subscribe(|_| {});
    let _ = fail();
    assert_eq!(
        formatted.load(Ordering::SeqCst),
        0,
        "no listener asked for the text"
    );
    let texts = b.subscribe_with_error_texts(|_| {});
    let _ = fail();
    assert_eq!(
        formatted.load(Ordering::SeqCst),
        1,
        "one listener asked for it"
    );
    drop((plain, texts));
}

/// The error texts of failed and ignored calls reach the listeners that asked for them
/// (a breaker's and a registry's), and no other; a success, a rejection and a call completed by
/// hand carry none.
#[test]
fn error_texts_reach_only_the_listeners_that_asked() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(100)
            .minimum_number_of_calls(100)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("texts");
    let seen = |sink: &Heard| {
        let sink = Arc::clone(sink);
        move |e: &breaker_core::Event| {
            let kind = format!("{:?}", e.kind())
                .split(' ')
                .next()
                .unwrap()
                .to_owned();
            let text = e.error().map(|t| t.to_string());
            sink.lock().unwrap().push((kind, text));
        }
    };
    let plain = Arc::new(Mutex::new(Vec::new()));
    let own = Arc::new(Mutex::new(Vec::new()));
    let all = Arc::new(Mutex::new(Vec::new()));
    let _plain = b.subscribe(seen(&plain));
    let _own = b.subscribe_with_error_texts(seen(&own));
    let _all = registry.subscribe_with_error_texts(seen(&all));

    let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
    let _ = b.call_sync(|| Err::<(), _>(std::io::Error::other("refused")));
    let ignore = breaker_core::Classifier::new().ignore(|_: &&str| true);
    let _ = b.call_sync_with(&ignore, || Err::<(), _>("not counted"));
    // An `Ok` the classification counts as a failure (Resilience4j's
    // `ResultRecordedAsFailureException`): the value's type, said so.
    let status_503 = breaker_core::Classifier::new().result(|status: &u16| *status == 503);
    let _ = b.call_sync_with(&status_503, || Ok::<u16, ()>(503));
    // Completed by hand, without the error: nothing to describe.
    b.try_acquire().unwrap().failure();
    // A panic: its message.
    let panicked =
        std::panic::catch_unwind(|| b.call_sync(|| -> Result<(), ()> { panic!("boom") }));
    assert!(panicked.is_err());

    let io = "std::io::error::Error: refused";
    let str_type = "&str: not counted";
    let value = "u16: the call's result was recorded as a failure";
    let expected = |texted: bool| -> Vec<(String, Option<String>)> {
        let t = |s: &str| texted.then(|| s.to_owned());
        vec![
            ("Success".into(), None),
            ("Error".into(), t(io)),
            ("IgnoredError".into(), t(str_type)),
            ("Error".into(), t(value)),
            ("Error".into(), None),
            ("Error".into(), t("panic: boom")),
        ]
    };
    assert_eq!(*plain.lock().unwrap(), expected(false));
    assert_eq!(*own.lock().unwrap(), expected(true));
    assert_eq!(*all.lock().unwrap(), expected(true));
}

/// A log line of an event with an error text writes the text escaped.
#[test]
fn an_events_display_escapes_its_error_text() {
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("texts-display");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let _s = b.subscribe_with_error_texts(move |e| sink.lock().unwrap().push(e.to_string()));
    let _ = b.call_sync(|| Err::<(), _>("forged\nINFO line"));
    let lines = lines.lock().unwrap();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].ends_with("(&str: forged\\nINFO line)"),
        "{}",
        lines[0]
    );
    assert!(!lines[0].contains('\n'));
}

/// A call cut at its `timeout-duration` carries the timeout as its error; an async call's
/// error type without `Display` is named by its type.
#[tokio::test(start_paused = true)]
async fn a_timed_out_call_carries_the_timeout_as_its_error() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .timeout_duration(Some(Duration::from_millis(100)))
            .build()
            .unwrap(),
    );
    let b = registry.breaker("texts-timeout");
    let texts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&texts);
    let _s = b.subscribe_with_error_texts(move |e| {
        if let Some(error) = e.error() {
            sink.lock().unwrap().push(error.clone());
        }
    });
    let _ = b
        .call(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, ()>(())
        })
        .await;
    #[derive(Debug)]
    struct Opaque;
    let _ = b.call(async { Err::<(), _>(Opaque) }).await;
    let texts = texts.lock().unwrap();
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[0].type_name(), "breaker_core::error::CallTimedOut");
    let timed_out = texts[0].text().unwrap();
    assert!(timed_out.contains("texts-timeout"), "{timed_out}");
    assert!(texts[1].type_name().ends_with("Opaque"));
    assert_eq!(texts[1].text(), None);
}

/// A call FORCED_OPEN refuses is a NOT_PERMITTED event, as it is in OPEN and HALF_OPEN:
/// Resilience4j's state machine publishes one for every refused permission, whatever the
/// state, and counts it in `notPermittedCalls`.
#[test]
fn forced_open_publishes_not_permitted_for_each_refused_call() {
    let breaker = CircuitBreaker::new("forced", Config::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = breaker.subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    breaker.transition_to(State::ForcedOpen).unwrap();
    assert!(breaker.try_acquire().is_err());
    assert!(breaker.call_sync(|| Ok::<_, ()>(())).is_err());
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![
            EventKind::StateTransition {
                from: State::Closed,
                to: State::ForcedOpen
            },
            EventKind::NotPermitted,
            EventKind::NotPermitted,
        ]
    );
    assert_eq!(breaker.metrics().not_permitted_calls, 2);
}

/// [`Described`](breaker_core::Described) gives the listeners that asked for error texts the
/// `Display` text of an error type the breaker does not know; without it, the type's name
/// alone.
#[test]
fn a_described_call_carries_its_errors_display_text() {
    #[derive(Debug)]
    struct Refused;
    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("the peer refused the connection")
        }
    }
    let (_clock, registry) = manual_registry(Config::default());
    let b = registry.breaker("texts-described");
    let texts = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&texts);
    let _s = b.subscribe_with_error_texts(move |e| {
        if let Some(error) = e.error() {
            sink.lock().unwrap().push(error.text().map(str::to_owned));
        }
    });
    let _ = b.call_sync_with(&breaker_core::Described::new(), || Err::<(), _>(Refused));
    let _ = b.call_sync(|| Err::<(), _>(Refused));
    assert_eq!(
        *texts.lock().unwrap(),
        [Some("the peer refused the connection".to_owned()), None]
    );
}

/// Each CLOSED call's event carries the breaker's metrics as they are right after the call:
/// no rate below the minimum number of calls, the window's counts and rates from then on.
#[test]
fn a_closed_calls_event_carries_the_metrics_after_it() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(3)
            .failure_rate_threshold(75.0)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("closed-call-metrics");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let _sub = b.subscribe(move |e| {
        if matches!(
            e.kind(),
            EventKind::Success { .. } | EventKind::Error { .. }
        ) {
            sink.lock().unwrap().push(e.metrics());
        }
    });
    let mut after = Vec::new();
    for ok in [true, false, true, false] {
        let _ = b.call_sync(|| if ok { Ok(()) } else { Err(()) });
        after.push(b.metrics());
    }
    assert_eq!(b.state(), State::Closed);
    assert_eq!(after[1].failure_rate, None, "below the minimum");
    assert_eq!(after[3].failure_rate, Some(50.0));
    assert_eq!(*heard.lock().unwrap(), after);
}

/// A call granted in CLOSED that finishes once the breaker is OPEN counts in the window OPEN
/// carries on, and the rejections that follow carry it: with a time-based window (no lock-free
/// window) OPEN's rejections read the figures the state machine keeps for them, which that
/// late call must update.
#[test]
fn a_late_call_in_open_is_in_the_rejections_that_follow() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_type(SlidingWindowType::TimeBased)
            .sliding_window_size(10)
            .minimum_number_of_calls(2)
            .failure_rate_threshold(100.0)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("late-in-open");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = b.subscribe(move |e| {
        if e.kind() == EventKind::NotPermitted {
            sink.lock().unwrap().push(e.metrics());
        }
    });
    let late = b.try_acquire_owned().unwrap();
    b.try_acquire().unwrap().failure();
    b.try_acquire().unwrap().failure();
    assert_eq!(b.state(), State::Open);
    late.success();
    assert!(b.try_acquire().is_err());
    let metrics = b.metrics();
    assert_eq!(metrics.buffered_calls, 3, "{metrics:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [metrics], "a rejection's metrics are the breaker's");
}

/// METRICS_ONLY never opens, and says once that a rate is over its threshold: the failure rate
/// when it first is, the slow-call rate when it first is, and neither again while they stay
/// over.
#[test]
fn metrics_only_reports_each_rate_exceeded_once() {
    let (_clock, registry) = manual_registry(
        Config::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(2)
            .failure_rate_threshold(50.0)
            .slow_call_duration_threshold(Duration::from_millis(10))
            .slow_call_rate_threshold(50.0)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("metrics-only");
    b.transition_to(State::MetricsOnly).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let _sub = b.subscribe(move |e| match e.kind() {
        EventKind::FailureRateExceeded { rate } => sink.lock().unwrap().push(("failure", rate)),
        EventKind::SlowCallRateExceeded { rate } => sink.lock().unwrap().push(("slow", rate)),
        _ => {}
    });
    let ms = Duration::from_millis;
    // Failed, failed (100 % failed), failed, then slow successes until half the window is
    // slow, and one more.
    let calls = [
        (Outcome::Failure, ms(1)),
        (Outcome::Failure, ms(1)),
        (Outcome::Failure, ms(1)),
        (Outcome::Success, ms(20)),
        (Outcome::Success, ms(20)),
        (Outcome::Success, ms(20)),
    ];
    for (outcome, took) in calls {
        b.try_acquire().unwrap().record(outcome, took);
    }
    assert_eq!(b.state(), State::MetricsOnly);
    assert_eq!(*seen.lock().unwrap(), [("failure", 100.0), ("slow", 50.0)]);
}
