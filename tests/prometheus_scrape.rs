//! `examples/prometheus.rs`, scraped over HTTP on 127.0.0.1 as Prometheus would: the failing
//! breaker shows up as `resilience4j_circuitbreaker_state{name="creditBureau",state="open"} 1`,
//! the line the credit-bureau alert reads (docs/CREDIT_BUREAU.md §7), with the call timers
//! beside it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use metrics_exporter_prometheus::PrometheusBuilder;

#[path = "../examples/prometheus.rs"]
mod demo;

/// A plain HTTP/1.1 GET: the status line and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(String, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.lines().next().unwrap_or_default().to_owned();
    Ok((status, body.to_owned()))
}

#[test]
fn scraping_the_example_finds_the_open_breaker() {
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this test binary");
    let demo = demo::start(handle, 0).expect("bind 127.0.0.1:0");
    assert!(demo.addr.ip().is_loopback());

    let open = r#"resilience4j_circuitbreaker_state{name="creditBureau",state="open"} 1"#;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    let mut scrapes = 0;
    while Instant::now() < deadline {
        let (status, body) = get(demo.addr, "/metrics").expect("scrape");
        scrapes += 1;
        assert_eq!(status, "HTTP/1.1 200 OK");
        if body.lines().any(|l| l == open) {
            last = body;
            break;
        }
        last = body;
        thread::sleep(Duration::from_millis(20));
    }
    let (missing, _) = get(demo.addr, "/nothing").expect("second request");
    demo.stop();

    assert!(
        last.lines().any(|l| l == open),
        "no `{open}` after {scrapes} scrapes; last one:\n{last}"
    );
    assert!(
        last.contains(r#"resilience4j_circuitbreaker_state{name="creditBureau",state="closed"} 0"#)
    );
    assert!(last.contains(
        r#"resilience4j_circuitbreaker_state{name="inventoryService",state="closed"} 1"#
    ));
    for series in [
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="failed",name="creditBureau"}"#,
        r#"resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted",name="creditBureau"}"#,
        r#"resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="inventoryService"}"#,
        r#"resilience4j_circuitbreaker_failure_rate{name="creditBureau"}"#,
        r#"resilience4j_circuitbreaker_buffered_calls{kind="failed",name="creditBureau"}"#,
    ] {
        assert!(last.contains(series), "no {series} in:\n{last}");
    }
    assert_eq!(missing, "HTTP/1.1 404 Not Found");
}
