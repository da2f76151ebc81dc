//! A real PostgreSQL server for tests: a cluster of its own in a fresh temporary directory, on a
//! free 127.0.0.1 port, with the user `breaker` trusted (no password), stopped and its
//! directory removed on drop. PostgreSQL refuses to run as root: as root (a CI container), the
//! cluster is made and run as the `postgres` user that Debian's package creates.
//!
//! Made for the fault tests: [`PostgresServer::stop`] shuts it down (new connections are
//! refused, open ones are closed), [`PostgresServer::start_again`] brings the same cluster back
//! on the same port, and [`PostgresServer::pause`] stops every process of the cluster with
//! SIGSTOP: the port still accepts connections and nothing answers, like a server stuck on a
//! lock or a full disk.
//!
//! The cluster runs with `fsync=off`: the tests crash the loan service, never PostgreSQL or the
//! machine, so what a committed row must survive here is the client going away, and flushing
//! to disk would only slow the tests down.

#![allow(dead_code)] // each test binary uses a different subset

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const INSTALL_HINT: &str = "PostgreSQL's server is not installed: the credit-bureau tests run a \
     real PostgreSQL. Install the Debian package `postgresql` (apt-get install postgresql), or \
     run `bash scripts/test.sh`, which installs it.";

/// The user the tests connect as (made by `initdb -U`, trusted on loopback).
pub(crate) const USER: &str = "breaker";

/// How long a start may take before the test fails saying so.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running PostgreSQL cluster of the test's own.
#[derive(Debug)]
pub(crate) struct PostgresServer {
    bin: PathBuf,
    /// The temporary directory: the cluster's data in `data/`, its Unix socket and log beside.
    dir: PathBuf,
    port: u16,
    /// The postmaster, while it runs.
    child: Option<Child>,
    /// The uid and gid the server runs as, when the tests run as root.
    run_as: Option<(u32, u32)>,
}

impl PostgresServer {
    /// Makes a fresh cluster and starts it on a free loopback port. Panics (failing the test)
    /// with what to install if PostgreSQL is missing: these tests never skip silently.
    pub(crate) fn start() -> PostgresServer {
        let bin = bin_dir();
        let run_as = run_as();
        let dir = fresh_dir(run_as);
        let data = dir.join("data");
        let initdb = as_user(Command::new(bin.join("initdb")), run_as)
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output();
        check_ran("initdb", initdb);
        let mut server = PostgresServer {
            bin,
            dir,
            port: 0,
            child: None,
            run_as,
        };
        let mut last_error = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.try_start() {
                Ok(()) => return server,
                Err(e) => last_error = e, // the port was taken meanwhile: try another
            }
        }
        panic!("could not start PostgreSQL: {last_error}");
    }

    /// The port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://breaker@127.0.0.1:PORT/postgres`.
    pub(crate) fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// Shuts the server down (fast shutdown: open sessions are ended, their transactions
    /// rolled back) and waits for it to be gone. Nothing listens on the port afterwards.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.signal_tree(child.id(), "-CONT");
            signal(child.id(), "-INT");
            let _ = child.wait();
        }
    }

    /// Starts the same cluster again, on the same port, after [`Self::stop`].
    pub(crate) fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        self.try_start()
            .unwrap_or_else(|e| panic!("could not start PostgreSQL again: {e}"));
    }

    /// Stops every process of the cluster (SIGSTOP): connections are still accepted by the
    /// kernel, and nothing is answered until [`Self::resume`].
    pub(crate) fn pause(&self) {
        let pid = self.pid();
        self.signal_tree(pid, "-STOP");
    }

    /// Resumes a paused cluster (SIGCONT).
    pub(crate) fn resume(&self) {
        let pid = self.pid();
        self.signal_tree(pid, "-CONT");
    }

    /// Runs one SQL statement with `psql` and returns its output, unaligned and without
    /// headers (`-At`), one line per row, `|` between columns. Panics if psql fails.
    pub(crate) fn psql(&self, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.url(),
                "-c",
                sql,
            ])
            .stdin(Stdio::null())
            .output();
        let output = check_ran("psql", output);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// Signals the postmaster first (so it starts no new backend), then each of its children.
    fn signal_tree(&self, pid: u32, sig: &str) {
        signal(pid, sig);
        for child in children(pid) {
            signal(child, sig);
        }
    }

    fn try_start(&mut self) -> Result<(), String> {
        let log = fs::File::create(self.dir.join("server.log"))
            .map_err(|e| format!("cannot create the server's log: {e}"))?;
        let child = as_user(Command::new(self.bin.join("postgres")), self.run_as)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-h", "127.0.0.1"])
            .arg("-k")
            .arg(&self.dir)
            .args(["-c", "fsync=off", "-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.join("postgres").display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(format!(
                    "postgres on port {} exited ({status}); its log: {}",
                    self.port,
                    self.log_tail()
                ));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    USER,
                ])
                .stdin(Stdio::null())
                .status();
            if ready.is_ok_and(|s| s.success()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(format!(
                    "postgres on port {} was not ready in {START_TIMEOUT:?}; its log: {}",
                    self.port,
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(10)..].join(" | ")
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Resumed first: a paused cluster must be able to act on the signal.
            self.signal_tree(child.id(), "-CONT");
            // Immediate shutdown: the cluster is thrown away.
            signal(child.id(), "-QUIT");
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The directory of PostgreSQL's server programs: Debian's `/usr/lib/postgresql/<version>/bin`
/// (the newest version there), else wherever `postgres` is on PATH.
fn bin_dir() -> PathBuf {
    let debian = fs::read_dir("/usr/lib/postgresql")
        .ok()
        .and_then(|versions| {
            versions
                .filter_map(Result::ok)
                .filter_map(|v| {
                    let number: u32 = v.file_name().to_str()?.parse().ok()?;
                    let bin = v.path().join("bin");
                    bin.join("postgres").is_file().then_some((number, bin))
                })
                .max_by_key(|(number, _)| *number)
                .map(|(_, bin)| bin)
        });
    if let Some(bin) = debian {
        return bin;
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("postgres").is_file() && dir.join("initdb").is_file())
    });
    on_path.unwrap_or_else(|| panic!("{INSTALL_HINT}"))
}

