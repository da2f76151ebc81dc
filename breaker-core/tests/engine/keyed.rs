//! Keyed breakers: identified by (name, key text) with a display name no other breaker can
//! have, found through their group, configured per key from code and files, and evicted when
//! idle (never while OPEN in its wait, HALF_OPEN or FORCED_OPEN), all on a manual clock; and
//! never a breaker that left its group, from the per-thread cache of recent lookups.

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use breaker_core::{
    CircuitBreaker, Config, Format, Keyed, KeyedLimits, ManualClock, Registry, RegistryEvent, State,
};

fn config(size: u32) -> Config {
    Config::builder()
        .sliding_window_size(size)
        .minimum_number_of_calls(size)
        .wait_duration_in_open_state(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn trip(b: &CircuitBreaker) {
    while b.state() == State::Closed {
        let _ = b.call_sync(|| Err::<(), _>("503"));
    }
}

/// What the registry's hooks heard, as `+name`, `-name` and `name->name`.
fn changes(registry: &Registry) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    registry.on_registry_event(move |event| {
        let line = match event {
            RegistryEvent::Added(b) => format!("+{}", b.name()),
            RegistryEvent::Removed(b) => format!("-{}", b.name()),
            RegistryEvent::Replaced { old, new } => format!("{}->{}", old.name(), new.name()),
            _ => "?".to_owned(),
        };
        log.lock().unwrap().push(line);
    });
    seen
}

fn names(breakers: &[CircuitBreaker]) -> Vec<String> {
    breakers.iter().map(|b| b.name().to_owned()).collect()
}

#[test]
fn a_key_is_its_text_whatever_its_type() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(config(2))
        .build();
    let by_name = registry.keyed("tenantProducts").get("42");
    trip(&by_name);
    // The same tenant reached by its number is the same, OPEN breaker.
    let by_id = registry.keyed("tenantProducts").get(&42u64);
    assert!(by_id.ptr_eq(&by_name));
    assert_eq!(by_id.state(), State::Open);
    assert_eq!(by_id.name(), "tenantProducts[42]");
    assert_eq!(by_id.config_name(), "tenantProducts");
    assert_eq!(by_id.key(), Some("42"));
    assert_eq!(registry.keyed("tenantProducts").len(), 1);
    assert_eq!(names(&registry.breakers()), ["tenantProducts[42]"]);
}

#[test]
fn display_names_never_collide() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let keyed = registry.keyed("t").get("a:b");
    let other = registry.keyed("t:a").get("b");
    assert!(!keyed.ptr_eq(&other));
    assert_ne!(keyed.name(), other.name());
    assert_eq!((keyed.name(), other.name()), ("t[a:b]", "t:a[b]"));
    // A plain name written like a keyed one is a plain breaker with a name of its own.
    let plain = registry.breaker("tenantProducts[42]");
    let keyed = registry.keyed("tenantProducts").get(&42);
    assert!(!plain.ptr_eq(&keyed));
    assert_eq!(plain.name(), "tenantProducts\\[42]");
    assert_eq!(plain.key(), None);
    // Keys that hold the delimiters.
    let tricky = registry.keyed("t").get("x][y\\");
    assert_eq!(tricky.name(), "t[x\\][y\\\\]");
    assert_eq!(tricky.key(), Some("x][y\\"));
    assert_all_distinct(&registry, 5);

    // Every name and key of up to three characters from `a` and the three delimiters, plain
    // and keyed: 84 plain breakers, and 20 names with 84 keys each.
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let texts: Vec<String> = (1..=3)
        .flat_map(|len| {
            (0..4usize.pow(len)).map(move |mut n| {
                (0..len)
                    .map(|_| {
                        let c = ['a', '\\', '[', ']'][n % 4];
                        n /= 4;
                        c
                    })
                    .collect::<String>()
            })
        })
        .collect();
    assert_eq!(texts.len(), 84);
    for name in &texts {
        registry.breaker(name);
    }
    for name in texts.iter().filter(|t| t.chars().count() <= 2) {
        let keyed = registry.keyed(name);
        for key in &texts {
            assert_eq!(keyed.get(key).key(), Some(key.as_str()));
        }
    }
    assert_all_distinct(&registry, 84 + 20 * 84);
}

