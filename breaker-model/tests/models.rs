//! Model checking of the concurrent core with loom: every interleaving (up to a preemption
//! bound) of the operations below runs against breaker-core's real code, compiled with
//! `--cfg loom` so that its atomics and locks are loom's: the state machine's, the listener
//! lists', the registry's map of breakers, and the bulkhead's permit word and waiter queue.
//!
//! Each model prints how many interleavings it explored (`cargo test -p breaker-model --
//! --nocapture`) and fails if it explored only one, which would mean loom saw no concurrency.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use breaker_model::bulkhead::{
    Acquire, Bulkhead, BulkheadConfig, BulkheadPermit, OwnedBulkheadPermit,
};
use breaker_model::{
    CircuitBreaker, Config, EventKind, ManualClock, Outcome, Registry, State, Subscription,
};
use loom::thread;

/// Runs `model` under every interleaving loom finds with at most `preemptions` preemptions per
/// execution, and returns the number of executions.
fn check(name: &str, preemptions: usize, model: impl Fn() + Sync + Send + 'static) -> usize {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let mut builder = loom::model::Builder::new();
    // LOOM_MAX_PREEMPTIONS (read by `Builder::new`) overrides the bound for a deeper run.
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    let bound = builder
        .preemption_bound
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    builder.check(move || {
        counted.fetch_add(1, Relaxed);
        model();
    });
    let runs = runs.load(Relaxed);
    println!("model {name}: {runs} interleavings (preemption bound {bound})");
    assert!(runs > 1, "{name}: loom explored a single interleaving");
    runs
}

const WAIT: Duration = Duration::from_secs(10);

/// A registry on a manual clock with one breaker, `b`, configured by `config`.
fn breaker(config: Config) -> (ManualClock, CircuitBreaker, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .instance("b", config)
        .build();
    let b = registry.breaker("b");
    (clock, b, registry)
}

/// The `(from, to)` pairs of the transitions a breaker published, in order.
type Transitions = Arc<Mutex<Vec<(State, State)>>>;

/// The transitions the breaker published, in order.
fn transitions(b: &CircuitBreaker) -> (Transitions, Subscription) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let subscription = b.subscribe(move |event| {
        if let EventKind::StateTransition { from, to } = event.kind() {
            sink.lock().unwrap().push((from, to));
        }
    });
    (seen, subscription)
}

/// The published transitions form one chain from `start` to the breaker's current state.
fn assert_chain(start: State, seen: &[(State, State)], now: State) {
    let mut at = start;
    for &(from, to) in seen {
        assert_eq!(
            from, at,
            "transition {from} -> {to} published while in {at}: {seen:?}"
        );
        assert_ne!(from, to);
        at = to;
    }
    assert_eq!(at, now, "published {seen:?}, but the breaker is {now}");
}

fn half_open_config(trials: u32) -> Config {
    Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .permitted_number_of_calls_in_half_open_state(trials)
        .wait_duration_in_open_state(WAIT)
        .build()
        .unwrap()
}

/// HALF_OPEN never has more than its trial permits out, whatever the mix of grants, releases
/// (dropped permits) and ignored errors; and every permit given back can be granted again.
#[test]
fn half_open_permits_never_exceed_the_cap() {
    check("half-open permit cap", 6, || {
        let (_clock, b, _registry) = breaker(half_open_config(1));
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        let out = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let worker = |give_back: fn(breaker_model::Permit<'_>)| {
            let (b, out) = (b.clone(), Arc::clone(&out));
            thread::spawn(move || {
                if let Ok(permit) = b.try_acquire() {
                    let held = out.fetch_add(1, Relaxed) + 1;
                    assert!(held <= 1, "{held} trial permits out of 1");
                    out.fetch_sub(1, Relaxed);
                    give_back(permit);
                }
            })
        };
        let a = worker(|p| p.release());
        let c = worker(|p| p.ignore());
        a.join().unwrap();
        c.join().unwrap();
        // Both came back: exactly one permit is available again.
        assert_eq!(b.state(), State::HalfOpen);
        let again = b.try_acquire().expect("the trial permit was given back");
        assert!(
            b.try_acquire().is_err(),
            "a second trial permit was granted"
        );
        drop(again);
    });
}

