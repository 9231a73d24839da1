//! The 1997 paper's hot files (§5.2): which files an aging run leaves as
//! "modified during the last month", in the order its benchmark reads
//! them; and the realloc experiment (`ss97-realloc`) in its small
//! configuration.

use disk::{BlockDevice, MemDisk, VirtualClock};
use fslab::ffs::{DirPref, Ffs};
use fslab::time::TimeSource;
use fslab_bench::aging::run::{hot_files, most_recent, run, LiveFile, RunOptions};
use fslab_bench::aging::trace::TraceReader;
use fslab_bench::claims::{claim_verdict, evaluate, Verdict, CLAIMS};
use fslab_bench::cpu::CpuModel;
use fslab_bench::experiment::by_id;
use fslab_bench::runner::{self, Settings};
use fslab_bench::system::{FfsParams, Integrity, Rotdelay};
use fslab_bench::target::library::{Library, MountEnv};
use fslab_bench::target::Target;
use std::sync::Arc;

fn live(path: &str, size: u64, modified: u64) -> LiveFile {
    LiveFile { path: path.into(), size, modified }
}

/// Only files changed at or after the cut are hot, and they come sorted
/// by directory, then by name: a directory's files together, whatever
/// their paths' byte order across directories.
#[test]
fn hot_files_are_those_modified_since_the_cut_sorted_by_directory() {
    let all = [
        live("b/old", 10, 99),
        live("b/x", 10, 100),
        live("a/z", 20, 150),
        live("a/b/c", 30, 100),
        live("top", 40, 500),
        live("a/y", 50, 120),
        live("a/b/old", 60, 0),
    ];
    let hot = hot_files(&all, 100);
    let paths: Vec<&str> = hot.iter().map(|f| f.path.as_str()).collect();
    // "a" < "a/b" < "b": a/y and a/z before a/b/c, though "a/b/c" < "a/y"
    // as paths; the top directory's file first.
    assert_eq!(paths, ["top", "a/y", "a/z", "a/b/c", "b/x"]);
    assert_eq!(hot[1], live("a/y", 50, 120), "sizes and times carried over");
    assert!(hot_files(&all, 501).is_empty());
    assert_eq!(hot_files(&all, 0).len(), all.len());
}

/// By share: the most recently modified files, ties at the last one
/// chosen included, in the same order; never none of a non-empty set.
#[test]
fn the_most_recent_share_is_the_youngest_files_ties_included() {
    let all =
        [live("b/x", 1, 100), live("a/z", 1, 150), live("top", 1, 500), live("a/y", 1, 100), live("c", 1, 7)];
    let paths = |files: Vec<LiveFile>| files.into_iter().map(|f| f.path).collect::<Vec<_>>();
    assert_eq!(paths(most_recent(&all, 0.4)), ["top", "a/z"], "two of five");
    assert_eq!(paths(most_recent(&all, 0.6)), ["top", "a/y", "a/z", "b/x"], "the third ties with the fourth");
    assert_eq!(paths(most_recent(&all, 0.0)), ["top"], "at least one");
    assert_eq!(most_recent(&all, 1.0).len(), 5);
    assert!(most_recent(&[], 0.5).is_empty());
}

