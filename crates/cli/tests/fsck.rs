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
}
