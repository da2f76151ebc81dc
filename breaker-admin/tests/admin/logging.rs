//! A state change through the write operation is logged at INFO with the breaker's name, and a
//! name with control characters cannot forge a log line.

use breaker_admin::{Admin, Authorization};
use breaker_core::{ManualClock, Registry, State};

use crate::support::{client, encode, logs, serve};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changes_are_logged_with_the_name_escaped() {
    logs::capture();

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

    let lines = logs::lines_with(&[
        "breaker-admin: state changed by a write operation",
        r"breaker=evil\nINFO forged line \u{1b}(31m",
    ]);
    assert_eq!(
        lines.len(),
        1,
        "no INFO line for the change, or more than one: {lines:?}"
    );
    let line = &lines[0];
    assert!(line.starts_with("INFO "), "{line}");
    assert!(line.contains("operation=FORCE_OPEN"), "{line}");
    assert!(
        line.contains("from=CLOSED") && line.contains("to=FORCED_OPEN"),
        "{line}"
    );
    // One captured line per event: a forged line would be a newline inside it.
    for line in logs::lines_with(&["forged line"]) {
        assert!(
            !line.chars().any(char::is_control),
            "a log line carries a control character: {line:?}"
        );
    }
}
