//! After random namespace workloads (the model tests' generator: creates,
//! writes, truncates, renames, links, xattrs, remounts, with a cache small
//! enough that segment writes happen mid-sequence), an unmounted image is
//! clean, and so is one left by a crash after a sync. `FSLAB_FSCK_SEEDS`
//! scales the run.

use fslab_check::{Fix, Options};
use testkit::harness::{env_or, Harness, LfsSubject, Subject};
use testkit::ops::{Generator, Weights};

fn listing(report: &fslab_check::Report) -> String {
    report.problems.iter().map(|p| format!("  {:?}: {p}\n", p.kind)).collect()
}

fn workload(seed: u64, ops: usize, crash: bool) {
    let subject = LfsSubject::small(24 << 20, 1 << 20).expect("mkfs and mount");
    let disk = subject.disk().clone();
    let mut harness = Harness::new(subject, seed);
    let mut gen = Generator::new(seed, Weights::with_remount());
    for _ in 0..ops {
        harness.check_tree();
        let op = gen.next_op();
        harness.apply(op);
    }
    let fs = harness.subject().fs();
    if crash {
        fs.sync().expect("sync");
    } else {
        fs.unmount().expect("unmount");
    }
    drop(harness);
    let report = fslab_check::check(disk.as_ref(), &Options::default(), &mut |_| {}).expect("check runs");
    if !crash {
        assert!(report.is_clean(), "seed {seed:#x} left problems:\n{}", listing(&report));
        return;
    }
    // Files unlinked while the harness held them open are orphans after a
    // crash; nothing else may be wrong, and repair frees them.
    let others: Vec<_> =
        report.problems.iter().filter(|p| !matches!(p.fix, Some(Fix::FreeOrphan { .. }))).cloned().collect();
    assert!(others.is_empty(), "seed {seed:#x} (crash) left problems:\n{}", listing(&report));
    let outcome =
        fslab_check::fsck(disk.clone(), &Options { repair: true, ..Options::default() }, &mut |_| {})
            .expect("fsck runs");
    assert!(outcome.last.is_clean(), "seed {seed:#x}: after repair:\n{}", listing(&outcome.last));
}

#[test]
fn random_workloads_leave_a_clean_image() {
    for i in 0..env_or("FSLAB_FSCK_SEEDS", 4) {
        workload(0xf5c0 + i, 400, false);
    }
}

#[test]
fn random_workloads_then_a_crash_after_sync_leave_a_clean_checkpoint() {
    for i in 0..env_or("FSLAB_FSCK_SEEDS", 4) {
        workload(0xc4a5 + i, 400, true);
    }
}
