//! What is on its way between the loan service and the bureau, for a run on Tokio's paused
//! clock (tests/game_day.rs); a run in real time marks nothing.
//!
//! On a paused clock, Tokio moves time forward whenever no task can run: to the next timer,
//! at once. A request on its way over the loopback is such a moment: the kernel holds the
//! bytes, no task has them yet, and on a busy machine they can stay there a while. Unheld, the
//! clock would jump over that while, and a call would take as long as the machine made it,
//! not as long as the script says. The wire marks each request from the client's send to the
//! bureau's handler, each answer from the handler's return to the client's last byte, and
//! each hang-up (a call cancelled while the bureau held it) from the client to the bureau's
//! handler being dropped; while anything is marked, a blocking task runs, and a running
//! blocking task holds Tokio's paused clock still (`spawn_blocking` stops the auto-advance)
//! until the last mark is gone. Every duration of the run is then the script's and the
//! configuration's, on any machine. Any other I/O that a run on the paused clock waits on must
//! be marked the same way, or the clock jumps over it: each operation of the fallback's stores
//! (PostgreSQL, Redis, the queue file's fsync) is marked for as long as a [`StoreIo`] guard
//! lives ([`Wire::store_io`]).
//!
//! On the paused clock the stores' own timeouts cannot fire while their I/O is marked (the
//! clock stands still): a store that never answers is cut off by [`GIVE_UP`] instead. Runs
//! that stall a store on purpose run in real time.
//!
//! Requests are told apart by the [`REQUEST_ID`] header the client adds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::loan::lock;

/// The header carrying a request's id from the client to the bureau.
pub(crate) const REQUEST_ID: &str = "x-request-id";

/// How long, in real time, the clock is held for one moment of transit before the wire gives
/// up and lets it move (counted in [`Wire::gave_up`]): a loopback delivery takes microseconds,
/// so only a leg that never ends gets here, and the run must not hang on it.
const GIVE_UP: Duration = Duration::from_secs(10);

/// Where one request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leg {
    /// Sent, not yet in the bureau's handler.
    Request,
    /// In the bureau's handler, which waits on the clock: nothing on its way.
    Held,
    /// Answered by the bureau, not yet read by the client.
    Answer,
    /// Given up by the client while the bureau held it, not yet seen by the bureau.
    HangUp,
    /// Not a request: a store operation's I/O, under way until its [`StoreIo`] is dropped.
    Store,
}

/// The requests between the client and the bureau, and the hold on the clock.
#[derive(Debug, Default)]
pub(crate) struct Wire {
    /// Whether anything is marked: only on Tokio's paused clock.
    holds: bool,
    next_id: AtomicU64,
    legs: Mutex<Legs>,
    /// Signalled when nothing is on its way any more.
    settled: Condvar,
    gave_up: AtomicU64,
}

/// Every request not yet over, and how many of them are on their way.
#[derive(Debug, Default)]
struct Legs {
    by_id: HashMap<u64, Leg>,
    on_the_way: usize,
}

impl Legs {
    /// Moves `id` to `to` (`None`: over), keeping the count of requests on their way.
    fn set(&mut self, id: u64, to: Option<Leg>) -> (usize, usize) {
        let before = self.on_the_way;
        let moving = |leg: Option<Leg>| matches!(leg, Some(leg) if leg != Leg::Held);
        let from = match to {
            Some(leg) => self.by_id.insert(id, leg),
            None => self.by_id.remove(&id),
        };
        self.on_the_way = self.on_the_way + usize::from(moving(to)) - usize::from(moving(from));
        (before, self.on_the_way)
    }
}

impl Wire {
    /// A wire that holds the clock while anything is on its way (`holds`: the run is on Tokio's
    /// paused clock), or one that marks nothing.
    pub(crate) fn new(holds: bool) -> Arc<Wire> {
        Arc::new(Wire {
            holds,
            ..Wire::default()
        })
    }

    /// How many times the wire let the clock move with something still on its way (see
    /// [`GIVE_UP`]): 0 in a run whose durations are all its own.
    pub(crate) fn gave_up(&self) -> u64 {
        self.gave_up.load(Ordering::SeqCst)
    }

    /// The client sends a request: its id for the [`REQUEST_ID`] header, marked on its way
    /// until [`Sent::landed`], or until the bureau holds it.
    pub(crate) fn send(self: &Arc<Wire>) -> Sent {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.move_to(id, |_| Some(Some(Leg::Request)));
        Sent {
            wire: self.clone(),
            id,
            landed: false,
        }
    }