/// `registry` holds `count` breakers, and no two of them share a display name.
fn assert_all_distinct(registry: &Registry, count: usize) {
    let listed = names(&registry.breakers());
    assert_eq!(listed.len(), count);
    // Sorted, so that equal names are neighbours (the listing is in (name, key) order, where
    // two breakers with one display name need not be).
    let mut sorted = listed;
    sorted.sort();
    let shared: Vec<&String> = sorted
        .windows(2)
        .filter(|pair| pair[0] == pair[1])
        .map(|pair| &pair[0])
        .collect();
    assert!(
        shared.is_empty(),
        "{} display names of more than one breaker, such as {:?}",
        shared.len(),
        &shared[..shared.len().min(4)]
    );
}

#[test]
fn lookups_by_name_answer_for_exactly_one_breaker() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("tenantProducts", config(3))
        .build();
    let keyed = registry.keyed("tenantProducts");
    let acme = keyed.get("acme");
    keyed.get("zeta");
    // `find` is the plain breaker of that name only: there is none.
    assert!(registry.find("tenantProducts").is_none());
    assert!(registry.find("tenantProducts[acme]").is_none());
    assert!(registry.find("tenantProducts:acme").is_none());
    assert!(keyed.find("acme").unwrap().ptr_eq(&acme));
    assert!(keyed.find("nobody").is_none(), "find never creates");
    assert_eq!(keyed.len(), 2);
    // Listed once each, by name and then key, the plain breaker first.
    registry.breaker("tenantProducts");
    registry.breaker("alpha");
    assert_eq!(
        names(&registry.breakers()),
        [
            "alpha",
            "tenantProducts",
            "tenantProducts[acme]",
            "tenantProducts[zeta]"
        ]
    );
    assert_eq!(
        names(&keyed.breakers()),
        ["tenantProducts[acme]", "tenantProducts[zeta]"]
    );
}

#[test]
fn per_key_config_from_code_wins_over_the_name() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .instance("tenantProducts", config(3))
        .keyed_instance("tenantProducts", "acme", config(7))
        .build();
    let keyed = registry.keyed("tenantProducts");
    assert_eq!(keyed.get("acme").config().sliding_window_size(), 7);
    assert_eq!(keyed.get("other").config().sliding_window_size(), 3);
    assert_eq!(
        registry
            .config_for_key("tenantProducts", "acme")
            .sliding_window_size(),
        7
    );
    assert_eq!(
        registry
            .config_for_key("tenantProducts", &42)
            .sliding_window_size(),
        3
    );
    // `config_for` is the plain breaker's: the keyed entry is not it.
    assert_eq!(
        registry.config_for("tenantProducts").sliding_window_size(),
        3
    );
    assert_eq!(
        registry
            .config_for("tenantProducts[acme]")
            .sliding_window_size(),
        7,
        "the entry is named by the display name"
    );
}

fn per_key_config_from(format: Format, text: &str) {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .load_str(format, "app", text)
        .unwrap_or_else(|e| panic!("{e}"))
        .build();
    let keyed = registry.keyed("tenantProducts");
    let acme = keyed.get("acme");
    assert_eq!(acme.config().failure_rate_threshold(), 10.0);
    assert_eq!(
        acme.config().sliding_window_size(),
        20,
        "from the name's entry"
    );
    let dotted = keyed.get("eu.acme");
    assert_eq!(dotted.config().failure_rate_threshold(), 20.0);
    let other = keyed.get("globex");
    assert_eq!(other.config().failure_rate_threshold(), 50.0);
    assert_eq!(other.config().sliding_window_size(), 20);
}

#[test]
fn per_key_config_from_toml() {
    per_key_config_from(
        Format::Toml,
        r#"
[configs.default]
sliding-window-size = 20

[instances."tenantProducts[acme]"]
failure-rate-threshold = 10

[instances."tenantProducts[eu.acme]"]
failure-rate-threshold = 20

[instances.tenantProducts]
failure-rate-threshold = 50
"#,
    );
}

#[test]
fn per_key_config_from_properties() {
    per_key_config_from(
        Format::Properties,
        "resilience4j.circuitbreaker.configs.default.sliding-window-size=20\n\
         resilience4j.circuitbreaker.instances.tenantProducts[acme].failure-rate-threshold=10\n\
         resilience4j.circuitbreaker.instances.tenantProducts[eu.acme].failure-rate-threshold=20\n\
         resilience4j.circuitbreaker.instances.tenantProducts.failure-rate-threshold=50\n",
    );
    // A shared config takes no key.
    let err = Registry::builder()
        .load_str(
            Format::Properties,
            "app.properties",
            "resilience4j.circuitbreaker.configs.default[x].sliding-window-size=20",
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("only an instance takes a key"),
        "{err}"
    );
}

