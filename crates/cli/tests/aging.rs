//! `fslab layout` and `fslab age` on image files: exact scores of files
//! placed on purpose, refusals of what is not FFS, and a small aging run.

mod common;

use common::{fslab_run, mkfs};
use disk::{BlockDevice, FileDisk};
use fslab::ffs::{Ffs, MountOptions};
use fslab::format::inode::kind;
use fslab::format::ROOT_INO;
use fslab::time::TimeSource;
use fslab::ufs::{Creds, FileSystem};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);
const BLOCK: usize = 8192;

/// On a fresh FFS image: a file of six blocks and a 3000-byte tail written
/// alone (one run: 6 of 6), and two files of six blocks written a block at
/// a time in turn (interleaved: 0 of 5 each).
fn write_placed_files(image: &Path) {
    let dev: Arc<dyn BlockDevice> = Arc::new(FileDisk::open(image).expect("open"));
    let mut fs =
        FileSystem::new(Ffs::mount(dev, MountOptions::deterministic(TimeSource::wall())).expect("mount"));
    let creds = Creds { uid: 0, gid: 0 };
    let create = |fs: &mut FileSystem<Ffs>, name: &str| {
        fs.mknod(ROOT_INO, name.as_bytes(), kind::REG | 0o644, 0, creds).expect("create").ino
    };
    let alone = create(&mut fs, "alone");
    fs.write(alone, 0, &vec![1u8; 6 * BLOCK + 3000]).expect("write");
    let (a, b) = (create(&mut fs, "a"), create(&mut fs, "b"));
    for i in 0..6u64 {
        for ino in [a, b] {
            fs.write(ino, i * BLOCK as u64, &vec![2u8; BLOCK]).expect("write");
        }
    }
    fs.unmount().expect("unmount");
}

#[test]
fn layout_prints_the_exact_score_of_files_placed_on_purpose() {
    let dir = tempfile::tempdir().expect("tempdir");
    let image = dir.path().join("ffs.img");
    // Without realloc, which would move each interleaved file's blocks
    // together (`layout_scores_files_written_in_turn_as_contiguous_with_realloc`).
    mkfs(&image, "64M", &["--layout", "ffs", "--realloc", "off"]);
    write_placed_files(&image);
    let r = fslab_run(&[os("layout"), image.as_os_str()], T);
    assert!(r.success(), "{}", r.describe());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.contains(&"regular files   3"), "{}", r.stdout);
    // 6 optimal of 6 + 5 + 5 counted; without the tail, 5 of 15.
    assert!(lines.contains(&"data+tail        0.3750             6/16  3"), "{}", r.stdout);
    assert!(lines.contains(&"data             0.3333             5/15  3"), "{}", r.stdout);
    assert!(lines.contains(&"  <=64K    0.3750             6/16  3"), "{}", r.stdout);
}

/// The same files on an image made with realloc (the default): the two
/// written in turn are moved to runs of their own as they grow, and every
/// block counted is optimal (the 1997 paper's point).
#[test]
fn layout_scores_files_written_in_turn_as_contiguous_with_realloc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let image = dir.path().join("ffs.img");
    mkfs(&image, "64M", &["--layout", "ffs", "--realloc", "on"]);
    write_placed_files(&image);
    let r = fslab_run(&[os("layout"), image.as_os_str()], T);
    assert!(r.success(), "{}", r.describe());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.contains(&"data+tail        1.0000            16/16  3"), "{}", r.stdout);
    assert!(lines.contains(&"data             1.0000            15/15  3"), "{}", r.stdout);
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn layout_refuses_lfs_an_unclean_image_and_what_is_no_file_system() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lfs = dir.path().join("lfs.img");
    mkfs(&lfs, "64M", &[]);
    let r = fslab_run(&[os("layout"), lfs.as_os_str()], T);
    assert!(!r.success(), "{}", r.describe());
    assert!(
        r.stderr.contains("an LFS image: the layout score is defined on FFS's placement"),
        "{}",
        r.describe()
    );
    let unclean = dir.path().join("unclean.img");
    mkfs(&unclean, "16M", &["--layout", "ffs"]);
    let dev: Arc<dyn BlockDevice> = Arc::new(FileDisk::open(&unclean).expect("open"));
    // Mounted and never unmounted: the image stays marked in use.
    std::mem::forget(Ffs::mount(dev, MountOptions::deterministic(TimeSource::wall())).expect("mount"));
    let r = fslab_run(&[os("layout"), unclean.as_os_str()], T);
    assert!(!r.success() && r.stderr.contains("not unmounted cleanly"), "{}", r.describe());
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![7u8; 1 << 20]).expect("write");
    let r = fslab_run(&[os("layout"), junk.as_os_str()], T);
    assert!(!r.success() && r.stderr.contains("not an fslab file system image"), "{}", r.describe());
}

