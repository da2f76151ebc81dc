//! Retries in the registry: get-or-create by name, instance configs over the retries'
//! `default`, the hooks on the set of retries, the registry's listeners of every retry's
//! events, and waits between attempts that run on the registry's clock.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_core::retry::{RetryEvent, RetryEventKind};
use breaker_core::{ManualClock, Registry, RegistryEvent, RetryConfig};

use crate::support::spin_until;

fn attempts(max: u32, wait: Duration) -> RetryConfig {
    RetryConfig::builder()
        .max_attempts(max)
        .wait_duration(wait)
        .build()
        .unwrap()
}

/// A registry on a manual clock whose retries' `default` is `config`.
fn manual(config: RetryConfig) -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .retry_default_config(config)
        .build();
    (clock, registry)
}

#[test]
fn same_name_same_retry_from_any_thread() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    assert!(registry.find_retry("db").is_none());
    let db = registry.retry("db");
    assert!(registry.retry("db").ptr_eq(&db));
    assert!(registry.find_retry("db").unwrap().ptr_eq(&db));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for i in 0..500 {
                    let name = format!("r{}", i % 50);
                    let r = registry.retry(&name);
                    assert_eq!(r.name(), name);
                    assert!(registry.retry(&name).ptr_eq(&r));
                }
            });
        }
    });
    let names: Vec<String> = registry
        .retries()
        .iter()
        .map(|r| r.name().to_owned())
        .collect();
    assert_eq!(names.len(), 51, "each name made once");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted by name");
    assert!(registry.breakers().is_empty(), "retries are not breakers");
    assert!(registry.bulkheads().is_empty(), "retries are not bulkheads");
    // A breaker and a bulkhead of the same name are other things.
    registry.breaker("db");
    registry.bulkhead("db");
    assert_eq!(registry.retries().len(), 51);
    assert!(
        format!("{registry:?}").contains("retries: 51"),
        "{registry:?}"
    );
}

#[test]
fn instance_configs_win_over_the_retries_default() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .retry_default_config(attempts(2, Duration::ZERO))
        .retry_instance("db", attempts(5, Duration::from_millis(5)))
        .build();
    let db = registry.retry("db");
    assert_eq!(db.config(), &attempts(5, Duration::from_millis(5)));
    assert_eq!(db.config(), registry.retry_config_for("db"));
    assert_eq!(registry.retry("other").config().max_attempts(), 2);

    // The instance's max-attempts is what the retry runs with.
    let made = AtomicU32::new(0);
    let result = registry.retry("other").call_sync(|| {
        made.fetch_add(1, Ordering::Relaxed);
        Err::<(), _>("down")
    });
    assert!(result.is_err());
    assert_eq!(made.load(Ordering::Relaxed), 2);

    // Without a default in code or file: Resilience4j's defaults.
    let plain = Registry::builder().clock(ManualClock::new()).build();
    assert_eq!(plain.retry("db").config(), &RetryConfig::default());
    assert_eq!(plain.retry("db").config().max_attempts(), 3);
}

#[test]
fn hooks_hear_retries_added_and_removed() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    registry.on_retry_registry_event(move |event| {
        let line = match event {
            RegistryEvent::Added(r) => format!("added {}", r.name()),
            RegistryEvent::Removed(r) => format!("removed {}", r.name()),
            _ => format!("other {event:?}"),
        };
        log.lock().unwrap().push(line);
    });
    let others = Arc::new(Mutex::new(0));
    let count = Arc::clone(&others);
    registry.on_registry_event(move |_| *count.lock().unwrap() += 1);
    let count = Arc::clone(&others);
    registry.on_bulkhead_registry_event(move |_| *count.lock().unwrap() += 1);

    let db = registry.retry("db");
    registry.retry("db");
    registry.retry("cache");
    assert!(registry.remove_retry("missing").is_none());
    let removed = registry.remove_retry("db").unwrap();
    assert!(removed.ptr_eq(&db));
    assert!(registry.remove_retry("db").is_none(), "removed once");
    assert!(registry.find_retry("db").is_none());
    let fresh = registry.retry("db");
    assert!(!fresh.ptr_eq(&db), "the name makes a fresh retry");
    assert_eq!(
        db.call_sync(|| Ok::<_, ()>(7)).unwrap(),
        7,
        "a removed retry still works"
    );

    assert_eq!(
        *heard.lock().unwrap(),
        ["added db", "added cache", "removed db", "added db"]
    );
    assert_eq!(
        *others.lock().unwrap(),
        0,
        "other hooks hear other patterns"
    );
    registry.breaker("db");
    registry.bulkhead("db");
    assert_eq!(*others.lock().unwrap(), 2);
    assert_eq!(heard.lock().unwrap().len(), 4, "retry hooks hear retries");
}

#[test]
fn an_owners_hook_ends_with_its_owner() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let owner = Arc::new(Mutex::new(Vec::<String>::new()));
    registry.on_retry_registry_event_for(&owner, |names, event| {
        if let RegistryEvent::Added(r) = event {
            names.lock().unwrap().push(r.name().to_owned());
        }
    });
    registry.retry("a");
    assert_eq!(*owner.lock().unwrap(), ["a"]);
    let weak = Arc::downgrade(&owner);
    drop(owner);
    registry.retry("b");
    assert!(
        weak.upgrade().is_none(),
        "the registry held the owner weakly"
    );
}

