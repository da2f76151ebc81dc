//! Breakers keyed at run time: one per distinct key text, all configured by one name, with
//! idle breakers evicted.
//!
//! # Identity
//!
//! A keyed breaker is (name, key text), the key text being the key's `Display` output: `42u64`
//! and `"42"` are one breaker. Its display name is `name[key]` (`name::keyed_display`), which no
//! other breaker of the registry can have. One group per name holds the breakers, whatever
//! the key's type.
//!
//! # The map
//!
//! A group's breakers sit in a `papaya::HashMap` from key text to slot. The registry's
//! grow-only map (`concurrent_map.rs`) cannot remove an entry and lends `&V` for the life of
//! the map, and keys taken from requests must be removable or they are a memory leak. papaya's
//! reads take no lock (a thread-local epoch guard, no write to memory other readers share), its
//! writes lock nothing shared by readers, and memory of removed entries is reclaimed once no
//! guard can see it. A `RwLock<HashMap>` (sharded or not) would write the lock word every
//! reader of the shard shares on each lookup. The price: a lookup hands out an owned
//! `CircuitBreaker` (an `Arc` clone, one atomic increment and one decrement), since a borrow
//! cannot outlive the guard. Keys are hashed with std's SipHash: they may come from request
//! data, so the hash must not be one an attacker can aim collisions at.
//!
//! A lookup formats the key into a 64-byte buffer on the stack, so looking up a key that
//! has a breaker allocates nothing (a longer key text is formatted on the heap).
//!
//! In front of the map, each thread keeps the slots it looked up last (`keyed/recent.rs`): a
//! key used again on the same thread skips SipHash and the map, and a slot removed from the
//! map is never served from there once its breaker is detached. So that the cache can hold a
//! slot, and mark it used as a map lookup does, the map holds each slot in an `Arc`.
//!
//! # Eviction
//!
//! Each lookup marks its slot as used (a load, and a store only if the mark was clear). A
//! sweep reads and clears the marks: a marked slot was used since the last sweep and counts
//! as seen now; an unmarked one has been idle at least since it was last seen. A sweep
//! removes every breaker idle for `max_idle`; if the group is over `max_breakers`, it also
//! removes the least recently seen until the group is down to 7/8 of it (so that a flood of
//! new keys sweeps once per `max_breakers / 8` inserts, not on every insert). Only a breaker
//! that has no state worth keeping is removed: CLOSED, DISABLED, METRICS_ONLY, or OPEN with
//! its wait over. OPEN during its wait, HALF_OPEN (waiting for its trials) and FORCED_OPEN
//! (set by hand) stay, so eviction never lets calls through that the breaker would reject.
//!
//! Sweeps run on the registry's clock: on an insert that takes the group over its maximum,
//! and from a timer in the registry's scheduler every `max_idle / 4` (at least a second)
//! while the group has breakers. With a `ManualClock`, advancing the clock runs them.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::breaker::core::Identity;
use crate::breaker::CircuitBreaker;
use crate::config::Config;
use crate::env::Env;
use crate::name::{self, Name};
use crate::registry::hooks::{Hooks, RegistryEvent};
use crate::time::scheduler::{TimerKey, TimerTarget};
use crate::time::timestamp::{duration_nanos, Timestamp};

mod recent;
mod slot;

use slot::Slot;

pub use recent::KeyedLease;

/// How many breakers a keyed group keeps, and for how long an unused one stays.
///
/// The defaults bound a group to [`KeyedLimits::DEFAULT_MAX_BREAKERS`] breakers and evict one
/// unused for [`KeyedLimits::DEFAULT_MAX_IDLE`]. A breaker that is OPEN during its wait,
/// HALF_OPEN or FORCED_OPEN is never evicted, so a group can hold more than its maximum while
/// more of its breakers than that are in those states.
///
/// ```
/// use std::time::Duration;
/// use breaker_core::{KeyedLimits, Registry};
///
/// let registry = Registry::builder()
///     .keyed_limits(KeyedLimits::default().max_breakers(10_000))
///     .keyed_limits_for("llm", KeyedLimits::default().max_idle(Duration::from_secs(60)))
///     .build();
/// # let _ = registry;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedLimits {
    max_idle: Option<Duration>,
    max_breakers: Option<usize>,
}

