//! How long loading a configuration takes, by format and input size: valid files with more and
//! more instances, and hostile inputs (random bytes, deep nesting, long continued lines) that
//! a parser could handle in more than linear time. The fuzz test (breaker-core's
//! `tests/config/fuzz.rs`) checks what loading returns; this is where its time is measured.
//!
//! ```text
//! cargo bench -p breaker-bench --bench config_parse
//! ```
//!
//! Each row is the median of several loads. Read the `ns/byte` column down a group: roughly
//! constant means linear; growing with the size means a parser that goes superlinear on that
//! kind of input. The machines this runs on are shared and noisy, so only ratios within one
//! run mean anything.

use std::hint::black_box;
use std::time::{Duration, Instant};

use breaker::{ErrorKind, Format, Registry};

/// The median time of loading `bytes` in `format`, over enough loads to last about 50 ms (at
/// least 5).
fn time_load(format: Format, bytes: &[u8]) -> Duration {
    let load = || {
        let start = Instant::now();
        let result = Registry::builder()
            .error_kind(ErrorKind::of_type::<std::io::Error>("A"))
            .load_bytes(format, "bench", black_box(bytes));
        black_box(result.is_ok());
        start.elapsed()
    };
    let first = load();
    let runs = (Duration::from_millis(50).as_nanos() / first.as_nanos().max(1)).clamp(5, 1_000);
    let mut samples: Vec<Duration> = (0..runs).map(|_| load()).collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn row(group: &str, format: Format, input: &str, bytes: &[u8]) {
    let median = time_load(format, bytes);
    let per_byte = median.as_nanos() as f64 / bytes.len().max(1) as f64;
    println!(
        "{group:<22} {:<10} {input:<28} {:>9} {:>12.1} {:>9.1}",
        format!("{format:?}"),
        bytes.len(),
        median.as_secs_f64() * 1e6,
        per_byte
    );
}

/// A valid TOML file with `n` instances, each with a few keys.
fn toml_instances(n: usize) -> String {
    let mut text = String::from("[configs.default]\nsliding-window-size = 50\n\n");
    for i in 0..n {
        text.push_str(&format!(
            "[instances.svc{i}]\nbase-config = \"default\"\nfailure-rate-threshold = 40\n\
             wait-duration-in-open-state = \"10s\"\nignore-exceptions = [\"A\"]\n\n"
        ));
    }
    text
}

/// The same in Spring's `.properties` form.
fn properties_instances(n: usize) -> String {
    let p = "resilience4j.circuitbreaker";
    let mut text = format!("{p}.configs.default.sliding-window-size=50\n");
    for i in 0..n {
        text.push_str(&format!(
            "{p}.instances.svc{i}.base-config=default\n\
             {p}.instances.svc{i}.failure-rate-threshold=40\n\
             {p}.instances.svc{i}.wait-duration-in-open-state=10s\n\
             {p}.instances.svc{i}.ignore-exceptions=A\n"
        ));
    }
    text
}

/// Deterministic pseudo-random bytes (xorshift).
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn main() {
    println!("configuration load time (the median of several loads of each input)\n");
    println!(
        "{:<22} {:<10} {:<28} {:>9} {:>12} {:>9}",
        "group", "format", "input", "bytes", "median us", "ns/byte"
    );
    for n in [1, 10, 100, 1_000] {
        let input = format!("{n} instances");
        row("valid", Format::Toml, &input, toml_instances(n).as_bytes());
        row(
            "valid",
            Format::Properties,
            &input,
            properties_instances(n).as_bytes(),
        );
    }
    for kib in [1, 4, 16, 64] {
        let bytes = random_bytes(kib * 1024);
        let input = format!("{kib} KiB");
        row("random bytes", Format::Toml, &input, &bytes);
        row("random bytes", Format::Properties, &input, &bytes);
    }
    for depth in [100, 1_000, 10_000] {
        let nested = format!("x = {}{}", "[".repeat(depth), "]".repeat(depth));
        row(
            "nested arrays",
            Format::Toml,
            &format!("depth {depth}"),
            nested.as_bytes(),
        );
        let tables = format!("[{}]\n", vec!["a"; depth].join("."));
        row(
            "dotted table name",
            Format::Toml,
            &format!("{depth} parts"),
            tables.as_bytes(),
        );
    }
    for lines in [100, 1_000, 10_000] {
        // One logical line continued over many physical lines.
        let continued = format!(
            "resilience4j.circuitbreaker.instances.svc.ignore-exceptions=A{}\n",
            ",A\\\n".repeat(lines)
        );
        row(
            "continued line",
            Format::Properties,
            &format!("{lines} lines"),
            continued.as_bytes(),
        );
        let escapes = format!(
            "resilience4j.circuitbreaker.instances.s{}.sliding-window-size=5\n",
            "\\u0041".repeat(lines)
        );
        row(
            "unicode escapes in key",
            Format::Properties,
            &format!("{lines} escapes"),
            escapes.as_bytes(),
        );
    }
}