/// A call that finds HALF_OPEN without a trial left, and reaches the lock only once the trial
/// that was out failed and reopened the breaker, meets OPEN at the start of its wait: it is
/// rejected, never given a trial of a HALF_OPEN entered before the wait.
#[test]
fn a_call_meeting_a_fresh_open_under_the_lock_is_rejected() {
    check("late call vs reopen", 3, || {
        let (_clock, b, _registry) = breaker(half_open_config(1));
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        let trial = b.try_acquire_owned().unwrap();
        let late = {
            let b = b.clone();
            thread::spawn(move || b.try_acquire().map(drop))
        };
        trial.failure();
        assert!(late.join().unwrap().is_err(), "a trial was granted");
        assert_eq!(b.state(), State::Open);
    });
}

/// A permit granted by CLOSED and given back (dropped, or an ignored error) while a later
/// HALF_OPEN runs never adds a trial permit to that HALF_OPEN.
#[test]
fn stale_permits_never_feed_half_open() {
    check("stale permit give-back", 6, || {
        let (clock, b, _registry) = breaker(half_open_config(1));
        let (b1, b2) = (b.clone(), b.clone());
        let granted = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let signal = Arc::clone(&granted);
        let closed_permits = thread::spawn(move || {
            let dropped = b1.try_acquire().expect("CLOSED permits all");
            let ignored = b1.try_acquire().expect("CLOSED permits all");
            signal.store(true, Relaxed);
            drop(dropped);
            ignored.ignore();
        });
        while !granted.load(Relaxed) {
            thread::yield_now();
        }
        b2.transition_to(State::Open).unwrap();
        clock.advance(WAIT + Duration::from_millis(1));
        let trial = b2.try_acquire().expect("the first trial");
        closed_permits.join().unwrap();
        assert!(
            b2.try_acquire().is_err(),
            "a stale give-back made a second trial permit"
        );
        drop(trial);
    });
}

/// Two calls failing at once trip the breaker once: one CLOSED -> OPEN event, one OPEN state.
#[test]
fn a_trip_publishes_one_transition() {
    check("one trip, one event", 6, || {
        let (_clock, b, _registry) = breaker(half_open_config(1));
        let (seen, _subscription) = transitions(&b);
        let failers: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    if let Ok(p) = b.try_acquire() {
                        p.failure();
                    }
                })
            })
            .collect();
        for t in failers {
            t.join().unwrap();
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, [(State::Closed, State::Open)]);
        assert_eq!(b.state(), State::Open);
    });
}

/// OPEN's end of wait reached by the timer (the clock passing it) and by a call asking for a
/// permit at the same time: one OPEN -> HALF_OPEN, published once.
#[test]
fn timer_and_lazy_transition_race_to_half_open_once() {
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .permitted_number_of_calls_in_half_open_state(2)
        .wait_duration_in_open_state(WAIT)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap();
    check("timer vs lazy HALF_OPEN", 6, move || {
        let (clock, b, _registry) = breaker(config.clone());
        b.transition_to(State::Open).unwrap();
        let (seen, _subscription) = transitions(&b);
        let timer = thread::spawn(move || clock.advance(WAIT + Duration::from_millis(1)));
        let caller = {
            let b = b.clone();
            thread::spawn(move || b.try_acquire().map(|p| p.release()).is_ok())
        };
        timer.join().unwrap();
        let _ = caller.join().unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, [(State::Open, State::HalfOpen)]);
        assert_eq!(b.state(), State::HalfOpen);
        // Whatever the order, HALF_OPEN still has both its trial permits.
        let trials: Vec<_> = (0..3).map(|_| b.try_acquire()).collect();
        assert_eq!(trials.iter().filter(|t| t.is_ok()).count(), 2);
    });
}

