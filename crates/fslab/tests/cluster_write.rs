//! FFS's write-back as a file is written: each full cluster of a sequential
//! writer goes to the disk as it fills (4.4BSD `cluster_write`), without
//! waiting for the cache's threshold or a sync; and a write-back at the
//! threshold leaves the writer's inode for the sync, so that its inode
//! block is not written between its data clusters.

use disk::{BlockDevice, MemDisk};
use fslab::ffs::{Ffs, Integrity, MkfsOptions, MountOptions, RunPush, WriteMode};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::ufs::{Creds, FileSystem};
use std::io;
use std::sync::{Arc, Mutex};

const CLUSTER: usize = 64 << 10;

/// A memory disk that records every write: (byte offset, length).
struct RecordingDisk {
    inner: MemDisk,
    writes: Mutex<Vec<(u64, usize)>>,
}

impl RecordingDisk {
    fn take(&self) -> Vec<(u64, usize)> {
        std::mem::take(&mut *self.writes.lock().expect("lock"))
    }
}

impl BlockDevice for RecordingDisk {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.writes.lock().expect("lock").push((offset, buf.len()));
        self.inner.write_at(offset, buf)
    }

    fn write_vectored_at(&self, offset: u64, bufs: &[&[u8]]) -> io::Result<()> {
        self.writes.lock().expect("lock").push((offset, bufs.iter().map(|b| b.len()).sum()));
        self.inner.write_vectored_at(offset, bufs)
    }

    fn flush(&self) -> io::Result<()> {
        self.inner.flush()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// A fresh FFS with 8 KiB blocks and 64 KiB clusters, mounted with a cache
/// of `cache_bytes`, writing back inline (each write is in the trace when
/// the call that caused it returns).
fn fresh(cache_bytes: u64) -> (Arc<RecordingDisk>, FileSystem<Ffs>) {
    fresh_with(cache_bytes, RunPush::Sequential)
}

/// As [`fresh`], with the given rule for runs a write breaks.
fn fresh_with(cache_bytes: u64, run_push: RunPush) -> (Arc<RecordingDisk>, FileSystem<Ffs>) {
    let disk = Arc::new(RecordingDisk { inner: MemDisk::new(64 << 20), writes: Mutex::new(Vec::new()) });
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let mkfs = MkfsOptions { group_size: 16 << 20, maxcontig: Some(8), ..MkfsOptions::default() };
    fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default()).expect("mkfs");
    let options = MountOptions {
        cache_bytes,
        integrity: Integrity::Async,
        writes: WriteMode::Inline,
        run_push,
        ..MountOptions::default()
    };
    let fs = FileSystem::new(Ffs::mount(dev, options).expect("mount"));
    disk.take();
    (disk, fs)
}

fn create(fs: &mut FileSystem<Ffs>, name: &[u8]) -> Ino {
    fs.mknod(ROOT_INO, name, kind::REG | 0o644, 0, Creds::default()).expect("create").ino
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i / 8192 + i % 251) as u8).collect()
}

#[test]
fn a_sequential_writer_has_its_clusters_written_as_they_fill() {
    // A 64 MiB cache: its write-back threshold (16 MiB) is never reached.
    let (disk, mut fs) = fresh(64 << 20);
    let ino = create(&mut fs, b"big");
    let data = pattern(1 << 20);
    for (i, chunk) in data.chunks(CLUSTER).enumerate() {
        fs.write(ino, (i * CLUSTER) as u64, chunk).expect("write");
    }
    let before_sync = disk.take();
    let clusters = before_sync.iter().filter(|&&(_, len)| len == CLUSTER).count();
    // 128 blocks: runs break where the direct blocks end (the rest goes to
    // another group) and the last run is still open.
    assert!(clusters >= 13, "{clusters} clusters written before the sync: {before_sync:?}");
    assert!(before_sync.iter().all(|&(_, len)| len <= CLUSTER), "{before_sync:?}");
    let pushes = fs.storage().stats().cluster_pushes;
    assert!(pushes >= 14, "{pushes} runs pushed");
    fs.sync().expect("sync");
    assert_eq!(fs.read(ino, 0, data.len()).expect("read"), data);
}

