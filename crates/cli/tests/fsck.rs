//! `fslab fsck` on both layouts, through the binary: exit statuses as
//! e2fsck's (0 clean, 1 corrected, 4 left, 8 could not run), one line per
//! problem and repair, and an FFS image left by a crash marked clean only
//! once repaired. The LFS image comes from `fslab mkfs`; the FFS one from
//! the library (the command makes LFS images only).

mod common;

use common::{fslab_run, mkfs, Run};
use disk::{BlockDevice, FileDisk};
use fslab::format::ROOT_INO;
use fslab::ufs::{Creds, FileSystem};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(60);

fn fsck(image: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["fsck", image.to_str().expect("utf-8 path")];
    args.extend(extra);
    fslab_run(&args, T)
}

#[track_caller]
fn status(r: &Run) -> i32 {
    assert!(!r.timed_out, "timed out\n{}", r.describe());
    let code = r.status.and_then(|s| s.code()).unwrap_or(-1);
    assert!(!r.stdout.contains("panicked") && !r.stderr.contains("panicked"), "{}", r.describe());
    code
}

/// An FFS image in `path`, with a file in it, left as a power cut would
/// leave it (mounted, never unmounted).
fn crashed_ffs(path: &Path) {
    let file = std::fs::File::create(path).expect("create");
    file.set_len(16 << 20).expect("size");
    drop(file);
    let dev: Arc<dyn BlockDevice> = Arc::new(FileDisk::open(path).expect("open"));
    let options = fslab::ffs::MkfsOptions { group_size: 4 << 20, ..Default::default() };
    fslab::mkfs_ffs(dev.clone(), &options, Creds::default()).expect("mkfs");
    let ffs = fslab::ffs::Ffs::mount(dev, fslab::ffs::MountOptions::default()).expect("mount");
    let mut fs = FileSystem::new(ffs);
    let ino = fs.mknod(ROOT_INO, b"kept", 0o644, 0, Creds::default()).expect("create").ino;
    fs.write(ino, 0, b"written before the crash").expect("write");
    fs.fsync(ino, false).expect("fsync");
}

#[test]
fn fsck_checks_and_repairs_both_layouts_with_e2fsck_statuses() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let lfs = tmp.path().join("lfs.img");
    mkfs(&lfs, "16M", &[]);
    let r = fsck(&lfs, &["-v"]);
    assert_eq!(status(&r), 0, "{}", r.describe());
    assert!(r.stdout.contains("LFS, checkpoint"), "{}", r.describe());

    let ffs = tmp.path().join("ffs.img");
    crashed_ffs(&ffs);
    let r = fsck(&ffs, &["-n", "-v"]);
    assert_eq!(status(&r), 4, "a crashed FFS has stale groups\n{}", r.describe());
    assert!(r.stdout.contains("FFS (not unmounted cleanly)"), "{}", r.describe());
    assert!(r.stdout.contains("not unmounted cleanly: its cylinder groups"), "{}", r.describe());
    assert!(r.stdout.contains("leak: cylinder group 0: 1 inode in use is marked free"), "{}", r.describe());
    assert!(!r.stdout.contains("damage: "), "a crash leaves only leaks\n{}", r.describe());
    let r = fsck(&ffs, &["--repair"]);
    assert_eq!(status(&r), 1, "{}", r.describe());
    assert!(r.stdout.contains("repaired: cylinder groups and superblock totals rebuilt"), "{}", r.describe());
    let r = fsck(&ffs, &[]);
    assert_eq!(status(&r), 0, "{}", r.describe());
    assert!(r.stdout.contains("clean: 2 inodes"), "{}", r.describe());
    let dev: Arc<dyn BlockDevice> = Arc::new(FileDisk::open(&ffs).expect("open"));
    let mut fs =
        FileSystem::new(fslab::ffs::Ffs::mount(dev, Default::default()).expect("mounts after repair"));
    let ino = fs.lookup(ROOT_INO, b"kept").expect("kept").ino;
    assert_eq!(fs.read(ino, 0, 100).expect("read"), b"written before the crash");
    fs.unmount().expect("unmount");

    let junk = tmp.path().join("junk.img");
    std::fs::write(&junk, vec![0x5au8; 1 << 20]).expect("write");
    let r = fsck(&junk, &[]);
    assert_eq!(status(&r), 8, "{}", r.describe());

    // A usage error is e2fsck's 16, never 2 ("errors corrected, reboot").
    let r = fsck(&ffs, &["--repiar"]);
    assert_eq!(status(&r), 16, "{}", r.describe());
    let r = fslab_run(&["fsck"], T);
    assert_eq!(status(&r), 16, "{}", r.describe());
}

