//! Read-ahead: a sequential reader of a file gets the next 64 KB cluster's
//! read posted to the device once per cluster (4.4BSD's `cluster_read`;
//! 1995 §2), on LFS and FFS alike, whatever its reads' size; a reader that
//! jumps about gets none.

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

/// Reads `len` bytes of the file at each of `offsets`; returns the
/// read-aheads posted.
fn read_aheads<S: StorageManager>(
    disk: &CountingDisk<Arc<MemDisk>>,
    fs: &mut FileSystem<S>,
    ino: Ino,
    offsets: &[u64],
    len: u64,
) -> u64 {
    let before = disk.read_aheads();
    for &at in offsets {
        let got = fs.read(ino, at, len as usize).expect("read");
        assert_eq!(got[0], (at / 4096) as u8, "the block at {at}");
    }
    disk.read_aheads() - before
}

/// Every offset of the file in steps of `len`.
fn sequential(len: u64) -> Vec<u64> {
    (0..FILE / len).map(|i| i * len).collect()
}

/// Neither starting the file nor continuing the read before.
fn scattered() -> Vec<u64> {
    vec![5 * CLUSTER, 2 * CLUSTER + 4096, 6 * CLUSTER, 3 * CLUSTER]
}

/// The three readers, each on a fresh mount: in clusters, the next one
/// after each but the last; in 8 KB units, still about one per cluster
/// (one more where a run ends early, at FFS's move to another group after
/// the direct blocks), not one per read; scattered, none.
fn check<S: StorageManager>(disk: &CountingDisk<Arc<MemDisk>>, mount: impl Fn() -> FileSystem<S>, ino: Ino) {
    let clusters = FILE / CLUSTER;
    let mut fs = mount();
    assert_eq!(read_aheads(disk, &mut fs, ino, &sequential(CLUSTER), CLUSTER), clusters - 1);
    fs.unmount().expect("unmount");
    let mut fs = mount();
    let small = read_aheads(disk, &mut fs, ino, &sequential(8192), 8192);
    assert!((clusters - 1..=clusters + 2).contains(&small), "{small} read-aheads for {clusters} clusters");
    fs.unmount().expect("unmount");
    let mut fs = mount();
    assert_eq!(read_aheads(disk, &mut fs, ino, &scattered(), CLUSTER), 0);
}

/// A 32 MiB memory disk that counts read-aheads, and the same disk as a
/// device to make a file system on.
fn counting_disk() -> (Arc<CountingDisk<Arc<MemDisk>>>, Arc<dyn BlockDevice>) {
    let disk = Arc::new(CountingDisk::new(Arc::new(MemDisk::new(32 << 20))));
    let dev: Arc<dyn BlockDevice> = disk.clone();
    (disk, dev)
}

#[test]
fn lfs_reads_ahead_of_a_sequential_reader_only() {
    let (disk, dev) = counting_disk();
    let mkfs = fslab::lfs::MkfsOptions { block_size: 4096, segment_size: 1 << 20 };
    fslab::mkfs_lfs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    let mount = || {
        let options = fslab::lfs::MountOptions::default();
        FileSystem::new(fslab::lfs::Lfs::mount(dev.clone(), options).expect("mount"))
    };
    let ino = write_file(mount());
    check(&disk, mount, ino);
}

#[test]
fn ffs_reads_ahead_of_a_sequential_reader_only() {
    let (disk, dev) = counting_disk();
    let mkfs = fslab::ffs::MkfsOptions { group_size: 4 << 20, ..fslab::ffs::MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    let mount = || {
        let options = fslab::ffs::MountOptions::default();
        FileSystem::new(fslab::ffs::Ffs::mount(dev.clone(), options).expect("mount"))
    };
    let ino = write_file(mount());
    check(&disk, mount, ino);
}