impl KeyedLimits {
    /// 10 minutes.
    pub const DEFAULT_MAX_IDLE: Duration = Duration::from_secs(600);
    /// 1,000 breakers per keyed group.
    pub const DEFAULT_MAX_BREAKERS: usize = 1_000;

    /// No limit: every key keeps its breaker until it is removed by hand (the behaviour
    /// before eviction; memory then grows with the number of distinct keys).
    pub const fn unbounded() -> KeyedLimits {
        KeyedLimits {
            max_idle: None,
            max_breakers: None,
        }
    }

    /// Evicts a breaker no lookup has used for `idle` (it goes between `idle` and 1.5 times
    /// `idle` after its last use).
    pub const fn max_idle(mut self, idle: Duration) -> KeyedLimits {
        self.max_idle = Some(idle);
        self
    }

    /// Never evicts for idleness.
    pub const fn no_max_idle(mut self) -> KeyedLimits {
        self.max_idle = None;
        self
    }

    /// Keeps at most `max` breakers (beyond those that are never evicted): an insert that goes
    /// over it evicts the least recently used down to 7/8 of `max`.
    pub const fn max_breakers(mut self, max: usize) -> KeyedLimits {
        self.max_breakers = Some(max);
        self
    }

    /// No maximum count.
    pub const fn no_max_breakers(mut self) -> KeyedLimits {
        self.max_breakers = None;
        self
    }

    /// The idle time after which a breaker is evicted, if any.
    pub fn idle_limit(&self) -> Option<Duration> {
        self.max_idle
    }

    /// The maximum count, if any.
    pub fn count_limit(&self) -> Option<usize> {
        self.max_breakers
    }

    /// How often the sweep timer runs: a quarter of the idle time, at least a second.
    fn sweep_every(&self) -> Option<Duration> {
        self.max_idle
            .map(|idle| (idle / 4).max(Duration::from_secs(1)))
    }
}

impl Default for KeyedLimits {
    fn default() -> Self {
        KeyedLimits {
            max_idle: Some(KeyedLimits::DEFAULT_MAX_IDLE),
            max_breakers: Some(KeyedLimits::DEFAULT_MAX_BREAKERS),
        }
    }
}

/// What a keyed group needs from its registry to make breakers.
pub(crate) struct GroupEnv {
    pub(crate) env: Arc<Env>,
    pub(crate) hooks: Arc<Hooks>,
    /// The registry's instance configs, for per-key entries (`instances."name[key]"`).
    pub(crate) instances: Arc<HashMap<String, Config>>,
}

/// A registry's keyed groups, by name.
#[derive(Default)]
pub(crate) struct KeyedGroups(Mutex<HashMap<String, Arc<KeyedGroup>>>);

impl KeyedGroups {
    /// The group `name`, made with `config` and `limits` on first use.
    pub(crate) fn group(
        &self,
        name: &str,
        make: impl FnOnce() -> (Config, KeyedLimits, GroupEnv),
    ) -> Keyed {
        let mut groups = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let group = groups.entry(name.to_owned()).or_insert_with(|| {
            // Ids in the order groups are made, in the whole process: never one id for two groups.
            static NEXT_ID: AtomicU64 = AtomicU64::new(0);
            let (config, limits, genv) = make();
            Arc::new_cyclic(|this| KeyedGroup {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                name: name::intern(name),
                config,
                limits,
                genv,
                breakers: papaya::HashMap::new(),
                sweeping: AtomicBool::new(false),
                timer: Mutex::new(None),
                this: this.clone(),
            })
        });
        Keyed {
            group: Arc::clone(group),
        }
    }

    /// Every group.
    pub(crate) fn all(&self) -> Vec<Keyed> {
        let groups = self.0.lock().unwrap_or_else(|e| e.into_inner());
        groups
            .values()
            .map(|group| Keyed {
                group: Arc::clone(group),
            })
            .collect()
    }
}