#[test]
fn subscribe_retries_hears_every_retrys_events() {
    let (_, registry) = manual(attempts(2, Duration::ZERO));
    let heard: Arc<Mutex<Vec<(String, RetryEventKind, u32)>>> = Arc::default();
    let log = Arc::clone(&heard);
    let subscription = registry.subscribe_retries(move |e: &RetryEvent| {
        log.lock()
            .unwrap()
            .push((e.retry_name().to_owned(), e.kind(), e.number_of_attempts()));
    });
    let db = registry.retry("db");
    let cache = registry.retry("cache");
    let mut failures = 1;
    let ok = db.call_sync(|| {
        if failures > 0 {
            failures -= 1;
            Err("reset")
        } else {
            Ok(1)
        }
    });
    assert_eq!(ok.unwrap(), 1);
    assert!(cache.call_sync(|| Err::<(), _>("down")).is_err());

    let retry_at_once = RetryEventKind::Retry {
        wait: Duration::ZERO,
    };
    // As Resilience4j counts them: a success after one retry says 1, an error after the last
    // of two attempts says 2.
    let expected = [
        ("db", retry_at_once, 1),
        ("db", RetryEventKind::Success, 1),
        ("cache", retry_at_once, 1),
        ("cache", RetryEventKind::Error, 2),
    ]
    .map(|(n, k, a)| (n.to_owned(), k, a));
    assert_eq!(*heard.lock().unwrap(), expected);

    // A removed retry works on, unheard; a new one of its name is heard.
    let removed = registry.remove_retry("db").unwrap();
    assert!(removed.call_sync(|| Err::<(), _>("down")).is_err());
    assert_eq!(heard.lock().unwrap().len(), 4, "detached");
    assert!(registry
        .retry("db")
        .call_sync(|| Err::<(), _>("down"))
        .is_err());
    assert_eq!(heard.lock().unwrap().len(), 6);

    drop(subscription);
    assert!(cache.call_sync(|| Err::<(), _>("down")).is_err());
    assert_eq!(heard.lock().unwrap().len(), 6, "unsubscribed");
    // The registry's breaker and bulkhead listeners hear no retry.
    let other_events = Arc::new(Mutex::new(0));
    let count = Arc::clone(&other_events);
    let _s = registry.subscribe(move |_| *count.lock().unwrap() += 1);
    let count = Arc::clone(&other_events);
    let _b = registry.subscribe_bulkheads(move |_| *count.lock().unwrap() += 1);
    assert!(cache.call_sync(|| Err::<(), _>("down")).is_err());
    assert_eq!(*other_events.lock().unwrap(), 0);
}

/// A retry's wait between attempts runs on the registry's clock: on a manual clock the next
/// attempt starts when the clock is advanced past the wait, not before, on a thread and in a
/// task. (The wait is a minute, and each end is awaited for at most 30 s of real time: a wait
/// on the system clock fails the test.)
#[test]
fn a_manual_clock_registrys_retry_waits_end_on_advance() {
    let minute = Duration::from_secs(60);
    let (clock, registry) = manual(attempts(2, minute));
    let db = registry.retry("db");
    let made = AtomicU32::new(0);
    std::thread::scope(|s| {
        let caller = s.spawn(|| {
            db.call_sync(|| {
                made.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>("down")
            })
        });
        spin_until(|| registry.pending_timers() == 1);
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "waiting after the first attempt"
        );
        clock.advance(minute - Duration::from_millis(1));
        assert!(!caller.is_finished(), "still waiting");
        assert_eq!(made.load(Ordering::SeqCst), 1);
        clock.advance(Duration::from_millis(1));
        spin_until(|| caller.is_finished());
        assert!(caller.join().unwrap().is_err());
    });
    assert_eq!(made.load(Ordering::SeqCst), 2);
    assert_eq!(registry.pending_timers(), 0);

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = std::time::Instant::now();
        let task_made = Arc::new(AtomicU32::new(0));
        let task_db = db.clone();
        let counter = Arc::clone(&task_made);
        let task = tokio::spawn(async move {
            task_db
                .call(|| {
                    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                    async move {
                        if n < 2 {
                            Err("down")
                        } else {
                            Ok(n)
                        }
                    }
                })
                .await
        });
        while registry.pending_timers() == 0 {
            assert!(start.elapsed() < Duration::from_secs(30), "gave up waiting");
            tokio::task::yield_now().await;
        }
        assert_eq!(task_made.load(Ordering::SeqCst), 1);
        clock.advance(minute / 2);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            task_made.load(Ordering::SeqCst),
            1,
            "half the wait: no attempt"
        );
        clock.advance(minute / 2);
        while !task.is_finished() {
            assert!(start.elapsed() < Duration::from_secs(30), "gave up waiting");
            tokio::task::yield_now().await;
        }
        assert_eq!(
            task.await.unwrap().unwrap(),
            2,
            "the second attempt succeeded"
        );
    });
    assert_eq!(registry.pending_timers(), 0);
    assert_eq!(db.metrics().successful_calls_with_retry_attempt(), 1);
    assert_eq!(db.metrics().failed_calls_with_retry_attempt(), 1);
}
