//! No heap allocation per call in the setups that `calls.rs` leaves out: `timeout-duration`
//! under Tokio (a call that completes in time, and one that times out), listeners attached (a
//! breaker's and a registry's), DEBUG rejection logging on, and a time-based window whose
//! buckets roll over. The attribute's path is measured in the facade's
//! `tests/no_alloc_attribute.rs`.
//!
//! A counting global allocator, as in `calls.rs`, but counting each thread's allocations
//! apart: the test harness's own thread allocates while a test starts (it records the running
//! test after spawning its thread), and this binary has several tests. Every setup runs on the
//! test's thread: the Tokio runtime is a current-thread one, listeners and the log are called
//! on the caller's thread, and the manual clock runs no thread. Each setup warms up first (lazy
//! statics, a thread's first timer) and checks that the path it measures really ran (the
//! outcomes, the events, the log lines).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker_core::{
    Always, CallError, Classifier, Config, Event, EventKind, ManualClock, Outcome, Registry,
    SlidingWindowType, State,
};

use crate::counting_alloc;

use counting_alloc::{allocations, allocations_during, block_on};

const CALLS: usize = 1_000;

/// `(loop, allocations)` of every measured loop of a setup.
type Report = Vec<(&'static str, usize)>;

fn assert_none(report: Report) {
    assert!(
        report.iter().all(|(_, n)| *n == 0),
        "allocations per measured loop ({CALLS} rounds each, or as named): {report:#?}"
    );
}

/// `timeout-duration` on a current-thread Tokio runtime with its time driver (paused, so a
/// timeout costs no real time): the timer is built in place inside the call future.
#[test]
fn async_calls_with_a_tokio_timeout_allocate_nothing() {
    let mut report = Report::new();
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock)
        .default_config(
            Config::builder()
                // Never evaluated in this loop: every call stays in CLOSED's lock-free window.
                .sliding_window_size(2_047)
                .minimum_number_of_calls(2_047)
                .timeout_duration(Some(Duration::from_secs(1)))
                .build()
                .unwrap(),
        )
        .build();
    let in_time = registry.breaker("no-alloc-timeout-in-time");
    let timing_out = registry.breaker("no-alloc-timeout-timing-out");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        // Completes in time, after waiting once: the call's timer is registered with the
        // driver, then dropped with the call.
        let completes = || {
            in_time.call(async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<_, ()>(())
            })
        };
        let times_out = || {
            timing_out.call(async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, ()>(())
            })
        };
        for _ in 0..100 {
            completes().await.unwrap();
            let _ = times_out().await;
        }

        let before = allocations();
        for _ in 0..CALLS {
            completes().await.unwrap();
        }
        report.push((
            "tokio: timeout-duration, completed in time",
            allocations() - before,
        ));

        let before = allocations();
        let mut timed_out = 0;
        for _ in 0..CALLS {
            if let Err(CallError::TimedOut(t)) = times_out().await {
                timed_out += usize::from(t.timeout() == Duration::from_secs(1));
            }
        }
        report.push(("tokio: timeout-duration, timed out", allocations() - before));
        assert_eq!(timed_out, CALLS, "every slow call timed out");
    });
    assert_eq!(in_time.metrics().failed_calls, 0);
    assert_eq!(
        timing_out.metrics().failed_calls,
        1_100,
        "timeouts are failures"
    );
    assert_eq!(timing_out.state(), State::Closed);
    assert_none(report);
}

static BREAKER_EVENTS: AtomicUsize = AtomicUsize::new(0);
static REGISTRY_EVENTS: AtomicUsize = AtomicUsize::new(0);
static NOT_PERMITTED_EVENTS: AtomicUsize = AtomicUsize::new(0);

