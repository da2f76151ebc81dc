//! Which recorder the export writes to: its own, else the one the `metrics` facade lends the
//! calling thread; how the facade's no-op recorder is told apart; the metrics' descriptions,
//! given once a real recorder is there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use metrics::Recorder;

use crate::export::metrics::names::describe_to;

/// The "no recorder" warning was logged (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// Whether `recorder` is the facade's no-op recorder, the one it lends when none is installed.
/// The facade has no query for this; its no-op recorder is a unit struct, and a recorder that
/// records anything holds its storage or a handle to it (see "The recorder, and installing
/// before it" in the export's docs, `mod.rs`).
pub(super) fn is_noop(recorder: &dyn Recorder) -> bool {
    std::mem::size_of_val(recorder) == 0
}

/// The export's recorder, and whether the descriptions still have to be given to one.
pub(super) struct ExportRecorder {
    /// The recorder of the last `install_with_recorder`, else `None`: the facade's.
    own: RwLock<Option<Arc<dyn Recorder + Send + Sync>>>,
    /// The descriptions went to the no-op recorder: give them again once a recorder is there.
    undescribed: AtomicBool,
}

impl ExportRecorder {
    /// `own`, or the facade's recorder if `None`.
    pub(super) fn new(own: Option<Arc<dyn Recorder + Send + Sync>>) -> ExportRecorder {
        ExportRecorder {
            own: RwLock::new(own),
            undescribed: AtomicBool::new(false),
        }
    }

    /// Writes to `recorder` from now on, whatever the facade's is.
    pub(super) fn set_own(&self, recorder: Arc<dyn Recorder + Send + Sync>) {
        *self.own.write().unwrap_or_else(PoisonError::into_inner) = Some(recorder);
    }

    /// Whether the export has a recorder of its own.
    pub(super) fn has_own(&self) -> bool {
        self.own
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Runs `f` with the export's own recorder, else the one the facade lends this thread.
    pub(super) fn with<T>(&self, f: impl FnOnce(&dyn Recorder) -> T) -> T {
        let own = self
            .own
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match own {
            Some(recorder) => f(&*recorder),
            None => metrics::with_recorder(f),
        }
    }

    /// Describes the metrics to the recorder in place; without one, warns (once per process)
    /// and leaves the descriptions for [`describe_late`](ExportRecorder::describe_late).
    pub(super) fn describe(&self) {
        let found = self.with(|recorder| {
            let found = !is_noop(recorder);
            if found {
                describe_to(recorder);
            }
            found
        });
        self.undescribed.store(!found, Ordering::Relaxed);
        if !found && !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "breaker: MetricsExport::install found no `metrics` recorder: nothing is \
                 exported until one is installed; a global recorder gets every breaker's series \
                 at the export's next refresh (within a second), any recorder at the next \
                 MetricsExport::install"
            );
        }
    }

    /// Gives `recorder` (a real one) the descriptions, if no recorder has had them yet.
    pub(super) fn describe_late(&self, recorder: &dyn Recorder) {
        if self.undescribed.swap(false, Ordering::Relaxed) {
            describe_to(recorder);
        }
    }
}