#[test]
fn removing_a_key_detaches_its_breaker_and_the_next_lookup_makes_a_fresh_one() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(config(2))
        .build();
    let seen = changes(&registry);
    let keyed = registry.keyed("llm");
    let old = keyed.get("openai");
    trip(&old);
    let removed = keyed.remove("openai").unwrap();
    assert!(removed.ptr_eq(&old) && old.is_detached());
    assert!(keyed.remove("openai").is_none());
    // The holder's breaker works on: still OPEN, still rejecting.
    assert!(old.call_sync(|| Ok::<_, ()>(())).unwrap_err().is_rejected());
    let fresh = keyed.get("openai");
    assert!(!fresh.ptr_eq(&old) && !fresh.is_detached());
    assert_eq!(fresh.state(), State::Closed);
    assert_eq!(
        *seen.lock().unwrap(),
        ["+llm[openai]", "-llm[openai]", "+llm[openai]"]
    );
}

fn evicting(clock: &ManualClock, limits: KeyedLimits, config: Config) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .default_config(config)
        .keyed_limits(limits)
        .build()
}

#[test]
fn idle_breakers_are_evicted_by_the_sweep_timer() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded().max_idle(Duration::from_secs(60));
    let registry = evicting(&clock, limits, config(2));
    let seen = changes(&registry);
    let keyed = registry.keyed("tenant");
    let idle = keyed.get("idle");
    keyed.get("busy");
    assert_eq!(
        registry.pending_timers(),
        1,
        "one sweep timer for the group"
    );
    for _ in 0..8 {
        clock.advance(Duration::from_secs(10));
        keyed.get("busy");
    }
    // 80 s: `idle` was last used at 0 and is gone; `busy` stays.
    assert!(keyed.find("idle").is_none());
    assert!(idle.is_detached());
    assert!(keyed.find("busy").is_some());
    assert!(seen.lock().unwrap().contains(&"-tenant[idle]".to_owned()));
    // Never before its idle time: a breaker used at 80 s is there at 139 s.
    keyed.get("late");
    clock.advance(Duration::from_secs(59));
    assert!(keyed.find("late").is_some());
    // And gone within one and a half times it.
    clock.advance(Duration::from_secs(31));
    assert!(keyed.find("late").is_none());
    // An empty group sets no timer.
    clock.advance(Duration::from_secs(90));
    assert!(keyed.is_empty());
    assert_eq!(registry.pending_timers(), 0);
}

/// A new key that brings the group to its maximum sweeps nothing (only one past it does), and
/// a sweep asked for by hand evicts what is idle and nothing more while the group is not over
/// its maximum; it says how many it evicted. The group answers with the limits it was given.
#[test]
fn a_group_at_its_maximum_keeps_its_breakers_until_a_sweep_finds_one_idle() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded()
        .max_idle(Duration::from_secs(60))
        .max_breakers(8);
    let registry = evicting(&clock, limits, config(2));
    let keyed = registry.keyed("tenant");
    assert_eq!(keyed.limits(), limits);
    assert!(keyed.is_empty());
    keyed.get("idle");
    assert!(!keyed.is_empty());
    // A sweep notes the uses since the one before: used at 1 s and swept then, it is idle
    // for 60 s from 61 s, and the sweep timer (every 15 s from 0 s) runs next at 75 s. At
    // 70 s it is idle and still there.
    clock.advance(Duration::from_secs(1));
    keyed.get("idle");
    assert_eq!(keyed.evict_now(), 0);
    clock.advance(Duration::from_secs(69));
    assert!(keyed.find("idle").is_some());
    for n in 1..=7 {
        keyed.get(&n);
    }
    assert_eq!(
        keyed.len(),
        8,
        "the eighth key brings the group to its maximum, not past it"
    );
    assert!(
        keyed.find("idle").is_some(),
        "reaching the maximum swept the group"
    );
    assert_eq!(keyed.evict_now(), 1, "only the idle breaker goes");
    assert!(keyed.find("idle").is_none());
    assert_eq!(keyed.len(), 7);
    // At its maximum again with nothing idle, a sweep leaves every breaker.
    keyed.get(&8);
    assert_eq!(
        keyed.evict_now(),
        0,
        "a group at its maximum is not over it"
    );
    assert_eq!(keyed.len(), 8);
}