pub(crate) struct KeyedGroup {
    /// Tells the group apart from every other of the process, in the per-thread cache.
    id: u64,
    name: Name,
    config: Config,
    limits: KeyedLimits,
    genv: GroupEnv,
    breakers: papaya::HashMap<Box<str>, Arc<Slot>>,
    /// A sweep is running (one at a time; another that finds one running skips).
    sweeping: AtomicBool,
    /// The sweep timer waiting in the scheduler, if any.
    timer: Mutex<Option<TimerKey>>,
    this: Weak<KeyedGroup>,
}

impl KeyedGroup {
    fn now(&self) -> Timestamp {
        self.genv.env.clock().now()
    }

    /// `key`'s breaker; `used` marks it as used (a lookup for a call, not an inspection).
    fn get(&self, key: &str, used: bool) -> Option<CircuitBreaker> {
        let map = self.breakers.pin();
        let slot = map.get(key)?;
        if used {
            slot.mark_used();
        }
        Some(slot.breaker.clone())
    }

    /// `key`'s slot, marked used; made (with its breaker) if the key has none.
    fn get_or_create(&self, key: &str) -> Arc<Slot> {
        if let Some(slot) = self.breakers.pin().get(key) {
            slot.mark_used();
            return Arc::clone(slot);
        }
        let now = self.now();
        let display = name::keyed_display(self.name.as_str(), key);
        let config = self
            .genv
            .instances
            .get(&display)
            .unwrap_or(&self.config)
            .clone();
        let identity = Identity {
            name: Name::counted(&display),
            config_name: self.name.clone(),
            key: Some(key.into()),
        };
        let made = Arc::new(Slot {
            breaker: CircuitBreaker::with_identity(identity, config, Arc::clone(&self.genv.env)),
            used: AtomicBool::new(false),
            seen: AtomicU64::new(now.unix_nanos()),
        });
        if let Err(taken) = self
            .breakers
            .pin()
            .try_insert(key.into(), Arc::clone(&made))
        {
            // Another thread made this key's breaker first: use that one.
            taken.current.mark_used();
            return Arc::clone(taken.current);
        }
        self.genv.hooks.run(&RegistryEvent::Added(&made.breaker));
        if self
            .limits
            .max_breakers
            .is_some_and(|max| self.breakers.len() > max)
        {
            self.sweep(now);
        }
        self.arm_timer(now);
        made
    }

    /// Sets the sweep timer, if the group evicts idle breakers and none is set.
    fn arm_timer(&self, now: Timestamp) {
        let Some(every) = self.limits.sweep_every() else {
            return;
        };
        let mut timer = self.timer.lock().unwrap_or_else(|e| e.into_inner());
        if timer.is_some() {
            return;
        }
        let target: Weak<dyn TimerTarget> = self.this.clone();
        let due = now.saturating_add(every);
        *timer = Some(self.genv.env.scheduler().schedule(due, target, 0));
    }

    fn remove(&self, key: &str) -> Option<CircuitBreaker> {
        let removed = self
            .breakers
            .pin()
            .remove(key)
            .map(|slot| slot.breaker.clone())?;
        self.detach(&removed);
        Some(removed)
    }

    fn detach(&self, breaker: &CircuitBreaker) {
        breaker.core.detach();
        self.genv.hooks.run(&RegistryEvent::Removed(breaker));
    }

    /// Evicts what the limits say (see the module docs); returns how many.
    fn sweep(&self, now: Timestamp) -> usize {
        if self.sweeping.swap(true, Ordering::Acquire) {
            return 0;
        }
        let idle_nanos = self.limits.max_idle.map(duration_nanos);
        let now_nanos = now.unix_nanos();
        let mut evicted = Vec::new();
        {
            let map = self.breakers.pin();
            // (last seen, key) of every breaker that may go, for the maximum count.
            let mut candidates: Vec<(u64, &str)> = Vec::new();
            for (key, slot) in map.iter() {
                let seen = if slot.used.swap(false, Ordering::Relaxed) {
                    slot.seen.store(now_nanos, Ordering::Relaxed);
                    now_nanos
                } else {
                    slot.seen.load(Ordering::Relaxed)
                };
                if !slot.may_evict(now) {
                    continue;
                }
                let idle_for = now_nanos.saturating_sub(seen);
                if idle_nanos.is_some_and(|idle| idle_for >= idle) {
                    if let Some(gone) = Self::evict(&map, key) {
                        evicted.push(gone);
                    }
                } else {
                    candidates.push((seen, key));
                }
            }
            if let Some(max) = self.limits.max_breakers {
                let len = map.len();
                if len > max {
                    let excess = len - (max - max / 8);
                    candidates.sort_unstable_by_key(|&(seen, _)| seen);
                    for &(_, key) in candidates.iter().take(excess) {
                        if let Some(gone) = Self::evict(&map, key) {
                            evicted.push(gone);
                        }
                    }
                }
            }
        }
        self.sweeping.store(false, Ordering::Release);
        for breaker in &evicted {
            self.detach(breaker);
        }
        evicted.len()
    }

