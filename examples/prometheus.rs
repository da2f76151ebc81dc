//! Prometheus metrics for a few breakers under load, with Resilience4j's metric names.
//!
//! ```sh
//! cargo run --example prometheus              # serves for 20 s on a free port of 127.0.0.1
//! cargo run --example prometheus -- 60 9464   # 60 s on 127.0.0.1:9464
//! curl -s http://127.0.0.1:9464/metrics | grep 'resilience4j_circuitbreaker_state{'
//! ```
//!
//! Three breakers get steady traffic: `productService` (one call in ten fails),
//! `inventoryService` (healthy) and `creditBureau` (down: it opens within a few calls, then
//! probes again every two seconds). The registry carries two tags, `application` and `zone`
//! (Spring's `resilience4j.circuitbreaker.tags.*`), which every series carries. The metrics go
//! through the `metrics` facade to the `metrics-exporter-prometheus` recorder; a tiny HTTP
//! server on std's `TcpListener` answers `GET /metrics` with the recorder's text. Nothing is
//! refreshed by hand: the export re-reads every breaker each second on its own. Everything
//! stops after the given number of seconds.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use breaker::{Config, MetricsExport, Registry};

/// The registry's tags, as in `application.properties`:
/// `resilience4j.circuitbreaker.tags.application=prometheus-demo`.
pub(crate) const TAGS: [(&str, &str); 2] = [("application", "prometheus-demo"), ("zone", "local")];
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The running demo: breakers under load, and `/metrics` on `addr`.
pub(crate) struct Demo {
    pub(crate) addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Demo {
    /// Stops the load and the server, and waits for their threads.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Starts the load and serves `handle`'s metrics on `127.0.0.1:port` (0: any free port).
/// The `metrics` recorder behind `handle` must already be installed.
pub(crate) fn start(handle: PrometheusHandle, port: u16) -> std::io::Result<Demo> {
    let config = |window: u32, wait_s: u64| {
        Config::builder()
            .sliding_window_size(window)
            .minimum_number_of_calls(5)
            .wait_duration_in_open_state(Duration::from_secs(wait_s))
            .automatic_transition_from_open_to_half_open_enabled(true)
            .permitted_number_of_calls_in_half_open_state(2)
            .build()
    };
    let to_io = |e: breaker::ConfigError| std::io::Error::new(std::io::ErrorKind::InvalidInput, e);
    let mut builder = Registry::builder();
    for (name, value) in TAGS {
        builder = builder.tag(name, value).map_err(to_io)?;
    }
    let registry = builder
        .instance("productService", config(20, 10).map_err(to_io)?)
        .instance("inventoryService", config(20, 10).map_err(to_io)?)
        .instance("creditBureau", config(10, 2).map_err(to_io)?)
        .build();
    // The recorder is installed: the export registers every breaker's series with it.
    MetricsExport::install(&registry);

    let listener = TcpListener::bind(("127.0.0.1", port))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();

    // Load: one thread per breaker, about 500 calls a second each.
    for (name, fails_one_in) in [
        ("productService", 10),
        ("inventoryService", 0),
        ("creditBureau", 1),
    ] {
        let breaker = registry.breaker(name);
        let stop = Arc::clone(&stop);
        threads.push(thread::spawn(move || {
            let mut i: u64 = 0;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let _ = breaker.call_sync(|| {
                    if fails_one_in > 0 && i.is_multiple_of(fails_one_in) {
                        Err("downstream failed")
                    } else {
                        Ok(())
                    }
                });
                thread::sleep(Duration::from_millis(2));
            }
        }));
    }

    // The scrape endpoint.
    let server_stop = Arc::clone(&stop);
    threads.push(thread::spawn(move || {
        while !server_stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = serve(stream, &handle);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(5));
                }
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    }));
    Ok(Demo {
        addr,
        stop,
        threads,
    })
}

/// Answers one HTTP/1.1 request: `GET /metrics`, or 404.
fn serve(stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers (bounded: at most 100 lines).
    for _ in 0..100 {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut stream = stream;
    if request_line.starts_with("GET /metrics ") {
        let body = handle.render();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    }
}

#[allow(dead_code)] // when this file is a module of tests/prometheus_scrape.rs
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let port: u16 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(0);
    let handle = PrometheusBuilder::new().install_recorder()?;
    let demo = start(handle, port)?;
    println!(
        "serving http://{}/metrics for {seconds} s (try: curl -s http://{}/metrics | grep state)",
        demo.addr, demo.addr
    );
    thread::sleep(Duration::from_secs(seconds));
    demo.stop();
    Ok(())
}
