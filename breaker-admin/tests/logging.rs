//! A state change through the write operation is logged at INFO with the breaker's name, and a
//! name with control characters cannot forge a log line. (One test in this binary: it installs
//! the global subscriber, since the server's threads log.)

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use breaker_admin::{Admin, Authorization};
use breaker_core::{ManualClock, Registry, State};
use support::{client, encode, serve};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_are_logged_with_the_name_escaped() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .unwrap();

    let name = "evil\nINFO forged line \u{1b}(31m";
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let breaker = registry.breaker(name);
    let admin = Admin::new(&registry).write_operations(|_: &_| Authorization::Allow);
    let base = serve(admin.router()).await;
    let response = client()
        .post(format!(
            "{base}/actuator/circuitbreakers/{}",
            encode(breaker.name())
        ))
        .header("content-type", "application/json")
        .body(r#"{"updateState":"FORCE_OPEN"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(breaker.state(), State::ForcedOpen);

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("breaker-admin: state changed by a write operation"))
        .unwrap_or_else(|| panic!("no INFO line for the change in {log:?}"));
    assert!(line.contains(" INFO "), "{line}");
    assert!(
        line.contains(r"breaker=evil\nINFO forged line \u{1b}(31m"),
        "{line}"
    );
    assert!(line.contains("operation=\"FORCE_OPEN\""), "{line}");
    assert!(
        line.contains("from=CLOSED") && line.contains("to=FORCED_OPEN"),
        "{line}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "an escape character reached the log"
    );
    assert!(
        !log.lines().any(|l| l.starts_with("INFO forged")),
        "a forged line: {log:?}"
    );
}
