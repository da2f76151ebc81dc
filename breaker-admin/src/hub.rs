//! What the admin keeps per breaker, and how it stays attached to the registry's set.
//!
//! Each breaker gets a [`Feed`] (its event ring, its state-change ring, cumulative counters and
//! the texts of its recent errors) and one listener of its own
//! ([`CircuitBreaker::subscribe_with_error_texts`]) that writes them, and the stream's ring
//! while it is switched on (`stream.rs`). The listener runs on the thread that publishes the
//! event and never waits: for a success it writes the event ring and nothing else (the calls
//! are counted by the ring's own ticket counter); a failure, a rejection or a state change
//! also adds to a counter, and a failure or ignored error keeps its error's text with a
//! `try_lock` (dropped if the lock is taken at that instant). The maps below are for the HTTP
//! side only; the call path never touches them.
//!
//! Breakers are attached when the admin is built and then through the registry's hook
//! ([`Registry::on_registry_event`]): `Added` attaches, `Removed` drops the breaker's feed and
//! unsubscribes, `Replaced` does both. The registry holds the hub weakly
//! ([`Registry::on_registry_event_for`]) and drops the hook once the admin is gone.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use breaker_core::{
    CircuitBreaker, ErrorText, Event, EventKind, Registry, RegistryEvent, State, Subscription,
    Timestamp,
};

use crate::bulkheads::{self, TrackedBulkhead};
use crate::event::{call_words, nanos_of, EventType, Record, Words};
use crate::retries::{self, TrackedRetry};
use crate::ring::Ring;
use crate::roster::Roster;
use crate::stream::{Counted, StreamHub, StreamLimits};

/// How many state changes (STATE_TRANSITION and RESET events) each breaker keeps, whatever its
/// `event-consumer-buffer-size`: `GET /dashboard/api/breakers/{name}/states`.
pub(crate) const STATE_CHANGES_KEPT: usize = 32;

/// How many error texts each breaker keeps: those of its newest failed or ignored calls, for
/// the `errorMessage` of their events. (Older ERROR and IGNORED_ERROR events in the ring show
/// none.)
pub(crate) const ERROR_TEXTS_KEPT: usize = 16;

/// One breaker's recent events, recent state changes, cumulative counters and recent error
/// texts.
#[derive(Debug)]
pub(crate) struct Feed {
    /// `event-consumer-buffer-size` records; `None` for a size of 0.
    pub(crate) ring: Option<Ring<3>>,
    /// The newest [`STATE_CHANGES_KEPT`] STATE_TRANSITION and RESET records: the first two of
    /// their [`Words`] (a state change has no duration), so a busy breaker's calls never push
    /// its state history out.
    changes: Ring<2>,
    /// Calls (SUCCESS, ERROR, IGNORED_ERROR), counted only without an event ring: with one,
    /// they are the ring's records less the others ([`Feed::calls`]), so that a success, the
    /// event of nearly every call, costs the ring's write and no counter.
    calls: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) slow: AtomicU64,
    pub(crate) rejected: AtomicU64,
    /// Records that are neither calls nor rejections (state changes, resets, rates exceeded).
    others: AtomicU64,
    /// `slow-call-duration-threshold`: a call longer than this is slow.
    slow_nanos: u64,
    texts: ErrorTexts,
}

/// The texts of a breaker's newest failed or ignored calls ([`ERROR_TEXTS_KEPT`]), each under a
/// key that its event's record carries in its words ([`Words`]).
#[derive(Debug, Default)]
struct ErrorTexts {
    /// The key of the last text kept (0: none yet; keys skip 0 when they wrap).
    last: AtomicU32,
    /// Newest last; allocated at the first text.
    kept: Mutex<VecDeque<(u32, ErrorText)>>,
}

