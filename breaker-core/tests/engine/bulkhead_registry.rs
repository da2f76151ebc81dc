//! Bulkheads in the registry: get-or-create by name, instance configs over the bulkheads'
//! `default`, the hooks on the set of bulkheads, the registry's listeners of every bulkhead's
//! events, and waits that run on the registry's clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_core::{
    BulkheadConfig, BulkheadEvent, BulkheadEventKind, ManualClock, Registry, RegistryEvent,
};

use crate::support::spin_until;

fn limit(calls: u32, wait: Duration) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(calls)
        .max_wait_duration(wait)
        .build()
        .unwrap()
}

/// A registry on a manual clock whose bulkheads' `default` is `config`.
fn manual(config: BulkheadConfig) -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .bulkhead_default_config(config)
        .build();
    (clock, registry)
}

#[test]
fn same_name_same_bulkhead_from_any_thread() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    assert!(registry.find_bulkhead("db").is_none());
    let db = registry.bulkhead("db");
    assert!(registry.bulkhead("db").ptr_eq(&db));
    assert!(registry.find_bulkhead("db").unwrap().ptr_eq(&db));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for i in 0..500 {
                    let name = format!("b{}", i % 50);
                    let b = registry.bulkhead(&name);
                    assert_eq!(b.name(), name);
                    assert!(registry.bulkhead(&name).ptr_eq(&b));
                }
            });
        }
    });
    let names: Vec<String> = registry
        .bulkheads()
        .iter()
        .map(|b| b.name().to_owned())
        .collect();
    assert_eq!(names.len(), 51, "each name made once");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted by name");
    assert_eq!(names[0], "b0");
    assert!(registry.breakers().is_empty(), "bulkheads are not breakers");
    // A breaker of the same name is another thing.
    registry.breaker("db");
    assert_eq!(registry.bulkheads().len(), 51);
}

#[test]
fn instance_configs_win_over_the_bulkheads_default() {
    let (_, registry) = manual(limit(3, Duration::ZERO));
    let registry_with_instance = Registry::builder()
        .clock(ManualClock::new())
        .bulkhead_default_config(limit(3, Duration::ZERO))
        .bulkhead_instance("db", limit(7, Duration::from_millis(5)))
        .build();
    let db = registry_with_instance.bulkhead("db");
    assert_eq!(db.config(), limit(7, Duration::from_millis(5)));
    assert_eq!(db.metrics().max_allowed_concurrent_calls(), 7);
    assert_eq!(
        registry_with_instance
            .bulkhead("other")
            .metrics()
            .max_allowed_concurrent_calls(),
        3
    );
    assert_eq!(registry.bulkhead("db").config(), limit(3, Duration::ZERO));
    // Without a default in code or file: Resilience4j's defaults.
    let plain = Registry::builder().clock(ManualClock::new()).build();
    assert_eq!(plain.bulkhead("db").config(), BulkheadConfig::default());
    assert_eq!(
        plain.bulkhead("db").metrics().available_concurrent_calls(),
        25
    );
}

/// A name's limit is the registry's: its bulkhead refuses the call past it, however many
/// handles the callers hold.
#[test]
fn every_handle_of_a_name_shares_its_places() {
    let (_, registry) = manual(limit(2, Duration::ZERO));
    let first = registry.bulkhead("db").try_acquire_owned().unwrap();
    let second = registry.bulkhead("db").try_acquire_owned().unwrap();
    let refused = registry.bulkhead("db").try_acquire_owned().unwrap_err();
    assert_eq!(refused.bulkhead_name(), "db");
    assert!(registry.bulkhead("other").try_acquire().is_ok());
    drop((first, second));
    assert_eq!(
        registry
            .bulkhead("db")
            .metrics()
            .available_concurrent_calls(),
        2
    );
}

#[test]
fn hooks_hear_bulkheads_added_and_removed() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    registry.on_bulkhead_registry_event(move |event| {
        let line = match event {
            RegistryEvent::Added(b) => format!("added {}", b.name()),
            RegistryEvent::Removed(b) => format!("removed {}", b.name()),
            _ => format!("other {event:?}"),
        };
        log.lock().unwrap().push(line);
    });
    let breaker_hooks = Arc::new(Mutex::new(0));
    let count = Arc::clone(&breaker_hooks);
    registry.on_registry_event(move |_| *count.lock().unwrap() += 1);

    let db = registry.bulkhead("db");
    registry.bulkhead("db");
    registry.bulkhead("cache");
    assert!(registry.remove_bulkhead("missing").is_none());
    let removed = registry.remove_bulkhead("db").unwrap();
    assert!(removed.ptr_eq(&db));
    assert!(registry.remove_bulkhead("db").is_none(), "removed once");
    assert!(registry.find_bulkhead("db").is_none());
    let fresh = registry.bulkhead("db");
    assert!(!fresh.ptr_eq(&db), "the name makes a fresh bulkhead");
    assert!(db.try_acquire().is_ok(), "a removed bulkhead still works");

    assert_eq!(
        *heard.lock().unwrap(),
        ["added db", "added cache", "removed db", "added db"]
    );
    assert_eq!(
        *breaker_hooks.lock().unwrap(),
        0,
        "breaker hooks hear breakers"
    );
    registry.breaker("db");
    assert_eq!(*breaker_hooks.lock().unwrap(), 1);
    assert_eq!(
        heard.lock().unwrap().len(),
        4,
        "bulkhead hooks hear bulkheads"
    );
}

