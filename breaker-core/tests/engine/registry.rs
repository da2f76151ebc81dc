//! The registry: get-or-create by name, shared configs and instance overrides, keyed breakers,
//! the global registry, and the scheduler thread of the system clock.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use breaker_core::{
    CircuitBreaker, Config, EventKind, ManualClock, Registry, RegistryEvent, State, TransitionCause,
};

fn config(size: u32) -> Config {
    Config::builder()
        .sliding_window_size(size)
        .minimum_number_of_calls(size)
        .build()
        .unwrap()
}

#[test]
fn same_name_same_breaker_and_instance_configs_win_over_default() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(config(7))
        .instance("productService", config(10))
        .build();
    let a = registry.breaker("productService");
    let b = registry.breaker("productService");
    assert!(a.ptr_eq(&b));
    assert_eq!(a.config().sliding_window_size(), 10);
    assert_eq!(registry.breaker("other").config().sliding_window_size(), 7);
    assert!(registry.find("missing").is_none());
    let names: Vec<String> = registry
        .breakers()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert_eq!(names, ["other", "productService"]);
}

#[test]
fn keyed_breakers_are_independent_and_shared_by_name() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("llm", config(2))
        .build();
    let by_model = registry.keyed("llm");
    let openai = by_model.get("openai/gpt");
    for _ in 0..2 {
        let _ = openai.call_sync(|| Err::<(), _>("503"));
    }
    assert_eq!(openai.state(), State::Open);
    let other = by_model.get(&String::from("anthropic/claude"));
    assert_eq!(other.state(), State::Closed);
    assert_eq!(other.name(), "llm[anthropic/claude]");
    assert_eq!(
        other.config().sliding_window_size(),
        2,
        "configured by `llm`"
    );
    // Asking again for the same name gives the same breakers.
    let again = registry.keyed("llm");
    assert!(again.get("openai/gpt").ptr_eq(&openai));
    assert_eq!(again.len(), 2);
    assert_eq!(
        registry.breakers().len(),
        2,
        "keyed breakers are listed too"
    );
}

/// Four threads look up the same 1,000 keys in the same order, meeting at a barrier before each
/// new key so that they race to make its breaker, then look them all up again: every handle any
/// of them got is the breaker the group holds for its key, and each key's breaker was announced
/// (`Added`) once. A duplicate made by a thread that lost the race and then handed out, or
/// announced, would be a breaker the registry does not hold: its calls and events would reach
/// no one.
#[test]
fn keyed_lookups_from_many_threads_create_each_breaker_once() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let added = Arc::new(Mutex::new(BTreeMap::<String, usize>::new()));
    let heard = Arc::clone(&added);
    registry.on_registry_event(move |event| {
        if let RegistryEvent::Added(b) = event {
            *heard
                .lock()
                .unwrap()
                .entry(b.name().to_owned())
                .or_default() += 1;
        }
    });
    let keyed = registry.keyed("tenant");
    let together = Barrier::new(4);
    let got: Vec<Vec<CircuitBreaker>> = thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..2_000u32)
                        .map(|i| {
                            let key = i % 1_000;
                            if i < 1_000 {
                                together.wait();
                            }
                            let b = keyed.get(&key);
                            assert_eq!(b.name(), format!("tenant[{key}]"));
                            b
                        })
                        .collect()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(keyed.len(), 1_000);
    for (t, handles) in got.iter().enumerate() {
        for (i, b) in handles.iter().enumerate() {
            let key = i % 1_000;
            let held = keyed.find(&key).unwrap();
            assert!(
                b.ptr_eq(&held),
                "thread {t}, lookup {i}: a breaker for key {key} that the group does not hold"
            );
        }
    }
    let added = added.lock().unwrap();
    assert_eq!(added.len(), 1_000, "one name per key");
    let twice: Vec<_> = added.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "announced more than once: {twice:?}");
}

