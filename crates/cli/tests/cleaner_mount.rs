//! The cleaner in a real mount: a 48 MiB image filled to 80% and
//! overwritten in place until three times its size has been written never
//! fails a write, because the mount's cleaner makes room; `fslab stat`
//! shows what it did; `fslab clean` runs as its own process while files are
//! being written; and after a remount every file holds what was last
//! written to it. Bad cleaner options and directories that are no fslab
//! mount fail with one clear line.

mod common;

use common::{fslab_run, is_mounted, mkfs, Mode, Mount, Rng};
use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const IMAGE_BYTES: u64 = 48 << 20;
const FILE_BYTES: usize = 64 << 10;
const T: Duration = Duration::from_secs(60);

/// What file `seed` holds: every version of every file differs.
fn contents(seed: u64) -> Vec<u8> {
    Rng::new(seed).bytes(FILE_BYTES)
}

/// The file system's size as `df` reports it.
fn df_bytes(dir: &Path) -> u64 {
    let st = rustix::fs::statvfs(dir).unwrap_or_else(|e| panic!("statvfs {}: {e}", dir.display()));
    st.f_blocks * st.f_frsize
}

fn name(i: usize) -> String {
    format!("f{i:04}")
}

/// Checks every file against the seed of its last write.
fn verify(dir: &Path, seeds: &[u64], when: &str) {
    for (i, &seed) in seeds.iter().enumerate() {
        let got = fs::read(dir.join(name(i))).unwrap_or_else(|e| panic!("{when}: read {}: {e}", name(i)));
        assert!(got == contents(seed), "{when}: {} does not hold version {seed}", name(i));
    }
}

/// The first number on the line of `text` that starts with `label`.
fn figure(text: &str, label: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(label))?;
    line[label.len()..].split_whitespace().next()?.parse().ok()
}

#[test]
fn a_full_mount_overwritten_three_times_keeps_every_byte_while_cleaners_run() {
    if !common::fuse_or_skip() {
        return;
    }
    let start = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    let dir = tmp.path().join("mnt");
    mkfs(&image, "48M", &["--segment-size", "512K"]);
    // A small buffer cache, so that overwrites reach the log (and the
    // cleaner) instead of replacing dirty blocks in memory.
    let m = Mount::new(&image, &dir, Mode::Background, &["-o", "cache=8M"]);

    // Fill to 80% of what df reports.
    let files = (df_bytes(&m.dir) * 8 / 10) as usize / FILE_BYTES;
    assert!(files > 100, "df reports too little: {files} files fit");
    let mut seeds: Vec<u64> = (0..files as u64).collect();
    for (i, &seed) in seeds.iter().enumerate() {
        fs::write(m.dir.join(name(i)), contents(seed)).unwrap_or_else(|e| panic!("fill {}: {e}", name(i)));
    }

    // Overwrite files in place, chosen at random, until three times the
    // image has been written; two outside cleaners run meanwhile.
    let mut rng = Rng::new(0x5eed);
    let mut version = files as u64;
    let mut written = (files * FILE_BYTES) as u64;
    let mut cleaners = Vec::new();
    while written < 3 * IMAGE_BYTES {
        if cleaners.is_empty() && written > IMAGE_BYTES + IMAGE_BYTES / 2 {
            for args in [vec!["--passes", "2", "--policy", "greedy"], vec![]] {
                let dir = m.dir.clone();
                cleaners.push(std::thread::spawn(move || {
                    let mut all: Vec<&OsStr> = vec![OsStr::new("clean"), dir.as_os_str()];
                    all.extend(args.iter().map(OsStr::new));
                    (args.join(" "), fslab_run(&all, T))
                }));
            }
        }
        let i = rng.below(files as u64) as usize;
        version += 1;
        let mut f = OpenOptions::new()
            .write(true)
            .open(m.dir.join(name(i)))
            .unwrap_or_else(|e| panic!("open {} after {written} bytes: {e}", name(i)));
        f.write_all(&contents(version))
            .unwrap_or_else(|e| panic!("overwrite {} after {written} bytes: {e}", name(i)));
        drop(f);
        seeds[i] = version;
        written += FILE_BYTES as u64;
    }
    for cleaner in cleaners {
        let (args, run) = cleaner.join().expect("cleaner thread");
        eprintln!("fslab clean {args}:\n{}", run.stdout);
        assert!(run.success(), "fslab clean {args} during writes: {}", run.describe());
        assert!(run.stdout.contains("pass") || run.stdout.contains("0 passes"), "{}", run.stdout);
        if args.contains("--passes") {
            assert!(run.stdout.contains("pass 2:"), "two passes reported: {}", run.stdout);
        }
    }

    let stat = fslab_run(&[OsStr::new("stat"), m.dir.as_os_str()], T);
    assert!(stat.success(), "fslab stat: {}", stat.describe());
    eprintln!("{}", stat.stdout);
    assert_eq!(
        stat.stdout.lines().find(|l| l.starts_with("cleaner policy")),
        Some("cleaner policy            hot-cold")
    );
    let cleaned = figure(&stat.stdout, "segments cleaned").expect("segments cleaned in the report");
    assert!(cleaned > 0.0, "the mount's cleaner cleaned:\n{}", stat.stdout);
    let cost = figure(&stat.stdout, "write cost").expect("write cost in the report");
    assert!(cost > 1.0, "cleaning costs something:\n{}", stat.stdout);
    verify(&m.dir, &seeds, "before unmount");
    let socket = fslab_control::find_socket(&m.dir).expect("find").expect("a control socket");
    m.unmount().expect("clean unmount");
    assert!(!socket.exists(), "{} removed when the mount ended", socket.display());

    let m = Mount::new(&image, &dir, Mode::Foreground, &["-o", "cleaner=off"]);
    verify(&m.dir, &seeds, "after remount");
    let stat = fslab_run(&[OsStr::new("stat"), m.dir.as_os_str()], T);
    assert!(stat.success(), "fslab stat: {}", stat.describe());
    assert!(stat.stdout.contains("cleaner policy            off"), "{}", stat.stdout);
    m.unmount().expect("clean unmount");
    eprintln!("{} files, {} MiB written, {:.1}s", files, written >> 20, start.elapsed().as_secs_f64());
}