fn results(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("results file")).expect("JSON")
}

fn ffs_image(dir: &Path, name: &str, size: &str) -> std::path::PathBuf {
    let image = dir.join(name);
    mkfs(&image, size, &["--layout", "ffs"]);
    image
}

/// A short run: a line per day with a score, a results file with every
/// day; its recorded trace replayed on a fresh image gives the same days
/// (the library on virtual time is deterministic).
#[test]
fn age_runs_days_and_a_recorded_trace_replays_to_the_same_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (ffs_image(dir.path(), "a.img", "32M"), ffs_image(dir.path(), "b.img", "32M"));
    let (trace, ra, rb) = (dir.path().join("t.trace"), dir.path().join("a.json"), dir.path().join("b.json"));
    let r = fslab_run(
        &[
            os("age"),
            a.as_os_str(),
            os("--days"),
            os("4"),
            os("--write-factor"),
            os("3"),
            os("--seed"),
            os("5"),
            os("--record"),
            trace.as_os_str(),
            os("--results"),
            ra.as_os_str(),
        ],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    assert!(r.stdout.contains("data+tail data+tail+ind"), "{}", r.stdout);
    assert!(r.stdout.contains("backoff  full%   run"), "{}", r.stdout);
    assert!(r.stdout.contains("longest free run by cylinder group at the end"), "{}", r.stdout);
    let first = results(&ra);
    assert_eq!((first["format"].as_str(), first["version"].as_u64()), (Some("fslab-age-results"), Some(3)));
    assert_eq!(first["placement"], "namespace", "the default placement");
    let days = first["days"].as_array().expect("days");
    assert_eq!(days.len(), 4, "{first}");
    for d in days {
        let s = d["score"]["data+tail"].as_f64().expect("a score each day");
        assert!((0.0..=1.0).contains(&s), "{d}");
        let share = d["free_space"]["full_cluster_share"].as_f64().expect("free space each day");
        assert!((0.0..=1.0).contains(&share), "{d}");
        assert!(d["cleaner"].is_null(), "{d}");
    }
    assert!(first["final_free_space_by_group"].as_array().is_some_and(|g| !g.is_empty()), "{first}");
    assert!(first["final_by_size"].as_array().is_some_and(|b| b.len() == 11));
    let text = std::fs::read_to_string(&trace).expect("trace");
    assert!(text.starts_with("fslab-age-trace 1\n# generator 1 seed=5 "), "{}", &text[..100]);

    let r = fslab_run(
        &[os("age"), b.as_os_str(), os("--trace"), trace.as_os_str(), os("--results"), rb.as_os_str()],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    assert_eq!(results(&rb)["days"], first["days"]);
}

/// Files larger than the file system can hold: each create that runs out
/// of space unlinks the largest earlier file and goes on; the run ends
/// well, and the recorded trace has each unlink before the create that
/// needed it.
#[test]
fn age_backs_off_on_enospc_and_never_aborts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let image = ffs_image(dir.path(), "small.img", "16M");
    let (trace, record, json) = (dir.path().join("in"), dir.path().join("out"), dir.path().join("r.json"));
    let mut text = String::from("fslab-age-trace 1\n0 mkdir d\n");
    for i in 0..6 {
        text.push_str(&format!("{} create d/f{i} {}\n", 10 + i, 5 << 20));
    }
    text.push_str("100 append d/f0 10\n200 unlink d/f5\n");
    std::fs::write(&trace, text).expect("trace");
    let r = fslab_run(
        &[
            os("age"),
            image.as_os_str(),
            os("--trace"),
            trace.as_os_str(),
            os("--record"),
            record.as_os_str(),
            os("--results"),
            json.as_os_str(),
        ],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    let day = &results(&json)["days"][0];
    let backoff = day["backoff_unlinks"].as_u64().expect("count");
    assert!(backoff >= 3, "{day}");
    assert_eq!(day["skipped"].as_u64(), Some(1), "the append to f0, gone: {day}");
    let recorded = std::fs::read_to_string(&record).expect("record");
    let lines: Vec<&str> = recorded.lines().collect();
    let unlink_f0 = lines.iter().position(|l| l.ends_with("unlink d/f0")).expect("f0 unlinked to make room");
    assert!(lines[unlink_f0 + 1..].iter().any(|l| l.contains(" create d/f")), "{recorded}");
    assert!(!recorded.contains("append d/f0"), "a skipped operation is not recorded: {recorded}");
}

#[test]
fn age_names_the_line_of_a_malformed_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let image = ffs_image(dir.path(), "a.img", "16M");
    let trace = dir.path().join("bad");
    std::fs::write(&trace, "fslab-age-trace 1\n0 mkdir d\n1 create d/x\n").expect("trace");
    let r = fslab_run(
        &[
            os("age"),
            image.as_os_str(),
            os("--trace"),
            trace.as_os_str(),
            os("--results"),
            dir.path().join("r").as_os_str(),
        ],
        T,
    );
    assert!(!r.success(), "{}", r.describe());
    assert!(r.stderr.contains("trace: line 3: missing size"), "{}", r.describe());
}

