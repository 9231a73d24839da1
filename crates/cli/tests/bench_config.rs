//! `fslab bench run --config`: a bad file is one line naming the file, the
//! key and why, and runs nothing; a key no chosen experiment uses is
//! refused; a good file runs, and the results and the report say what it
//! changed.

mod common;

use common::fslab_run;
use std::time::Duration;

const T: Duration = Duration::from_secs(120);

#[test]
fn a_bad_file_is_refused_naming_its_key_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    let file = dir.path().join("sens.toml");
    let file_arg = file.to_str().expect("utf-8 path");
    for (text, why) in [
        ("[disk]\nrpm = 0\n", "sens.toml: disk.rpm: 0 is out of range"),
        ("[disk]\nspeed = 2\n", "sens.toml: disk.speed: unknown key"),
        ("[machine]\nmips = \"fast\"\n", "sens.toml: machine.mips: invalid type"),
        ("[machine]\nbuffers = 4\n", "sens.toml: machine.buffers: 4 is out of range"),
        ("[disk\n", "sens.toml: not valid TOML"),
        ("[disk.log]\nrpm = 7200\n", "sens.toml: disk.log.rpm would change nothing in s95-large-file"),
    ] {
        std::fs::write(&file, text).expect("write");
        let r = fslab_run(
            &["bench", "run", "s95-large-file", "--quick", "--config", file_arg, "--out", out_arg],
            T,
        );
        assert_eq!(r.status.and_then(|s| s.code()), Some(1), "{text:?}: {}", r.describe());
        assert!(r.stderr.contains(why) && !r.stderr.contains("panicked"), "{text:?}: {}", r.describe());
        assert!(!out.exists(), "{text:?}: nothing is written");
    }
    let missing = dir.path().join("none.toml");
    let r = fslab_run(
        &["bench", "run", "s95-large-file", "--config", missing.to_str().expect("utf-8"), "--out", out_arg],
        T,
    );
    assert!(r.stderr.contains("none.toml: cannot be read"), "{}", r.describe());
    std::fs::write(&file, "[disk]\nrpm = 7200\n").expect("write");
    let r = fslab_run(
        &["bench", "run", "s95-large-file", "--disk", "mem", "--config", file_arg, "--out", out_arg],
        T,
    );
    assert!(
        r.stderr.contains("disk.rpm would change nothing"),
        "a memory disk has no spindle: {}",
        r.describe()
    );
    assert!(!out.exists());
}

#[test]
fn a_good_file_runs_and_its_changes_are_recorded_and_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("lab");
    let out_arg = out.to_str().expect("utf-8 path");
    let file = dir.path().join("sens.toml");
    std::fs::write(&file, "[disk]\nseek_scale = 0.5\n[machine]\nmips = 50\n").expect("write");
    let args = [
        "bench",
        "run",
        "s95-large-file",
        "--quick",
        "--config",
        file.to_str().expect("utf-8"),
        "--out",
        out_arg,
    ];
    let r = fslab_run(&args, T);
    assert!(r.success(), "{}", r.describe());
    assert!(
        r.stdout.contains("s95-large-file: disk.seek_scale = 0.5, machine.mips = 50.0 (was 25.0)"),
        "{}",
        r.describe()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results.json"))
            .expect("json");
    assert_eq!(json["version"], 3);
    let config = &json["runs"][0]["config"];
    assert!(config["path"].as_str().is_some_and(|p| p.ends_with("sens.toml")), "{config}");
    assert_eq!(config["overrides"][0]["key"], "disk.seek_scale");
    assert_eq!(config["overrides"][0]["value"], 0.5);
    assert_eq!(config["overrides"][1]["baseline"], 25.0);
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("**Sensitivity run**"), "the experiment's section says so");

    // The same experiment again without the file replaces the sensitivity
    // run; another beside it is marked in the report and on standard error.
    let plain = fslab_run(&["bench", "run", "s95-large-file", "--quick", "--out", out_arg], T);
    assert!(plain.success(), "{}", plain.describe());
    assert!(!std::fs::read_to_string(out.join("report.md")).expect("report").contains("ensitivity"));
    let r = fslab_run(&args.map(|a| if a == "s95-large-file" { "s95-small-files" } else { a }), T);
    assert!(r.success(), "{}", r.describe());
    assert!(r.stderr.contains("holds runs with --config overrides beside runs without"), "{}", r.describe());
}

#[test]
fn run_help_documents_the_file() {
    let r = fslab_run(&["bench", "run", "--help"], T);
    assert!(r.success(), "{}", r.describe());
    for words in ["--config <FILE>", "seek_scale = 0.5", "[machine]", "[disk.log]"] {
        assert!(r.stdout.contains(words), "{words}: {}", r.stdout);
    }
}
