//! Captures `tracing` events in memory, so tests can assert that something was logged.

#![allow(dead_code)] // each test binary uses a different subset

use std::fmt::{self, Write as _};
use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Installs the capturing subscriber as the process-wide default (once per test binary), and
/// has every callsite registered so far ask again whether it is wanted.
///
/// tracing caches each callsite's interest when the callsite first runs. A test of the binary
/// that does not read the log may first run a callsite while no subscriber is installed yet,
/// or while this one is being installed; the cache would then say "never", and a test that
/// reads the log would miss its lines. Rebuilding the cache at every call closes that gap.
pub(crate) fn capture() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        tracing::subscriber::set_global_default(Capture)
            .expect("no other global tracing subscriber in this test binary");
    });
    tracing::callsite::rebuild_interest_cache();
}

/// Every captured line (`LEVEL target: message field=value ...`) that contains all of `parts`.
pub(crate) fn lines_with(parts: &[&str]) -> Vec<String> {
    LINES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .cloned()
        .collect()
}

struct Capture;

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line(format!("{} {}:", meta.level(), meta.target()));
        event.record(&mut line);
        LINES.lock().unwrap_or_else(|e| e.into_inner()).push(line.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
