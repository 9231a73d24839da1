//! Sensitivity runs through the runner: a configuration file that sets an
//! experiment's own values changes nothing, one that speeds the disk or
//! the machine moves the results the way it should, and a run with one
//! says so in its results file and its report.

use fslab_bench::config::Config;
use fslab_bench::experiment::{by_id, Experiment};
use fslab_bench::results::Results;
use fslab_bench::runner::{run, Settings};
use std::path::Path;

fn config(text: &str) -> Config {
    Config::parse(text, Path::new("sens.toml")).expect("a valid file")
}

fn quick(config: Option<Config>) -> Settings {
    Settings { quick: true, drop_kernel_caches: false, config, ..Settings::default() }
}

fn experiment(id: &str) -> Vec<&'static Experiment> {
    vec![by_id(id).expect("a known experiment")]
}

/// The value of `system`'s `phase` at the largest x it measured.
fn last(r: &Results, experiment: &str, system: &str, phase: &str, metric: &str) -> f64 {
    r.series(experiment, system, phase, metric).last().map(|p| p.1).expect("a measured point")
}

#[test]
fn a_file_of_the_experiments_own_values_gives_the_points_of_no_file() {
    let e = experiment("s93-bandwidth");
    let base = run(&e, &quick(None));
    assert!(base.runs.iter().all(|r| r.config.is_none()), "no file, no record");
    let own = config(
        "[disk]\nrpm = 4002\nseek_scale = 1\noverhead_scale = 1\nbus_bytes_per_s = 1_600_000\n\
         [machine]\nmips = 11\ncopy_bytes_per_s = 12e6\nbuffers = 800",
    );
    let same = run(&e, &quick(Some(own)));
    assert!(!base.points.is_empty());
    assert_eq!(same.points, base.points, "the overriding path itself changes nothing");
    let record = same.runs[0].config.as_ref().expect("the run records its file");
    assert_eq!(record.overrides.len(), 7);
}

#[test]
fn a_faster_disk_speeds_the_disk_bound_phases_and_a_faster_machine_the_cpu_bound_ones() {
    let e = experiment("s93-bandwidth");
    let base = run(&e, &quick(None));
    let fast =
        run(&e, &quick(Some(config("[disk]\nrpm = 8004\nseek_scale = 0.5\nbus_bytes_per_s = 3_200_000"))));
    for system in ["raw", "lfs", "ffs"] {
        for phase in ["write", "read"] {
            let (was, now) =
                (last(&base, e[0].id, system, phase, "MB/s"), last(&fast, e[0].id, system, phase, "MB/s"));
            assert!(now > was * 1.1, "{system} {phase}: {was} -> {now} MB/s");
        }
    }
    let e = experiment("s95-small-files");
    let base = run(&e, &quick(None));
    let fast = run(&e, &quick(Some(config("[machine]\nmips = 100\ncopy_bytes_per_s = 40e6"))));
    let created = |r: &Results| r.series(e[0].id, "lfs", "create", "files/s")[0].1;
    assert!(created(&fast) > created(&base) * 1.2, "{} -> {} files/s", created(&base), created(&fast));
}

#[test]
fn a_sensitivity_run_says_so_in_its_results_file_and_its_report() {
    let e = experiment("s93-bandwidth");
    let r = run(&e, &quick(Some(config("[disk]\nseek_scale = 0.5"))));
    let record = r.run(e[0].id).and_then(|run| run.config.clone()).expect("recorded");
    assert_eq!(record.path, "sens.toml");
    assert_eq!(record.describe(), "disk.seek_scale = 0.5");

    let dir = tempfile::tempdir().expect("tempdir");
    r.save(dir.path()).expect("save");
    let json = std::fs::read_to_string(dir.path().join("results.json")).expect("json");
    assert!(json.starts_with("{\n  \"version\": 3,"), "a reader of version 2 must refuse it");
    assert!(json.contains("\"key\": \"disk.seek_scale\""), "{json}");
    assert_eq!(Results::load(dir.path()).expect("load"), r);

    let report = fslab_bench::report::markdown(&r, false);
    assert!(report.contains("**Sensitivity runs.**"), "the banner above the claims");
    assert!(report.contains("* `s93-bandwidth`: disk.seek_scale = 0.5 (`sens.toml`)"), "{report}");
    assert!(report.contains("**Sensitivity run**: parameters from `sens.toml`"), "the experiment's section");
    assert!(report.contains("| s93-bandwidth (*overridden*) |"), "each check reading it is marked");
    assert!(report.contains("; reads overridden s93-bandwidth |"), "and each claim");

    let plain = fslab_bench::report::markdown(&run(&e, &quick(None)), false);
    assert!(!plain.contains("ensitivity") && !plain.contains("overridden"), "nothing of it without a file");
}
