//! What one retry is made of, and the one decision every way of calling shares: what follows
//! an attempt.
//!
//! [`RetryCore`] is the retry behind every [`Retry`] handle: its name, what it shares with its
//! registry ([`Env`]), its configuration and the wait interval made from it, its counters, its
//! budget, its random sequence and its listeners. Its fields are private to this file.
//! [`RetryCore::after_attempt`] classifies nothing itself: it takes the attempt's outcome and
//! returns the next step, counting and publishing on the way; the async and the blocking call
//! (`call.rs`) only run attempts and waits around it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::classify::{classify_call, Classify, Outcome};
use crate::config::retry::RetryConfig;
use crate::config::WaitInterval;
use crate::env::{uniform_at, Env, SEQUENCE_STEP};
use crate::error::{CallError, MaxRetriesExceeded};
use crate::event::audience::Audience;
use crate::event::listeners::Subscription;
use crate::retry::budget::Budget;
use crate::retry::event::{RetryEvent, RetryEventKind};
use crate::sync::AtomicU64;

/// A retry. Cloning gives another handle to the same retry.
#[derive(Clone)]
pub struct Retry {
    pub(super) core: Arc<RetryCore>,
}

/// One retry's state: its configuration, counters, budget and listeners.
pub(crate) struct RetryCore {
    name: &'static str,
    env: Arc<Env>,
    config: RetryConfig,
    interval: WaitInterval,
    budget: Option<Budget>,
    counters: Counters,
    /// The state of the retry's random sequence (SplitMix64), for randomized waits.
    random: AtomicU64,
    audience: Audience<RetryEvent>,
}

/// The calls by how they ended, Resilience4j's four counters and the budget's refusals, and
/// the calls between retries.
#[derive(Default)]
struct Counters {
    succeeded_without_retry: AtomicU64,
    succeeded_with_retry: AtomicU64,
    failed_without_retry: AtomicU64,
    failed_with_retry: AtomicU64,
    refused_by_budget: AtomicU64,
    /// Calls whose first attempt ended and that have not ended yet (waiting, or in a later
    /// attempt).
    retrying: AtomicU64,
}

/// What follows an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The call ends with the attempt's result.
    End,
    /// The attempts ran out: the call ends with the attempt's result, or, for an `Ok` with
    /// `fail-after-max-attempts`, with [`MaxRetriesExceeded`].
    Exhausted,
    /// Another attempt follows after this wait.
    Retry(Duration),
}

/// A call past its first attempt: counted in `retrying` until dropped (the call ended, or its
/// future was dropped).
pub(super) struct InRetry<'a> {
    core: &'a RetryCore,
    counted: bool,
}