#[test]
fn open_and_half_open_breakers_are_not_evicted_before_their_wait() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded().max_idle(Duration::from_secs(4));
    let registry = evicting(&clock, limits, config(2));
    let keyed = registry.keyed("tenant");
    let open = keyed.get("open");
    trip(&open);
    let half = keyed.get("half");
    half.transition_to(State::Open).unwrap();
    half.transition_to(State::HalfOpen).unwrap();
    let forced = keyed.get("forced");
    forced.transition_to(State::ForcedOpen).unwrap();
    keyed.get("closed");
    // Idle for 8 s, four times over: only CLOSED went; OPEN waits 10 s.
    clock.advance(Duration::from_secs(8));
    assert!(keyed.find("closed").is_none());
    assert!(keyed.find("open").unwrap().ptr_eq(&open));
    assert_eq!(open.state(), State::Open);
    // Its wait is over: now it may go, since a fresh breaker lets calls through as it would.
    clock.advance(Duration::from_secs(4));
    assert!(keyed.find("open").is_none());
    assert!(open.is_detached());
    // HALF_OPEN waits for its trials and FORCED_OPEN was set by hand: both stay.
    clock.advance(Duration::from_secs(3600));
    assert!(keyed.find("half").unwrap().ptr_eq(&half));
    assert!(keyed.find("forced").unwrap().ptr_eq(&forced));
    assert!(!half.is_detached());
}

/// At the very instant its wait ends an OPEN breaker still rejects calls, so a sweep then
/// keeps it; a nanosecond later it may go.
#[test]
fn an_open_breaker_is_kept_to_the_last_instant_of_its_wait() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded().max_idle(Duration::from_secs(4));
    let registry = evicting(&clock, limits, config(2));
    let keyed = registry.keyed("tenant");
    let open = keyed.get("open");
    open.transition_to(State::Open).unwrap();
    // The sweep timer runs every second, so one runs at the wait's last instant too.
    clock.advance(open.config().wait_duration_in_open_state());
    assert!(open.try_acquire().is_err(), "OPEN's wait is not over yet");
    assert!(keyed.find("open").is_some());
    assert_eq!(keyed.evict_now(), 0);
    clock.advance(Duration::from_nanos(1));
    assert_eq!(keyed.evict_now(), 1);
    assert!(open.is_detached());
}

#[test]
fn a_group_over_its_maximum_evicts_the_least_recently_used() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded().max_breakers(8);
    let registry = evicting(&clock, limits, config(2));
    let keyed = registry.keyed("tenant");
    let open = keyed.get("open");
    trip(&open);
    for i in 0..7 {
        clock.advance(Duration::from_millis(1));
        keyed.get(&i);
    }
    assert_eq!(keyed.len(), 8);
    clock.advance(Duration::from_millis(1));
    keyed.get(&0); // used again: the most recent now
    clock.advance(Duration::from_millis(1));
    keyed.get("ninth");
    // Over 8: down to 7 (8 less an eighth), the least recently used first; OPEN stays.
    assert_eq!(keyed.len(), 7);
    assert!(keyed.find("open").is_some());
    assert!(keyed.find(&0).is_some(), "used most recently");
    assert!(keyed.find("ninth").is_some(), "just made");
    assert!(keyed.find(&1).is_none() && keyed.find(&2).is_none());
    // A flood of new keys stays bounded.
    for i in 0..10_000 {
        keyed.get(&format!("flood-{i}"));
        assert!(keyed.len() <= 8);
    }
    assert!(keyed.find("open").unwrap().ptr_eq(&open));
}

#[test]
fn defaults_bound_every_group_and_can_be_set_per_group() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .keyed_limits_for("small", KeyedLimits::unbounded().max_breakers(2))
        .build();
    assert_eq!(registry.keyed("any").limits(), KeyedLimits::default());
    assert_eq!(
        KeyedLimits::default().count_limit(),
        Some(KeyedLimits::DEFAULT_MAX_BREAKERS)
    );
    assert_eq!(
        KeyedLimits::default().idle_limit(),
        Some(KeyedLimits::DEFAULT_MAX_IDLE)
    );
    let small = registry.keyed("small");
    for i in 0..10 {
        small.get(&i);
    }
    assert!(small.len() <= 2);
    let big = registry.keyed("any");
    for i in 0..1_500 {
        big.get(&i);
    }
    assert!(big.len() <= KeyedLimits::DEFAULT_MAX_BREAKERS);
    assert_eq!(
        registry.evict_idle(),
        0,
        "nothing idle on a clock that stood still"
    );
}

