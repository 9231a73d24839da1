//! fslab: the 4.4BSD file-system family as a library.
//!
//! Layers, top to bottom (see `docs/ARCHITECTURE.md`; the reasons are in
//! `docs/DESIGN.md`):
//!
//! * [`ufs`] — the namespace: directories, names, links, rename, file I/O by
//!   offset, attributes. Generic over a [`storage::StorageManager`].
//! * [`storage`] — the boundary between namespace and layout: the operations of
//!   Table 4 of the 1993 BSD-LFS paper (§4.1).
//! * [`lfs`] — the log-structured storage manager.
//! * [`ffs`] — the cylinder-group storage manager (the Fast File System).
//! * [`bmap`] — the block-map engine both layouts and fsck walk file trees with.
//! * [`cache`] — the buffer cache: dirty tracking, memory limit, thresholds.
//! * [`format`] — pure vocabulary: numbers, codecs, checksums, on-disk inodes
//!   and directory entries.
//! * [`time`] — the clock a mount keeps time by (the host's, or a simulated
//!   disk's virtual clock).
//! * [`durable`] — tickets: moments of durability a caller waits for
//!   without holding the file system.
//! * [`memory`] — what a structure's memory is, estimated, for the reports
//!   of what a mount holds (`fslab stat`); every layer may use it.
//!
//! Below all of them is the `disk` crate's `BlockDevice`.

pub mod bmap;
pub mod cache;
pub mod durable;
pub mod error;
pub mod ffs;
pub mod format;
pub mod lfs;
pub mod memory;
pub mod storage;
pub mod time;
pub mod ufs;

pub use error::{Error, Result};

/// The layouts fslab knows, told apart by the magic at byte 0 of a device
/// (`fslabLFS` or `fslabFFS`, FORMAT.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The log-structured file system.
    Lfs,
    /// The Fast File System.
    Ffs,
}

impl Layout {
    /// The layout's name as commands take and print it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Lfs => "lfs",
            Layout::Ffs => "ffs",
        }
    }

    /// The layout called `name` (`lfs`, `ffs`).
    pub fn by_name(name: &str) -> Option<Layout> {
        [Layout::Lfs, Layout::Ffs].into_iter().find(|l| l.name() == name)
    }

    /// The layout of the file system on `dev`, by its superblock's magic;
    /// `None` if it holds neither (a valid superblock is not checked for).
    pub fn probe(dev: &dyn disk::BlockDevice) -> Option<Layout> {
        let mut magic = [0u8; 8];
        if dev.size() < 4096 || dev.read_at(0, &mut magic).is_err() {
            return None;
        }
        if ffs::layout::Superblock::has_magic(&magic) {
            Some(Layout::Ffs)
        } else if lfs::probe(dev) {
            Some(Layout::Lfs)
        } else {
            None
        }
    }
}

/// The other file system (or container) whose signature the start of `dev`
/// carries, if any ([`format::foreign`]); a device that cannot be read
/// there carries none.
pub fn other_file_system(dev: &dyn disk::BlockDevice) -> Option<&'static str> {
    // Whole 4 KiB blocks: a device opened for direct I/O reads no less.
    let len = dev.size().min(format::foreign::SIGNATURE_BYTES.next_multiple_of(4096) as u64) as usize;
    let mut head = vec![0u8; len];
    dev.read_at(0, &mut head).ok()?;
    format::foreign::other_file_system(&head)
}

/// Makes a new FFS on `dev` with an empty root directory owned by `creds`:
/// the storage manager's mkfs, then the namespace's root.
pub fn mkfs_ffs(
    dev: std::sync::Arc<dyn disk::BlockDevice>,
    options: &ffs::MkfsOptions,
    creds: ufs::Creds,
) -> Result<()> {
    ffs::mkfs(dev.clone(), options)?;
    let storage = ffs::Ffs::mount(dev, ffs::MountOptions::default())?;
    let mut fs = ufs::FileSystem::new(storage);
    fs.create_root(0o755, creds)?;
    fs.unmount()
}

/// Makes a new FFS on `dev` with its journal on the log device `log`
/// (recorded as found at `log_path`), and an empty root directory owned
/// by `creds`. Returns the pair the file system mounts on.
pub fn mkfs_ffs_with_log(
    dev: std::sync::Arc<dyn disk::BlockDevice>,
    log: std::sync::Arc<dyn disk::BlockDevice>,
    log_path: &str,
    options: &ffs::MkfsOptions,
    creds: ufs::Creds,
) -> Result<std::sync::Arc<dyn disk::BlockDevice>> {
    ffs::mkfs_with_log(dev.clone(), log.clone(), log_path, options)?;
    let pair = ffs::log_device::attach(dev, Some(log))?;
    let storage = ffs::Ffs::mount(pair.clone(), ffs::MountOptions::default())?;
    let mut fs = ufs::FileSystem::new(storage);
    fs.create_root(0o755, creds)?;
    fs.unmount()?;
    Ok(pair)
}

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
