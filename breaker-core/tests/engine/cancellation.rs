//! Cancellation and panics: a protected future dropped at every await point gives its permit
//! back and records nothing; listeners that panic or block neither poison nor stall the breaker.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_core::{CircuitBreaker, Config, ManualClock, Outcome, Registry, State};

/// Pending once, then ready: one await point.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

const AWAIT_POINTS: usize = 5;

fn half_open(permits: u32) -> (Registry, CircuitBreaker) {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(
            Config::builder()
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
                .permitted_number_of_calls_in_half_open_state(permits)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("cancel");
    b.transition_to(State::Open).unwrap();
    b.transition_to(State::HalfOpen).unwrap();
    (registry, b)
}

/// In CLOSED a running async call holds no permit value, only its state's id and start time:
/// dropped at any await point it records nothing, and the breaker carries on as before, also
/// when the breaker half-opens while the call is in flight.
#[test]
fn a_closed_call_dropped_at_any_await_point_records_nothing() {
    for polls in 0..=AWAIT_POINTS {
        let (registry, b) = half_open(1);
        b.transition_to(State::Closed).unwrap();
        b.call_sync(|| Err::<(), _>("one failure first"))
            .unwrap_err();
        {
            let mut call = Box::pin(b.call(async {
                for _ in 0..AWAIT_POINTS {
                    YieldOnce(false).await;
                }
                Ok::<_, ()>(())
            }));
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..polls {
                assert!(call.as_mut().poll(&mut cx).is_pending());
            }
            if polls % 2 == 1 {
                // The call started in CLOSED; HALF_OPEN's one trial must stay untouched by it.
                b.transition_to(State::Open).unwrap();
                b.transition_to(State::HalfOpen).unwrap();
            }
        } // dropped mid-flight
        let m = b.metrics();
        if polls % 2 == 1 {
            assert_eq!(
                (m.state, m.buffered_calls),
                (State::HalfOpen, 0),
                "{polls} polls"
            );
            let trial = b.try_acquire().expect("HALF_OPEN's trial permit is there");
            assert!(b.try_acquire().is_err(), "{polls} polls: a second trial");
            drop(trial);
        } else {
            assert_eq!(
                (m.state, m.buffered_calls, m.failed_calls),
                (State::Closed, 1, 1),
                "{polls} polls: the dropped call was recorded"
            );
        }
        drop(registry);
    }
}

#[test]
fn a_future_dropped_after_any_number_of_polls_gives_its_permit_back() {
    for polls in 0..=AWAIT_POINTS + 1 {
        let (_registry, b) = half_open(1);
        let completed = {
            let mut call = Box::pin(b.call(async {
                for _ in 0..AWAIT_POINTS {
                    YieldOnce(false).await;
                }
                Ok::<_, ()>(())
            }));
            let mut cx = Context::from_waker(Waker::noop());
            let mut done = false;
            for _ in 0..polls {
                if call.as_mut().poll(&mut cx).is_ready() {
                    done = true;
                    break;
                }
            }
            if polls > 0 && !done {
                assert!(b.try_acquire().is_err(), "the permit is in use mid-flight");
            }
            done
        }; // dropped here, finished or not
        if completed {
            assert_eq!(
                b.state(),
                State::Closed,
                "{polls} polls: the trial succeeded"
            );
        } else {
            let m = b.metrics();
            assert_eq!(
                (m.state, m.buffered_calls),
                (State::HalfOpen, 0),
                "{polls} polls"
            );
            let p = b.try_acquire().expect("the permit came back");
            p.record(Outcome::Success, Duration::ZERO);
            assert_eq!(b.state(), State::Closed);
        }
    }
}

#[test]
fn a_listener_that_blocks_does_not_stall_other_callers() {
    let (_registry, b) = half_open(4);
    let b2 = b.clone();
    let entered = Arc::new(Barrier::new(2));
    let release = Arc::new(Barrier::new(2));
    let (e, r) = (entered.clone(), release.clone());
    let blocked_once = AtomicUsize::new(0);
    let _sub = b.subscribe(move |_| {
        if blocked_once.fetch_add(1, Ordering::SeqCst) == 0 {
            e.wait();
            r.wait();
        }
    });
    std::thread::scope(|s| {
        // This call's success event blocks in the listener...
        s.spawn(|| b2.call_sync(|| Ok::<_, ()>(())).unwrap());
        entered.wait();
        // ...while other calls go through the breaker: no lock is held while listeners run.
        let p = b.try_acquire().unwrap();
        p.release();
        assert_eq!(b.state(), State::HalfOpen);
        release.wait();
    });
}

#[test]
fn a_panicking_fallback_or_listener_leaves_the_breaker_consistent() {
    let (_registry, b) = half_open(2);
    let _sub = b.subscribe(|e| {
        if matches!(e.kind(), breaker_core::EventKind::Success { .. }) {
            panic!("listener bug");
        }
    });
    // The listener panics on the success event; the call itself still returns.
    assert_eq!(b.call_sync(|| Ok::<_, ()>(7)).unwrap(), 7);
    // A "fallback" that panics after a rejection or failure: the breaker is not involved any
    // more, and keeps serving.
    let fallback = std::panic::catch_unwind(|| {
        let _ = b.call_sync(|| Err::<(), _>("boom"));
        panic!("fallback bug");
    });
    assert!(fallback.is_err());
    let m = b.metrics();
    assert_eq!(m.state, State::Open, "1 of 2 trials failed = 50%: OPEN");
    assert_eq!((m.buffered_calls, m.failed_calls), (2, 1));
}

/// Runs `on_drop` when dropped: what a cancelled future's own clean-up does.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// A cancelled HALF_OPEN trial keeps its permit until its own future is gone: clean-up code
/// that runs while the wrapped future is dropped (here, a `Drop` that asks for a permit) still
/// finds every trial taken, so no more trials run at once than the state allows.
#[test]
fn a_cancelled_trial_keeps_its_permit_while_its_future_is_dropped() {
    let (_registry, b) = half_open(1);
    let second_trial = Arc::new(AtomicUsize::new(0));
    {
        let b2 = b.clone();
        let seen = Arc::clone(&second_trial);
        let mut call = Box::pin(b.call(async move {
            let _cleanup = OnDrop(move || {
                if let Ok(permit) = b2.try_acquire() {
                    seen.fetch_add(1, Ordering::SeqCst);
                    permit.release();
                }
            });
            YieldOnce(false).await;
            Ok::<_, ()>(())
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(call.as_mut().poll(&mut cx).is_pending());
    } // cancelled: the wrapped future, with its clean-up, is dropped here
    assert_eq!(
        second_trial.load(Ordering::SeqCst),
        0,
        "a second trial was granted while the first one's future was still being dropped"
    );
    // Once the cancelled call is gone, its permit is back.
    assert!(b.try_acquire().is_ok());
}
