//! The lab end to end, in its small configuration: every experiment on the
//! papers' simulated disks and in a plain directory, runs that repeat to
//! the nanosecond, and failures that are reported rather than fatal.

use fslab_bench::device::Medium;
use fslab_bench::experiment::{by_id, Experiment, EXPERIMENTS};
use fslab_bench::results::Results;
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

/// Both layouts (FFS in both modes, with and without rotdelay) and the raw
/// device.
fn deterministic(seed: u64) -> Settings {
    let only = ["lfs", "lfs-256k", "lfs-nocleaner", "ffs", "ffs-m8r2", "ffs-async", "raw"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    Settings { only_systems: Some(only), ..quick(Place::Paper, seed) }
}

#[test]
fn the_same_seed_gives_the_same_virtual_times() {
    let chosen = experiments(&["s95-small-files", "s93-tpcb", "s93-bandwidth"]);
    let first = run(&chosen, &deterministic(5));
    assert!(failures(&first).is_empty(), "{:?}", failures(&first));
    assert!(first.points.len() > 20, "{} points", first.points.len());
    assert!(first.runs.iter().all(|r| r.clock == "virtual"));
    let second = run(&chosen, &deterministic(5));
    assert_eq!(first.points, second.points, "every time measured repeats exactly");
    let other = run(&chosen, &deterministic(6));
    assert_ne!(first.points, other.points, "another seed turns the platters to another phase");
}

#[test]
fn every_experiment_runs_small_on_the_papers_disks() {
    let all: Vec<&'static Experiment> = EXPERIMENTS.iter().collect();
    let r = run(&all, &quick(Place::Paper, 1));
    assert!(failures(&r).is_empty(), "{:?}", failures(&r));
    // Every experiment in virtual time, every system, repeats exactly: a
    // journal's records are the bytes each operation changed, timestamps
    // among them, so those too come from the virtual clock.
    let again = run(&all, &quick(Place::Paper, 1));
    let on_virtual_time = |e: &str| r.runs.iter().any(|run| run.experiment == e && run.clock == "virtual");
    let virtual_points = |r: &Results| -> Vec<_> {
        r.points.iter().filter(|p| on_virtual_time(&p.experiment)).cloned().collect()
    };
    let experiments_on_virtual_time = EXPERIMENTS.iter().filter(|e| on_virtual_time(e.id)).count();
    assert!(experiments_on_virtual_time >= 10, "{experiments_on_virtual_time} experiments on virtual time");
    assert_eq!(
        virtual_points(&r),
        virtual_points(&again),
        "every time measured in virtual time repeats exactly"
    );
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
