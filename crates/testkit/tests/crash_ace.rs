//! ACE-style crash exploration of fslab on LFS (STYLE.md item 14): every
//! workload of one and two core operations with persistence points
//! (`testkit::crash::workloads`), each crash image a power cut could leave
//! mounted and checked against the promises of `docs/SEMANTICS.md`.
//!
//! Modes:
//! * default: every workload, a seeded sample of at most
//!   `FSLAB_CRASH_MAX` (40) crash states each;
//! * `FSLAB_CRASH_EXHAUSTIVE=1`, or the `#[ignore]`d `_exhaustive` test:
//!   every persistence combination for each pair of operations, and every
//!   crash state the enumerator offers (up to 100 000 per workload);
//! * `FSLAB_CRASH_WORKLOAD=seq2-0042` runs one workload (to replay a
//!   failure), `FSLAB_CRASH_SEED` changes the sample.

use testkit::crash::{explore_all, workloads, Budget, Coverage, Outcome, Workload};
use testkit::harness::env_or;

/// Default crash states per workload.
const DEFAULT_MAX: u64 = 40;
/// Crash states per workload in exhaustive mode: more than any workload has.
const EXHAUSTIVE_MAX: u64 = 100_000;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

fn run(exhaustive: bool) -> Outcome {
    let coverage = if exhaustive { Coverage::Full } else { Coverage::Default };
    let mut list: Vec<Workload> = workloads(coverage);
    if let Ok(name) = std::env::var("FSLAB_CRASH_WORKLOAD") {
        list.retain(|w| w.name == name);
        assert!(!list.is_empty(), "no workload named {name}");
    }
    let max = env_or("FSLAB_CRASH_MAX", if exhaustive { EXHAUSTIVE_MAX } else { DEFAULT_MAX });
    let budget = Budget { max_states: max as usize, seed: env_or("FSLAB_CRASH_SEED", 0xace) };
    let started = std::time::Instant::now();
    let outcome = explore_all(&list, budget, threads());
    eprintln!(
        "crash exploration ({}): {} workloads, {} device events, {} crash states ({} rolled forward, \
         {} discarded an unfinished directory operation), {} violations, {:.1?}",
        if exhaustive { "exhaustive" } else { "sampled" },
        outcome.workloads,
        outcome.events,
        outcome.states,
        outcome.rolled_forward,
        outcome.discarded,
        outcome.violations.len(),
        started.elapsed()
    );
    outcome
}

fn assert_clean(outcome: &Outcome) {
    if let Some(first) = outcome.violations.first() {
        let mut workloads: Vec<&str> =
            outcome.violations.iter().map(|v| v.workload.split(':').next().unwrap_or("")).collect();
        workloads.dedup();
        for v in outcome.violations.iter().take(5) {
            eprintln!("{v}\n");
        }
        panic!(
            "{} violations in {} workloads ({}); the first:\n{first}",
            outcome.violations.len(),
            workloads.len(),
            workloads.join(" ")
        );
    }
}

#[test]
fn every_crash_state_of_every_ace_workload_keeps_what_was_acknowledged() {
    let exhaustive = std::env::var("FSLAB_CRASH_EXHAUSTIVE").is_ok_and(|v| v == "1");
    assert_clean(&run(exhaustive));
}

#[test]
#[ignore = "long: every persistence combination and every crash state"]
fn every_crash_state_of_every_ace_workload_keeps_what_was_acknowledged_exhaustive() {
    assert_clean(&run(true));
}
