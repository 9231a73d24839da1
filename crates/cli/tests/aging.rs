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
    mkfs(&image, "64M", &["--layout", "ffs"]);
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

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn layout_refuses_lfs_and_what_is_no_file_system() {
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
    let junk = dir.path().join("junk");
    std::fs::write(&junk, vec![7u8; 1 << 20]).expect("write");
    let r = fslab_run(&[os("layout"), junk.as_os_str()], T);
    assert!(!r.success() && r.stderr.contains("not an fslab file system image"), "{}", r.describe());
}
