//! Read-ahead: a sequential reader of a file gets the next 64 KB cluster's
//! read posted to the device after each read (4.4BSD's `cluster_read`; 1995
//! §2), on LFS and FFS alike; a reader that jumps about gets none.

use disk::{BlockDevice, CountingDisk, MemDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::storage::StorageManager;
use fslab::ufs::{Creds, FileSystem};
use std::sync::Arc;

const CLUSTER: u64 = 64 << 10;
const FILE: u64 = 8 * CLUSTER;

/// Writes one file of [`FILE`] bytes on `fs`, unmounts, and returns its
/// inode number.
fn write_file<S: StorageManager>(mut fs: FileSystem<S>) -> Ino {
    let ino = fs.mknod(ROOT_INO, b"big", kind::REG | 0o644, 0, Creds::default()).expect("create").ino;
    let data: Vec<u8> = (0..FILE).map(|i| (i / 4096) as u8).collect();
    fs.write(ino, 0, &data).expect("write");
    fs.unmount().expect("unmount");
    ino
}

/// Reads the file in clusters at `offsets`; returns the read-aheads posted.
fn read_aheads<S: StorageManager>(
    disk: &CountingDisk<Arc<MemDisk>>,
    fs: &mut FileSystem<S>,
    ino: Ino,
    offsets: &[u64],
) -> u64 {
    let before = disk.read_aheads();
    for &at in offsets {
        let got = fs.read(ino, at, CLUSTER as usize).expect("read");
        assert_eq!(got[0], (at / 4096) as u8, "the block at {at}");
    }
    disk.read_aheads() - before
}

fn sequential() -> Vec<u64> {
    (0..FILE / CLUSTER).map(|i| i * CLUSTER).collect()
}

/// Neither starting the file nor continuing the read before.
fn scattered() -> Vec<u64> {
    vec![5 * CLUSTER, 2 * CLUSTER + 4096, 6 * CLUSTER, 3 * CLUSTER]
}

#[test]
fn lfs_reads_ahead_of_a_sequential_reader_only() {
    let mem = Arc::new(MemDisk::new(32 << 20));
    let disk = Arc::new(CountingDisk::new(mem));
    let mkfs = fslab::lfs::MkfsOptions { block_size: 4096, segment_size: 1 << 20 };
    fslab::mkfs_lfs(disk.clone(), &mkfs, Creds::default()).expect("mkfs");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mount = || {
        let options = fslab::lfs::MountOptions::default();
        FileSystem::new(fslab::lfs::Lfs::mount(dev.clone(), options).expect("mount"))
    };
    let ino = write_file(mount());
    let mut fs = mount();
    // After each cluster but the last: the next one.
    assert_eq!(read_aheads(&disk, &mut fs, ino, &sequential()), FILE / CLUSTER - 1);
    fs.unmount().expect("unmount");
    let mut fs = mount();
    assert_eq!(read_aheads(&disk, &mut fs, ino, &scattered()), 0);
}

#[test]
fn ffs_reads_ahead_of_a_sequential_reader_only() {
    let mem = Arc::new(MemDisk::new(32 << 20));
    let disk = Arc::new(CountingDisk::new(mem));
    let mkfs = fslab::ffs::MkfsOptions { group_size: 4 << 20, ..fslab::ffs::MkfsOptions::default() };
    fslab::mkfs_ffs(disk.clone(), &mkfs, Creds::default()).expect("mkfs");
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mount = || {
        let options = fslab::ffs::MountOptions::default();
        FileSystem::new(fslab::ffs::Ffs::mount(dev.clone(), options).expect("mount"))
    };
    let ino = write_file(mount());
    let mut fs = mount();
    assert_eq!(read_aheads(&disk, &mut fs, ino, &sequential()), FILE / CLUSTER - 1);
    fs.unmount().expect("unmount");
    let mut fs = mount();
    assert_eq!(read_aheads(&disk, &mut fs, ino, &scattered()), 0);
}