#[test]
fn a_random_writers_blocks_wait_for_write_back_unless_every_broken_run_is_pushed() {
    for (rule, alone) in [(RunPush::Sequential, false), (RunPush::Every, true)] {
        let (disk, mut fs) = fresh_with(64 << 20, rule);
        let ino = create(&mut fs, b"table");
        let data = pattern(1 << 20);
        fs.write(ino, 0, &data).expect("write");
        fs.sync().expect("sync");
        disk.take();
        // Whole blocks rewritten in a scattered order (7 is prime to 128).
        let mut want = data.clone();
        for i in 0..40usize {
            let b = (i * 7 + 3) % 128;
            let block = vec![i as u8; 8192];
            want[b * 8192..(b + 1) * 8192].copy_from_slice(&block);
            fs.write(ino, (b * 8192) as u64, &block).expect("write");
        }
        let before_sync = disk.take();
        if alone {
            // 4.4BSD: each block went to the disk alone as the next came.
            assert_eq!(before_sync.len(), 39, "{rule:?}: {before_sync:?}");
            assert!(before_sync.iter().all(|&(_, len)| len == 8192), "{before_sync:?}");
        } else {
            assert_eq!(before_sync, vec![], "{rule:?}: a random writer's block was pushed");
        }
        fs.sync().expect("sync");
        assert_eq!(fs.read(ino, 0, want.len()).expect("read"), want, "{rule:?}");
        // The sync writes what was left in address order.
        let at_sync: Vec<u64> = disk.take().iter().map(|&(at, _)| at).collect();
        assert!(alone || at_sync.windows(2).all(|w| w[0] < w[1]), "{rule:?}: {at_sync:?}");
    }
}

#[test]
fn partly_written_blocks_and_directories_wait_for_the_sync() {
    let (disk, mut fs) = fresh(64 << 20);
    let ino = create(&mut fs, b"small-writes");
    // 4 KiB writes fill each block with their second half only.
    let data = pattern(512 << 10);
    for (i, chunk) in data.chunks(4096).enumerate() {
        fs.write(ino, (i * 4096) as u64, chunk).expect("write");
    }
    // Whole blocks, each completed by a write reaching its end: pushed.
    assert!(fs.storage().stats().cluster_pushes >= 7);
    disk.take();
    // A write that stops short of a block's end is delayed.
    let other = create(&mut fs, b"partial");
    fs.write(other, 0, &[7u8; 5000]).expect("write");
    assert_eq!(disk.take(), vec![], "a partial block or a directory was written before the sync");
    fs.sync().expect("sync");
    assert_eq!(fs.read(ino, 0, data.len()).expect("read"), data);
    assert_eq!(fs.read(other, 0, 5000).expect("read"), vec![7u8; 5000]);
}

#[test]
fn write_back_at_the_threshold_leaves_the_writers_inode_for_the_sync() {
    // A 1 MiB cache: write-back starts at 256 KiB dirty.
    let (disk, mut fs) = fresh(1 << 20);
    let ino = create(&mut fs, b"big");
    let geometry = fs.storage().superblock().geometry;
    let inode_block = geometry.byte_offset(geometry.inode_block_addr(ino));
    let block = geometry.block_size as u64;
    // Each write stops one byte short of its block's end, last block
    // first (so that no write grows the file and zeroes the rest of the
    // block before it): no cluster fills, and everything waits for
    // write-back at the threshold.
    let bs = block as usize;
    let mut data = pattern(4 << 20);
    for b in (0..data.len() / bs).rev() {
        let start = b * bs;
        data[start + bs - 1] = 0;
        fs.write(ino, start as u64, &data[start..start + bs - 1]).expect("write");
    }
    data.pop();
    assert_eq!(fs.storage().stats().cluster_pushes, 0);
    let before_sync = disk.take();
    assert!(before_sync.len() > 30, "{} writes", before_sync.len());
    let inode_writes =
        before_sync.iter().filter(|&&(at, len)| at <= inode_block && inode_block < at + len as u64);
    assert_eq!(inode_writes.count(), 0, "the inode block was written: {before_sync:?}");
    fs.sync().expect("sync");
    let at_sync = disk.take();
    assert!(at_sync.iter().any(|&(at, len)| at <= inode_block && inode_block < at + len as u64));
    assert_eq!(fs.read(ino, 0, data.len()).expect("read"), data);
}