/// As root: the `postgres` user's uid and gid (PostgreSQL will not run as root).
fn run_as() -> Option<(u32, u32)> {
    let uid = id(&["-u"]);
    if uid != 0 {
        return None;
    }
    let user = |flag: &str| id(&[flag, "postgres"]);
    Some((user("-u"), user("-g")))
}

/// `id FLAGS...` as a number; panics, naming the package, if there is no such user.
fn id(args: &[&str]) -> u32 {
    let output = Command::new("id").args(args).output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        _ => panic!(
            "`id {}` failed: as root, PostgreSQL must run as the `postgres` user, which \
             Debian's package `postgresql` creates. {INSTALL_HINT}",
            args.join(" ")
        ),
    };
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("`id {}` printed no number: {e}", args.join(" ")))
}

/// `command`, run as `run_as` when the tests run as root.
fn as_user(mut command: Command, run_as: Option<(u32, u32)>) -> Command {
    if let Some((uid, gid)) = run_as {
        command.uid(uid).gid(gid);
    }
    command
}

/// A new empty directory under the temp dir, owned by the server's user and private to it.
fn fresh_dir(run_as: Option<(u32, u32)>) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "breaker-postgres-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir); // a leftover of an earlier process with the same pid
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    set_private(&dir, run_as);
    dir
}

fn set_private(dir: &Path, run_as: Option<(u32, u32)>) {
    use std::os::unix::fs::PermissionsExt;
    if let Some((uid, gid)) = run_as {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("cannot give {} to the postgres user: {e}", dir.display()));
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("cannot make {} private: {e}", dir.display()));
}

/// Checks that a program ran and succeeded; panics with its output otherwise.
fn check_ran(what: &str, output: std::io::Result<Output>) -> Output {
    match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!(
            "{what} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{INSTALL_HINT}"),
        Err(e) => panic!("cannot run {what}: {e}"),
    }
}

/// The direct children of `pid` (the cluster's backends and background workers).
fn children(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn signal(pid: u32, sig: &str) {
    // A process that is already gone is not an error here.
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