/// An LFS image ages with the cleaner chosen: each day its cleaner's
/// columns, no score and no free-space figures; an FFS image refuses a
/// cleaner; plots are written where asked.
#[test]
fn age_on_an_lfs_reports_the_cleaner_and_plots_the_write_cost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lfs = dir.path().join("lfs.img");
    mkfs(&lfs, "16M", &[]);
    let (json, plots) = (dir.path().join("r.json"), dir.path().join("plots"));
    let r = fslab_run(
        &[
            os("age"),
            lfs.as_os_str(),
            os("--days"),
            os("3"),
            os("--write-factor"),
            os("6"),
            os("--cleaner"),
            os("greedy"),
            os("--results"),
            json.as_os_str(),
            os("--plots"),
            plots.as_os_str(),
        ],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    assert!(
        r.stdout.contains("cleaner: greedy") && r.stdout.contains("cleaned    moved  wcost"),
        "{}",
        r.stdout
    );
    let out = results(&json);
    assert_eq!(out["cleaner_policy"], "greedy");
    assert!(out["cleaner_total"]["segments_cleaned"].as_u64().is_some_and(|n| n > 0), "{out}");
    for d in out["days"].as_array().expect("days") {
        assert!(d["score"].is_null() && d["free_space"].is_null(), "{d}");
        assert!(d["cleaner"]["blocks_moved"].as_u64().is_some(), "{d}");
    }
    let svg = std::fs::read_to_string(plots.join("write-cost.svg")).expect("the write cost plot");
    assert!(svg.starts_with("<svg") && svg.contains("greedy"), "{}", &svg[..svg.len().min(200)]);
    assert!(!plots.join("layout-score.svg").exists(), "no score, no plot");

    let ffs = ffs_image(dir.path(), "ffs.img", "16M");
    let r = fslab_run(&[os("age"), ffs.as_os_str(), os("--cleaner"), os("greedy")], T);
    assert!(!r.success() && r.stderr.contains("--cleaner is for an LFS image"), "{}", r.describe());
    let r = fslab_run(&[os("age"), lfs.as_os_str(), os("--cleaner"), os("tidy")], T);
    assert!(!r.success() && r.stderr.contains("one of greedy"), "{}", r.describe());
}

