//! `fslab bench run --cpu-model`: on, off and paper are taken, anything else
//! is one clear line and no run, and a run records which it charged.

mod common;

use common::fslab_run;
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

#[test]
fn an_unknown_cpu_model_is_refused_naming_the_three_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    for word in ["fast", "PAPER", "1"] {
        let r = fslab_run(&["bench", "run", "s95-large-file", "--cpu-model", word, "--out", out_arg], T);
        assert_eq!(r.status.and_then(|s| s.code()), Some(2), "{word}: {}", r.describe());
        assert!(
            r.stderr.contains(&format!("invalid value '{word}' for '--cpu-model <on|off|paper>'"))
                && r.stderr.contains("[possible values: on, off, paper]")
                && r.stderr.lines().count() == 1,
            "{word}: {}",
            r.describe()
        );
        assert!(!out.exists(), "{word}: nothing is written");
    }
}

#[test]
fn a_paper_run_records_its_cpu_model_in_the_results_and_the_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    let r = fslab_run(
        &["bench", "run", "s95-large-file", "--quick", "--cpu-model", "paper", "--out", out_arg],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    assert!(
        json.contains("\"cpu_model\": \"sparcstation2\"") && json.contains("\"cpu_charges\": \"paper\""),
        "{json}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("CPU model `sparcstation2` with the papers' checksums (`--cpu-model paper`)"));
    assert!(!report.contains("mix CPU models"), "one experiment, one model");

    // Another experiment run with `on` into the same results: the report says they mix.
    let r = fslab_run(&["bench", "run", "s95-small-files", "--quick", "--out", out_arg], T);
    assert!(r.success(), "{}", r.describe());
    assert!(
        r.stdout.contains(
            "these results mix CPU models (--cpu-model): on (s95-small-files); paper (s95-large-file)"
        ),
        "{}",
        r.describe()
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(
        report.contains("**These results mix CPU models** (`--cpu-model`): `on` (s95-small-files); `paper` (s95-large-file)."),
        "{report}"
    );
}