impl<'a> InRetry<'a> {
    pub(super) fn new(core: &'a RetryCore) -> InRetry<'a> {
        InRetry {
            core,
            counted: false,
        }
    }
}

impl Drop for InRetry<'_> {
    fn drop(&mut self) {
        if self.counted {
            self.core.counters.retrying.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl RetryCore {
    /// A retry with no call made yet, on `env`'s clock, scheduler and listeners.
    pub(super) fn new(name: &str, config: RetryConfig, env: Arc<Env>) -> RetryCore {
        let budget = config.budget_enabled().then(|| {
            Budget::new(
                config.budget_ratio(),
                config.budget_window(),
                config.budget_min_retries_per_second(),
                env.clock().now(),
            )
        });
        RetryCore {
            name: crate::name::intern_static(name),
            interval: config.wait_interval(),
            budget,
            counters: Counters::default(),
            random: AtomicU64::new(env.sequence_start(name)),
            audience: Audience::new(Arc::clone(env.retry_listeners())),
            config,
            env,
        }
    }

    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    pub(super) fn config(&self) -> &RetryConfig {
        &self.config
    }

    /// What the retry shares with its registry: the clock, the scheduler, the listeners.
    pub(super) fn env(&self) -> &Env {
        &self.env
    }

    /// Adds a listener of the retry's own.
    pub(super) fn subscribe(
        &self,
        listener: Arc<dyn Fn(&RetryEvent) + Send + Sync>,
    ) -> Subscription {
        self.audience.subscribe(listener)
    }

    /// Whether the retry left the registry that made it.
    #[inline]
    pub(super) fn is_detached(&self) -> bool {
        self.audience.is_detached()
    }

    /// Stops the registry's listeners hearing this retry.
    pub(super) fn detach(&self) {
        self.audience.detach();
    }

    /// The counters, read one by one: `(succeeded without retry, succeeded with retry, failed
    /// without retry, failed with retry, refused by the budget)`.
    pub(super) fn counts(&self) -> [u64; 5] {
        let c = &self.counters;
        [
            &c.succeeded_without_retry,
            &c.succeeded_with_retry,
            &c.failed_without_retry,
            &c.failed_with_retry,
            &c.refused_by_budget,
        ]
        .map(|counter| counter.load(Ordering::Relaxed))
    }

    /// The calls the budget counts: every ended call and every call between its retries.
    pub(super) fn calls(&self) -> u64 {
        let c = &self.counters;
        [
            &c.succeeded_without_retry,
            &c.succeeded_with_retry,
            &c.failed_without_retry,
            &c.failed_with_retry,
            &c.retrying,
        ]
        .iter()
        .map(|counter| counter.load(Ordering::Acquire))
        .fold(0u64, u64::wrapping_add)
    }

    /// How an attempt's result counts for the retry: `classify` (the code's result predicate
    /// and error tests), with `retry-exceptions` and `ignore-exceptions` on top. A failure is
    /// retried; an error that is not a failure (not in `retry-exceptions`, or one the code
    /// does not record) is not retried, and ends the call as ignored, as Resilience4j ends a
    /// call on an exception its predicate does not retry (`IGNORED_ERROR`).
    #[inline(always)]
    pub(super) fn classify<T, E, C>(&self, classify: &C, result: &Result<T, E>) -> Outcome
    where
        E: 'static,
        C: Classify<T, E> + ?Sized,
    {
        let outcome = classify_call(
            self.config.retry_exceptions(),
            self.config.ignore_exceptions(),
            classify,
            result,
        );
        match (result, outcome) {
            (Err(_), Outcome::Success) => Outcome::Ignored,
            _ => outcome,
        }
    }

    /// What follows attempt `attempt` (from 1), which ended as `outcome`: counted, published
    /// and decided here. A first attempt that succeeds costs one `fetch_add` and publishes
    /// nothing (Resilience4j publishes no event for it); every other path is out of line.
    #[inline(always)]
    pub(super) fn after_attempt(
        &self,
        attempt: u32,
        outcome: Outcome,
        in_retry: &mut InRetry<'_>,
    ) -> Step {
        if attempt == 1 && outcome == Outcome::Success {
            self.counters
                .succeeded_without_retry
                .fetch_add(1, Ordering::Relaxed);
            return Step::End;
        }
        self.after_retried_or_failed(attempt, outcome, in_retry)
    }

    #[cold]
    #[inline(never)]
    fn after_retried_or_failed(
        &self,
        attempt: u32,
        outcome: Outcome,
        in_retry: &mut InRetry<'_>,
    ) -> Step {
        let c = &self.counters;
        let count = |counter: &AtomicU64| {
            counter.fetch_add(1, Ordering::AcqRel);
        };
        match outcome {
            Outcome::Success => {
                count(&c.succeeded_with_retry);
                self.publish(RetryEventKind::Success, attempt - 1);
                Step::End
            }
            Outcome::Ignored => {
                // Resilience4j counts an ignored error as a failure without retry, even after
                // retries.
                count(&c.failed_without_retry);
                self.publish(RetryEventKind::IgnoredError, 0);
                Step::End
            }
            Outcome::Failure if attempt >= self.config.max_attempts() => {
                // Resilience4j counts running out as a failure with retry, even when
                // `max-attempts` is 1.
                count(&c.failed_with_retry);
                self.publish(RetryEventKind::Error, attempt);
                Step::Exhausted
            }
            Outcome::Failure => {
                // The call counts for the budget from its first retry decision on.
                if !in_retry.counted {
                    in_retry.counted = true;
                    count(&c.retrying);
                }
                if !self.budget_allows() {
                    count(&c.refused_by_budget);
                    count(if attempt == 1 {
                        &c.failed_without_retry
                    } else {
                        &c.failed_with_retry
                    });
                    self.publish(RetryEventKind::BudgetExhausted, attempt);
                    return Step::End;
                }
                let wait = self.wait(attempt);
                self.publish(RetryEventKind::Retry { wait }, attempt);
                Step::Retry(wait)
            }
        }
    }

    /// Whether the budget (if on) allows one more retry now; counts it if so.
    fn budget_allows(&self) -> bool {
        match &self.budget {
            None => true,
            Some(budget) => budget.try_withdraw(self.env.clock().now(), self.calls()),
        }
    }

    /// The wait after failed attempt `attempt`: the interval's, with the next draw of the
    /// retry's sequence when it is randomized.
    fn wait(&self, attempt: u32) -> Duration {
        let uniform = if self.interval.is_fixed() {
            0.0
        } else {
            let state = self
                .random
                .fetch_add(SEQUENCE_STEP, Ordering::Relaxed)
                .wrapping_add(SEQUENCE_STEP);
            uniform_at(state)
        };
        self.interval.wait(attempt, uniform)
    }

    /// The call's result, once `step` ended it: `Exhausted` on an `Ok` with
    /// `fail-after-max-attempts` is [`MaxRetriesExceeded`].
    #[inline(always)]
    pub(super) fn end<T, E>(
        &self,
        step: Step,
        attempt: u32,
        result: Result<T, E>,
    ) -> Result<T, CallError<E>> {
        match result {
            Ok(_) if step == Step::Exhausted && self.config.fail_after_max_attempts() => Err(
                CallError::RetriesExhausted(MaxRetriesExceeded::new(self.name, attempt)),
            ),
            Ok(value) => Ok(value),
            Err(e) => Err(CallError::Inner(e)),
        }
    }

    /// Publishes to the retry's listeners, then its registry's; builds nothing when nobody
    /// listens.
    #[inline]
    fn publish(&self, kind: RetryEventKind, attempts: u32) {
        if self.audience.wants_call_events() {
            let event = RetryEvent::new(self.name, self.env.clock().now(), kind, attempts);
            self.audience.deliver(&event);
        }
    }
}