impl ErrorTexts {
    /// Keeps `error` and returns its key, or 0 if the texts' lock was taken (by a reader or
    /// another failing call): the call path never waits for it. A text equal to the newest
    /// kept shares its allocation.
    #[cold]
    fn keep(&self, error: &ErrorText) -> u32 {
        let Ok(mut kept) = self.kept.try_lock() else {
            return 0;
        };
        let mut key = self.last.load(Ordering::Relaxed).wrapping_add(1);
        if key == 0 {
            key = 1;
        }
        self.last.store(key, Ordering::Relaxed);
        let text = match kept.back() {
            Some((_, newest)) if newest == error => newest.clone(),
            _ => error.clone(),
        };
        if kept.len() == ERROR_TEXTS_KEPT {
            kept.pop_front();
        }
        kept.push_back((key, text));
        key
    }

    /// The texts kept, for a reader that looks up several keys.
    fn snapshot(&self) -> Vec<(u32, ErrorText)> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().cloned().collect()
    }
}

/// The text of the record whose words are `words`, among `texts`: Resilience4j's
/// `errorMessage` (`type: text`).
fn text_in(texts: &[(u32, ErrorText)], words: &Words) -> Option<String> {
    let key = (words[0] >> 32) as u32;
    if key == 0 {
        return None;
    }
    texts
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, text)| text.to_string())
}

impl Feed {
    fn new(breaker: &CircuitBreaker) -> Feed {
        let config = breaker.config();
        let size = config.event_consumer_buffer_size() as usize;
        Feed {
            ring: (size > 0).then(|| Ring::new(size)),
            changes: Ring::new(STATE_CHANGES_KEPT),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            others: AtomicU64::new(0),
            slow_nanos: u64::try_from(config.slow_call_duration_threshold().as_nanos())
                .unwrap_or(u64::MAX),
            texts: ErrorTexts::default(),
        }
    }

    /// What the breaker's listener does with each event: counts it, keeps its error's text,
    /// writes it to the event ring, to the state-change ring if it is a state change, and to the
    /// stream's ring (as the breaker `id`'s) while a stream client is connected.
    ///
    /// A success that is not slow, nearly every call's event, is the ring's write alone, on a
    /// path of its own; everything else goes through [`hear_all`](Feed::hear_all).
    #[inline(always)]
    fn hear(&self, event: &Event, stream: &StreamHub, id: u64) {
        if let (EventKind::Success { elapsed }, Some(ring)) = (event.kind(), &self.ring) {
            let nanos = nanos_of(elapsed);
            if nanos <= self.slow_nanos {
                let words = call_words(EventType::Success, event.at(), nanos);
                ring.push(words);
                stream.hear(words, id);
                return;
            }
        }
        self.hear_all(event, stream, id);
    }

    /// [`hear`](Feed::hear) for any event.
    #[inline(never)]
    fn hear_all(&self, event: &Event, stream: &StreamHub, id: u64) {
        let Some(mut words) = Record::words_of(event) else {
            return;
        };
        let Some(record) = Record::from_words(words) else {
            return;
        };
        self.count(&record);
        if let Some(error) = event.error() {
            words[0] |= u64::from(self.texts.keep(error)) << 32;
        }
        if let Some(ring) = &self.ring {
            ring.push(words);
        }
        if matches!(record.kind, EventType::StateTransition | EventType::Reset) {
            let [meta, at, _] = words;
            self.changes.push([meta, at]);
        }
        stream.hear(words, id);
    }

    /// The `errorMessage` of the record whose words are `words` (from this feed's ring, or the
    /// stream's): its error's type and text, if the feed still keeps them.
    pub(crate) fn error_text(&self, words: &Words) -> Option<String> {
        if words[0] >> 32 == 0 {
            return None;
        }
        text_in(&self.texts.snapshot(), words)
    }

    /// Counts `record` in what the counters keep (see [`Feed::calls`]); a success is not
    /// counted when the feed has an event ring (unless it is slow).
    fn count(&self, record: &Record) {
        let add = |counter: &AtomicU64| {
            counter.fetch_add(1, Ordering::Relaxed);
        };
        match record.kind {
            EventType::Success | EventType::Error | EventType::IgnoredError => {
                if self.ring.is_none() {
                    add(&self.calls);
                }
                if record.kind == EventType::Error {
                    add(&self.failures);
                }
                if record.kind != EventType::IgnoredError
                    && record
                        .elapsed
                        .is_some_and(|d| d.as_nanos() > u128::from(self.slow_nanos))
                {
                    add(&self.slow);
                }
            }
            EventType::NotPermitted => add(&self.rejected),
            EventType::StateTransition
            | EventType::Reset
            | EventType::ForcedOpen
            | EventType::Disabled
            | EventType::FailureRateExceeded
            | EventType::SlowCallRateExceeded => add(&self.others),
        }
    }

