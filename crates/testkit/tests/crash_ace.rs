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

use disk::{CrashChoice, CrashState, MemDisk};
use testkit::crash::{
    alphabet, build, check_state, explore_all, pattern, record, setup_image, workloads, Budget, Coverage, Op,
    Outcome, Persist, Recorded, Workload,
};
use testkit::harness::env_or;

/// Default crash states per workload.
const DEFAULT_MAX: u64 = 40;
/// Crash states per workload in exhaustive mode: more than any workload has.
const EXHAUSTIVE_MAX: u64 = 100_000;

fn threads() -> usize {
    // Twice the cores: each mount waits on its segment I/O thread now and then.
    let default = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
    env_or("FSLAB_CRASH_THREADS", default as u64) as usize
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

#[test]
fn workloads_cover_every_core_operation_alone_and_in_pairs() {
    let list = workloads(Coverage::Default);
    let seq1 = list.iter().filter(|w| w.name.starts_with("seq1")).count();
    let seq2 = list.len() - seq1;
    eprintln!("{seq1} one-op and {seq2} two-op workloads ({} with every persistence combination)", {
        workloads(Coverage::Full).len()
    });
    for (label, op) in alphabet() {
        let alone = list.iter().filter(|w| {
            w.name.starts_with("seq1") && w.steps.iter().any(|s| s.to_string() == op.to_string())
        });
        assert!(alone.count() >= 2, "{label} has fewer than two one-op workloads");
    }
    assert!(seq2 > 10 * seq1, "too few pairs: {seq2}");
}

/// The crash image before any workload write, for a recorded run.
fn base_state(rec: &Recorded) -> CrashState {
    let disk = rec.crash.crash_image(0, &CrashChoice::NonePersisted).expect("base image");
    CrashState {
        description: "self-test: the base image".into(),
        cut: 0,
        choice: CrashChoice::NonePersisted,
        disk,
    }
}

/// Runs `op` then `persist`, and claims the persistence point returned before
/// the first write of the run: the base image then breaks its promise, and
/// the checker must say so (it is not vacuous).
fn pretend_acknowledged_early(op: Op, persist: Persist) -> String {
    let (image, setup) = setup_image();
    let workload = build("self-test".into(), &[(&op, Some(persist))]).expect("a valid workload");
    let mut rec = record(&workload, &image, &setup);
    assert!(rec.points[1].events > 0, "the persistence point wrote nothing");
    rec.points[1].events = 0;
    check_state(&rec, &base_state(&rec)).expect_err("the checker accepted a broken promise")
}

#[test]
fn the_checker_reports_fsynced_data_that_is_missing() {
    let err = pretend_acknowledged_early(
        Op::Write { path: "A/foo".into(), offset: 3000, len: 4000, tag: 11 },
        Persist::Fsync("A/foo".into()),
    );
    assert!(err.contains("lost data made durable by fsync(A/foo)"), "{err}");
}

#[test]
fn the_checker_reports_a_directory_fsync_whose_names_are_missing() {
    let err =
        pretend_acknowledged_early(Op::Rename("A/foo".into(), "B/foo".into()), Persist::FsyncDir("B".into()));
    assert!(err.contains("namespace went back"), "{err}");
}

#[test]
fn the_checker_reports_data_a_file_was_never_given() {
    let (image, setup) = setup_image();
    // Replace the first block of A/foo (tag 1) with bytes of a tag never used.
    let first = pattern(1, 0, 4096);
    let at =
        image.chunks(4096).position(|b| b == &first[..]).expect("A/foo's first block in the image") * 4096;
    let mut bad = image.clone();
    bad[at..at + 4096].copy_from_slice(&pattern(99, 0, 4096));
    let workload =
        build("self-test".into(), &[(&Op::Create("A/new".into()), Some(Persist::Sync))]).expect("valid");
    let rec = record(&workload, &image, &setup);
    let state = CrashState {
        description: "self-test: A/foo's data replaced".into(),
        cut: 0,
        choice: CrashChoice::NonePersisted,
        disk: MemDisk::from_bytes(bad),
    };
    let err = check_state(&rec, &state).expect_err("the checker accepted foreign data");
    assert!(err.contains("that no write put there"), "{err}");
}