/// A breaker's listener and a registry's, neither allocating itself: the events are built and
/// published on the caller's thread, in CLOSED, OPEN and HALF_OPEN.
#[test]
fn calls_allocate_nothing_with_listeners_attached() {
    let mut report = Report::new();
    let clock = ManualClock::new();
    let registry = counting_alloc::ten_call_registry(clock);
    let b = registry.breaker("no-alloc-listeners");
    let _breaker_listener = b.subscribe(|e: &Event| {
        BREAKER_EVENTS.fetch_add(1, Ordering::Relaxed);
        if e.kind() == EventKind::NotPermitted {
            NOT_PERMITTED_EVENTS.fetch_add(1, Ordering::Relaxed);
        }
    });
    let _registry_listener = registry.subscribe(|_: &Event| {
        REGISTRY_EVENTS.fetch_add(1, Ordering::Relaxed);
    });
    for _ in 0..100 {
        let _ = b.call_sync(|| Ok::<_, ()>(()));
        let _ = block_on(b.call(async { Err::<(), _>(()) }));
    }
    let events = || {
        (
            BREAKER_EVENTS.load(Ordering::SeqCst),
            REGISTRY_EVENTS.load(Ordering::SeqCst),
        )
    };

    let (breaker_before, registry_before) = events();
    let closed = allocations_during(|| {
        for i in 0..CALLS {
            let _ = b.call_sync(|| if i % 2 == 0 { Ok(i) } else { Err(i) });
            let _ = block_on(b.call(async { Ok::<_, ()>(i) }));
        }
    });
    report.push(("listeners: CLOSED, 2 calls each", closed));
    assert_eq!(b.state(), State::Closed);
    let (breaker_after, registry_after) = events();
    assert_eq!(
        breaker_after - breaker_before,
        2 * CALLS,
        "one event per call"
    );
    assert_eq!(registry_after - registry_before, 2 * CALLS);

    b.transition_to(State::Open).unwrap();
    let _ = b.call_sync(|| Ok::<_, ()>(())); // warm-up of the rejection path
    let rejected_before = NOT_PERMITTED_EVENTS.load(Ordering::SeqCst);
    let open = allocations_during(|| {
        for _ in 0..CALLS {
            assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
            assert!(block_on(b.call(async { Ok::<_, ()>(()) })).is_err());
        }
    });
    report.push(("listeners: OPEN, 2 rejections each", open));
    assert_eq!(
        NOT_PERMITTED_EVENTS.load(Ordering::SeqCst) - rejected_before,
        2 * CALLS
    );

    b.transition_to(State::HalfOpen).unwrap();
    let ignore_every_error = Classifier::new().ignore(Always);
    let (breaker_before, _) = events();
    let half_open = allocations_during(|| {
        for _ in 0..CALLS {
            drop(b.try_acquire().unwrap());
            b.try_acquire()
                .unwrap()
                .record(Outcome::Ignored, Duration::ZERO);
            let _ = b.call_sync_with(&ignore_every_error, || Err::<(), ()>(()));
            let _ = block_on(b.call_with(&ignore_every_error, async { Err::<(), ()>(()) }));
        }
    });
    report.push(("listeners: HALF_OPEN, 4 permits each", half_open));
    assert_eq!(b.state(), State::HalfOpen);
    let (breaker_after, _) = events();
    assert_eq!(
        breaker_after - breaker_before,
        3 * CALLS,
        "one IgnoredError event per ignored call, none for a released permit"
    );
    assert_none(report);
}

static TEXTED_ERRORS: AtomicUsize = AtomicUsize::new(0);
static PLAIN_ERRORS_WITH_TEXT: AtomicUsize = AtomicUsize::new(0);

/// Error texts ([`Event::error`]) cost nothing on a success, nothing without a listener that
/// asked for them, and one allocation per failed call (the text, shared by every such
/// listener) while one listens.
#[test]
fn error_texts_allocate_once_per_failure_and_only_for_a_listener_that_asked() {
    let mut report = Report::new();
    let registry = counting_alloc::ten_call_registry(ManualClock::new());
    let b = registry.breaker("no-alloc-error-texts");
    // A plain listener first: it never sees a text, and nothing is built for it.
    let _plain = b.subscribe(|e: &Event| {
        if e.error().is_some() {
            PLAIN_ERRORS_WITH_TEXT.fetch_add(1, Ordering::Relaxed);
        }
    });
    let io_error = || std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    // Failures and successes in turn: the window (10 calls, opening at 100%) stays CLOSED.
    for _ in 0..10 {
        let _ = b.call_sync(|| Err::<(), _>(io_error()));
        let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
    }
    // `ErrorKind`-only io errors carry no allocation of their own.
    let failures = allocations_during(|| {
        for _ in 0..CALLS {
            let _ = b.call_sync(|| Err::<(), _>(io_error()));
            let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
        }
    });
    report.push((
        "no listener with error texts: a failure and a success",
        failures,
    ));

    let _texts = b.subscribe_with_error_texts(|e: &Event| {
        if let Some(error) = e.error() {
            assert_eq!(error.type_name(), "std::io::error::Error");
            assert_eq!(error.text(), Some("connection reset"));
            TEXTED_ERRORS.fetch_add(1, Ordering::Relaxed);
        }
    });
    for _ in 0..10 {
        let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
    }
    let successes = allocations_during(|| {
        for _ in 0..CALLS {
            let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
            let _ = block_on(b.call(async { Ok::<_, std::io::Error>(()) }));
        }
    });
    report.push(("a listener with error texts: 2 successes", successes));
    let before = TEXTED_ERRORS.load(Ordering::SeqCst);
    let texted = allocations_during(|| {
        for _ in 0..CALLS {
            let _ = b.call_sync(|| Err::<(), _>(io_error()));
            let _ = b.call_sync(|| Ok::<_, std::io::Error>(()));
        }
    });
    assert_eq!(TEXTED_ERRORS.load(Ordering::SeqCst) - before, CALLS);
    assert_eq!(PLAIN_ERRORS_WITH_TEXT.load(Ordering::SeqCst), 0);
    assert_eq!(
        texted, CALLS,
        "one allocation per failure (its text) while a listener asked for texts"
    );
    assert_eq!(b.state(), State::Closed);
    assert_none(report);
}