#[test]
fn the_global_registry_is_configured_before_first_use_or_not_at_all() {
    let custom = Registry::builder().default_config(config(3)).build();
    Registry::install_global(custom).expect("first install wins");
    assert_eq!(
        Registry::global()
            .breaker("g")
            .config()
            .sliding_window_size(),
        3
    );
    let late = Registry::install_global(Registry::new()).unwrap_err();
    assert!(late.to_string().contains("already in use"));
}

/// The system clock's scheduler thread moves OPEN to HALF_OPEN with no call. This test runs
/// on the system clock, since it tests that thread. It waits on a channel for the transition's
/// event (no polling, no bound on real time) and reads the rest from the events: the move came
/// from the scheduler thread, because the wait was over, and not before the wait on the
/// breaker's own clock. A scheduler that never fires fails the test after a minute: a bound
/// on a hang, not on the scheduler's speed (its wait is 50 ms).
#[test]
fn the_scheduler_thread_fires_the_automatic_transition() {
    let wait = Duration::from_millis(50);
    let registry = Registry::builder()
        .default_config(
            Config::builder()
                .wait_duration_in_open_state(wait)
                .automatic_transition_from_open_to_half_open_enabled(true)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker("auto");
    let (transitions, heard) = mpsc::channel();
    let _sub = b.subscribe(move |e| {
        if let EventKind::StateTransition { from, to } = e.kind() {
            let thread = thread::current().name().map(str::to_owned);
            transitions
                .send((from, to, e.cause(), e.at(), thread))
                .unwrap();
        }
    });
    b.transition_to(State::Open).unwrap();
    // Two events, from two threads: each is published after the breaker's lock is released,
    // so on a loaded machine the scheduler's may come first.
    let next = || {
        heard
            .recv_timeout(Duration::from_secs(60))
            .expect("no transition event within a minute: the scheduler never fired")
    };
    let mut events = [next(), next()];
    events.sort_by_key(|(_, to, ..)| *to != State::Open);
    let [(from, to, cause, opened, _), (later_from, later_to, later_cause, half_open, thread)] =
        events;
    assert_eq!(
        (from, to, cause),
        (State::Closed, State::Open, Some(TransitionCause::Manual))
    );
    assert_eq!(
        (later_from, later_to, later_cause),
        (
            State::Open,
            State::HalfOpen,
            Some(TransitionCause::WaitElapsed)
        )
    );
    assert_eq!(thread.as_deref(), Some("breaker-scheduler"));
    assert!(
        half_open.saturating_duration_since(opened) >= wait,
        "HALF_OPEN {:?} after OPEN, before the wait of {wait:?}",
        half_open.saturating_duration_since(opened)
    );
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn timers_of_a_left_state_do_nothing_and_one_queue_serves_all_breakers() {
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .wait_duration_in_open_state(Duration::from_secs(10))
            .automatic_transition_from_open_to_half_open_enabled(true)
            .build()
            .unwrap(),
    );
    let a = registry.breaker("a");
    let b = registry.breaker("b");
    a.transition_to(State::Open).unwrap();
    clock.advance(Duration::from_secs(5));
    b.transition_to(State::Open).unwrap();
    a.reset(); // cancels a's timer (deliberate difference D1), which leaves the queue at once
    assert_eq!(registry.pending_timers(), 1);
    clock.advance(Duration::from_secs(5));
    assert_eq!(a.state(), State::Closed, "a's stale timer did nothing");
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_secs(5));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(registry.pending_timers(), 0);
}

/// What the registry's hooks heard, as `+name`, `-name` and `old->new` (with the configured
/// window size of each).
fn hooks_log(registry: &Registry) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    registry.on_registry_event(move |event| {
        let size = |b: &breaker_core::CircuitBreaker| b.config().sliding_window_size();
        let line = match event {
            breaker_core::RegistryEvent::Added(b) => format!("+{}/{}", b.name(), size(b)),
            breaker_core::RegistryEvent::Removed(b) => format!("-{}/{}", b.name(), size(b)),
            breaker_core::RegistryEvent::Replaced { old, new } => {
                format!("{}/{}->{}/{}", old.name(), size(old), new.name(), size(new))
            }
            _ => "?".to_owned(),
        };
        log.lock().unwrap().push(line);
    });
    seen
}