    /// Removes `key`'s breaker unless a lookup used it since the sweep read its mark.
    fn evict<G: papaya::Guard>(
        map: &papaya::HashMapRef<'_, Box<str>, Arc<Slot>, std::hash::RandomState, G>,
        key: &str,
    ) -> Option<CircuitBreaker> {
        match map.remove_if(key, |_, slot| !slot.used.load(Ordering::Relaxed)) {
            Ok(Some((_, slot))) => Some(slot.breaker.clone()),
            Ok(None) | Err(_) => None,
        }
    }
}

/// The group's one timer is its sweep; its token is unused.
impl TimerTarget for KeyedGroup {
    fn on_timer(&self, _token: u64) {
        let now = self.now();
        *self.timer.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.sweep(now);
        if !self.breakers.is_empty() {
            self.arm_timer(now);
        }
    }
}

/// The key's `Display` text, formatted on the stack when it is short (see the module docs).
struct KeyText {
    buf: [u8; KeyText::INLINE],
    len: usize,
    spilled: Option<String>,
}

impl KeyText {
    const INLINE: usize = 64;

    fn of<K: fmt::Display + ?Sized>(key: &K) -> KeyText {
        let mut text = KeyText {
            buf: [0; KeyText::INLINE],
            len: 0,
            spilled: None,
        };
        // Writing into a `KeyText` never fails; a `Display` impl that fails leaves what it wrote.
        let _ = write!(text, "{key}");
        text
    }

    fn as_str(&self) -> &str {
        match &self.spilled {
            Some(text) => text,
            // Only whole `&str`s are copied in, so the bytes are UTF-8.
            None => std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default(),
        }
    }

    /// The text's bytes: what the per-thread cache compares, with no UTF-8 check.
    fn as_bytes(&self) -> &[u8] {
        match &self.spilled {
            Some(text) => text.as_bytes(),
            None => &self.buf[..self.len],
        }
    }

    /// The text's bytes and then zeros, up to a multiple of 8 bytes when the text is on the
    /// stack (the buffer starts zeroed): the cache's index hashes them a word at a time.
    fn padded_bytes(&self) -> &[u8] {
        match &self.spilled {
            Some(text) => text.as_bytes(),
            None => &self.buf[..self.len.next_multiple_of(8)],
        }
    }
}

impl fmt::Write for KeyText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if let Some(text) = &mut self.spilled {
            text.push_str(s);
        } else if let Some(room) = self.buf.get_mut(self.len..self.len + s.len()) {
            room.copy_from_slice(s.as_bytes());
            self.len += s.len();
        } else {
            let mut text = String::with_capacity(self.len + s.len());
            text.push_str(self.as_str());
            text.push_str(s);
            self.spilled = Some(text);
        }
        Ok(())
    }
}

/// The breakers of one name, one per run-time key: see [`Registry::keyed`](crate::Registry::keyed).
///
/// A key is any `Display` value, borrowed or owned; the breaker is the key's text's (so `42u64`
/// and `"42"` are one breaker). Looking up a key that has a breaker takes no lock and, for a
/// key text of up to 64 bytes, allocates nothing. Each thread remembers the last breakers it
/// looked up (16 entries, whatever the group), so a key used again on the same thread is found
/// without the group's map; the breakers it remembers stay alive until their entries are
/// taken by other keys or the thread ends, but one that left the group is never handed out.
///
/// An evicted or removed breaker goes on working for whoever still holds its handle, on its
/// own: it keeps its state and its listeners, but it is no longer in the registry (its
/// [`is_detached`](CircuitBreaker::is_detached) is true), the registry's listeners and the
/// metrics export no longer hear it, and the next lookup of its key makes a fresh CLOSED
/// breaker. A call that looked its key up in the instant the breaker was evicted runs on the
/// evicted one.
#[derive(Clone)]
pub struct Keyed {
    group: Arc<KeyedGroup>,
}

