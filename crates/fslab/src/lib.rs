//! fslab: the 4.4BSD file-system family as a library.
//!
//! Layers, top to bottom (see `docs/DESIGN.md`):
//!
//! * [`ufs`] — the namespace: directories, names, links, rename, file I/O by
//!   offset, attributes. Generic over a [`storage::StorageManager`].
//! * [`storage`] — the boundary between namespace and layout: the operations of
//!   Table 4 of the 1993 BSD-LFS paper (§4.1).
//! * [`lfs`] — the log-structured storage manager.
//! * [`bmap`] — the block-map engine both layouts and fsck walk file trees with.
//! * [`cache`] — the buffer cache: dirty tracking, memory limit, thresholds.
//! * [`format`] — pure vocabulary: numbers, codecs, checksums, on-disk inodes
//!   and directory entries.
//! * [`time`] — the clock a mount keeps time by (the host's, or a simulated
//!   disk's virtual clock).
//!
//! Below all of them is the `disk` crate's `BlockDevice`.

pub mod bmap;
pub mod cache;
pub mod error;
pub mod format;
pub mod lfs;
pub mod storage;
pub mod time;
pub mod ufs;

pub use error::{Error, Result};

/// Makes a new LFS on `dev` with an empty root directory owned by `creds`:
/// the storage manager's mkfs, then the namespace's root.
pub fn mkfs_lfs(
    dev: std::sync::Arc<dyn disk::BlockDevice>,
    options: &lfs::MkfsOptions,
    creds: ufs::Creds,
) -> Result<()> {
    lfs::mkfs(dev.clone(), options)?;
    let storage = lfs::Lfs::mount(dev, lfs::MountOptions::default())?;
    let mut fs = ufs::FileSystem::new(storage);
    fs.create_root(0o755, creds)?;
    fs.unmount()
}