    /// Every event it was given: with an event ring, every record the ring was given (kept or
    /// given up); without one (a buffer size of 0), its calls, rejections and the others.
    fn published(&self) -> u64 {
        match &self.ring {
            Some(ring) => ring.pushed(),
            None => {
                let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
                read(&self.calls) + read(&self.rejected) + read(&self.others)
            }
        }
    }

    /// Calls (SUCCESS, ERROR and IGNORED_ERROR) since the admin followed the breaker: with an
    /// event ring, every record it was given (kept or given up) less the rejections and the
    /// others. (Read while calls are recorded, it may be off by the events being published at
    /// that instant.)
    pub(crate) fn calls(&self) -> u64 {
        match &self.ring {
            Some(ring) => {
                let not_calls =
                    self.rejected.load(Ordering::Relaxed) + self.others.load(Ordering::Relaxed);
                ring.pushed().saturating_sub(not_calls)
            }
            None => self.calls.load(Ordering::Relaxed),
        }
    }

    /// The ring's records, oldest first, each with its `errorMessage` (its error's type and
    /// text) if it has one and the feed still keeps it.
    pub(crate) fn recent_with_errors(&self) -> Vec<(Record, Option<String>)> {
        let Some(ring) = &self.ring else {
            return Vec::new();
        };
        let recent = ring.recent();
        let texts = match recent.iter().any(|(_, words)| words[0] >> 32 != 0) {
            true => self.texts.snapshot(),
            false => Vec::new(),
        };
        recent
            .into_iter()
            .filter_map(|(_, words)| {
                let record = Record::from_words(words)?;
                Some((record, text_in(&texts, &words)))
            })
            .collect()
    }

    /// The ring's records from the newest back, read lazily (`Ring::newest_first`), each with
    /// its words (for [`Feed::error_text`]).
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = (Record, Words)> + '_ {
        self.ring
            .iter()
            .flat_map(Ring::newest_first)
            .filter_map(|words| Record::from_words(words).map(|record| (record, words)))
    }

    /// The state-change ring's records (STATE_TRANSITION and RESET), oldest first, and how many
    /// changes it was given that it no longer holds (overwritten by newer ones, or, rarely, given
    /// up or still being written by a concurrent publisher).
    ///
    /// Sorted by time, ties kept in the ring's order: two threads that change the state one
    /// after the other publish after the breaker's lock is released, so they may reach the ring
    /// in the other order.
    pub(crate) fn state_changes(&self) -> (Vec<Record>, u64) {
        let recent = self.changes.recent();
        let missing = match recent.last() {
            Some(&(ticket, _)) => ticket + 1 - recent.len() as u64,
            None => self.changes.head(),
        };
        let mut records: Vec<Record> = recent
            .into_iter()
            .filter_map(|(_, [meta, at])| Record::from_words([meta, at, 0]))
            .collect();
        records.sort_by_key(|r| r.at);
        (records, missing)
    }
}

/// A breaker the admin follows.
#[derive(Debug)]
pub(crate) struct Tracked {
    pub(crate) id: u64,
    pub(crate) breaker: CircuitBreaker,
    pub(crate) feed: Arc<Feed>,
    /// When the admin started following the breaker (on the breaker's clock), and its state
    /// then: the state before the first change in `feed`'s state-change ring.
    pub(crate) since: Timestamp,
    pub(crate) initial_state: State,
    /// What the feed had published when the stream was last switched off (`stream.rs`).
    stream_mark: AtomicU64,
    _subscription: Subscription,
}

