//! Conformance runner: runs scenario files (`.scn`) against the real breaker and prints their
//! traces, in the format of `tests/conformance/FORMAT.md`.
//!
//! ```text
//! cargo run -q --example conformance -- tests/conformance/scenarios/tutorial_trace.scn
//! ```
//!
//! For each file in turn it prints the trace to stdout. On a malformed scenario it prints the
//! lines produced before the error, then `ERROR line <n>: <message>` on stderr, and exits with
//! status 2. A file that cannot be read, or no file at all, is reported on stderr with status 2.
//! Compare the output with `tests/conformance/expected/<name>.out`, or run
//! `cargo test --test conformance`, which does that for every scenario.

mod runner;

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

/// Exit status for every error: usage, unreadable file, malformed scenario, failed output.
const FAILURE: u8 = 2;

fn main() -> ExitCode {
    let files: Vec<OsString> = std::env::args_os().skip(1).collect();
    if files.is_empty() {
        complain(format_args!(
            "usage: cargo run -q --example conformance -- FILE.scn...\n\
             Runs each scenario against breaker and prints its trace (tests/conformance/FORMAT.md)."
        ));
        return ExitCode::from(FAILURE);
    }
    let mut stdout = io::stdout().lock();
    for file in &files {
        let path = Path::new(file);
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                complain(format_args!(
                    "conformance: cannot read {}: {e}",
                    path.display()
                ));
                return ExitCode::from(FAILURE);
            }
        };
        // Invalid UTF-8 becomes U+FFFD, which the runner reports as a non-ASCII character on
        // its line.
        let text = String::from_utf8_lossy(&bytes);
        let (trace, error) = match runner::run_scenario(&text) {
            Ok(trace) => (trace, None),
            Err(mut error) => (std::mem::take(&mut error.trace), Some(error)),
        };
        if let Err(e) = stdout
            .write_all(trace.as_bytes())
            .and_then(|()| stdout.flush())
        {
            complain(format_args!("conformance: cannot write the trace: {e}"));
            return ExitCode::from(FAILURE);
        }
        if let Some(error) = error {
            complain(format_args!("{error}"));
            return ExitCode::from(FAILURE);
        }
    }
    ExitCode::SUCCESS
}

/// Writes one line to stderr; if even that fails there is nobody left to tell.
fn complain(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{message}");
}
