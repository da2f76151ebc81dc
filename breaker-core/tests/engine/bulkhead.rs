//! The bulkhead engine through its public API: places up to the limit, events, waiting in
//! order, fairness, run-time limit changes, cancellation, and a multi-thread stress run.
//! Scenarios follow Resilience4j's `SemaphoreBulkheadTest`; waits that end on a manual clock
//! are tested beside the engine (breaker-core/src/bulkhead/tests.rs).

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use breaker_core::bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadEventKind, BulkheadFull, BulkheadPermit,
};
use breaker_core::{CallError, Subscription};

use BulkheadEventKind::{CallFinished, CallPermitted, CallRejected};

/// Long enough that no wait in these tests ends by its timer.
const FOREVER: Duration = Duration::from_secs(3600);

fn config(limit: u32, max_wait: Duration, fair: bool) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(limit)
        .max_wait_duration(max_wait)
        .fair_call_handling_enabled(fair)
        .build()
        .unwrap()
}

/// The kinds of the events `bulkhead` publishes from now on.
fn kinds(bulkhead: &Bulkhead) -> (Arc<Mutex<Vec<BulkheadEventKind>>>, Subscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = bulkhead.subscribe(move |event| sink.lock().unwrap().push(event.kind()));
    (seen, subscription)
}

/// `(available, waiting)`.
fn places(bulkhead: &Bulkhead) -> (u32, u32) {
    let metrics = bulkhead.metrics();
    (
        metrics.available_concurrent_calls(),
        metrics.waiting_calls(),
    )
}

/// A waker that counts its wake-ups.
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    (Arc::clone(&counter), Waker::from(counter))
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

fn granted<'a>(poll: Poll<Result<BulkheadPermit<'a>, BulkheadFull>>) -> BulkheadPermit<'a> {
    match poll {
        Poll::Ready(Ok(permit)) => permit,
        other => panic!("expected a place, got {other:?}"),
    }
}

#[test]
fn places_up_to_the_limit_then_refusals_and_events_in_order() {
    let bulkhead = Bulkhead::new("bh-limit", config(2, Duration::ZERO, true));
    let (seen, _subscription) = kinds(&bulkhead);
    assert_eq!(bulkhead.name(), "bh-limit");
    let first = bulkhead.try_acquire().unwrap();
    let second = bulkhead.try_acquire().unwrap();
    assert_eq!(places(&bulkhead), (0, 0));

    let refused = bulkhead.try_acquire().unwrap_err();
    assert_eq!(refused.bulkhead_name(), "bh-limit");
    assert_eq!(
        refused.to_string(),
        "Bulkhead 'bh-limit' is full and does not permit further calls"
    );
    drop(first);
    assert_eq!(places(&bulkhead), (1, 0));
    drop(second);
    assert_eq!(places(&bulkhead), (2, 0));
    let _third = bulkhead.try_acquire().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            CallPermitted,
            CallPermitted,
            CallRejected,
            CallFinished,
            CallFinished,
            CallPermitted
        ]
    );
    let metrics = bulkhead.metrics();
    assert_eq!(metrics.max_allowed_concurrent_calls(), 2);
    assert_eq!(bulkhead.config().max_concurrent_calls(), 2);
}