/// A timer whose state was left never acts on a later state: OPEN's timer, falling due while
/// the breaker closes and opens again, never moves the second OPEN to HALF_OPEN early; HALF_OPEN's
/// maximum wait racing the trial call that closes the breaker acts only if it came first.
#[test]
fn stale_timers_never_act_on_a_later_state() {
    let open_timer = Config::builder()
        .wait_duration_in_open_state(WAIT)
        .automatic_transition_from_open_to_half_open_enabled(true)
        .build()
        .unwrap();
    check("stale OPEN timer", 6, move || {
        // OPEN #1 at t0 sets a timer for t0 + WAIT; the clock moves to t0 + WAIT/2.
        let (clock, b, _registry) = breaker(open_timer.clone());
        b.transition_to(State::Open).unwrap();
        clock.advance(WAIT / 2);
        let (seen, _subscription) = transitions(&b);
        // The clock passes OPEN #1's due time while the breaker closes and opens again: OPEN #2,
        // entered at t0 + WAIT/2 or later, is due no earlier than t0 + 3/2 WAIT.
        let timer = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance(WAIT / 2 + Duration::from_millis(1)))
        };
        b.transition_to(State::Closed).unwrap();
        b.transition_to(State::Open).unwrap();
        timer.join().unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_chain(State::Open, &seen, b.state());
        assert_eq!(
            b.state(),
            State::Open,
            "a stale timer moved OPEN #2: {seen:?}"
        );
    });

    let max_wait = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(1)
        .permitted_number_of_calls_in_half_open_state(1)
        .max_wait_duration_in_half_open_state(WAIT)
        .transition_to_state_after_wait_duration(State::Open)
        .build()
        .unwrap();
    check("stale HALF_OPEN max wait", 6, move || {
        let (clock, b, _registry) = breaker(max_wait.clone());
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        let (seen, _subscription) = transitions(&b);
        let trial = b.try_acquire().expect("the trial permit");
        let timer = thread::spawn(move || clock.advance(WAIT));
        trial.success();
        timer.join().unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_chain(State::HalfOpen, &seen, b.state());
        match seen.as_slice() {
            // The trial closed the breaker first; the timer found its state gone.
            [(State::HalfOpen, State::Closed)] => {}
            // The timer fired first; the late trial result was recorded in OPEN.
            [(State::HalfOpen, State::Open)] => {}
            other => panic!("unexpected transitions {other:?}"),
        }
    });
}

/// The window's counts equal the outcomes recorded, under concurrent recording, including a
/// window that overflows (three calls in a window of two).
#[test]
fn window_counts_equal_the_outcomes_recorded() {
    let slow = Duration::from_secs(1);
    let config = Config::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(100.0)
        .slow_call_rate_threshold(100.0)
        .slow_call_duration_threshold(slow)
        .build()
        .unwrap();
    check("window counts", 3, move || {
        let (_clock, b, _registry) = breaker(config.clone());
        let outcomes = [
            (Outcome::Failure, slow * 2),
            (Outcome::Success, slow * 2),
            (Outcome::Ignored, Duration::ZERO),
        ];
        let threads: Vec<_> = outcomes
            .into_iter()
            .map(|(outcome, took)| {
                let b = b.clone();
                thread::spawn(move || b.try_acquire().unwrap().record(outcome, took))
            })
            .collect();
        b.try_acquire().unwrap().success();
        for t in threads {
            t.join().unwrap();
        }
        assert_window_exact(&b);
        let m = b.metrics();
        assert_eq!(m.state, State::Closed);
        assert_eq!(
            (m.buffered_calls, m.failed_calls, m.successful_calls),
            (3, 1, 2)
        );
        assert_eq!(
            (m.slow_calls, m.slow_failed_calls, m.slow_successful_calls),
            (2, 1, 1)
        );
    });

    let small = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .failure_rate_threshold(100.0)
        .build()
        .unwrap();
    check("window overflow", 4, move || {
        let (_clock, b, _registry) = breaker(small.clone());
        let threads: Vec<_> = [Outcome::Failure, Outcome::Success]
            .into_iter()
            .map(|outcome| {
                let b = b.clone();
                thread::spawn(move || b.try_acquire().unwrap().finish(outcome))
            })
            .collect();
        b.try_acquire().unwrap().success();
        for t in threads {
            t.join().unwrap();
        }
        // Two of the three outcomes are in the window: the failure is in it or not.
        assert_window_exact(&b);
        let m = b.metrics();
        assert_eq!(m.buffered_calls, 2);
        assert!(m.failed_calls <= 1);
        assert_eq!(m.successful_calls, 2 - m.failed_calls);
    });
}