/// A tracing subscriber that enables every level and keeps nothing: what the rejection log
/// costs when DEBUG is on, without the cost of any particular subscriber's formatting.
struct EnabledAndSilent;

static DEBUG_EVENTS: AtomicUsize = AtomicUsize::new(0);

impl tracing::Subscriber for EnabledAndSilent {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::DEBUG {
            DEBUG_EVENTS.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// DEBUG on (for this thread): an OPEN breaker writes one "calls not permitted" line a second
/// and counts the rest. The clock moves a second between batches, outside the measured part
/// (moving a manual clock allocates), so every batch writes a line.
#[test]
fn rejections_allocate_nothing_with_debug_logging_on() {
    let mut report = Report::new();
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .default_config(
            Config::builder()
                .sliding_window_size(10)
                .minimum_number_of_calls(10)
                .failure_rate_threshold(100.0)
                // Far longer than the batches below: OPEN all along.
                .wait_duration_in_open_state(Duration::from_secs(86_400))
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("no-alloc-debug-log");
    tracing::subscriber::with_default(EnabledAndSilent, || {
        for _ in 0..100 {
            let _ = b.call_sync(|| Ok::<_, ()>(()));
        }
        let closed = allocations_during(|| {
            for i in 0..CALLS {
                let _ = b.call_sync(|| if i % 2 == 0 { Ok(i) } else { Err(i) });
                let _ = block_on(b.call(async { Ok::<_, ()>(i) }));
            }
        });
        report.push(("DEBUG on: CLOSED, 2 calls each", closed));

        b.transition_to(State::Open).unwrap();
        for _ in 0..10 {
            let _ = b.call_sync(|| Ok::<_, ()>(()));
        }
        // While this is the only live dispatcher, tracing computes the interest of a callsite
        // that runs for the first time from the default of the thread that runs it: another
        // test of this binary, on a thread without a subscriber, may have cached "never" for
        // the rejection line. Computed again from this thread, it is "always".
        tracing::callsite::rebuild_interest_cache();
        let lines_before = DEBUG_EVENTS.load(Ordering::SeqCst);
        let mut open = 0;
        let batches = 100;
        for _ in 0..batches {
            clock.advance(Duration::from_secs(1));
            open += allocations_during(|| {
                for _ in 0..10 {
                    assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
                    assert!(block_on(b.call(async { Ok::<_, ()>(()) })).is_err());
                }
            });
        }
        report.push(("DEBUG on: OPEN, 100 batches of 20 rejections", open));
        assert_eq!(b.state(), State::Open);
        assert_eq!(
            DEBUG_EVENTS.load(Ordering::SeqCst) - lines_before,
            batches,
            "one rejection line per second of the clock"
        );
    });
    assert_none(report);
}

/// A time-based window of 10 one-second buckets: calls spread over 30 s of the clock, so
/// buckets fill, roll over and are evicted. The clock moves between batches, outside the
/// measured part.
#[test]
fn calls_allocate_nothing_in_a_time_based_window() {
    let mut report = Report::new();
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .default_config(
            Config::builder()
                .sliding_window(SlidingWindowType::TimeBased, 10, 10)
                .failure_rate_threshold(100.0)
                .wait_duration_in_open_state(Duration::from_secs(86_400))
                .permitted_number_of_calls_in_half_open_state(10)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("no-alloc-time-window");
    for _ in 0..100 {
        let _ = b.call_sync(|| Ok::<_, ()>(()));
    }
    let mut closed = 0;
    for _ in 0..100 {
        clock.advance(Duration::from_millis(300));
        closed += allocations_during(|| {
            for i in 0..10 {
                let _ = b.call_sync(|| if i % 2 == 0 { Ok(i) } else { Err(i) });
                let _ = block_on(b.call(async { Ok::<_, ()>(i) }));
            }
        });
    }
    report.push(("time window: CLOSED, 100 batches of 20 calls", closed));
    let m = b.metrics();
    assert_eq!(m.state, State::Closed);
    // 300 ms a batch of 20 calls: the last 10 seconds hold 33 or 34 batches, not all 100.
    assert!(
        (600..=700).contains(&m.buffered_calls),
        "old buckets were evicted: {m:?}"
    );
    assert_eq!(m.failed_calls * 4, m.buffered_calls, "1 failure in 4 calls");

    b.transition_to(State::Open).unwrap();
    let _ = b.call_sync(|| Ok::<_, ()>(()));
    let open = allocations_during(|| {
        for _ in 0..CALLS {
            assert!(b.call_sync(|| Ok::<_, ()>(())).is_err());
        }
    });
    report.push(("time window: OPEN", open));

    b.transition_to(State::HalfOpen).unwrap();
    let ignore_every_error = Classifier::new().ignore(Always);
    let half_open = allocations_during(|| {
        for _ in 0..CALLS {
            let _ = b.call_sync_with(&ignore_every_error, || Err::<(), ()>(()));
        }
    });
    report.push(("time window: HALF_OPEN", half_open));
    assert_eq!(b.state(), State::HalfOpen);
    assert_none(report);
}