impl Tracked {
    fn new(id: u64, breaker: &CircuitBreaker, stream: &Arc<StreamHub>) -> Tracked {
        let feed = Arc::new(Feed::new(breaker));
        let listener = {
            let (feed, stream) = (Arc::clone(&feed), Arc::clone(stream));
            move |event: &Event| feed.hear(event, &stream, id)
        };
        // Subscribed first, then the state read: a transition made after the read is in the
        // ring. (One published while the admin attaches can be in both, at or just before
        // `since`; the reverse order could lose one, and with it the state for good.)
        let subscription = breaker.subscribe_with_error_texts(listener);
        let (initial_state, since) = (breaker.state(), breaker.clock().now());
        Tracked {
            id,
            breaker: breaker.clone(),
            feed,
            since,
            initial_state,
            stream_mark: AtomicU64::new(0),
            _subscription: subscription,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.breaker.name()
    }
}

impl Counted for Tracked {
    fn published(&self) -> u64 {
        self.feed.published()
    }

    fn mark(&self) -> &AtomicU64 {
        &self.stream_mark
    }
}

#[derive(Default)]
struct Maps {
    by_name: BTreeMap<String, Arc<Tracked>>,
    by_id: HashMap<u64, Arc<Tracked>>,
}

/// The breakers the admin follows, by name and by id, and its bulkheads and retries.
pub(crate) struct Hub {
    pub(crate) registry: Registry,
    pub(crate) stream: Arc<StreamHub>,
    pub(crate) bulkheads: Arc<Roster<TrackedBulkhead>>,
    pub(crate) retries: Arc<Roster<TrackedRetry>>,
    maps: RwLock<Maps>,
    next_id: AtomicU64,
}

impl Hub {
    /// Follows every breaker, bulkhead and retry of `registry`, now and from now on, with a
    /// stream of `stream_capacity` events whose ids start at the registry clock's time in
    /// microseconds since 1970, so an id given before this admin started (by an earlier run of
    /// the service) is below every id it gives, as long as that run streamed fewer than a
    /// million events a second.
    pub(crate) fn attach(
        registry: &Registry,
        stream_capacity: usize,
        stream_limits: StreamLimits,
    ) -> Arc<Hub> {
        let first = registry.clock().now().unix_nanos() / 1_000;
        let hub = Arc::new(Hub {
            registry: registry.clone(),
            stream: Arc::new(StreamHub::new(stream_capacity, first, stream_limits)),
            bulkheads: bulkheads::attach(registry),
            retries: retries::attach(registry),
            maps: RwLock::default(),
            next_id: AtomicU64::new(0),
        });
        // The hook first, then the breakers already there: a breaker added in between is seen
        // twice, and `add` keeps one.
        registry.on_registry_event_for(&hub, |hub, event| match event {
            RegistryEvent::Added(breaker) => hub.add(breaker),
            RegistryEvent::Removed(breaker) => hub.remove(breaker),
            RegistryEvent::Replaced { old, new } => {
                hub.remove(old);
                hub.add(new);
            }
            _ => {}
        });
        for breaker in registry.breakers() {
            hub.add(&breaker);
        }
        hub
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Maps> {
        self.maps.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|e| e.into_inner())
    }

    fn follows(&self, breaker: &CircuitBreaker) -> bool {
        self.read()
            .by_name
            .get(breaker.name())
            .is_some_and(|t| t.breaker.ptr_eq(breaker))
    }