/// Once no call is in flight, the lock-free window's packed totals equal its slots, and both
/// equal what the metrics report.
fn assert_window_exact(b: &CircuitBreaker) {
    let (packed, recounted) = b
        .model_window_totals()
        .expect("CLOSED on the lock-free window");
    assert_eq!(packed, recounted, "packed totals differ from the slots");
    let m = b.metrics();
    let reported = [
        m.buffered_calls,
        m.failed_calls,
        m.slow_calls,
        m.slow_failed_calls,
    ];
    assert_eq!(recounted, reported, "the slots differ from the metrics");
}

/// A call that began in one CLOSED state and finishes while the breaker opens, half-opens and
/// closes again is counted once, in one window, and the new CLOSED's totals stay exact.
#[test]
fn a_late_call_never_corrupts_a_later_closed_window() {
    let config = Config::builder()
        .sliding_window_size(2)
        .minimum_number_of_calls(2)
        .failure_rate_threshold(100.0)
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap();
    check("late call vs re-close", 4, move || {
        let (_clock, b, _registry) = breaker(config.clone());
        let late = {
            let b = b.clone();
            thread::spawn(move || b.try_acquire().map(|p| p.failure()).is_ok())
        };
        b.transition_to(State::Open).unwrap();
        b.transition_to(State::HalfOpen).unwrap();
        b.transition_to(State::Closed).unwrap();
        b.try_acquire().unwrap().success();
        let counted = late.join().unwrap();
        let m = b.metrics();
        assert_eq!(m.state, State::Closed);
        assert_window_exact(&b);
        // The new CLOSED holds the success, and the late failure only if it finished there.
        assert_eq!(m.successful_calls, 1, "{m:?}, late call counted: {counted}");
        assert!(m.failed_calls <= u32::from(counted));
    });
}

/// A call that read CLOSED and is recorded just after another call opened the breaker counts in
/// the window OPEN carries on, and the rejections OPEN makes without its lock carry metrics
/// with that call in them: the same metrics the breaker reports.
#[test]
fn a_call_recorded_as_the_breaker_opens_is_in_open_s_rejections() {
    let config = Config::builder()
        .sliding_window_size(3)
        .minimum_number_of_calls(2)
        .failure_rate_threshold(100.0)
        .wait_duration_in_open_state(WAIT)
        .build()
        .unwrap();
    check("late call vs trip", 3, move || {
        let (_clock, b, _registry) = breaker(config.clone());
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        let _rejections = b.subscribe(move |event| {
            if matches!(event.kind(), EventKind::NotPermitted) {
                sink.lock().unwrap().push(event.metrics());
            }
        });
        let late = b.try_acquire_owned().unwrap();
        let late = thread::spawn(move || late.success());
        b.try_acquire().unwrap().failure();
        b.try_acquire().unwrap().failure();
        late.join().unwrap();
        if b.state() == State::Open {
            assert!(b.try_acquire().is_err());
            let heard = heard.lock().unwrap();
            assert_eq!(heard.len(), 1);
            assert_eq!(
                heard[0],
                b.metrics(),
                "a rejection's metrics are the breaker's"
            );
        }
    });
}

/// Subscribing while another thread publishes: the publisher sees the old list or the new one,
/// never a torn one, and the new listener hears every event published after it was added.
#[test]
fn subscribing_while_publishing() {
    check("subscribe vs publish", 6, || {
        let (_clock, b, _registry) = breaker(half_open_config(1));
        let heard = Arc::new(AtomicUsize::new(0));
        let publisher = {
            let b = b.clone();
            thread::spawn(move || b.transition_to(State::ForcedOpen).unwrap())
        };
        let counter = Arc::clone(&heard);
        let subscription = b.subscribe(move |_| {
            counter.fetch_add(1, Relaxed);
        });
        publisher.join().unwrap();
        b.transition_to(State::Closed).unwrap();
        // The FORCED_OPEN -> CLOSED transition came after the subscription: heard for sure.
        assert!(heard.load(Relaxed) >= 1);
        drop(subscription);
    });
}

