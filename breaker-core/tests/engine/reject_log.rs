//! Rejected calls in the log: at most one DEBUG line per breaker per second of its clock, with
//! the count of rejections since the line before; nothing at all when DEBUG is off.

use crate::support::logs;

use std::time::Duration;

use breaker_core::{Config, State};

fn rejection_lines(name: &str) -> Vec<String> {
    logs::lines_with(&["calls not permitted", &format!("breaker={name}")])
}

#[test]
fn an_open_breaker_under_load_logs_once_a_second_with_the_count() {
    logs::capture();
    let (clock, registry) = crate::support::manual_registry(
        Config::builder()
            .sliding_window_size(2)
            .minimum_number_of_calls(2)
            .build()
            .unwrap(),
    );
    let b = registry.breaker("reject-log-test");
    for _ in 0..2 {
        let _ = b.call_sync(|| Err::<(), _>("down"));
    }
    assert_eq!(b.state(), State::Open);
    for _ in 0..1_000 {
        assert!(b.try_acquire().is_err());
    }
    let first = rejection_lines("reject-log-test");
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].ends_with("rejected=1"), "{}", first[0]);
    assert!(first[0].starts_with("DEBUG"), "{}", first[0]);

    clock.advance(Duration::from_millis(999));
    assert!(b.try_acquire().is_err());
    assert_eq!(rejection_lines("reject-log-test").len(), 1);

    clock.advance(Duration::from_millis(1));
    assert!(b.try_acquire().is_err());
    let all = rejection_lines("reject-log-test");
    assert_eq!(all.len(), 2, "{all:?}");
    // 999 counted after the first line, one at 999 ms, and this one.
    assert!(all[1].contains("rejected=1001"), "{}", all[1]);
    assert!(all[1].contains("state=OPEN"), "{}", all[1]);
}
