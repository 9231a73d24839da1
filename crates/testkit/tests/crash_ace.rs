//! ACE-style crash exploration of fslab on LFS (STYLE.md item 14): every
//! workload of one and two core operations with persistence points
//! (`testkit::crash::workloads`), each crash image a power cut could leave
//! mounted and checked against the promises of `docs/SEMANTICS.md`; where
//! the mount recovered something, also a clean unmount and second power
//! cuts during recovery or unmount (`testkit::crash::check_state`).
//!
//! Modes:
//! * default: every workload (`Coverage::Default`), a seeded sample of at
//!   most `FSLAB_CRASH_MAX` (40) crash states each, and per recovering state
//!   the image after unmount plus `FSLAB_CRASH_SECOND` (1) second cut;
//! * `FSLAB_CRASH_EXHAUSTIVE=1`, or the `#[ignore]`d `_exhaustive` test:
//!   every persistence combination for each pair of operations
//!   (`Coverage::Full`), every crash state the enumerator offers (up to
//!   100 000 per workload, more than any has) and 4 second cuts each;
//! * `FSLAB_CRASH_WORKLOAD=seq2-0042` runs one workload (to replay a
//!   failure; names are stable for a coverage), `FSLAB_CRASH_SEED` changes
//!   the sample, `FSLAB_CRASH_THREADS` the parallelism;
//!
//! Tests here: the exploration (default and exhaustive), the workload
//! generator's coverage, three self-tests showing the checker is not
//! vacuous, and the reproducers of bugs it found.

use std::sync::Arc;

use disk::{BlockDevice, CrashChoice, CrashDisk, CrashState, MemDisk};
use fslab::format::Ino;
use fslab::lfs::Lfs;
use fslab::ufs::FileSystem;
use testkit::crash::{
    alphabet, build, check_state, explore_all, mount_options, pattern, record, resolve, setup_image,
    workloads, Budget, Coverage, Op, Outcome, Persist, Recorded, Violation, Workload,
};
use testkit::harness::env_or;

/// Default crash states per workload.
const DEFAULT_MAX: u64 = 40;
/// Crash states per workload in exhaustive mode: more than any workload has.
const EXHAUSTIVE_MAX: u64 = 100_000;
/// Default second power cuts per recovering crash state.
const DEFAULT_SECOND: u64 = 1;
/// Second power cuts per recovering crash state in exhaustive mode.
const EXHAUSTIVE_SECOND: u64 = 4;

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
    let second = env_or("FSLAB_CRASH_SECOND", if exhaustive { EXHAUSTIVE_SECOND } else { DEFAULT_SECOND });
    let budget = Budget {
        max_states: max as usize,
        seed: env_or("FSLAB_CRASH_SEED", 0xace),
        second_crashes: second as usize,
    };
    let started = std::time::Instant::now();
    let outcome = explore_all(&list, budget, threads());
    eprintln!(
        "crash exploration ({}): {} workloads, {} device events, {} crash states ({} rolled forward, \
         {} discarded an unfinished directory operation), {} images after recovery and a second power cut, \
         {} violations, {:.1?}",
        if exhaustive { "exhaustive" } else { "sampled" },
        outcome.workloads,
        outcome.events,
        outcome.states,
        outcome.rolled_forward,
        outcome.discarded,
        outcome.second_crashes,
        outcome.violations.len(),
        started.elapsed()
    );
    outcome
}

fn assert_clean(outcome: &Outcome) {
    for (shape, (count, example)) in shapes(outcome) {
        eprintln!("{count:6} × {shape}\n         e.g. {example}");
    }
    let new: Vec<&Violation> = outcome.violations.iter().collect();
    if let Some(first) = new.first() {
        let mut workloads: Vec<&str> =
            new.iter().map(|v| v.workload.split(':').next().unwrap_or("")).collect();
        workloads.dedup();
        for v in new.iter().take(5) {
            eprintln!("{v}\n");
        }
        panic!(
            "{} violations in {} workloads ({}); the first:\n{first}",
            new.len(),
            workloads.len(),
            workloads.join(" ")
        );
    }
}

/// Violations grouped by their message with numbers and names taken out,
/// with a count and one workload each: what kinds of failure there are.
fn shapes(outcome: &Outcome) -> std::collections::BTreeMap<String, (usize, String)> {
    let mut shapes = std::collections::BTreeMap::new();
    for v in &outcome.violations {
        let line = v.what.lines().next().unwrap_or("");
        let shape: String = line
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect::<String>()
            .split(" [second crash")
            .next()
            .unwrap_or("")
            .chars()
            .take(150)
            .collect();
        let entry = shapes.entry(shape).or_insert((0, v.workload.clone()));
        entry.0 += 1;
    }
    shapes
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
    check_state(&rec, base_state(&rec).disk, 0, 0, 0).expect_err("the checker accepted a broken promise")
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
    let err = check_state(&rec, state.disk, 0, 0, 0).expect_err("the checker accepted foreign data");
    assert!(err.contains("that no write put there"), "{err}");
}

