//! The protected call's overhead, side by side with the Rust peers and the hardware floor, in
//! one run; and the memory a breaker takes.
//!
//! ```text
//! cargo bench -p breaker-bench                      # full run
//! BREAKER_BENCH_QUICK=1 cargo bench -p breaker-bench  # quick run, well under 2 minutes
//! ```
//!
//! Every figure is the median of many samples of a tight loop. The machines this runs on are
//! shared and noisy, so only the ratios within one run mean anything.
//!
//! `harness` times and prints, `peers` builds each peer crate's breaker for a case, and `cases`
//! holds the rows, one function per group of the table.

mod cases;
mod harness;
mod peers;

use harness::{Plan, Table};

fn main() {
    let plan = Plan::from_env();
    plan.print_header();
    let mut t = Table::default();
    cases::floors(&plan, &mut t);

    // CLOSED on defaults, shared by the sync, async and two-thread groups.
    let registry = cases::registry_on_defaults();
    let ours = registry.breaker("bench");
    let closed = peers::closed();
    cases::sync_closed_success(&plan, &mut t, &ours, &closed);
    cases::sync_closed_half_failing(&plan, &mut t);
    cases::open_rejection(&plan, &mut t);
    let tower = peers::tower_closed();
    cases::async_closed_success(&plan, &mut t, &ours, &closed, &tower);
    cases::two_threads(&plan, &mut t, &ours, &closed, &tower);
    cases::attribute_vs_by_hand(&plan, &mut t);
    cases::retry_first_success(&plan, &mut t, &ours);

    t.print_ratios();
    cases::memory();
}