/// A registry on a manual clock with no breaker yet.
fn empty_registry() -> Registry {
    Registry::builder().clock(ManualClock::new()).build()
}

/// Two threads asking for the same new name get one breaker: it is made once (one `Added`
/// event), both handles are that breaker, and the registry lists it once.
#[test]
fn one_name_makes_one_breaker() {
    check("one name, one breaker", 4, || {
        let registry = empty_registry();
        let added = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&added);
        registry.on_registry_event(move |_| {
            counter.fetch_add(1, Relaxed);
        });
        let other = {
            let registry = registry.clone();
            thread::spawn(move || registry.breaker("same"))
        };
        let mine = registry.breaker("same");
        let theirs = other.join().unwrap();
        assert!(mine.ptr_eq(&theirs), "two breakers named `same`");
        assert_eq!(registry.breakers().len(), 1);
        assert_eq!(
            added.load(Relaxed),
            1,
            "the breaker was made more than once"
        );
    });
}

/// Lookups and a listing while the registry's map grows (under loom a table starts with one
/// bucket, so the third breaker grows it): the breakers made before are found, as the same
/// breakers, and listed exactly once each; the new one is found once it is made.
///
/// The reader is the spawned thread: loom's search starts from the run where it runs last and
/// goes back from each of its loads to the writer's store that load read, so that is the order
/// that explores the reader inside the growth.
#[test]
fn lookups_during_growth_find_every_breaker() {
    check("lookups during growth", 4, || {
        let registry = empty_registry();
        let a = registry.breaker("a");
        let b = registry.breaker("b");
        let reader = {
            let (registry, a, b) = (registry.clone(), a.clone(), b.clone());
            thread::spawn(move || {
                assert!(registry.find("a").expect("`a` was lost").ptr_eq(&a));
                let all = registry.breakers();
                let listed: Vec<&str> = all.iter().map(|b| b.name()).collect();
                assert!(
                    listed == ["a", "b"] || listed == ["a", "b", "c"],
                    "listed {listed:?}"
                );
                assert!(registry.breaker("b").ptr_eq(&b));
            })
        };
        let c = registry.breaker("c");
        reader.join().unwrap();
        assert!(registry.find("c").expect("`c` was lost").ptr_eq(&c));
        assert_eq!(registry.breakers().len(), 3);
    });
}

/// A registry on a manual clock with one bulkhead, `bh` (its waits end only when a model
/// advances the clock).
fn bulkhead(limit: u32, fair: bool) -> (ManualClock, Bulkhead, Registry) {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(limit)
        .max_wait_duration(WAIT)
        .fair_call_handling_enabled(fair)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance("bh", config)
        .build();
    let bh = registry.bulkhead("bh");
    (clock, bh, registry)
}

/// Counts the holders of a place, and fails the model if more than the limit hold one. Its
/// counter is loom's, so the model runs the other threads between a holder's arrival and
/// departure.
#[derive(Default)]
struct Holders(loom::sync::atomic::AtomicUsize);

