//! A real `redis-server` for tests: started on a free 127.0.0.1 port, with no persistence,
//! killed on drop. Plus a tiny RESP client, so the tests read and write keys without a client
//! library of their own.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INSTALL_HINT: &str = "redis-server is not on PATH: the Redis hint tests need a real \
     redis-server. Install the Debian package `redis-server` (apt-get install redis-server), \
     or run `bash scripts/test.sh`, which installs it.";

/// A running `redis-server --port N --bind 127.0.0.1 --save '' --appendonly no`.
#[derive(Debug)]
pub(crate) struct RedisServer {
    child: Option<Child>,
    port: u16,
}

impl RedisServer {
    /// Starts a server on a free loopback port. Panics (failing the test) if `redis-server`
    /// is not installed: these tests never skip silently.
    pub(crate) fn start() -> RedisServer {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            match RedisServer::try_start_on(port) {
                Ok(server) => return server,
                Err(e) => last_error = e, // the port was taken meanwhile: try another
            }
        }
        panic!("could not start redis-server: {last_error}");
    }

    /// A port on which nothing listens (for "Redis is down at start").
    pub(crate) fn unused_port() -> u16 {
        free_port()
    }

    /// Starts a server on `port` (e.g. a restart on the port a client already uses).
    pub(crate) fn start_on(port: u16) -> RedisServer {
        RedisServer::try_start_on(port).unwrap_or_else(|e| panic!("{e}"))
    }

    fn try_start_on(port: u16) -> Result<RedisServer, String> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
            Err(e) => panic!("could not run redis-server: {e}"),
        };
        let mut server = RedisServer {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = server
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                server.child = None;
                return Err(format!("redis-server on port {port} exited: {status}"));
            }
            if let Ok(Reply::Status(s)) = server.try_cmd(&["PING"]) {
                if s == "PONG" {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-server on port {port} did not answer PING in 10 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL) and waits for it to be gone.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts a new, empty one on the same port.
    pub(crate) fn restart(&mut self) {
        self.kill();
        let port = self.port;
        *self = RedisServer::start_on(port);
    }

    /// Stops the process (SIGSTOP): it keeps its port, accepts connections, and answers
    /// nothing, like a server stalled by a long command or a swap storm.
    pub(crate) fn pause(&self) {
        self.signal("-STOP");
    }

    /// Resumes a paused server (SIGCONT).
    pub(crate) fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("server is running").id();
        let status = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {sig} {pid} failed");
    }

    /// Runs one command and returns its reply; panics on an I/O error.
    pub(crate) fn cmd(&self, args: &[&str]) -> Reply {
        self.try_cmd(args)
            .unwrap_or_else(|e| panic!("redis {args:?}: {e}"))
    }

    /// Runs one command with binary arguments.
    pub(crate) fn cmd_bytes(&self, args: &[&[u8]]) -> Reply {
        self.try_cmd_bytes(args)
            .unwrap_or_else(|e| panic!("redis command: {e}"))
    }

    fn try_cmd(&self, args: &[&str]) -> std::io::Result<Reply> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.try_cmd_bytes(&args)
    }

    fn try_cmd_bytes(&self, args: &[&[u8]]) -> std::io::Result<Reply> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        stream.write_all(&out)?;
        read_reply(&mut BufReader::new(stream))
    }

    /// A string key's value, `None` if there is none.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        match self.cmd(&["GET", key]) {
            Reply::Bulk(v) => Some(String::from_utf8_lossy(&v).into_owned()),
            Reply::Nil => None,
            other => panic!("GET {key}: {other:?}"),
        }
    }

    /// A key's remaining TTL in ms (`-2`: no key; `-1`: no TTL).
    pub(crate) fn pttl(&self, key: &str) -> i64 {
        match self.cmd(&["PTTL", key]) {
            Reply::Int(n) => n,
            other => panic!("PTTL {key}: {other:?}"),
        }
    }

    /// How many times `command` (lower case, e.g. `set`) ran since start, from INFO
    /// commandstats.
    pub(crate) fn command_calls(&self, command: &str) -> u64 {
        let Reply::Bulk(info) = self.cmd(&["INFO", "commandstats"]) else {
            panic!("INFO commandstats");
        };
        let info = String::from_utf8_lossy(&info);
        let prefix = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|rest| {
                rest.split(',')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0)
            })
            .unwrap_or(0)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused server must be resumed to die promptly on some kernels; SIGKILL works
            // on a stopped process on Linux, but be explicit.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
    }
}

/// A RESP reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// `+...`
    Status(String),
    /// `-...`
    Error(String),
    /// `:...`
    Int(i64),
    /// `$...`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`
    Nil,
    /// `*...`
    Array(Vec<Reply>),
}

fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end_matches("\r\n");
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad RESP reply");
    let (Some(kind), Some(rest)) = (line.get(..1), line.get(1..)) else {
        return Err(bad());
    };
    Ok(match kind {
        "+" => Reply::Status(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => Reply::Int(rest.parse().map_err(|_| bad())?),
        "$" => {
            let n: i64 = rest.parse().map_err(|_| bad())?;
            if n < 0 {
                Reply::Nil
            } else {
                let mut buf = vec![0; usize::try_from(n).map_err(|_| bad())? + 2];
                r.read_exact(&mut buf)?;
                buf.truncate(buf.len() - 2);
                Reply::Bulk(buf)
            }
        }
        "*" => {
            let n: i64 = rest.parse().map_err(|_| bad())?;
            if n < 0 {
                Reply::Nil
            } else {
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(read_reply(r)?);
                }
                Reply::Array(items)
            }
        }
        _ => return Err(bad()),
    })
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
