//! The credit-bureau simulator: a real HTTP/1.1 server on 127.0.0.1 (std `TcpListener`, one
//! thread per connection, hand-written HTTP) that follows a scripted sequence of phases.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How the bureau answers during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Behaviour {
    /// Answers after the normal latency (350 ms real time): 200, or 400 for a bad tax id.
    Healthy,
    /// The brownout: holds every request for 15 s (real time) before answering 504.
    Hanging,
    /// Answers 503 at once.
    ServerErrors,
}

/// One scripted phase of the game day.
#[derive(Clone, Debug)]
pub(crate) struct Phase {
    /// A name for the report.
    pub(crate) name: &'static str,
    /// How long it lasts (already scaled).
    pub(crate) length: Duration,
    /// What the bureau does.
    pub(crate) bureau: Behaviour,
    /// Percent of applications whose tax id is malformed (the bureau answers 400).
    pub(crate) bad_id_percent: u32,
}

/// The whole script: the phases in order and the bureau's latencies (all scaled).
#[derive(Clone, Debug)]
pub(crate) struct Script {
    /// The phases, in order.
    pub(crate) phases: Vec<Phase>,
    /// The healthy bureau's latency (350 ms real time).
    pub(crate) latency: Duration,
    /// How long a hanging request is held (15 s real time).
    pub(crate) hang: Duration,
}

impl Script {
    /// The game day (docs/GAME_DAY.md), every duration multiplied by `scale` (1.0 is real time).
    ///
    /// Real-time lengths: healthy 30 s, a burst of bad tax ids 20 s (must not open the
    /// breaker), brownout 60 s, 5xx errors 60 s, recovery 90 s: 260 s in all.
    pub(crate) fn seed_003(scale: f64) -> Script {
        let s = |secs: f64| Duration::from_secs_f64(secs * scale);
        let phase = |name, secs, bureau, bad_id_percent| Phase {
            name,
            length: s(secs),
            bureau,
            bad_id_percent,
        };
        Script {
            phases: vec![
                phase("healthy", 30.0, Behaviour::Healthy, 5),
                phase("bad tax ids (4xx)", 20.0, Behaviour::Healthy, 70),
                phase("brownout (15 s hangs)", 60.0, Behaviour::Hanging, 5),
                phase("5xx errors", 60.0, Behaviour::ServerErrors, 5),
                phase("recovery", 90.0, Behaviour::Healthy, 5),
            ],
            latency: s(0.350),
            hang: s(15.0),
        }
    }

    /// The length of the whole script.
    pub(crate) fn total(&self) -> Duration {
        self.phases.iter().map(|p| p.length).sum()
    }

    /// The phase running `elapsed` after the start (the last one after the end).
    pub(crate) fn phase_at(&self, elapsed: Duration) -> &Phase {
        let mut end = Duration::ZERO;
        for phase in &self.phases {
            end += phase.length;
            if elapsed < end {
                return phase;
            }
        }
        self.phases.last().unwrap_or(&HEALTHY)
    }

    /// When the phase whose behaviour is `bureau` first starts, after the start.
    pub(crate) fn first_start_of(&self, bureau: Behaviour) -> Option<Duration> {
        let mut start = Duration::ZERO;
        for phase in &self.phases {
            if phase.bureau == bureau {
                return Some(start);
            }
            start += phase.length;
        }
        None
    }
}

/// The phase of an empty script.
static HEALTHY: Phase = Phase {
    name: "healthy",
    length: Duration::ZERO,
    bureau: Behaviour::Healthy,
    bad_id_percent: 0,
};

/// The running simulator.
#[derive(Debug)]
pub(crate) struct Bureau {
    addr: SocketAddr,
    hits: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Bureau {
    /// Binds 127.0.0.1 on a free port and serves `script`, timed from `start`.
    pub(crate) fn start(script: Arc<Script>, start: Instant) -> io::Result<Bureau> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let hits = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (hits, stop) = (hits.clone(), stop.clone());
            thread::Builder::new()
                .name("bureau-accept".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(conn) = conn else { continue };
                        let (script, hits) = (script.clone(), hits.clone());
                        // A failed spawn drops the connection: the client sees an error.
                        let _ = thread::Builder::new()
                            .name("bureau-conn".into())
                            .spawn(move || serve(conn, &script, start, &hits));
                    }
                })?
        };
        Ok(Bureau {
            addr,
            hits,
            stop,
            accept: Some(accept),
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many `GET /v2/credit-reports/...` requests it has received.
    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }

    /// Stops accepting (connections being served finish on their own).
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop with one last connection.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// Answers one connection (one request, then `Connection: close`).
fn serve(mut conn: TcpStream, script: &Script, start: Instant, hits: &AtomicU64) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let Some(head) = read_head(&mut conn) else {
        return;
    };
    let tax_id = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("GET /v2/credit-reports/"))
        .and_then(|rest| rest.split(' ').next())
        .map(str::to_owned);
    let Some(tax_id) = tax_id else {
        respond(&mut conn, 404, "{\"error\":\"not found\"}");
        return;
    };
    hits.fetch_add(1, Ordering::SeqCst);
    match script.phase_at(start.elapsed()).bureau {
        Behaviour::Hanging => {
            thread::sleep(script.hang);
            respond(&mut conn, 504, "{\"error\":\"gateway timeout\"}");
        }
        Behaviour::ServerErrors => respond(&mut conn, 503, "{\"error\":\"unavailable\"}"),
        Behaviour::Healthy => {
            thread::sleep(script.latency);
            if tax_id.starts_with("bad") || tax_id.is_empty() {
                respond(&mut conn, 400, "{\"error\":\"malformed tax id\"}");
            } else {
                let body = format!(
                    "{{\"tax_id\":\"{tax_id}\",\"score\":{}}}",
                    score_of(&tax_id)
                );
                respond(&mut conn, 200, &body);
            }
        }
    }
}

/// A deterministic score in 300..850 for a tax id (FNV-1a).
pub(crate) fn score_of(tax_id: &str) -> u32 {
    let hash = tax_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    300 + (hash % 550) as u32
}

/// Reads up to the end of the request head (8 KiB at most); `None` if the client gave up.
fn read_head(conn: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 || buf.len() > 8192 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

/// Writes a whole response; a client that went away is not an error here.
fn respond(conn: &mut TcpStream, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes());
    let _ = conn.flush();
    let _ = conn.shutdown(Shutdown::Both);
}
