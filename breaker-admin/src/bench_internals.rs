//! Not part of the API (feature `bench-internals`, for `benches/src/admin_events.rs`): the body
//! of `GET /actuator/circuitbreakerevents` as the endpoint builds it, and as it was built by
//! gathering and sorting every stored event, so the bench times both on one store in one run
//! and checks that they answer the same bytes; and the selection alone, each way, without the
//! JSON both build alike.

use crate::event::Record;
use crate::json::{EventDto, EventsResponse};
use crate::newest::newest;
use crate::routes::{all_events_json, MAX_ALL_EVENTS};
use crate::Admin;

/// The endpoint's body: the newest events picked by the heap over the rings (`newest.rs`).
pub fn circuit_breaker_events(admin: &Admin) -> Vec<u8> {
    all_events_json(&admin.hub)
}

/// The same body the way Resilience4j's endpoint works, then cut to the cap: every breaker's
/// events copied out, all of them sorted by time (stably: breakers in name order, each oldest
/// first), the newest kept.
pub fn circuit_breaker_events_by_full_sort(admin: &Admin) -> Vec<u8> {
    by_full_sort(admin, |kept| {
        let circuit_breaker_events: Vec<EventDto<'_>> = kept
            .iter()
            .map(|(name, (r, e))| EventDto::new(name, r, e.as_deref()))
            .collect();
        serde_json::to_vec(&EventsResponse {
            circuit_breaker_events,
        })
        .unwrap_or_default()
    })
}

/// Every breaker's events with their error texts, copied out and sorted by time (stably), the
/// newest [`MAX_ALL_EVENTS`] handed to `then` (each with its breaker's name), oldest first.
fn by_full_sort<R>(
    admin: &Admin,
    then: impl FnOnce(&[(&str, &(Record, Option<String>))]) -> R,
) -> R {
    let all = admin.hub.all();
    let per_breaker: Vec<_> = all
        .iter()
        .map(|t| (t.name(), t.feed.recent_with_errors()))
        .collect();
    let mut list: Vec<_> = per_breaker
        .iter()
        .flat_map(|(name, records)| records.iter().map(move |event| (*name, event)))
        .collect();
    list.sort_by_key(|(_, (r, _))| r.at);
    let skip = list.len().saturating_sub(MAX_ALL_EVENTS);
    then(&list[skip..])
}

/// The selection alone, as the endpoint makes it: how many events it picked, and the newest
/// one's time (so that nothing is left unused).
pub fn select_by_heap(admin: &Admin) -> (usize, u64) {
    let all = admin.hub.all();
    let picked = newest(
        all.iter().map(|t| t.feed.newest_first()),
        MAX_ALL_EVENTS,
        |(r, _)| r.at,
    );
    let newest = picked.last().map_or(0, |(_, (r, _))| r.at.unix_nanos());
    (picked.len(), newest)
}

/// The selection alone, by the full sort: as [`select_by_heap`].
pub fn select_by_full_sort(admin: &Admin) -> (usize, u64) {
    by_full_sort(admin, |kept| {
        let newest = kept.last().map_or(0, |(_, (r, _))| r.at.unix_nanos());
        (kept.len(), newest)
    })
}
