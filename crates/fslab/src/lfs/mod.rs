//! The log-structured storage manager (BSD-LFS, 1993 paper).
//!
//! All writes go to the end of a log divided into segments; each partial
//! segment starts with a summary that names every block in it. The ifile
//! holds the inode map and the segment usage table. See `docs/FORMAT.md`.

use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, Lbn};
use crate::storage::{StatFs, StorageManager};
use crate::Result;
use disk::BlockDevice;
use std::sync::Arc;
use std::time::Duration;

/// Choices fixed when the file system is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MkfsOptions {
    /// Bytes per block: a power of two from 4 KiB to 64 KiB.
    pub block_size: u32,
    /// Bytes per segment: a power of two, at least 16 blocks.
    pub segment_size: u32,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions { block_size: 4096, segment_size: 1 << 20 }
    }
}

/// Choices made at each mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountOptions {
    /// Memory the buffer cache may use.
    pub cache_bytes: u64,
    /// Time between automatic checkpoints.
    pub checkpoint_interval: Duration,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions { cache_bytes: 256 << 20, checkpoint_interval: Duration::from_secs(30) }
    }
}

/// Writes a new, empty file system (root directory only) to `dev`.
pub fn mkfs(dev: Arc<dyn BlockDevice>, options: &MkfsOptions) -> Result<()> {
    let _ = (dev, options);
    todo!()
}

/// Whether `dev` holds an fslab LFS superblock (valid or not).
pub fn probe(dev: &dyn BlockDevice) -> bool {
    let _ = dev;
    todo!()
}

/// A human-readable report of the superblock, the latest checkpoint, the
/// segment usage table and the ifile summary (like `dumplfs`).
pub fn dump(dev: Arc<dyn BlockDevice>) -> Result<String> {
    let _ = dev;
    todo!()
}

/// A mounted LFS.
pub struct Lfs {}

impl Lfs {
    /// Mounts the file system on `dev`.
    pub fn mount(dev: Arc<dyn BlockDevice>, options: MountOptions) -> Result<Lfs> {
        let _ = (dev, options);
        todo!()
    }
}

impl StorageManager for Lfs {
    fn block_size(&self) -> u32 {
        todo!()
    }
    fn max_file_size(&self) -> u64 {
        todo!()
    }
    fn valloc(&mut self) -> Result<Inode> {
        todo!()
    }
    fn vfree(&mut self, _ino: Ino) -> Result<()> {
        todo!()
    }
    fn vget(&mut self, _ino: Ino) -> Result<Inode> {
        todo!()
    }
    fn update(&mut self, _ino: Ino, _attr: &InodeAttr) -> Result<()> {
        todo!()
    }
    fn read_block(&mut self, _ino: Ino, _lbn: Lbn, _buf: &mut [u8]) -> Result<()> {
        todo!()
    }
    fn write_block(&mut self, _ino: Ino, _lbn: Lbn, _offset: usize, _data: &[u8]) -> Result<()> {
        todo!()
    }
    fn next_data(&mut self, _ino: Ino, _lbn: u64) -> Result<Option<u64>> {
        todo!()
    }
    fn free_blocks(&mut self, _ino: Ino, _first: u64, _last: u64) -> Result<()> {
        todo!()
    }
    fn free_xattr(&mut self, _ino: Ino) -> Result<()> {
        todo!()
    }
    fn reserve_blocks(&mut self, _blocks: u64) -> Result<()> {
        todo!()
    }
    fn begin_dirop(&mut self) {
        todo!()
    }
    fn end_dirop(&mut self) -> Result<()> {
        todo!()
    }
    fn fsync(&mut self, _ino: Ino, _datasync: bool) -> Result<()> {
        todo!()
    }
    fn sync(&mut self) -> Result<()> {
        todo!()
    }
    fn tick(&mut self) -> Result<()> {
        todo!()
    }
    fn statfs(&mut self) -> Result<StatFs> {
        todo!()
    }
    fn unmount(&mut self) -> Result<()> {
        todo!()
    }
}