/// A directory is aged through ordinary file calls; its files stay; no
/// score is claimed.
#[test]
fn age_on_a_directory_reports_no_score_and_keeps_the_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("aged");
    std::fs::create_dir(&target).expect("mkdir");
    let json = dir.path().join("r.json");
    let r = fslab_run(
        &[
            os("age"),
            target.as_os_str(),
            os("--days"),
            os("2"),
            os("--ops"),
            os("300"),
            os("--results"),
            json.as_os_str(),
        ],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    assert!(
        r.stdout
            .contains("layout score, by-size scores and free-space fragmentation: n/a (not an fslab image;"),
        "{}",
        r.stdout
    );
    // The same columns as an image's, what a directory lacks said so.
    assert!(r.stdout.contains("backoff  full%   run"), "{}", r.stdout);
    let day0 = r.stdout.lines().find(|l| l.trim_start().starts_with("0 ")).expect("day 0's line");
    assert_eq!(day0.split_whitespace().rev().take(2).collect::<Vec<_>>(), ["n/a", "n/a"], "{day0}");
    assert!(r.stdout.contains("layout at the end (and by size): n/a (not an fslab image)"), "{}", r.stdout);
    assert!(
        r.stdout.contains("longest free run by cylinder group at the end: n/a (not an fslab image)"),
        "{}",
        r.stdout
    );
    let out = results(&json);
    assert_eq!(out["ops"].as_u64(), Some(300));
    assert!(out["days"][0]["score"].is_null());
    assert!(out["days"][0]["free_space"].is_null() && out["days"][0]["cleaner"].is_null());
    assert!(out["final_free_space_by_group"].is_null());
    assert!(std::fs::read_dir(target.join("d0")).is_ok(), "the aged tree stays");
}

/// `--placement 1997` and `--save-bitmaps` need cylinder groups: a
/// mounted directory and an LFS image refuse them in one line, before
/// anything is written; an unknown placement is named.
#[test]
fn age_refuses_the_1997_placement_where_there_are_no_cylinder_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("aged");
    std::fs::create_dir(&target).expect("mkdir");
    let lfs = dir.path().join("lfs.img");
    mkfs(&lfs, "16M", &[]);
    let json = dir.path().join("r.json");
    for (on, what) in [(&target, "a mounted directory"), (&lfs, "an LFS image has no cylinder groups")] {
        for (option, named) in
            [(["--placement", "1997"], "--placement 1997"), (["--save-bitmaps", "b.bin"], "--save-bitmaps")]
        {
            let mut args = vec![os("age"), on.as_os_str(), os("--results"), json.as_os_str()];
            args.extend(option.iter().map(|a| os(a)));
            let r = fslab_run(&args, T);
            assert!(!r.success(), "{}", r.describe());
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.describe());
            assert!(r.stderr.contains(&format!("{named} needs an FFS image")), "{}", r.describe());
            assert!(r.stderr.contains(what), "{}", r.describe());
        }
    }
    assert!(!json.exists(), "nothing written");
    assert_eq!(std::fs::read_dir(&target).expect("dir").count(), 0, "nothing made");
    let ffs = ffs_image(dir.path(), "ffs.img", "16M");
    let r = fslab_run(&[os("age"), ffs.as_os_str(), os("--placement"), os("2001")], T);
    assert!(!r.success() && r.stderr.contains("one of namespace, 1997"), "{}", r.describe());
}