impl Holders {
    fn hold(&self, limit: usize, permit: &BulkheadPermit<'_>) {
        let now = self.0.fetch_add(1, Relaxed) + 1;
        assert!(now <= limit, "{now} calls hold a place of {limit}");
        let _ = permit;
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The fast path and the hand-off, fair and not: a call gives its place back while a thread
/// waits for one (parked) and a newcomer tries to take one. Never two holders; the waiter is
/// always woken (loom fails a model whose thread parks forever); every place comes back.
#[test]
fn bulkhead_a_released_place_reaches_the_waiter_or_a_newcomer_never_both() {
    for fair in [true, false] {
        let name = if fair {
            "bulkhead hand-off, fair"
        } else {
            "bulkhead hand-off, unfair"
        };
        check(name, 3, move || {
            let (_clock, bh, _registry) = bulkhead(1, fair);
            let holders = Arc::new(Holders::default());
            let held = bh.try_acquire_owned().unwrap();
            let waiter = {
                let (bh, holders) = (bh.clone(), Arc::clone(&holders));
                thread::spawn(move || {
                    let permit = bh.acquire_blocking().expect("the wait never times out");
                    holders.hold(1, &permit);
                })
            };
            let newcomer = {
                let (bh, holders) = (bh.clone(), Arc::clone(&holders));
                thread::spawn(move || {
                    if let Ok(permit) = bh.try_acquire() {
                        holders.hold(1, &permit);
                    }
                })
            };
            drop(held);
            waiter.join().unwrap();
            newcomer.join().unwrap();
            assert_every_place_back(&bh);
        });
    }
}

/// The place is free again and nobody waits.
fn assert_every_place_back(bh: &Bulkhead) {
    let m = bh.metrics();
    assert_eq!((m.available_concurrent_calls(), m.waiting_calls()), (1, 0));
}

/// The one place of `bh` taken, and a call waiting for it (polled once).
fn held_and_waiting(bh: &Bulkhead) -> (OwnedBulkheadPermit, Pin<Box<Acquire<'_>>>) {
    let held = bh.try_acquire_owned().unwrap();
    let mut waiting = Box::pin(bh.acquire());
    let polled = waiting
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()));
    assert!(polled.is_pending());
    (held, waiting)
}

/// A waiting future dropped while its place is handed to it: the place goes back (to the
/// count, since nobody else waits), exactly once.
#[test]
fn bulkhead_a_dropped_waiter_racing_its_grant_gives_the_place_back_once() {
    check("bulkhead cancel vs grant", 3, || {
        let (_clock, bh, _registry) = bulkhead(1, true);
        let (held, waiting) = held_and_waiting(&bh);
        let releaser = thread::spawn(move || drop(held));
        drop(waiting);
        releaser.join().unwrap();
        assert_every_place_back(&bh);
    });
}

/// A waiter's timer fires while its place is handed to it: it is either granted or refused,
/// and in both cases every place comes back.
#[test]
fn bulkhead_a_timer_racing_a_grant_ends_the_wait_once() {
    check("bulkhead timer vs grant", 3, || {
        let (clock, bh, _registry) = bulkhead(1, true);
        let (held, mut waiting) = held_and_waiting(&bh);
        let mut cx = Context::from_waker(Waker::noop());
        let timer = thread::spawn(move || clock.advance(WAIT));
        drop(held);
        timer.join().unwrap();
        match waiting.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(permit)) => drop(permit),
            Poll::Ready(Err(_)) => {}
            Poll::Pending => panic!("the wait outlived both its grant and its timer"),
        }
        assert_every_place_back(&bh);
    });
}

/// A limit raised while a call gives its place back and another waits: the waiter gets a place
/// from one or the other, and the count settles on the new limit.
#[test]
fn bulkhead_a_limit_change_racing_a_release_settles_on_the_new_limit() {
    check("bulkhead resize vs release", 3, || {
        let (_clock, bh, _registry) = bulkhead(1, true);
        let (held, mut waiting) = held_and_waiting(&bh);
        let resizer = {
            let bh = bh.clone();
            thread::spawn(move || {
                let raised = BulkheadConfig::builder()
                    .max_concurrent_calls(2)
                    .max_wait_duration(bh.config().max_wait_duration())
                    .build()
                    .unwrap();
                bh.change_config(raised);
            })
        };
        drop(held);
        resizer.join().unwrap();
        let polled = waiting
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        let Poll::Ready(Ok(permit)) = polled else {
            panic!("a place came free twice, and the waiter has none: {polled:?}");
        };
        let m = bh.metrics();
        assert_eq!((m.available_concurrent_calls(), m.waiting_calls()), (1, 0));
        drop(permit);
        assert_eq!(bh.metrics().available_concurrent_calls(), 2);
    });
}
