//! What the service says about itself to the health probes: Spring Boot's readiness state
//! (accepting or refusing traffic) and liveness state (correct or broken), as handles the
//! service keeps and the health endpoint reads.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the service accepts traffic: the `readinessState` health component and the
/// `/actuator/health/readiness` probe (Spring Boot's `ReadinessState`).
///
/// Got from [`Admin::readiness`](crate::Admin::readiness); every clone, and every router of the
/// same admin, share one state. It starts accepting traffic (`UP`);
/// [`refuse_traffic`](Readiness::refuse_traffic) makes it `OUT_OF_SERVICE`, which the probe
/// answers with 503, so a load balancer or Kubernetes stops sending requests while the service
/// drains them during a graceful shutdown (or before it has warmed up).
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn run(
/// #     admin: breaker_admin::Admin,
/// #     listener: tokio::net::TcpListener,
/// #     terminate: impl std::future::Future<Output = ()> + Send + 'static,
/// # ) -> std::io::Result<()> {
/// let readiness = admin.readiness();
/// // `terminate` ends when the service is asked to stop (SIGTERM from Kubernetes).
/// let shutdown = async move {
///     terminate.await;
///     // Out of rotation first: the probe answers 503 while requests still get served ...
///     readiness.refuse_traffic();
///     tokio::time::sleep(Duration::from_secs(10)).await;
///     // ... then stop accepting connections and finish the ones in flight.
/// };
/// axum::serve(listener, admin.router())
///     .with_graceful_shutdown(shutdown)
///     .await
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Readiness {
    refusing: Arc<AtomicBool>,
}

impl Readiness {
    /// From now on the readiness probe answers `OUT_OF_SERVICE` (503): Spring's
    /// `ReadinessState.REFUSING_TRAFFIC`.
    pub fn refuse_traffic(&self) {
        // A lone flag: nothing else is published with it, so no ordering beyond its own.
        self.refusing.store(true, Ordering::Relaxed);
    }

    /// From now on the readiness probe answers `UP` (200): Spring's
    /// `ReadinessState.ACCEPTING_TRAFFIC`, the state a new admin starts in.
    pub fn accept_traffic(&self) {
        self.refusing.store(false, Ordering::Relaxed);
    }

    /// Whether the service accepts traffic (no [`refuse_traffic`](Readiness::refuse_traffic)
    /// since the last [`accept_traffic`](Readiness::accept_traffic)).
    pub fn is_accepting_traffic(&self) -> bool {
        !self.refusing.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Readiness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readiness")
            .field("accepting_traffic", &self.is_accepting_traffic())
            .finish()
    }
}

/// Whether the service works at all: the `livenessState` health component and the
/// `/actuator/health/liveness` probe (Spring Boot's `LivenessState`).
///
/// Got from [`Admin::liveness`](crate::Admin::liveness); every clone, and every router of the
/// same admin, share one state. It starts correct (`UP`); [`mark_broken`](Liveness::mark_broken)
/// makes it `DOWN`, which the probe answers with 503, so Kubernetes restarts the container. Mark
/// it broken only for a state the process cannot leave by itself: a failing dependency is the
/// breakers' and the readiness probe's business, and a restart would not cure it.
#[derive(Clone, Default)]
pub struct Liveness {
    broken: Arc<AtomicBool>,
}

impl Liveness {
    /// From now on the liveness probe answers `DOWN` (503): Spring's `LivenessState.BROKEN`.
    pub fn mark_broken(&self) {
        // A lone flag, as in `Readiness`.
        self.broken.store(true, Ordering::Relaxed);
    }

    /// From now on the liveness probe answers `UP` (200): Spring's `LivenessState.CORRECT`, the
    /// state a new admin starts in.
    pub fn mark_correct(&self) {
        self.broken.store(false, Ordering::Relaxed);
    }

    /// Whether the service is correct (no [`mark_broken`](Liveness::mark_broken) since the last
    /// [`mark_correct`](Liveness::mark_correct)).
    pub fn is_correct(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Liveness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Liveness")
            .field("correct", &self.is_correct())
            .finish()
    }
}
