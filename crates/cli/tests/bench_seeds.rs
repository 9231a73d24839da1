//! `fslab bench run --seeds`: a bad list is one clear line and no run; a
//! good one runs each experiment once per seed into one results file.

mod common;

use common::fslab_run;
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

#[test]
fn a_bad_seed_list_is_refused_with_its_reason_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    for (seeds, why) in [
        ("5..1", "the range ends before it starts"),
        ("1,x", "`x` is not a seed"),
        ("1..3,3", "seed 3 is named twice"),
        ("1..100000", "more than 1000 seeds"),
    ] {
        let r = fslab_run(&["bench", "run", "s95-large-file", "--seeds", seeds, "--out", out_arg], T);
        assert_eq!(r.status.and_then(|s| s.code()), Some(1), "--seeds {seeds}: {}", r.describe());
        assert!(
            r.stderr.contains(why) && !r.stderr.contains("panicked"),
            "--seeds {seeds}: {}",
            r.describe()
        );
        assert!(!out.exists(), "--seeds {seeds}: nothing is written");
    }
}

#[test]
fn several_seeds_run_each_experiment_once_per_seed_into_one_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    let r = fslab_run(&["bench", "run", "s95-large-file", "--quick", "--seeds", "1..3", "--out", out_arg], T);
    assert!(r.success(), "{}", r.describe());
    let csv = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    for seed in 1..=3 {
        assert!(csv.lines().any(|l| l.ends_with(&format!(",{seed}"))), "seed {seed} in results.csv");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("seeds 1–3, small configuration (--quick)"), "the run line names the seeds");
}