/// What a run leaves: each live file's size and when its contents last
/// changed. A create, an append, an overwrite and a truncate change it;
/// a rename carries it to the new name; an unlinked file is gone.
#[test]
fn the_runner_knows_when_each_live_file_last_changed() {
    let trace = "fslab-age-trace 1\n\
                 0 mkdir d\n\
                 10 create d/a 5000\n\
                 20 create d/b 3000\n\
                 30 create d/c 100\n\
                 40 create e 7000\n\
                 50 append d/a 1000\n\
                 60 rename d/b d/renamed\n\
                 70 unlink d/c\n\
                 80 truncate e 2000\n\
                 90 overwrite d/renamed 4000\n\
                 95 rename d/renamed moved\n";
    let dev: Arc<dyn BlockDevice> = Arc::new(MemDisk::new(32 << 20));
    let clock = Arc::new(VirtualClock::new());
    let params = FfsParams {
        block_size: 8192,
        fragment_size: 1024,
        maxcontig: 7,
        rotdelay: Rotdelay::Blocks(0),
        integrity: Integrity::Async,
        dirhash: true,
        group_bytes: None,
        realloc: true,
        dirpref: DirPref::Old,
    };
    let env = MountEnv {
        clock: TimeSource::virtual_clock(clock.clone()),
        deterministic: true,
        cache_bytes: 4 << 20,
    };
    let library = Library::<Ffs>::make(dev, None, None, params, env).expect("mkfs and mount");
    let mut target = Target::on_virtual_time(Box::new(library), clock.clone(), CpuModel::off());
    let mut source = TraceReader::new(trace.as_bytes());
    let options = RunOptions {
        max_ops: None,
        clock: Some(clock.as_ref()),
        record: None,
        on_op: &mut |_, _| {},
        on_day: &mut |_| {},
        placement: fslab_bench::aging::run::Placement::Namespace,
        stop: None,
    };
    let summary = run(&mut target, &mut source, options).expect("run");
    assert_eq!(target.stat("moved").expect("stat"), Some(4000));
    target.finish().expect("unmount");
    assert_eq!(summary.live, vec![live("d/a", 6000, 50), live("e", 2000, 80), live("moved", 4000, 90)]);
    let hot: Vec<String> = hot_files(&summary.live, 60).into_iter().map(|f| f.path).collect();
    assert_eq!(hot, ["e", "moved"], "d/a last changed at 50");
}

/// The experiment ages both systems from the same seed, then benchmarks
/// the same hot files on each; realloc lays files out better, and claim
/// 5's checks all evaluate on what it recorded.
#[test]
fn the_realloc_experiment_runs_small_and_claim_5_reads_it() {
    let e = by_id("ss97-realloc").expect("the experiment");
    let settings = Settings { quick: true, ..Settings::default() };
    let r = runner::run(&[e], &settings);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    let value = |system: &str, phase: &str, metric: &str| {
        r.value(e.id, system, phase, metric, 0.0).unwrap_or_else(|| panic!("{system} {phase} {metric}"))
    };
    let files = value("ffs97", "hot", "files");
    assert!(files > 0.0, "some files are hot");
    assert_eq!(files, value("ffs97-realloc", "hot", "files"), "the same stream, the same hot files");
    assert_eq!(value("ffs97", "hot", "MB"), value("ffs97-realloc", "hot", "MB"));
    assert_eq!(value("ffs97", "recent", "files"), value("ffs97-realloc", "recent", "files"));
    assert!(value("ffs97", "recent", "files") <= files);
    for system in ["ffs97", "ffs97-realloc"] {
        for phase in ["hot-read", "hot-write", "recent-read", "recent-write"] {
            assert!(value(system, phase, "MB/s") > 0.0, "{system} {phase}");
        }
        let days = r.series(e.id, system, "aging", "score");
        assert!(days.len() >= 3, "{system}: {days:?}");
        let sizes = r.series(e.id, system, "read", "MB/s");
        assert_eq!(sizes.len(), 4, "{system}: every size read");
        assert_eq!(r.series(e.id, system, "seq-layout", "score").len(), 4, "{system}: every size scored");
    }
    let end = |system: &str| r.series(e.id, system, "aging", "score").last().map(|p| p.1).unwrap_or(0.0);
    assert!(end("ffs97-realloc") > end("ffs97") + 0.1, "{} against {}", end("ffs97-realloc"), end("ffs97"));
    assert!(value("ffs97-realloc", "hot", "score") > value("ffs97", "hot", "score"));
    let claim = CLAIMS.iter().find(|c| c.number == 5).expect("claim 5");
    for check in claim.checks {
        let outcome = evaluate(check, &r);
        assert!(
            matches!(outcome.verdict, Verdict::Reproduced | Verdict::NotReproduced),
            "{}: {:?}",
            check.text,
            outcome
        );
    }
    assert!(!claim_verdict(claim, &r).partial);
}
