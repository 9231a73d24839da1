//! The lab end to end, in its small configuration: every experiment on the
//! papers' simulated disks and in a plain directory, runs that repeat to
//! the nanosecond, and failures that are reported rather than fatal.

use fslab_bench::device::Medium;
use fslab_bench::experiment::{by_id, Experiment, EXPERIMENTS};
use fslab_bench::results::{Point, Results};
use fslab_bench::runner::{run, Place, RealDir, Settings};

fn quick(place: Place, seed: u64) -> Settings {
    Settings { seed, quick: true, place, drop_kernel_caches: false, ..Settings::default() }
}

fn experiments(ids: &[&str]) -> Vec<&'static Experiment> {
    ids.iter().map(|id| by_id(id).expect("a known experiment")).collect()
}

fn failures(r: &Results) -> Vec<String> {
    r.skipped
        .iter()
        .filter(|s| !s.not_yet)
        .map(|s| format!("{} {}: {}", s.experiment, s.system, s.reason))
        .collect()
}

/// The points `system` measured in `experiment`.
fn points_of(r: &Results, experiment: &str, system: &str) -> Vec<Point> {
    r.points.iter().filter(|p| p.experiment == experiment && p.system == system).cloned().collect()
}

/// Every experiment on a simulated disk runs on its virtual clock and
/// repeats to the nanosecond, for every system it compares: no host time,
/// thread timing or hash order may reach a measured time. Each runs in its
/// small configuration (--quick: the same code paths, fewer files), the
/// whole set three times in under half a minute of release build. Another
/// seed must move the results, or equality would prove nothing.
#[test]
fn every_experiment_on_virtual_time_repeats_exactly_for_every_system() {
    let all: Vec<&'static Experiment> = EXPERIMENTS.iter().collect();
    let first = run(&all, &quick(Place::Paper, 1));
    assert!(failures(&first).is_empty(), "{:?}", failures(&first));
    let second = run(&all, &quick(Place::Paper, 1));
    let other = run(&all, &quick(Place::Paper, 2));
    for e in EXPERIMENTS {
        let info = first.run(e.id).expect("run info");
        // Only a memory disk has no clock of its own (claim 7's per-call
        // costs are host time by design).
        let on_memory = e.disk == "mem";
        assert_eq!(info.clock, if on_memory { "wall" } else { "virtual" }, "{}", e.id);
        if on_memory {
            continue;
        }
        let mut compared = 0;
        for system in e.systems.iter().copied() {
            if first.skipped(e.id, system).is_some_and(|s| s.not_yet) {
                continue;
            }
            let measured = points_of(&first, e.id, system);
            assert!(!measured.is_empty(), "{}: {system} measured nothing", e.id);
            assert_eq!(measured, points_of(&second, e.id, system), "{}: {system} did not repeat", e.id);
            compared += 1;
        }
        assert!(compared > 0, "{}: no system to compare", e.id);
    }
    assert_ne!(first.points, other.points, "another seed changed nothing");
}