#[test]
fn a_bad_cleaner_option_and_a_directory_that_is_no_mount_fail_in_one_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    let dir = tmp.path().join("mnt");
    mkfs(&image, "48M", &["--segment-size", "512K"]);
    fs::create_dir(&dir).expect("mkdir");

    let r = fslab_run(
        &[
            OsStr::new("mount"),
            image.as_os_str(),
            dir.as_os_str(),
            OsStr::new("-o"),
            OsStr::new("cleaner=nonsense"),
        ],
        T,
    );
    assert!(!r.success(), "{}", r.describe());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.describe());
    assert!(
        r.stderr.contains("unknown policy 'nonsense'") && r.stderr.contains("hot-cold"),
        "{}",
        r.describe()
    );
    assert!(!is_mounted(&dir), "nothing mounted");

    for command in ["clean", "stat"] {
        let r = fslab_run(&[OsStr::new(command), dir.as_os_str()], T);
        assert!(!r.success(), "{}", r.describe());
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.describe());
        assert!(r.stderr.contains("is not an fslab mount"), "{}", r.describe());
        assert!(r.stdout.is_empty(), "{}", r.describe());
    }
    let r = fslab_run(&[OsStr::new("clean"), dir.as_os_str(), OsStr::new("--policy"), OsStr::new("fifo")], T);
    assert!(!r.success() && r.stderr.contains("unknown policy 'fifo'"), "{}", r.describe());
    let r = fslab_run(&[OsStr::new("clean"), tmp.path().join("missing").as_os_str()], T);
    assert!(!r.success() && r.stderr.lines().count() == 1, "{}", r.describe());
}

/// `fslab clean` on a disk full of live data (nothing dead to compact)
/// cannot reach the high-water mark: it says why. Where the writes stopped
/// decides the rest: with the clean segments at or above the low-water
/// mark it ends with status 0, below it (how far the last partial segments
/// reached depends on when write-behind ran) with status 1, saying why
/// either way; with a count of passes, always 0.
#[test]
fn fslab_clean_that_can_clean_nothing_says_why() {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    mkfs(&image, "32M", &["--segment-size", "256K"]);
    let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, &["-o", "cleaner=off"]);
    let block = vec![7u8; 64 << 10];
    let mut f = fs::File::create(m.dir.join("full")).expect("create");
    while f.write_all(&block).is_ok() {}
    drop(f);
    let dir = m.dir.as_os_str();
    // The first runs may still compact what little the writes left dead
    // (a file's indirect blocks rewritten); then nothing is left to gain.
    let mut runs = Vec::new();
    let said = (0..6).any(|_| {
        let r = fslab_run(&[OsStr::new("clean"), dir], T);
        let why = r.stderr.contains("could not clean: no segment is worth cleaning");
        assert!(r.success() || why, "{}", r.describe());
        runs.push(r.stdout);
        why
    });
    assert!(said, "fslab clean never said why it cleaned nothing: {runs:?}");
    let r = fslab_run(&[OsStr::new("clean"), dir, OsStr::new("--passes"), OsStr::new("1")], T);
    assert!(r.success(), "{}", r.describe());
    assert!(r.stderr.contains("could not clean"), "{}", r.describe());
    m.unmount().expect("unmount");
}

/// A read-only mount cleans nothing: what `fslab clean` moved would only
/// pile up in the daemon's memory over the image. It fails, saying why.
#[test]
fn fslab_clean_on_a_read_only_mount_is_refused() {
    if !common::fuse_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("fs.img");
    mkfs(&image, "32M", &["--segment-size", "256K"]);
    {
        let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, &["-o", "cleaner=off"]);
        for i in 0..64 {
            fs::write(m.dir.join(format!("f{i}")), vec![i as u8; 64 << 10]).expect("write");
        }
        for i in (0..64).step_by(2) {
            fs::remove_file(m.dir.join(format!("f{i}"))).expect("remove");
        }
        m.unmount().expect("unmount");
    }
    let before = fs::read(&image).expect("read the image");
    let m = Mount::new(&image, &tmp.path().join("mnt"), Mode::Foreground, &["-o", "ro"]);
    let r = fslab_run(&[OsStr::new("clean"), m.dir.as_os_str(), OsStr::new("--passes"), OsStr::new("1")], T);
    assert!(!r.success(), "{}", r.describe());
    assert!(r.stderr.contains("read-only"), "{}", r.describe());
    m.unmount().expect("unmount");
    assert!(fs::read(&image).expect("read the image") == before, "a read-only mount changed the image");
}