// Each thread remembers the breakers it looked up last (`registry/keyed/recent.rs`), so most
// lookups below are answered from that cache. A cache that served a breaker no longer in its
// group would split the key's state between two breakers: each test checks that every lookup
// gives the breaker the group's map holds.

/// A registry on a clock that stands still, with `config` for every breaker.
fn on_manual_clock(config: Config) -> Registry {
    Registry::builder()
        .clock(ManualClock::new())
        .default_config(config)
        .build()
}

/// `keyed.get(key)` is the breaker the group holds for `key` now.
fn assert_current(keyed: &Keyed, key: &str) -> CircuitBreaker {
    let got = keyed.get(key);
    let held = keyed.find(key).expect("a lookup makes the key's breaker");
    assert!(
        got.ptr_eq(&held),
        "`{key}`: a breaker the group no longer holds"
    );
    assert!(!got.is_detached() && got.key() == Some(key));
    got
}

#[test]
fn a_key_evicted_while_remembered_gets_a_fresh_breaker() {
    let clock = ManualClock::new();
    let limits = KeyedLimits::unbounded().max_idle(Duration::from_secs(60));
    let registry = evicting(&clock, limits, config(2));
    let keyed = registry.keyed("tenant");
    let old = assert_current(&keyed, "a");
    assert!(keyed.get("a").ptr_eq(&old), "remembered");
    let _ = old.call_sync(|| Err::<(), _>("503"));
    // Lookups from the cache count as uses: `busy` stays, `a` (unused) goes.
    let busy = keyed.get("busy");
    for _ in 0..9 {
        clock.advance(Duration::from_secs(10));
        assert!(assert_current(&keyed, "busy").ptr_eq(&busy));
    }
    assert!(old.is_detached() && keyed.find("a").is_none());
    let fresh = assert_current(&keyed, "a");
    assert!(!fresh.ptr_eq(&old));
    assert_eq!(fresh.metrics().failed_calls, 0, "a fresh window");
    // And by the maximum count: keys evicted as least recently used are not served either.
    let small = evicting(&clock, KeyedLimits::unbounded().max_breakers(8), config(2));
    let keyed = small.keyed("tenant");
    let first: Vec<CircuitBreaker> = (0..8).map(|i| keyed.get(&i)).collect();
    clock.advance(Duration::from_millis(1));
    keyed.get("ninth");
    let (evicted, kept): (Vec<usize>, Vec<usize>) = (0..8).partition(|&i| first[i].is_detached());
    assert_eq!(evicted.len(), 2, "down to 7 of 8");
    for &i in &kept {
        assert!(assert_current(&keyed, &i.to_string()).ptr_eq(&first[i]));
    }
    // One evicted key comes back as a fresh breaker (the group is at 8 again, not over it).
    let i = evicted[0];
    assert!(!assert_current(&keyed, &i.to_string()).ptr_eq(&first[i]));
}

#[test]
fn a_key_removed_while_remembered_gets_a_fresh_breaker_on_every_thread() {
    let registry = on_manual_clock(config(2));
    let keyed = registry.keyed("llm");
    let old = assert_current(&keyed, "openai");
    trip(&old);
    let removed = Barrier::new(2);
    let remembered = Barrier::new(2);
    // Nothing asserted between the barriers: a panic there would leave the other thread
    // waiting for ever.
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            // This thread remembers the OPEN breaker before the removal, and looks the key
            // up again after it.
            let before = keyed.get("openai");
            remembered.wait();
            removed.wait();
            (before, keyed.get("openai"))
        });
        remembered.wait();
        let gone = keyed.remove("openai");
        removed.wait();
        let (before, after) = other.join().unwrap();
        assert!(before.ptr_eq(&old) && gone.unwrap().ptr_eq(&old));
        let fresh = assert_current(&keyed, "openai");
        assert!(
            after.ptr_eq(&fresh),
            "the other thread's lookup after the removal"
        );
        assert!(!fresh.ptr_eq(&old) && old.is_detached());
        assert!(after.call_sync(|| Ok::<_, ()>(())).is_ok());
        assert_eq!(old.state(), State::Open);
        assert_eq!(
            fresh.metrics().successful_calls,
            1,
            "one breaker for the key"
        );
    });
}

