//! Text from outside cannot forge a log line: a breaker name (a key taken from a request
//! header, say) or a configuration file's key or value with a newline or an escape sequence
//! reaches logs and error messages escaped.

use crate::support::logs;

use breaker_core::{Config, Format, ManualClock, Registry, State};

const FORGED: &str = "tenant\nINFO breaker_core: forged line\u{1b}[2K\r";

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

#[test]
fn a_name_with_control_characters_is_logged_escaped() {
    logs::capture();
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .default_config(
            Config::builder()
                .sliding_window_size(1)
                .minimum_number_of_calls(1)
                .build()
                .unwrap(),
        )
        .build();
    let b = registry.breaker(FORGED);
    let _ = b.call_sync(|| Err::<(), _>("down"));
    assert_eq!(b.state(), State::Open);
    let rejected = b.try_acquire().unwrap_err();

    // The display name escapes `[` (so no plain name reads as a keyed one), then the log
    // line escapes the control characters.
    let lines = logs::lines_with(&["tenant\\nINFO breaker_core: forged line\\u{1b}\\[2K\\r"]);
    assert!(
        lines.iter().any(|l| l.contains("state changed")),
        "no escaped transition line: {lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains("calls not permitted")));
    for line in logs::lines_with(&["forged line"]) {
        assert!(
            !has_control(&line),
            "a log line carries a control character: {line:?}"
        );
    }
    let message = rejected.to_string();
    assert!(!has_control(&message), "{message:?}");
    assert!(message.contains("tenant\\nINFO"), "{message}");
    // The name itself is kept as given: only its written form is escaped.
    assert_eq!(b.config_name(), FORGED);
    assert_eq!(rejected.breaker_name(), b.name());
}

#[test]
fn a_file_error_quotes_the_file_escaped() {
    let text = "resilience4j.circuitbreaker.instances.a.sliding-window-size=1\u{1b}[31m\n";
    let err = Registry::builder()
        .load_str(Format::Properties, "app\n.properties", text)
        .unwrap_err();
    let message = err.to_string();
    assert!(!has_control(&message), "{message:?}");
    assert!(message.contains("app\\n.properties"), "{message}");
}