/// Runs the binary as `fsck.fslab` (a link of that name in `dir`) with `args`.
fn fsck_fslab(dir: &Path, args: &[&str]) -> Run {
    let link = dir.join("fsck.fslab");
    if !link.exists() {
        std::os::unix::fs::symlink(common::fslab(), &link).expect("link fsck.fslab");
    }
    common::run(link.to_str().expect("utf-8 path"), args, T)
}

/// fsck(8)'s checker: e2fsck's options and statuses, preening silent.
#[test]
fn fsck_fslab_answers_fsck_8_with_e2fsck_options_and_statuses() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let ffs = tmp.path().join("ffs.img");
    crashed_ffs(&ffs);
    let image = ffs.to_str().expect("utf-8 path");

    let r = fsck_fslab(&bin, &["-n", image]);
    assert_eq!(status(&r), 4, "-n reports and changes nothing\n{}", r.describe());
    assert!(r.stdout.ends_with(&format!("{image}: 3 problems left uncorrected\n")), "{}", r.describe());
    let r = fsck_fslab(&bin, &["-n", "-y", image]);
    assert_eq!(status(&r), 16, "contradictory options\n{}", r.describe());
    let r = fsck_fslab(&bin, &[image, "-x"]);
    assert_eq!(status(&r), 16, "unknown option\n{}", r.describe());
    let r = fsck_fslab(&bin, &["-p", "-C0", image]);
    assert_eq!(status(&r), 1, "preening corrects\n{}", r.describe());
    assert!(r.stdout.is_empty() && r.stderr.is_empty(), "preening is silent\n{}", r.describe());
    let r = fsck_fslab(&bin, &["-af", image]);
    assert_eq!(status(&r), 0, "clean after preening\n{}", r.describe());
    let r = fsck_fslab(&bin, &["-fy", image]);
    assert_eq!(status(&r), 0, "{}", r.describe());
    assert!(r.stdout.contains("clean: 2 inodes"), "-y says what it found\n{}", r.describe());
    let r = fsck_fslab(&bin, &["-p", tmp.path().join("missing.img").to_str().expect("utf-8")]);
    assert_eq!(status(&r), 8, "{}", r.describe());

    // Through fsck(8), which finds fsck.fslab on the PATH.
    if common::have("fsck") {
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut command = std::process::Command::new("fsck");
        command.args(["-t", "fslab", "-a", image]).env("PATH", path);
        let r = common::run_cmd(command, T);
        assert_eq!(status(&r), 0, "fsck -t fslab\n{}", r.describe());
    }
}

/// `scripts/install` puts fsck.fslab beside mount(8)'s helpers, and
/// `--uninstall` removes it, saying only what it removed.
#[test]
fn install_links_fsck_fslab_and_uninstall_says_only_what_it_removed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (prefix, sbin) = (tmp.path().join("prefix"), tmp.path().join("sbin"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install");
    let install = |extra: &[&str]| {
        let mut command = std::process::Command::new(&script);
        command.arg("--prefix").arg(&prefix).arg("--sbin").arg(&sbin).args(extra);
        common::run_cmd(command, T)
    };
    let r = install(&["--binary", common::fslab()]);
    assert!(r.success(), "{}", r.describe());
    let checker = sbin.join("fsck.fslab");
    assert_eq!(std::fs::read_link(&checker).ok(), Some(prefix.join("bin/fslab")), "{}", r.describe());
    let r = install(&["--uninstall"]);
    assert!(r.success(), "{}", r.describe());
    assert!(!checker.exists() && !prefix.join("bin/fslab").exists(), "{}", r.describe());
    assert_eq!(r.stdout.lines().count(), 5, "four helpers and the command\n{}", r.describe());
    let r = install(&["--uninstall"]);
    assert!(r.success(), "{}", r.describe());
    assert!(r.stdout.is_empty(), "nothing left to remove, nothing said\n{}", r.describe());
}

/// `fslab dump` shows each time as its number and its UTC date.
#[test]
fn dump_shows_times_as_utc_dates_beside_their_numbers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let image = tmp.path().join("lfs.img");
    mkfs(&image, "16M", &[]);
    let r = fslab_run(&["dump", image.to_str().expect("utf-8 path")], T);
    assert_eq!(status(&r), 0, "{}", r.describe());
    let line =
        r.stdout.lines().find(|l| l.trim_start().starts_with("created (ns)")).expect("a creation time");
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
    let year = 1970 + now / 31_556_952;
    let (number, date) = line
        .split_once(" (ns)")
        .map(|(_, rest)| rest.trim())
        .and_then(|r| r.split_once(' '))
        .expect("number and date");
    assert!(number.parse::<u64>().is_ok(), "{line}");
    // The year of "now", to within the slack of an average year's length.
    let shown: u64 = date.get(1..5).and_then(|y| y.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    assert!(shown.abs_diff(year) <= 1, "{line}");
    assert!(date.starts_with('(') && date.ends_with("Z)") && date.contains('T'), "{line}");
}
