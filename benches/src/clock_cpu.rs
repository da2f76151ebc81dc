//! What the default clock costs a process that makes few protected calls: the process's CPU
//! time (user + system, from `getrusage`) over wall time, in percent of one core, in three
//! phases of the same length:
//!
//! 1. idle: no breaker used yet, the loop only sleeps;
//! 2. calls: one protected call every `1 / rate` seconds (50 and 220 calls a second);
//! 3. after: breakers exist and were just used, no call is made.
//!
//! ```text
//! cargo bench -p breaker-bench --bench clock_cpu                  # 10 s a phase
//! BREAKER_CLOCK_SECONDS=3 cargo bench -p breaker-bench --bench clock_cpu
//! ```
//!
//! This is a measurement of real time, so it sleeps; it is not a test.

use std::time::{Duration, Instant};

use breaker::Registry;

/// CPU time this process has used, user and system.
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` writes the `rusage` it is given and nothing else; a zeroed `rusage`
    // is a valid value of that plain C struct.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Percent of one core used over `phase`, running `tick` every `every`.
fn phase(phase: Duration, every: Duration, mut tick: impl FnMut()) -> f64 {
    let cpu0 = cpu_time();
    let start = Instant::now();
    let mut next = start;
    while start.elapsed() < phase {
        tick();
        next += every;
        if let Some(left) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(left);
        }
    }
    let cpu = cpu_time() - cpu0;
    100.0 * cpu.as_secs_f64() / start.elapsed().as_secs_f64()
}

fn main() {
    let seconds = std::env::var("BREAKER_CLOCK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let length = Duration::from_secs(seconds);
    println!("breaker clock CPU ({seconds} s a phase; percent of one core, user + system)\n");
    let registry = Registry::new();
    let every = Duration::from_millis(20);
    let idle = phase(length, every, || {});
    println!("  idle, no breaker used         {idle:6.3} %");
    for rate in [50u32, 220] {
        let breaker = registry.breaker(&format!("clock-cpu-{rate}"));
        let every = Duration::from_secs(1) / rate;
        let busy = phase(length, every, || {
            let _ = breaker.call_sync(|| Ok::<_, ()>(std::hint::black_box(1)));
        });
        println!("  {rate:3} protected calls a second  {busy:6.3} %");
    }
    let after = phase(length, every, || {});
    println!("  after, no call made           {after:6.3} %");
}
