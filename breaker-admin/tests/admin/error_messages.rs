//! `errorMessage` on ERROR and IGNORED_ERROR events, as Resilience4j's
//! `CircuitBreakerEventDTOBuilder` writes `throwable.toString()` there: the error's type name
//! and its `Display` text (`type: text`), escaped by serde_json, cut at 256 bytes of text and
//! marked with `…`; none on any other event, in `/actuator/circuitbreakerevents` and in the
//! stream alike.

use std::fmt;
use std::time::Duration;

use crate::support::{client, get_json, serve, succeed};
use breaker_admin::Admin;
use breaker_core::{Classifier, Config, ErrorText, ManualClock, Registry, State};
use futures_util::StreamExt;
use serde_json::Value;

/// An error whose text holds what JSON must escape: quotes, a backslash, a newline, a control
/// character and a non-ASCII letter.
#[derive(Debug)]
struct Refused(&'static str);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer said \"no\" \\ {}\nline two \u{1b}[31m é", self.0)
    }
}

/// An error type without `Display`.
#[derive(Debug)]
struct Opaque;

fn events(body: &Value) -> &Vec<Value> {
    body["circuitBreakerEvents"]
        .as_array()
        .expect("circuitBreakerEvents")
}

/// A registry whose breakers never open (so every call is recorded), on a manual clock.
fn registry() -> Registry {
    let never_opens = Config::builder()
        .failure_rate_threshold(100.0)
        .sliding_window_size(100)
        .minimum_number_of_calls(100)
        .build()
        .unwrap();
    Registry::builder()
        .clock(ManualClock::new())
        .default_config(never_opens)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_carries_the_errors_type_and_text_escaped() {
    let registry = registry();
    let base = serve(Admin::new(&registry).router()).await;
    let breaker = registry.breaker("peer");
    succeed(&breaker);
    let _ = breaker.call_sync_with(&breaker_core::Described::new(), || {
        Err::<(), _>(Refused("today"))
    });
    let ignore_opaque = Classifier::new().ignore(|_: &Opaque| true);
    let _ = breaker.call_sync_with(&ignore_opaque, || Err::<(), _>(Opaque));
    let _ = breaker.call_sync(|| Err::<(), _>(std::io::Error::other("connection reset")));
    breaker.transition_to(State::Open).unwrap();
    let _ = breaker.call_sync(|| Err::<(), _>(Opaque));

    let (status, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/peer")).await;
    assert_eq!(status, 200);
    let got: Vec<(&str, Option<&str>)> = events(&body)
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["errorMessage"].as_str()))
        .collect();
    let refused = format!("{}: {}", std::any::type_name::<Refused>(), Refused("today"));
    let opaque = std::any::type_name::<Opaque>();
    assert_eq!(
        got,
        [
            ("SUCCESS", None),
            ("ERROR", Some(refused.as_str())),
            // Ignored errors carry theirs too; a type without `Display` is its name alone.
            ("IGNORED_ERROR", Some(opaque)),
            // A type the breaker knows (`io::Error`) is described without being told how.
            ("ERROR", Some("std::io::error::Error: connection reset")),
            ("STATE_TRANSITION", None),
            ("NOT_PERMITTED", None),
        ]
    );
    // `null` where there is no error, as Resilience4j's DTO goes through a Jackson mapper that
    // writes nulls (the list's other fields likewise).
    assert!(events(&body)[0]["errorMessage"].is_null());
    assert!(events(&body)[0]
        .as_object()
        .unwrap()
        .contains_key("errorMessage"));
    // Escaped as JSON: the body parses (above), and the raw text holds no control character.
    let raw = client()
        .get(format!("{base}/actuator/circuitbreakerevents/peer/error"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!raw.chars().any(|c| c.is_control()), "{raw:?}");
    assert!(
        raw.contains(r#"peer said \"no\" \\ today\nline two \u001b[31m é"#),
        "{raw}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_text_is_cut_at_a_character_and_marked() {
    let registry = registry();
    let base = serve(Admin::new(&registry).router()).await;
    let breaker = registry.breaker("verbose");
    let long = "ü".repeat(1000);
    let _ = breaker.call_sync(|| Err::<(), _>(long.clone()));

    let (_, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/verbose")).await;
    let message = events(&body)[0]["errorMessage"].as_str().unwrap();
    let text = message
        .strip_prefix("alloc::string::String: ")
        .unwrap_or_else(|| panic!("{message}"));
    assert!(
        text.len() <= ErrorText::MAX_TEXT_BYTES,
        "{} bytes",
        text.len()
    );
    assert!(text.ends_with('…'), "{text}");
    assert!(text.trim_end_matches('…').chars().all(|c| c == 'ü'));
    assert!(
        text.len() > ErrorText::MAX_TEXT_BYTES - 8,
        "cut no shorter than it must"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_carries_the_same_error_message() {
    let registry = registry();
    let base = serve(Admin::new(&registry).router()).await;
    let breaker = registry.breaker("streamed");
    let response = client()
        .get(format!(
            "{base}/actuator/streamcircuitbreakerevents/streamed"
        ))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.bytes_stream();
    // The stream writes events only while a client is connected: connected now.
    succeed(&breaker);
    let _ = breaker.call_sync(|| Err::<(), _>(std::io::Error::other("reset by \"peer\"")));

    let mut text = String::new();
    let mut datas = Vec::new();
    while datas.len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("events within 10 s")
            .expect("the stream is open")
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            for line in block.lines() {
                if let Some(data) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    datas.push(serde_json::from_str::<Value>(data).unwrap());
                }
            }
        }
    }
    assert_eq!(datas[0]["type"], "SUCCESS");
    assert!(datas[0]["errorMessage"].is_null());
    assert_eq!(datas[1]["type"], "ERROR");
    assert_eq!(
        datas[1]["errorMessage"],
        "std::io::error::Error: reset by \"peer\""
    );
}

/// The feed keeps the newest texts only: an older ERROR event in the ring shows none, and the
/// texts of a breaker that fails the same way share one allocation (not observable here, but
/// the kept ones must still read back right).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_newest_texts_are_kept() {
    let registry = registry();
    let base = serve(Admin::new(&registry).router()).await;
    let breaker = registry.breaker("busy");
    for i in 0..40 {
        let _ = breaker.call_sync(|| Err::<(), _>(format!("failure {i}")));
    }
    let (_, body) = get_json(&format!("{base}/actuator/circuitbreakerevents/busy")).await;
    let messages: Vec<Option<&str>> = events(&body)
        .iter()
        .map(|e| e["errorMessage"].as_str())
        .collect();
    assert_eq!(messages.len(), 40);
    let kept = messages.iter().filter(|m| m.is_some()).count();
    assert_eq!(kept, 16, "{messages:?}");
    for (i, message) in messages.iter().enumerate() {
        match message {
            Some(m) => assert_eq!(*m, format!("alloc::string::String: failure {i}")),
            None => assert!(i < 24, "a newest text is missing at {i}"),
        }
    }
}