    fn add(&self, breaker: &CircuitBreaker) {
        if self.follows(breaker) {
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Subscribing happens outside the lock; a feed that is not kept unsubscribes on drop.
        let tracked = Arc::new(Tracked::new(id, breaker, &self.stream));
        let displaced = {
            let mut maps = self.write();
            let current = maps.by_name.get(breaker.name());
            // Seen twice, or removed before this hook ran (the registry marks a breaker
            // detached before its `Removed` hooks run, and the lock orders the two).
            if current.is_some_and(|t| t.breaker.ptr_eq(breaker)) || breaker.is_detached() {
                None
            } else {
                let displaced = maps
                    .by_name
                    .insert(breaker.name().to_owned(), Arc::clone(&tracked));
                if let Some(old) = &displaced {
                    maps.by_id.remove(&old.id);
                }
                maps.by_id.insert(id, Arc::clone(&tracked));
                displaced
            }
        };
        // Dropped with no lock held: the last handle of a breaker may go with it.
        drop((displaced, tracked));
    }

    fn remove(&self, breaker: &CircuitBreaker) {
        let removed = {
            let mut maps = self.write();
            let ours = maps
                .by_name
                .get(breaker.name())
                .is_some_and(|t| t.breaker.ptr_eq(breaker));
            let removed = if ours {
                maps.by_name.remove(breaker.name())
            } else {
                None
            };
            if let Some(t) = &removed {
                maps.by_id.remove(&t.id);
            }
            removed
        };
        drop(removed);
    }

    /// The breaker whose display name is `name`.
    pub(crate) fn find(&self, name: &str) -> Option<Arc<Tracked>> {
        self.read().by_name.get(name).cloned()
    }

    /// The breaker of a stream record's id, if the admin still follows it.
    pub(crate) fn by_id(&self, id: u64) -> Option<Arc<Tracked>> {
        self.read().by_id.get(&id).cloned()
    }

    /// Every breaker followed, sorted by name.
    pub(crate) fn all(&self) -> Vec<Arc<Tracked>> {
        self.read().by_name.values().cloned().collect()
    }

    /// How many breakers are followed.
    pub(crate) fn len(&self) -> usize {
        self.read().by_name.len()
    }

    /// Takes a stream slot (`StreamHub::take_slot`), unless every one is taken.
    pub(crate) fn take_stream_slot(&self) -> bool {
        self.stream.take_slot(|| self.all())
    }

    /// Switches the stream's ring off, unless a slot was taken since `departure`
    /// (`StreamHub::switch_off_after`).
    pub(crate) fn switch_stream_off_after(&self, departure: u64) {
        self.stream.switch_off_after(departure, || self.all());
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("breakers", &self.len())
            .field("stream", &self.stream)
            .field("bulkheads", &self.bulkheads)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use breaker_core::Config;

    use super::*;

    fn ms(millis: u64) -> Timestamp {
        Timestamp::from_unix_millis(millis)
    }

    fn change(kind: EventType, at_ms: u64, transition: Option<(State, State)>) -> [u64; 2] {
        let [meta, at, _] = Record {
            kind,
            at: ms(at_ms),
            elapsed: None,
            transition,
        }
        .words();
        [meta, at]
    }

    /// Two publishers can reach the ring in the other order than they changed the state: the
    /// history comes out by time, ties in the ring's order, and counts what the ring lost.
    #[test]
    fn state_changes_come_out_by_time_and_count_what_the_ring_no_longer_holds() {
        let feed = Feed::new(&CircuitBreaker::new("b", Config::default()));
        assert_eq!(feed.state_changes(), (vec![], 0));
        let open = Some((State::Closed, State::Open));
        let half = Some((State::Open, State::HalfOpen));
        feed.changes
            .push(change(EventType::StateTransition, 20, half));
        feed.changes
            .push(change(EventType::StateTransition, 10, open));
        feed.changes.push(change(EventType::Reset, 20, None));
        let (records, dropped) = feed.state_changes();
        let got: Vec<_> = records
            .iter()
            .map(|r| (r.kind, r.at, r.transition, r.elapsed))
            .collect();
        assert_eq!(
            got,
            [
                (EventType::StateTransition, ms(10), open, None),
                (EventType::StateTransition, ms(20), half, None),
                (EventType::Reset, ms(20), None, None),
            ]
        );
        assert_eq!(dropped, 0);
        for i in 0..STATE_CHANGES_KEPT as u64 {
            feed.changes
                .push(change(EventType::StateTransition, 100 + i, open));
        }
        let (records, dropped) = feed.state_changes();
        assert_eq!(records.len(), STATE_CHANGES_KEPT);
        assert_eq!(records[0].at, ms(100));
        assert_eq!(dropped, 3);
    }
}