impl Keyed {
    /// The breaker of `key`, created on first use with the instance config named
    /// `name[key]` if the registry has one, else the config of `name`.
    #[inline]
    pub fn get<K: fmt::Display + ?Sized>(&self, key: &K) -> CircuitBreaker {
        let lease = self.lease(key);
        let breaker = lease.breaker().clone();
        lease.give_back();
        breaker
    }

    /// The breaker of `key`, as [`get`](Keyed::get) finds or makes it, lent for one call:
    /// from this thread's cache if it holds it, else from the map (see `keyed/recent.rs`).
    #[inline]
    pub(crate) fn lease<K: fmt::Display + ?Sized>(&self, key: &K) -> KeyedLease {
        let key = KeyText::of(key);
        let group = &self.group;
        let at = recent::index(group.id, key.padded_bytes());
        let slot = match recent::take(at, group.id, key.as_bytes()) {
            Some(slot) => slot,
            None => group.get_or_create(key.as_str()),
        };
        KeyedLease::new(group.id, at, slot)
    }

    /// The breaker of `key`, if it has one; never creates one, and does not count as a use
    /// (an inspection keeps no breaker from being evicted).
    pub fn find<K: fmt::Display + ?Sized>(&self, key: &K) -> Option<CircuitBreaker> {
        self.group.get(KeyText::of(key).as_str(), false)
    }

    /// Removes `key`'s breaker from the group and returns it (see the type's docs for what its
    /// holders see); publishes [`RegistryEvent::Removed`].
    pub fn remove<K: fmt::Display + ?Sized>(&self, key: &K) -> Option<CircuitBreaker> {
        self.group.remove(KeyText::of(key).as_str())
    }

    /// Evicts what the group's limits allow now (idle breakers, and the least recently used
    /// beyond the maximum), as the sweep timer does; returns how many were evicted.
    pub fn evict_now(&self) -> usize {
        self.group.sweep(self.group.now())
    }

    /// The group's breakers, sorted by key.
    pub fn breakers(&self) -> Vec<CircuitBreaker> {
        let mut all: Vec<CircuitBreaker> = self
            .group
            .breakers
            .pin()
            .values()
            .map(|slot| slot.breaker.clone())
            .collect();
        all.sort_by(|a, b| a.key().cmp(&b.key()));
        all
    }

    /// The name the keys are configured by.
    pub fn name(&self) -> &str {
        self.group.name.as_str()
    }

    /// The config a key's breaker gets unless an instance entry `name[key]` names its own.
    pub fn config(&self) -> &Config {
        &self.group.config
    }

    /// The group's limits.
    pub fn limits(&self) -> KeyedLimits {
        self.group.limits
    }

    /// How many keys have a breaker.
    pub fn len(&self) -> usize {
        self.group.breakers.len()
    }

    /// Whether no key has a breaker.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for Keyed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("name", &self.group.name.as_str())
            .field("breakers", &self.len())
            .field("limits", &self.group.limits)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_text_stays_on_the_stack_up_to_its_size() {
        let short = KeyText::of(&42u64);
        assert_eq!(short.as_str(), "42");
        assert!(short.spilled.is_none());
        let exact = "k".repeat(KeyText::INLINE);
        assert!(KeyText::of(exact.as_str()).spilled.is_none());
        let long = format!("{exact}+{}", 7);
        let text = KeyText::of(&format_args!("{exact}+{}", 7));
        assert_eq!(text.as_str(), long);
        assert!(text.spilled.is_some());
        assert_eq!(KeyText::of("tenant/é").as_str(), "tenant/é");
        // The padded bytes hash alike for a text on the stack and the same text spilled.
        let padded = KeyText::of("tenant-42");
        assert_eq!(padded.as_bytes(), b"tenant-42");
        assert_eq!(padded.padded_bytes(), b"tenant-42\0\0\0\0\0\0\0");
        assert_eq!(text.padded_bytes(), long.as_bytes());
    }
}