#[test]
fn every_experiment_runs_small_on_the_papers_disks() {
    let all: Vec<&'static Experiment> = EXPERIMENTS.iter().collect();
    let r = run(&all, &quick(Place::Paper, 1));
    assert!(failures(&r).is_empty(), "{:?}", failures(&r));
    for e in EXPERIMENTS {
        let ran = r.systems(e.id);
        for name in e.systems.iter().copied() {
            match r.skipped(e.id, name) {
                Some(s) => {
                    assert!(s.not_yet && s.reason.starts_with("not yet"), "{}: {name}: {}", e.id, s.reason)
                }
                None => assert!(ran.iter().any(|s| s == name), "{}: {name} recorded nothing", e.id),
            }
        }
    }
    assert!(r.systems("dm02-dirops").iter().any(|s| s == "lfs-linear"), "dirhash off runs (dirhash=off)");
    // Every group of creates has the reference beside it, and their ratio.
    for system in ["lfs", "lfs-linear"] {
        let creates = r.series("dm02-dirops", system, "create", "us/op");
        let reference = r.series("dm02-dirops", system, "create-ref", "us/op");
        let relative = r.series("dm02-dirops", system, "create-relative", "x");
        assert!(
            !creates.is_empty() && creates.len() == reference.len(),
            "{system}: {creates:?} {reference:?}"
        );
        for (((x, c), (rx, rc)), (qx, q)) in creates.iter().zip(&reference).zip(&relative) {
            assert!(x == rx && x == qx, "{system}: reference timed at another size");
            assert!((c / rc - q).abs() < 1e-9 * q.abs().max(1.0), "{system} at {x}: {c} / {rc} is not {q}");
        }
    }
    // The buildworld lattice is fitted in every phase: its model predicts
    // every cell exactly, so all on is the sum of the terms.
    for phase in ["checkout", "build", "grep", "remove", "total"] {
        let at = |system: &str, metric: &str| r.value("dm02-buildworld", system, phase, metric, 0.0);
        let terms = ["DH", "DP", "DH:DP", "SU", "DH:SU", "DP:SU", "DH:DP:SU"];
        let sum: f64 = terms.iter().map(|t| at(t, "coef %").expect("a coefficient")).sum();
        let all_on = at("ffs-softdep-dirpref", "% base").expect("% of the base");
        assert!((100.0 + sum - all_on).abs() < 1e-6, "{phase}: 100 + {sum} against {all_on}");
    }
    // A few shapes any LFS must show.
    let large = r.series("s93-bandwidth", "lfs", "read", "MB/s");
    assert!(large.len() >= 2 && large[large.len() - 1].1 > large[0].1, "bigger reads go faster: {large:?}");
    let tps = r.value("s95-tpcb", "lfs", "no-cleaning", "TPS", 50.0).expect("TPS at 50%");
    assert!(tps > 10.0 && tps < 200.0, "{tps} TPS");
    // TPC-B: one partition, other data bringing it to each utilization;
    // FFS overwrites the same blocks at every one (1995 §4: FFS is flat).
    for system in ["lfs", "ffs-4k"] {
        for u in [50.0, 80.0] {
            let at = r.value("s95-tpcb", system, "load", "utilization%", u).expect("utilization");
            assert!((u..u + 3.0).contains(&at), "{system} filled to {at}% for {u}%");
        }
    }
    let ffs = |u| r.value("s95-tpcb", "ffs-4k", "no-cleaning", "TPS", u).expect("FFS TPS");
    assert!(
        (ffs(80.0) / ffs(50.0) - 1.0).abs() < 0.02,
        "FFS at 50% and 80%: {} and {}",
        ffs(50.0),
        ffs(80.0)
    );
}

#[test]
fn every_workload_runs_in_a_plain_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let place = Place::Real(vec![RealDir { name: "tmp".into(), path: dir.path().to_path_buf() }]);
    let all: Vec<&'static Experiment> = EXPERIMENTS.iter().collect();
    let r = run(&all, &quick(place, 1));
    assert!(failures(&r).is_empty(), "{:?}", failures(&r));
    for e in EXPERIMENTS {
        assert_eq!(r.systems(e.id), vec!["tmp".to_string()], "{}", e.id);
        let info = r.run(e.id).expect("run info");
        assert_eq!((info.clock.as_str(), info.disk.as_str()), ("wall", "real"));
    }
    assert!(
        std::fs::read_dir(dir.path()).expect("list").next().is_none(),
        "the runs cleaned up after themselves"
    );
}

#[test]
fn a_system_that_fails_is_reported_and_the_rest_still_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"x").expect("write");
    let place = Place::Real(vec![
        RealDir { name: "broken".into(), path: not_a_dir },
        RealDir { name: "tmp".into(), path: dir.path().to_path_buf() },
    ]);
    let r = run(&experiments(&["s95-small-files"]), &quick(place, 1));
    let broken = r.skipped("s95-small-files", "broken").expect("the failure is recorded");
    assert!(!broken.not_yet && broken.reason.starts_with("failed"), "{}", broken.reason);
    assert!(r.value("s95-small-files", "tmp", "create", "files/s", 0.0).is_some());
}

#[test]
fn the_library_runs_on_wall_time_on_a_memory_disk() {
    let r = run(&experiments(&["s95-small-files"]), &quick(Place::Medium(Medium::Memory), 1));
    assert!(failures(&r).is_empty(), "{:?}", failures(&r));
    let info = r.run("s95-small-files").expect("run info");
    assert_eq!((info.clock.as_str(), info.cpu_model.as_str()), ("wall", "off"));
    assert!(r.value("s95-small-files", "lfs", "delete", "files/s", 0.0).is_some_and(|v| v > 0.0));
}
