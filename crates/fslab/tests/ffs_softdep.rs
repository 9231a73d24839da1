//! Soft updates (`Integrity::Softdep`) on a memory disk: nothing a namespace
//! operation does is written before it returns, everything is after a sync,
//! and an image a crash left behind mounts without fsck.

use disk::{BlockDevice, CountingDisk, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const ME: Creds = Creds { uid: 0, gid: 0 };

fn options() -> MountOptions {
    MountOptions { cache_bytes: 1 << 20, integrity: Integrity::Softdep, ..MountOptions::default() }
}

fn fresh(bytes: u64) -> (Arc<MemDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(MemDisk::new(bytes));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 4 << 20, ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, ME).expect("mkfs");
    let fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    (disk, fs)
}

fn create(fs: &mut FileSystem<Ffs>, dir: Ino, name: &str) -> Ino {
    fs.mknod(dir, name.as_bytes(), kind::REG | 0o644, 0, ME).expect("create").ino
}

#[test]
fn files_and_directories_made_and_removed_read_back_after_a_remount() {
    let (disk, mut fs) = fresh(32 << 20);
    let d = fs.mkdir(ROOT_INO, b"d", 0o755, ME).expect("mkdir").ino;
    for i in 0..200u32 {
        let ino = create(&mut fs, d, &format!("f{i}"));
        fs.write(ino, 0, &vec![i as u8 | 1; 1000 + i as usize * 97]).expect("write");
    }
    for i in (0..200u32).step_by(3) {
        fs.unlink(d, format!("f{i}").as_bytes()).expect("unlink");
    }
    fs.rename(d, b"f1", ROOT_INO, b"moved", Default::default()).expect("rename");
    fs.unmount().expect("unmount");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount again"));
    let moved = fs.lookup(ROOT_INO, b"moved").expect("moved").ino;
    let buf = fs.read(moved, 0, 4096).expect("read");
    assert_eq!(buf.len(), 1097);
    assert!(buf.iter().all(|&b| b == 1));
    for i in 2..200u32 {
        let found = fs.lookup(d, format!("f{i}").as_bytes());
        assert_eq!(found.is_ok(), i % 3 != 0, "f{i}");
        if let Ok(found) = found {
            let buf = fs.read(found.ino, 0, 1 << 20).expect("read");
            assert_eq!(buf.len(), 1000 + i as usize * 97, "f{i} size");
            assert!(buf.iter().all(|&b| b == i as u8 | 1), "f{i} contents");
        }
    }
    fs.storage().check_groups().unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_create_writes_nothing_before_it_returns() {
    let disk = Arc::new(MemDisk::new(16 << 20));
    let counting = Arc::new(CountingDisk::new(disk));
    let dev: Arc<dyn BlockDevice> = counting.clone();
    fslab::mkfs_ffs(dev.clone(), &MkfsOptions::default(), ME).expect("mkfs");
    let mut fs = FileSystem::new(Ffs::mount(dev, options()).expect("mount"));
    let before = counting.writes().len();
    for i in 0..50 {
        create(&mut fs, ROOT_INO, &format!("f{i}"));
    }
    assert_eq!(counting.writes().len(), before, "creates are delayed");
    fs.sync().expect("sync");
    assert!(counting.writes().len() > before);
}