#[test]
fn an_owners_hook_ends_with_its_owner() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let owner = Arc::new(Mutex::new(Vec::<String>::new()));
    registry.on_bulkhead_registry_event_for(&owner, |names, event| {
        if let RegistryEvent::Added(b) = event {
            names.lock().unwrap().push(b.name().to_owned());
        }
    });
    registry.bulkhead("a");
    assert_eq!(*owner.lock().unwrap(), ["a"]);
    let weak = Arc::downgrade(&owner);
    drop(owner);
    registry.bulkhead("b");
    assert!(
        weak.upgrade().is_none(),
        "the registry held the owner weakly"
    );
}

#[test]
fn subscribe_bulkheads_hears_every_bulkheads_events() {
    let (_, registry) = manual(limit(1, Duration::ZERO));
    let heard: Arc<Mutex<Vec<(String, BulkheadEventKind)>>> = Arc::default();
    let log = Arc::clone(&heard);
    let subscription = registry.subscribe_bulkheads(move |e: &BulkheadEvent| {
        log.lock()
            .unwrap()
            .push((e.bulkhead_name().to_owned(), e.kind()));
    });
    let db = registry.bulkhead("db");
    let cache = registry.bulkhead("cache");
    let permit = db.try_acquire().unwrap();
    assert!(db.try_acquire().is_err());
    drop(permit);
    assert!(cache.call_sync(|| Ok::<_, ()>(())).is_ok());

    use BulkheadEventKind::{CallFinished, CallPermitted, CallRejected};
    let expected = [
        ("db", CallPermitted),
        ("db", CallRejected),
        ("db", CallFinished),
        ("cache", CallPermitted),
        ("cache", CallFinished),
    ]
    .map(|(n, k)| (n.to_owned(), k));
    assert_eq!(*heard.lock().unwrap(), expected);

    // A removed bulkhead works on, unheard; a new one of its name is heard.
    let removed = registry.remove_bulkhead("db").unwrap();
    drop(removed.try_acquire().unwrap());
    assert_eq!(heard.lock().unwrap().len(), 5, "detached");
    drop(registry.bulkhead("db").try_acquire().unwrap());
    assert_eq!(heard.lock().unwrap().len(), 7);

    drop(subscription);
    drop(cache.try_acquire().unwrap());
    assert_eq!(heard.lock().unwrap().len(), 7, "unsubscribed");
    // The registry's breaker listeners hear no bulkhead.
    let breaker_events = Arc::new(Mutex::new(0));
    let count = Arc::clone(&breaker_events);
    let _s = registry.subscribe(move |_| *count.lock().unwrap() += 1);
    drop(cache.try_acquire().unwrap());
    assert_eq!(*breaker_events.lock().unwrap(), 0);
}

/// A waiting call's `max-wait-duration` runs on the registry's clock: on a manual clock it
/// ends when the clock is advanced past it, not before, on a thread and in a task. (The wait
/// is a minute, and each end is awaited for at most 30 s of real time: a wait on the system
/// clock fails the test.)
#[test]
fn a_manual_clock_registrys_bulkhead_wait_ends_on_advance() {
    let minute = Duration::from_secs(60);
    let (clock, registry) = manual(limit(1, minute));
    let db = registry.bulkhead("db");
    let held = db.try_acquire().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| db.acquire_blocking().map(drop));
        spin_until(|| db.metrics().waiting_calls() == 1);
        clock.advance(minute - Duration::from_millis(1));
        assert_eq!(db.metrics().waiting_calls(), 1, "still waiting");
        assert!(!waiter.is_finished());
        clock.advance(Duration::from_millis(1));
        spin_until(|| waiter.is_finished());
        let refused = waiter.join().unwrap().unwrap_err();
        assert_eq!(refused.bulkhead_name(), "db");
    });
    assert_eq!(db.metrics().waiting_calls(), 0);

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = std::time::Instant::now();
        let task_db = db.clone();
        let task = tokio::spawn(async move { task_db.acquire_owned().await.map(drop) });
        while db.metrics().waiting_calls() == 0 {
            tokio::task::yield_now().await;
        }
        clock.advance(minute);
        while !task.is_finished() {
            assert!(start.elapsed() < Duration::from_secs(30), "gave up waiting");
            tokio::task::yield_now().await;
        }
        assert!(task.await.unwrap().is_err(), "refused at the wait's end");

        // A place given back within the wait goes to the waiter.
        let task_db = db.clone();
        let task = tokio::spawn(async move { task_db.acquire_owned().await.map(drop) });
        while db.metrics().waiting_calls() == 0 {
            tokio::task::yield_now().await;
        }
        clock.advance(minute / 2);
        drop(held);
        assert!(task.await.unwrap().is_ok(), "served before its wait ended");
    });
}
