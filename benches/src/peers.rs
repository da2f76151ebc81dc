//! The peer crates: each built for a case (CLOSED on its defaults, CLOSED with thresholds half
//! the calls failing never reach, OPEN for an hour), and tower-resilience's call as a function.
//!
//! The names in the table carry the version measured; they follow the dependencies in
//! benches/Cargo.toml.

use std::hint::black_box;
use std::task::{Context, Poll};
use std::time::Duration;

use failsafe::FailurePolicy;

use crate::harness::block_on;

pub(crate) const RECLOSER: &str = "recloser 1.4";
pub(crate) const FAILSAFE: &str = "failsafe 1.3";
pub(crate) const CBR: &str = "circuitbreaker-rs 0.1";
pub(crate) const TOWER: &str = "tower-resilience 0.14";

/// circuitbreaker-rs wants an error type that implements `Error`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerError;

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("peer error")
    }
}

impl std::error::Error for PeerError {}

pub(crate) type CbrBreaker =
    circuitbreaker_rs::CircuitBreaker<circuitbreaker_rs::DefaultPolicy, PeerError>;

/// One breaker of each peer that has a sync call, built for one case. failsafe's and
/// circuitbreaker-rs's also have an async call.
pub(crate) struct SyncPeers<P> {
    pub(crate) recloser: recloser::Recloser,
    pub(crate) failsafe: failsafe::StateMachine<P, ()>,
    pub(crate) cbr: CbrBreaker,
}

/// Each on its own defaults, CLOSED.
pub(crate) fn closed() -> SyncPeers<impl FailurePolicy> {
    SyncPeers {
        recloser: recloser::Recloser::custom().build(),
        failsafe: failsafe_closed(),
        cbr: CbrBreaker::builder().build(),
    }
}

/// Each CLOSED, with thresholds that half the calls failing never reach.
pub(crate) fn never_opening() -> SyncPeers<impl FailurePolicy> {
    SyncPeers {
        recloser: recloser::Recloser::custom().error_rate(0.99).build(),
        failsafe: failsafe::Config::new()
            .failure_policy(failsafe::failure_policy::success_rate_over_time_window(
                0.01,
                0,
                Duration::from_secs(30),
                failsafe::backoff::constant(Duration::from_secs(3600)),
            ))
            .build(),
        // A failure rate above 1 never trips; nor do 1,000 failures in a row, which never happen.
        cbr: CbrBreaker::builder()
            .failure_threshold(1.01)
            .consecutive_failures(1_000)
            .build(),
    }
}

/// Each OPEN: opened by one failure, and waiting an hour before it lets a call through.
pub(crate) fn open() -> SyncPeers<impl FailurePolicy> {
    let recloser = recloser::Recloser::custom()
        .closed_len(1)
        .open_wait(Duration::from_secs(3600))
        .build();
    let _ = recloser.call(|| Err::<(), _>(()));
    let failsafe = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(
            1,
            failsafe::backoff::constant(Duration::from_secs(3600)),
        ))
        .build();
    {
        use failsafe::CircuitBreaker as _;
        let _ = failsafe.call(|| Err::<(), _>(()));
        assert!(!failsafe.is_call_permitted());
    }
    let cbr = CbrBreaker::builder()
        .consecutive_failures(1)
        .cooldown(Duration::from_secs(3600))
        .build();
    let _ = cbr.call(|| Err::<(), _>(PeerError));
    assert_eq!(cbr.current_state(), circuitbreaker_rs::State::Open);
    SyncPeers {
        recloser,
        failsafe,
        cbr,
    }
}

/// failsafe on its defaults, CLOSED; its breaker has both the sync and the async call.
pub(crate) fn failsafe_closed() -> failsafe::StateMachine<impl FailurePolicy, ()> {
    failsafe::Config::new().build()
}

/// recloser's async breaker on its defaults, CLOSED.
pub(crate) fn async_recloser() -> recloser::AsyncRecloser {
    recloser::AsyncRecloser::from(recloser::Recloser::custom().build())
}

/// The service tower-resilience wraps: answers with the request's result at once.
#[derive(Clone, Copy)]
pub(crate) struct Answer;

impl tower_service::Service<Result<u64, PeerError>> for Answer {
    type Response = u64;
    type Error = PeerError;
    type Future = std::future::Ready<Result<u64, PeerError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), PeerError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Result<u64, PeerError>) -> Self::Future {
        std::future::ready(req.map(black_box))
    }
}

pub(crate) type TowerBreaker = tower_resilience_circuitbreaker::CircuitBreaker<
    Answer,
    tower_resilience_circuitbreaker::DefaultClassifier,
>;

fn tower_breaker(
    config: tower_resilience_circuitbreaker::CircuitBreakerConfigBuilder<
        tower_resilience_circuitbreaker::DefaultClassifier,
    >,
) -> TowerBreaker {
    config.build().unwrap().layer_fn(Answer)
}

/// tower-resilience on its defaults, CLOSED.
pub(crate) fn tower_closed() -> TowerBreaker {
    tower_breaker(tower_resilience_circuitbreaker::CircuitBreakerLayer::builder())
}

/// tower-resilience OPEN: opened by one failure, and waiting an hour.
pub(crate) fn tower_open() -> TowerBreaker {
    let tower = tower_breaker(
        tower_resilience_circuitbreaker::CircuitBreakerLayer::builder()
            .sliding_window_size(1)
            .minimum_number_of_calls(1)
            .wait_duration_in_open(Duration::from_secs(3600)),
    );
    let mut svc = tower.clone();
    let _ = block_on(tower_call(&mut svc, Err(PeerError)));
    assert!(tower.is_open());
    tower
}

/// One call through a tower service: `poll_ready`, then `call`.
pub(crate) async fn tower_call(
    svc: &mut TowerBreaker,
    req: Result<u64, PeerError>,
) -> Result<u64, impl std::fmt::Debug> {
    use tower_service::Service as _;
    std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
    svc.call(req).await
}