#[test]
fn remove_detaches_the_breaker_and_the_next_lookup_makes_a_fresh_one() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("productService", config(2))
        .build();
    let seen = hooks_log(&registry);
    let old = registry.breaker("productService");
    for _ in 0..2 {
        let _ = old.call_sync(|| Err::<(), _>("503"));
    }
    let events = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&events);
    registry
        .subscribe(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
        .forever();
    let removed = registry.remove("productService").unwrap();
    assert!(removed.ptr_eq(&old) && old.is_detached());
    assert!(registry.find("productService").is_none());
    assert!(registry.breakers().is_empty());
    assert!(registry.remove("productService").is_none());
    // The holder's breaker works on, OPEN as it was, but the registry no longer hears it.
    assert!(old.call_sync(|| Ok::<_, ()>(())).unwrap_err().is_rejected());
    assert_eq!(events.load(std::sync::atomic::Ordering::SeqCst), 0);
    let fresh = registry.breaker("productService");
    assert!(!fresh.ptr_eq(&old));
    assert_eq!(fresh.state(), State::Closed);
    assert_eq!(
        fresh.config().sliding_window_size(),
        2,
        "the registry's config"
    );
    let _ = fresh.call_sync(|| Ok::<_, ()>(()));
    assert!(events.load(std::sync::atomic::Ordering::SeqCst) > 0);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "+productService/2",
            "-productService/2",
            "+productService/2"
        ]
    );
}

#[test]
fn replace_gives_the_name_to_a_new_breaker_and_holders_keep_the_old_one() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("productService", config(2))
        .build();
    let seen = hooks_log(&registry);
    assert!(
        registry.replace("productService", config(5)).is_none(),
        "nothing to replace: nothing changes"
    );
    assert!(registry.find("productService").is_none());
    let old = registry.breaker("productService");
    for _ in 0..2 {
        let _ = old.call_sync(|| Err::<(), _>("503"));
    }
    let replaced = registry.replace("productService", config(5)).unwrap();
    assert!(replaced.ptr_eq(&old) && old.is_detached());
    let new = registry.find("productService").unwrap();
    assert!(!new.ptr_eq(&old) && !new.is_detached());
    assert!(new.ptr_eq(&registry.breaker("productService")));
    assert_eq!(new.config().sliding_window_size(), 5);
    assert_eq!(new.state(), State::Closed);
    // The old handle keeps its state and config.
    assert_eq!(old.state(), State::Open);
    assert_eq!(old.config().sliding_window_size(), 2);
    assert_eq!(registry.breakers().len(), 1);
    // `config_for` answers what a breaker of that name is created with.
    assert_eq!(
        registry.config_for("productService").sliding_window_size(),
        2
    );
    assert_eq!(
        *seen.lock().unwrap(),
        ["+productService/2", "productService/2->productService/5"]
    );
}

/// A hook that belongs to an owner hears changes while the owner lives, and leaves the
/// registry at the first change after the owner is dropped: owners built and dropped again
/// (an admin surface per test, say) leave nothing behind.
#[test]
fn an_owned_hook_leaves_with_its_owner() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let registry = Registry::builder().build();
    let before = breaker_core::testing::registry_hooks(&registry);
    let owner = Arc::new(AtomicUsize::new(0));
    registry.on_registry_event_for(&owner, |added, event| {
        if let breaker_core::RegistryEvent::Added(_) = event {
            added.fetch_add(1, Ordering::SeqCst);
        }
    });
    registry.breaker("owned-a");
    assert_eq!(owner.load(Ordering::SeqCst), 1);
    assert_eq!(breaker_core::testing::registry_hooks(&registry), before + 1);

    drop(owner);
    registry.breaker("owned-b");
    assert_eq!(
        breaker_core::testing::registry_hooks(&registry),
        before,
        "the hook left with its owner"
    );
    // Plain hooks stay.
    registry.on_registry_event(|_| {});
    registry.breaker("owned-c");
    assert_eq!(breaker_core::testing::registry_hooks(&registry), before + 1);
}