/// The 1997 placement on an image: every group gets its directory, the
/// results and the recorded trace say which placement ran; every day has
/// its by-size scores, and the last day's are what `fslab layout` prints
/// for the unmounted image; the saved bitmaps are the image's groups'.
#[test]
fn age_with_the_1997_placement_scores_by_size_daily_and_saves_the_bitmaps() {
    use fslab_bench::aging::rebuild::{free_maps, SavedMaps};

    let dir = tempfile::tempdir().expect("tempdir");
    let image = dir.path().join("ffs.img");
    mkfs(&image, "64M", &["--layout", "ffs", "--cg-size", "8M"]);
    let (json, trace, bitmaps) =
        (dir.path().join("r.json"), dir.path().join("t"), dir.path().join("free.bin"));
    let r = fslab_run(
        &[
            os("age"),
            image.as_os_str(),
            os("--days"),
            os("3"),
            os("--write-factor"),
            os("2"),
            os("--placement"),
            os("1997"),
            os("--record"),
            trace.as_os_str(),
            os("--results"),
            json.as_os_str(),
            os("--save-bitmaps"),
            bitmaps.as_os_str(),
        ],
        T,
    );
    assert!(r.success(), "{}", r.describe());
    assert!(r.stdout.contains("placement 1997: 8 of 8 cylinder groups have a directory"), "{}", r.stdout);
    assert!(r.stdout.contains("free-space bitmaps: "), "{}", r.stdout);
    let out = results(&json);
    assert_eq!(out["placement"], "1997");
    let recorded = std::fs::read_to_string(&trace).expect("trace");
    assert!(recorded.lines().nth(2) == Some("# placement 1997"), "{}", &recorded[..200]);
    let days = out["days"].as_array().expect("days");
    assert_eq!(days.len(), 3);
    for d in days {
        assert_eq!(d["by_size"].as_array().map(Vec::len), Some(11), "{d}");
    }

    let layout = fslab_run(&[os("layout"), image.as_os_str()], T);
    assert!(layout.success(), "{}", layout.describe());
    let printed: Vec<&str> =
        layout.stdout.lines().skip_while(|l| *l != "by size (data+tail)").skip(1).collect();
    let last: Vec<String> = days[2]["by_size"]
        .as_array()
        .expect("buckets")
        .iter()
        .filter(|b| b["files"].as_u64() > Some(0))
        .map(|b| {
            let score = b["score"].as_f64().map_or("-".to_string(), |s| format!("{s:.4}"));
            format!(
                "  {:<8} {score:>6}  {:>15}  {}",
                b["bucket"].as_str().expect("a label"),
                format!("{}/{}", b["optimal"], b["counted"]),
                b["files"]
            )
        })
        .collect();
    assert!(!last.is_empty(), "{out}");
    assert_eq!(printed, last, "layout:\n{}", layout.stdout);

    let saved = SavedMaps::decode(&std::fs::read(&bitmaps).expect("bitmaps")).expect("a bitmaps file");
    let disk = FileDisk::open(&image).expect("open");
    assert_eq!(saved, SavedMaps::of(&free_maps(&disk).expect("the image's maps")));
    assert_eq!(saved.groups.len(), 8);
}

/// Ctrl-C in a long run stops it before the next operation and unmounts
/// the image as a finished run does: fsck finds it clean, where a killed
/// mount would have left it to `fsck --repair`.
#[test]
fn age_interrupted_leaves_an_image_fsck_calls_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let image = ffs_image(dir.path(), "a.img", "64M");
    let results = dir.path().join("r.json");
    let child = std::process::Command::new(common::fslab())
        .args([os("age"), image.as_os_str(), os("--days"), os("3000"), os("--results"), results.as_os_str()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn fslab age");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted after") && stderr.contains("unmounted cleanly"), "{stderr}");
    let r = fslab_run(&[os("fsck"), image.as_os_str()], T);
    assert!(r.success(), "fsck after an interrupted age: {}", r.describe());
}