/// The image for the two bug guards below: after setup, `create(A/new);
/// fsync_dir(A); rename(A/foo -> B/foo); fsync_dir(B)`, and a power cut
/// before the last barrier in which, of the three partial segments the
/// second `fsync_dir` wrote (unflushed, so they may reach the medium in any
/// order or not at all), the first is lost and the other two arrived.
fn image_with_a_lost_partial_segment_and_two_after_it() -> MemDisk {
    let (image, setup) = setup_image();
    let workload = build(
        "lost-partial-segment".into(),
        &[
            (&Op::Create("A/new".into()), Some(Persist::FsyncDir("A".into()))),
            (&Op::Rename("A/foo".into(), "B/foo".into()), Some(Persist::FsyncDir("B".into()))),
        ],
    )
    .expect("a valid workload");
    let rec = record(&workload, &image, &setup);
    let cut = rec.crash.events() - 1;
    let unflushed = rec.crash.unflushed_writes(cut).expect("unflushed writes");
    assert!(
        unflushed.len() >= 2,
        "the second fsync_dir no longer writes several partial segments: {unflushed:?}"
    );
    // The first unflushed write is lost, every later one reaches the disk.
    let keep: Vec<bool> = (0..unflushed.len()).map(|i| i > 0).collect();
    rec.crash.crash_image(cut, &CrashChoice::Subset(keep)).expect("crash image")
}

/// Mounts `dev` and returns what `A/new` and `A/foo` resolve to.
fn mount_and_look(dev: Arc<dyn BlockDevice>) -> (FileSystem<Lfs>, fslab::Result<Ino>, fslab::Result<Ino>) {
    let lfs = Lfs::mount(dev, mount_options()).expect("mount");
    let mut fs = FileSystem::new(lfs);
    let new = resolve(&mut fs, "A/new");
    let old = resolve(&mut fs, "A/foo");
    (fs, new, old)
}

/// Regression (fixed by the serial-number jump before each mount writes): the mount
/// after a recovery replayed partial segments written before the first
/// crash. The recovery mount stopped rolling forward at the lost partial
/// segment (rightly: `A/new` exists, `A/foo` is not renamed) and wrote its
/// checkpoint's ifile where the lost one was, with the same serial number;
/// the stale partial segments after it carried the next serials, so the next
/// roll-forward accepted them and a stale ifile replaced the state. Here:
/// recovery, clean unmount, mount → "corrupt ifile block: no ifile magic".
#[test]
fn a_clean_unmount_after_recovery_leaves_an_image_that_mounts() {
    let dev: Arc<dyn BlockDevice> = Arc::new(image_with_a_lost_partial_segment_and_two_after_it());
    let (mut fs, new, old) = mount_and_look(dev.clone());
    let (new, old) = (new.expect("A/new after recovery"), old.expect("A/foo after recovery"));
    fs.unmount().expect("unmount after recovery");
    let lfs = Lfs::mount(dev, mount_options())
        .unwrap_or_else(|e| panic!("mount after recovery and a clean unmount failed: {e}"));
    let mut fs = FileSystem::new(lfs);
    assert_eq!(resolve(&mut fs, "A/new").ok(), Some(new), "A/new changed");
    assert_eq!(resolve(&mut fs, "A/foo").ok(), Some(old), "A/foo changed");
}

/// Regression, as above without the unmount: a power cut right after the
/// recovery mount returned (its checkpoint complete) left the next mount
/// unable to read directory `A`'s inode ("corrupt inode block: inode 3 is
/// not in the block the inode map names").
#[test]
fn a_crash_right_after_recovery_keeps_the_recovered_tree() {
    let crash = CrashDisk::over(image_with_a_lost_partial_segment_and_two_after_it());
    let (fs, new, old) = mount_and_look(Arc::new(crash.clone()));
    let (new, old) = (new.expect("A/new after recovery"), old.expect("A/foo after recovery"));
    drop(fs); // power cut: nothing after the recovery's checkpoint
    let after = crash.crash_image(crash.events(), &CrashChoice::AllPersisted).expect("image");
    let (_fs, new_again, old_again) = mount_and_look(Arc::new(after));
    assert_eq!(new_again.map_err(|e| e.to_string()), Ok(new), "A/new after a crash right after recovery");
    assert_eq!(old_again.map_err(|e| e.to_string()), Ok(old), "A/foo after a crash right after recovery");
}