#[test]
fn alternating_keys_each_get_their_own_breaker() {
    let registry = on_manual_clock(config(100));
    let keyed = registry.keyed("tenant");
    let open = keyed.get("a");
    trip(&open);
    // More keys than the cache has entries, so some share one, in turn.
    let keys: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
    for round in 0..50 {
        assert!(keyed
            .get("a")
            .call_sync(|| Ok::<_, ()>(()))
            .unwrap_err()
            .is_rejected());
        assert!(keyed.get("b").call_sync(|| Ok::<_, ()>(round)).is_ok());
        for key in &keys {
            assert_current(&keyed, key);
        }
        assert_current(&keyed, &keys[round % keys.len()]);
    }
    assert_eq!(
        keyed.get("b").metrics().successful_calls,
        50,
        "every call in one breaker"
    );
    assert_eq!(keyed.len(), 42);
}

#[test]
fn one_key_in_two_registries_is_two_breakers() {
    let one = on_manual_clock(Config::default());
    let two = on_manual_clock(Config::default());
    for _ in 0..3 {
        let a = assert_current(&one.keyed("tenant"), "k");
        let b = assert_current(&two.keyed("tenant"), "k");
        assert!(!a.ptr_eq(&b));
    }
    // A group dropped with its registry answers for no later group of the same name.
    let dropped = on_manual_clock(Config::default());
    let gone = dropped.keyed("tenant").get("k");
    drop(dropped);
    let later = on_manual_clock(Config::default());
    assert!(!assert_current(&later.keyed("tenant"), "k").ptr_eq(&gone));
}

#[test]
fn many_threads_with_many_keys_share_one_breaker_per_key_across_removals() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 20;
    let window = Config::builder()
        .sliding_window_size(1_000)
        .minimum_number_of_calls(1_000)
        .build()
        .unwrap();
    let registry = on_manual_clock(window);
    let keyed = registry.keyed("tenant");
    let keys: Vec<String> = (0..24).map(|i| format!("tenant-{i}")).collect();
    let lookups = keys.len() * 4;
    // The key of thread `t`'s `i`th lookup: each thread takes the keys in its own order.
    let key_of = |t: usize, i: usize| (i * (t + 1) + t) % keys.len();
    let phase = Barrier::new(THREADS + 1);
    // What went wrong, collected rather than asserted where it is seen: a thread that panicked
    // would leave the others waiting at the barrier for ever.
    let wrong = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (keyed, keys, phase, wrong) = (&keyed, &keys, &phase, &wrong);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    phase.wait();
                    for i in 0..lookups {
                        let key = &keys[key_of(t, i)];
                        let got = keyed.get(key);
                        if !keyed.find(key).is_some_and(|held| held.ptr_eq(&got)) {
                            let line = format!("thread {t}, round {round}: stale `{key}`");
                            wrong.lock().unwrap().push(line);
                        }
                        let _ = got.call_sync(|| Ok::<_, ()>(()));
                    }
                    phase.wait();
                }
            });
        }
        // The calls each key's breaker has had since it was made.
        let mut expected = vec![0u32; keys.len()];
        for round in 0..ROUNDS {
            phase.wait();
            phase.wait();
            for t in 0..THREADS {
                for i in 0..lookups {
                    expected[key_of(t, i)] += 1;
                }
            }
            // Every call is in its key's one breaker, those made before the last removals
            // included; then every other key goes, a different half each round.
            for (k, key) in keys.iter().enumerate() {
                let calls = keyed.find(key).map(|b| b.metrics().successful_calls);
                if calls != Some(expected[k]) {
                    let line = format!(
                        "round {round}: `{key}` has {calls:?} calls of {}",
                        expected[k]
                    );
                    wrong.lock().unwrap().push(line);
                }
                if k % 2 == round % 2 {
                    keyed.remove(key);
                    expected[k] = 0;
                }
            }
        }
    });
    let wrong = wrong.into_inner().unwrap();
    assert!(
        wrong.is_empty(),
        "{} wrong, first: {:?}",
        wrong.len(),
        wrong.first()
    );
}
