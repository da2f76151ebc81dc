//! Waits that end on a manual clock's `advance`, and the timers a wait leaves on the
//! scheduler. (Behaviour without timers is tested through the public API in
//! tests/engine/bulkhead.rs.)

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::*;
use crate::time::manual::ManualClock;

fn bulkhead(limit: u32, max_wait: Duration) -> (ManualClock, Bulkhead) {
    let clock = ManualClock::new();
    let env = Env::new(Clock::from(clock.clone()), Some(1));
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(limit)
        .max_wait_duration(max_wait)
        .build()
        .unwrap();
    (clock, Bulkhead::with_env("bulkhead-tests", config, env))
}

/// The kinds of the events `bulkhead` publishes from now on.
fn kinds(bulkhead: &Bulkhead) -> (Arc<Mutex<Vec<BulkheadEventKind>>>, Subscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = bulkhead.subscribe(move |event| sink.lock().unwrap().push(event.kind()));
    (seen, subscription)
}

/// A waker that counts its wake-ups.
struct Counter(AtomicUsize);

impl std::task::Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    (Arc::clone(&counter), Waker::from(counter))
}

fn pending_timers(bulkhead: &Bulkhead) -> usize {
    bulkhead.core.env().scheduler().pending()
}

#[test]
fn a_wait_ends_refused_when_the_clock_passes_max_wait() {
    use BulkheadEventKind::*;
    let (clock, bulkhead) = bulkhead(1, Duration::from_millis(100));
    let (seen, _subscription) = kinds(&bulkhead);
    let held = bulkhead.try_acquire().unwrap();
    let (counter, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut waiting = pin!(bulkhead.acquire());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(bulkhead.metrics().waiting_calls(), 1);
    assert_eq!(pending_timers(&bulkhead), 1);

    clock.advance(Duration::from_millis(99));
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_millis(1));
    // The timer woke the waiter, which finds itself refused and out of the queue.
    assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
    match waiting.as_mut().poll(&mut cx) {
        Poll::Ready(Err(full)) => assert_eq!(full.bulkhead_name(), "bulkhead-tests"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    drop(held);
    assert_eq!(
        *seen.lock().unwrap(),
        [CallPermitted, CallRejected, CallFinished]
    );
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}

#[test]
fn a_granted_wait_cancels_its_timer_and_a_late_timer_does_nothing() {
    let (clock, bulkhead) = bulkhead(1, Duration::from_millis(100));
    let held = bulkhead.try_acquire().unwrap();
    let (_, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut waiting = pin!(bulkhead.acquire());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    drop(held);
    let permit = match waiting.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(permit)) => permit,
        other => panic!("expected a place, got {other:?}"),
    };
    assert_eq!(pending_timers(&bulkhead), 0);
    clock.advance(Duration::from_secs(1));
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 0);
    drop(permit);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}

#[test]
fn a_dropped_wait_cancels_its_timer() {
    let (_clock, bulkhead) = bulkhead(1, Duration::from_millis(100));
    let _held = bulkhead.try_acquire().unwrap();
    let (_, waker) = counting_waker();
    {
        let mut waiting = pin!(bulkhead.acquire());
        assert!(waiting
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert_eq!(pending_timers(&bulkhead), 1);
    }
    assert_eq!(pending_timers(&bulkhead), 0);
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
}

/// Waits until `bulkhead` has `n` calls waiting (threads that are about to park).
fn until_waiting(bulkhead: &Bulkhead, n: u32) {
    while bulkhead.metrics().waiting_calls() != n {
        std::thread::yield_now();
    }
}

/// Lets waiting threads run until `done`; if they never get there (the code under test is
/// broken), ends their waits through the clock, so the test fails on its assertions instead
/// of hanging.
fn settle(clock: &ManualClock, done: impl Fn() -> bool) {
    for _ in 0..1_000_000 {
        if done() {
            return;
        }
        std::thread::yield_now();
    }
    clock.advance(Duration::from_secs(3600));
}

#[test]
fn a_blocking_wait_ends_refused_when_the_clock_passes_max_wait() {
    let (clock, bulkhead) = bulkhead(1, Duration::from_secs(5));
    let _held = bulkhead.try_acquire().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| bulkhead.acquire_blocking().map(drop));
        until_waiting(&bulkhead, 1);
        clock.advance(Duration::from_secs(5));
        let refused = waiter.join().unwrap().unwrap_err();
        assert_eq!(refused.bulkhead_name(), "bulkhead-tests");
    });
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
}

#[test]
fn blocking_waiters_get_places_in_the_order_they_came() {
    let (clock, bulkhead) = bulkhead(1, Duration::from_secs(5));
    let held = bulkhead.try_acquire().unwrap();
    let order = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for id in 0..4 {
            let (bulkhead, order) = (&bulkhead, &order);
            s.spawn(move || {
                // Each one gives its place straight back: the next in line gets it.
                if let Ok(_permit) = bulkhead.acquire_blocking() {
                    order.lock().unwrap().push(id);
                }
            });
            until_waiting(bulkhead, id + 1);
        }
        drop(held);
        settle(&clock, || order.lock().unwrap().len() == 4);
    });
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    assert_eq!(pending_timers(&bulkhead), 0);
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 1);
}

#[test]
fn raising_the_limit_wakes_blocking_waiters() {
    let (clock, bulkhead) = bulkhead(1, Duration::from_secs(5));
    let _held = bulkhead.try_acquire().unwrap();
    let config = bulkhead.config();
    std::thread::scope(|s| {
        let waiters: Vec<_> = (0..2)
            .map(|_| s.spawn(|| bulkhead.acquire_blocking().map(drop)))
            .collect();
        until_waiting(&bulkhead, 2);
        let raised = BulkheadConfig::builder()
            .max_concurrent_calls(3)
            .max_wait_duration(config.max_wait_duration())
            .build()
            .unwrap();
        bulkhead.change_config(raised);
        settle(&clock, || waiters.iter().all(|waiter| waiter.is_finished()));
        for waiter in waiters {
            assert!(waiter.join().unwrap().is_ok());
        }
    });
    assert_eq!(bulkhead.metrics().available_concurrent_calls(), 2);
}