    /// A store operation begins: its I/O is marked on its way until the guard is dropped
    /// (when the operation ends, or its future is dropped).
    pub(crate) fn store_io(self: &Arc<Wire>) -> StoreIo {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.move_to(id, |_| Some(Some(Leg::Store)));
        StoreIo {
            wire: self.clone(),
            id,
        }
    }

    /// The bureau's handler has the request `id` (`None`: no id, a request from elsewhere).
    pub(crate) fn received(self: &Arc<Wire>, id: Option<u64>) {
        self.move_to_from(id, Leg::Request, Some(Leg::Held));
    }

    /// The bureau's handler answers `id`: the answer is on its way, unless the client already
    /// hung up (then the request is over).
    pub(crate) fn answering(self: &Arc<Wire>, id: Option<u64>) {
        if let Some(id) = id {
            self.move_to(id, |leg| match leg {
                Some(Leg::Held) => Some(Some(Leg::Answer)),
                Some(Leg::HangUp) => Some(None),
                _ => None,
            });
        }
    }

    /// The bureau's handler was dropped unanswered: the client's hang-up has arrived.
    pub(crate) fn abandoned(self: &Arc<Wire>, id: Option<u64>) {
        if let Some(id) = id {
            self.move_to(id, |leg| leg.map(|_| None));
        }
    }

    fn move_to_from(self: &Arc<Wire>, id: Option<u64>, from: Leg, to: Option<Leg>) {
        if let Some(id) = id {
            self.move_to(id, |leg| (leg == Some(from)).then_some(to));
        }
    }

    /// Moves `id` where `step` says for where it is (`None`: stays), and starts holding the
    /// clock when something is on its way and nothing was, or lets it go when nothing is.
    fn move_to(self: &Arc<Wire>, id: u64, step: impl FnOnce(Option<Leg>) -> Option<Option<Leg>>) {
        if !self.holds {
            return;
        }
        let mut legs = lock(&self.legs);
        let Some(to) = step(legs.by_id.get(&id).copied()) else {
            return;
        };
        match legs.set(id, to) {
            (0, 1..) => {
                drop(legs);
                self.hold();
            }
            (1.., 0) => self.settled.notify_all(),
            _ => {}
        }
    }

    /// Holds Tokio's paused clock still until nothing is on its way: a blocking task stops the
    /// clock's auto-advance from the moment it is spawned to the moment it ends.
    fn hold(self: &Arc<Wire>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // the runtime is gone, and its clock with it
        };
        let wire = self.clone();
        // Not awaited: the hold is the task's running, not its result.
        drop(runtime.spawn_blocking(move || wire.wait_settled()));
    }

    /// Waits until nothing is on its way, or gives up after [`GIVE_UP`].
    fn wait_settled(&self) {
        let mut legs = lock(&self.legs);
        while legs.on_the_way > 0 {
            let (next, waited) = self
                .settled
                .wait_timeout(legs, GIVE_UP)
                .unwrap_or_else(|p| p.into_inner());
            legs = next;
            if waited.timed_out() && legs.on_the_way > 0 {
                self.gave_up.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// A request the client sent, on its way until [`Sent::landed`]; dropped before that (the
/// call was cancelled), it hangs up on the bureau, if the bureau held it.
#[derive(Debug)]
pub(crate) struct Sent {
    wire: Arc<Wire>,
    id: u64,
    landed: bool,
}

impl Sent {
    /// Its id, for the [`REQUEST_ID`] header.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The client has read the bureau's answer: the request is over.
    pub(crate) fn landed(mut self) {
        self.landed = true;
        self.wire.move_to(self.id, |leg| leg.map(|_| None));
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        if !self.landed {
            self.wire.move_to(self.id, |leg| match leg {
                Some(Leg::Held) => Some(Some(Leg::HangUp)),
                Some(_) => Some(None),
                None => None,
            });
        }
    }
}

/// A store operation under way (see [`Wire::store_io`]): its I/O holds the paused clock still
/// until this is dropped.
#[derive(Debug)]
#[must_use = "the operation is marked only while the guard lives"]
pub(crate) struct StoreIo {
    wire: Arc<Wire>,
    id: u64,
}

impl Drop for StoreIo {
    fn drop(&mut self) {
        self.wire.move_to(self.id, |leg| leg.map(|_| None));
    }
}