#[test]
fn a_refused_call_never_runs() {
    let bulkhead = Bulkhead::new("bh-refused", config(1, Duration::ZERO, true));
    let _held = bulkhead.try_acquire_owned().unwrap();
    let ran = AtomicU32::new(0);
    let refused = bulkhead.call_sync(|| {
        ran.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(())
    });
    assert!(refused.unwrap_err().is_bulkhead_full());
    let call = pin!(bulkhead.call(async {
        ran.fetch_add(1, Ordering::SeqCst);
        Ok::<_, std::io::Error>(())
    }));
    match poll_once(call) {
        Poll::Ready(Err(CallError::BulkheadFull(full))) => {
            assert_eq!(full.bulkhead_name(), "bh-refused");
            let io: std::io::Error = full.into();
            assert_eq!(io.kind(), std::io::ErrorKind::Other);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn calls_return_their_place_whatever_ends_them() {
    let bulkhead = Bulkhead::new("bh-calls", config(1, Duration::ZERO, true));
    let (seen, _subscription) = kinds(&bulkhead);
    assert_eq!(bulkhead.call_sync(|| Ok::<_, ()>(7)).unwrap(), 7);
    assert_eq!(
        bulkhead
            .call_sync(|| Err::<(), _>("down"))
            .unwrap_err()
            .inner(),
        Some(&"down")
    );
    let panicked = std::panic::catch_unwind(|| {
        bulkhead.call_sync(|| -> Result<(), ()> { panic!("the call panicked") })
    });
    assert!(panicked.is_err());
    assert_eq!(places(&bulkhead), (1, 0));

    // A running call whose future is dropped gives its place back.
    {
        let mut running = pin!(bulkhead.call(std::future::pending::<Result<(), ()>>()));
        assert!(poll_once(running.as_mut()).is_pending());
        assert_eq!(places(&bulkhead), (0, 0));
    }
    assert_eq!(places(&bulkhead), (1, 0));
    assert_eq!(
        *seen.lock().unwrap(),
        [CallPermitted, CallFinished].repeat(4)
    );
}

#[test]
fn async_waiters_get_places_in_the_order_they_came() {
    let bulkhead = Bulkhead::new("bh-fifo", config(1, FOREVER, true));
    let held = bulkhead.try_acquire().unwrap();
    let mut first = pin!(bulkhead.acquire());
    let mut second = pin!(bulkhead.acquire());
    let mut third = pin!(bulkhead.acquire_owned());
    assert!(poll_once(first.as_mut()).is_pending());
    assert!(poll_once(second.as_mut()).is_pending());
    assert!(poll_once(third.as_mut()).is_pending());
    assert_eq!(places(&bulkhead), (0, 3));

    drop(held);
    // The place went to the head waiter: a call arriving now does not take it, and neither
    // does a later waiter polled first.
    assert!(bulkhead.try_acquire().is_err());
    assert!(poll_once(third.as_mut()).is_pending());
    assert!(poll_once(second.as_mut()).is_pending());
    let first = granted(poll_once(first.as_mut()));
    assert_eq!(places(&bulkhead), (0, 2));
    drop(first);
    assert!(poll_once(third.as_mut()).is_pending());
    let second = granted(poll_once(second.as_mut()));
    drop(second);
    match poll_once(third.as_mut()) {
        Poll::Ready(Ok(owned)) => assert!(owned.bulkhead().ptr_eq(&bulkhead)),
        other => panic!("expected a place, got {other:?}"),
    }
    assert_eq!(places(&bulkhead), (1, 0));
}

#[test]
fn with_fairness_off_a_newcomer_may_take_a_place_before_a_waiter() {
    let bulkhead = Bulkhead::new("bh-unfair", config(1, FOREVER, false));
    let held = bulkhead.try_acquire().unwrap();
    let (woken, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut waiting = pin!(bulkhead.acquire());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());

    drop(held);
    // The waiter was woken to take the place, but a call that arrives first takes it.
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    let newcomer = bulkhead.try_acquire().unwrap();
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(places(&bulkhead), (0, 1));
    // It kept its turn: the next place freed wakes it, and it takes it.
    drop(newcomer);
    assert_eq!(woken.0.load(Ordering::SeqCst), 2);
    let _permit = granted(waiting.as_mut().poll(&mut cx));
    assert_eq!(places(&bulkhead), (0, 0));
}

#[test]
fn raising_the_limit_wakes_waiters_and_lowering_it_waits_for_calls_in_flight() {
    let bulkhead = Bulkhead::new("bh-resize", config(1, FOREVER, true));
    let held = bulkhead.try_acquire().unwrap();
    let (woken, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut first = pin!(bulkhead.acquire());
    let mut second = pin!(bulkhead.acquire());
    assert!(first.as_mut().poll(&mut cx).is_pending());
    assert!(second.as_mut().poll(&mut cx).is_pending());

    bulkhead.change_config(config(4, FOREVER, true));
    assert_eq!(woken.0.load(Ordering::SeqCst), 2);
    let first = granted(first.as_mut().poll(&mut cx));
    let second = granted(second.as_mut().poll(&mut cx));
    assert_eq!(places(&bulkhead), (1, 0));
    assert_eq!(bulkhead.metrics().max_allowed_concurrent_calls(), 4);

    // Three calls in flight, limit 1: none may start until two of them finished and the
    // third did too (then one place is free).
    bulkhead.change_config(config(1, FOREVER, true));
    assert_eq!(bulkhead.config().max_concurrent_calls(), 1);
    assert_eq!(places(&bulkhead), (0, 0));
    assert!(bulkhead.try_acquire().is_err());
    drop(held);
    assert_eq!(places(&bulkhead), (0, 0));
    drop(first);
    assert_eq!(places(&bulkhead), (0, 0));
    assert!(bulkhead.try_acquire().is_err());
    drop(second);
    assert_eq!(places(&bulkhead), (1, 0));
}

#[test]
fn limit_changes_while_calls_run_settle_on_the_last_limit() {
    // Resilience4j's changePermissionsConcurrently: 2 running, limit 3 -> 1 -> 4.
    let bulkhead = Bulkhead::new("bh-changes", config(3, Duration::ZERO, true));
    let running = [
        bulkhead.try_acquire().unwrap(),
        bulkhead.try_acquire().unwrap(),
    ];
    bulkhead.change_config(config(1, Duration::ZERO, true));
    assert_eq!(places(&bulkhead), (0, 0));
    bulkhead.change_config(config(4, Duration::ZERO, true));
    assert_eq!(places(&bulkhead), (2, 0));
    drop(running);
    assert_eq!(places(&bulkhead), (4, 0));
}

#[test]
fn a_shorter_max_wait_applies_to_later_calls_only() {
    let bulkhead = Bulkhead::new("bh-max-wait", config(1, FOREVER, true));
    let held = bulkhead.try_acquire().unwrap();
    let mut waiting = pin!(bulkhead.acquire());
    assert!(poll_once(waiting.as_mut()).is_pending());
    bulkhead.change_config(config(1, Duration::ZERO, true));
    assert_eq!(bulkhead.config().max_wait_duration(), Duration::ZERO);
    // A new call is refused at once, without blocking; the waiter still waits.
    let mut later = pin!(bulkhead.acquire());
    assert!(matches!(poll_once(later.as_mut()), Poll::Ready(Err(_))));
    assert_eq!(places(&bulkhead), (0, 1));
    drop(held);
    let _permit = granted(poll_once(waiting.as_mut()));
}

#[test]
fn a_dropped_waiter_leaves_the_queue_and_the_next_gets_the_place() {
    let bulkhead = Bulkhead::new("bh-cancel", config(1, FOREVER, true));
    let (seen, _subscription) = kinds(&bulkhead);
    let held = bulkhead.try_acquire().unwrap();
    let mut second = pin!(bulkhead.acquire());
    {
        let mut first = pin!(bulkhead.acquire());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        assert_eq!(places(&bulkhead), (0, 2));
    }
    assert_eq!(places(&bulkhead), (0, 1));
    drop(held);
    let _permit = granted(poll_once(second.as_mut()));
    assert_eq!(
        *seen.lock().unwrap(),
        [CallPermitted, CallFinished, CallPermitted]
    );
}

#[test]
fn a_waiter_dropped_right_after_its_grant_passes_the_place_on() {
    let bulkhead = Bulkhead::new("bh-pass-on", config(1, FOREVER, true));
    let (seen, _subscription) = kinds(&bulkhead);
    let held = bulkhead.try_acquire().unwrap();
    let mut second = pin!(bulkhead.acquire());
    {
        let mut first = pin!(bulkhead.acquire());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        // The place is handed to the first waiter, which is dropped before it sees it.
        drop(held);
        assert_eq!(places(&bulkhead), (0, 1));
    }
    let permit = granted(poll_once(second.as_mut()));
    assert_eq!(places(&bulkhead), (0, 0));
    drop(permit);
    assert_eq!(places(&bulkhead), (1, 0));
    // The dropped waiter never had the call permitted.
    assert_eq!(
        *seen.lock().unwrap(),
        [CallPermitted, CallFinished, CallPermitted, CallFinished]
    );
}

#[test]
fn an_unfair_waiter_dropped_after_its_wake_up_passes_it_on() {
    let bulkhead = Bulkhead::new("bh-unfair-pass-on", config(1, FOREVER, false));
    let held = bulkhead.try_acquire().unwrap();
    let (woken, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut second = pin!(bulkhead.acquire());
    {
        let mut first = pin!(bulkhead.acquire());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(second.as_mut().poll(&mut cx).is_pending());
        drop(held);
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    }
    // The wake-up the first waiter did not use went to the second.
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    let _permit = granted(second.as_mut().poll(&mut cx));
}

#[test]
fn turning_fairness_on_hands_free_places_to_waiters_in_order() {
    let bulkhead = Bulkhead::new("bh-fair-again", config(1, FOREVER, false));
    let held = bulkhead.try_acquire().unwrap();
    let mut first = pin!(bulkhead.acquire());
    let mut second = pin!(bulkhead.acquire());
    assert!(poll_once(first.as_mut()).is_pending());
    assert!(poll_once(second.as_mut()).is_pending());
    drop(held);
    // Unfair: the first waiter was woken, but has not taken the place yet.
    assert_eq!(places(&bulkhead), (1, 2));
    bulkhead.change_config(config(1, FOREVER, true));
    assert_eq!(places(&bulkhead), (0, 1));
    assert!(bulkhead.try_acquire().is_err());
    assert!(poll_once(second.as_mut()).is_pending());
    let _permit = granted(poll_once(first.as_mut()));
}

#[test]
fn owned_permits_and_waits_are_static_and_send() {
    fn assert_static_send<T: Send + 'static>(_: &T) {}
    let bulkhead = Bulkhead::new("bh-owned", config(1, FOREVER, true));
    let owned = bulkhead.try_acquire_owned().unwrap();
    let waiting = bulkhead.acquire_owned();
    assert_static_send(&owned);
    assert_static_send(&waiting);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let task = runtime.spawn(waiting);
    runtime.block_on(tokio::task::yield_now());
    assert_eq!(places(&bulkhead), (0, 1));
    drop(owned);
    let permit = runtime.block_on(task).unwrap().unwrap();
    assert_eq!(permit.bulkhead().name(), "bh-owned");
    drop(permit);
    assert_eq!(places(&bulkhead), (1, 0));
}

/// A small xorshift: each worker's own random choices, without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Counts the calls inside the bulkhead, and the most ever seen at once.
#[derive(Default)]
struct InFlight {
    now: AtomicU32,
    most: AtomicU32,
}

impl InFlight {
    /// One call inside, until the guard is dropped (also when the call's future is).
    fn enter(&self) -> Inside<'_> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        Inside(self)
    }
}

struct Inside<'a>(&'a InFlight);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn stress_never_more_than_the_limit_and_every_place_comes_back() {
    const LIMIT: u32 = 3;
    for fair in [true, false] {
        let bulkhead = Bulkhead::new("bh-stress", config(LIMIT, Duration::from_millis(2), fair));
        let in_flight = Arc::new(InFlight::default());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let tasks: Vec<_> = (0..6u64)
            .map(|seed| {
                let (bulkhead, in_flight) = (bulkhead.clone(), Arc::clone(&in_flight));
                runtime.spawn(async move {
                    let mut rng = Rng(seed * 7919 + 1);
                    for _ in 0..1000 {
                        let (steps, cancel) = (rng.below(3), rng.below(4) == 0);
                        let call = bulkhead.call(async {
                            let _inside = in_flight.enter();
                            for _ in 0..steps {
                                tokio::task::yield_now().await;
                            }
                            Ok::<_, ()>(())
                        });
                        if cancel {
                            // Cancelled at a random point: waiting, or running.
                            let _ = tokio::time::timeout(Duration::from_micros(50), call).await;
                        } else {
                            let _ = call.await;
                        }
                    }
                })
            })
            .collect();
        std::thread::scope(|s| {
            for seed in 0..3u64 {
                let (bulkhead, in_flight) = (&bulkhead, &in_flight);
                s.spawn(move || {
                    let mut rng = Rng(seed * 104_729 + 3);
                    for _ in 0..1000 {
                        let _ = bulkhead.call_sync(|| {
                            let _inside = in_flight.enter();
                            for _ in 0..rng.below(3) {
                                std::thread::yield_now();
                            }
                            Ok::<_, ()>(())
                        });
                        if rng.below(8) == 0 {
                            bulkhead.change_config(config(LIMIT, Duration::from_millis(2), fair));
                        }
                    }
                });
            }
        });
        for task in tasks {
            runtime.block_on(task).unwrap();
        }
        assert!(
            in_flight.most.load(Ordering::SeqCst) <= LIMIT,
            "fair: {fair}"
        );
        assert_eq!(in_flight.now.load(Ordering::SeqCst), 0);
        assert!(in_flight.most.load(Ordering::SeqCst) >= 1);
        assert_eq!(places(&bulkhead), (LIMIT, 0), "fair: {fair}");
    }
}

#[test]
fn events_carry_the_name_the_clock_and_resilience4j_type_names() {
    let clock = breaker_core::ManualClock::new();
    let registry = breaker_core::Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance("bh-events", config(1, Duration::ZERO, true))
        .build();
    let bulkhead = registry.bulkhead("bh-events");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let _subscription = bulkhead.subscribe(move |event| {
        sink.lock().unwrap().push((
            event.bulkhead_name().to_owned(),
            event.at(),
            event.kind().as_str(),
            event.to_string(),
        ));
    });
    let start = clock.now();
    let permit = bulkhead.try_acquire().unwrap();
    clock.advance(Duration::from_millis(5));
    assert!(bulkhead.try_acquire().is_err());
    drop(permit);
    let name = "bh-events".to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                name.clone(),
                start,
                "CALL_PERMITTED",
                "Bulkhead 'bh-events': permitted a call".to_owned()
            ),
            (
                name.clone(),
                clock.now(),
                "CALL_REJECTED",
                "Bulkhead 'bh-events': rejected a call".to_owned()
            ),
            (
                name,
                clock.now(),
                "CALL_FINISHED",
                "Bulkhead 'bh-events': a call finished".to_owned()
            ),
        ]
    );
}

#[test]
fn a_panicking_listener_is_skipped_and_the_bulkhead_goes_on() {
    let bulkhead = Bulkhead::new("bh-panicking-listener", config(1, Duration::ZERO, true));
    let _panics = bulkhead.subscribe(|_| panic!("a listener's bug"));
    let (seen, _subscription) = kinds(&bulkhead);
    assert_eq!(bulkhead.call_sync(|| Ok::<_, ()>(1)).unwrap(), 1);
    assert_eq!(places(&bulkhead), (1, 0));
    assert_eq!(*seen.lock().unwrap(), [CallPermitted, CallFinished]);
}
