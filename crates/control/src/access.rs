//! What the control socket reaches: a mounted file system of any layout.
//!
//! Every layout answers `fslab stat` — free space and inodes, its device
//! counters, the directory hashes above it. Only the cleaner's requests are
//! LFS's own, and a layout without a log says so with one clear error
//! instead of being left without a socket.
//!
//! * [`ServedStorage`] — what the socket asks of a storage manager: its
//!   counters, and the log a cleaner works on (LFS) or the error saying
//!   there is none (FFS).
//! * [`SharedFs`] — the mounted file system behind the lock other threads
//!   share (the FUSE adapter's).
//! * [`LogAccess`] — the cleaner's [`LfsAccess`] through a [`SharedFs`].

use super::{LayoutReport, MountReport};
use fslab::error::errno;
use fslab::ffs::Ffs;
use fslab::lfs::Lfs;
use fslab::storage::StorageManager;
use fslab::ufs::FileSystem;
use fslab::Result;
use fslab_cleaner::mechanism::LfsAccess;

/// What the error for a cleaner's request on an FFS mount says; `fslab
/// clean` says the same when it finds an FFS mount.
pub const FFS_HAS_NO_CLEANER: &str = "FFS has no cleaner (this is an FFS mount)";

/// A storage manager as the control socket serves it.
pub trait ServedStorage: StorageManager + 'static {
    /// The layout's own counters since mount and what names its
    /// configuration, for `fslab stat`.
    fn layout_report(&self) -> LayoutReport;

    /// The log a cleaner works on. A layout without one answers with an
    /// error that names the layout (EOPNOTSUPP): every cleaner request on
    /// such a mount gets it.
    fn log(&mut self) -> Result<&mut Lfs>;
}

impl ServedStorage for Lfs {
    fn layout_report(&self) -> LayoutReport {
        LayoutReport::Lfs(self.stats())
    }

    fn log(&mut self) -> Result<&mut Lfs> {
        Ok(self)
    }
}

impl ServedStorage for Ffs {
    fn layout_report(&self) -> LayoutReport {
        LayoutReport::Ffs {
            integrity: self.integrity(),
            cylinder_groups: self.superblock().geometry.ncg,
            stats: self.stats(),
            leaks: self.leak_report().clone(),
            journal: self.journal_stats(),
        }
    }

    fn log(&mut self) -> Result<&mut Lfs> {
        Err(errno(libc::EOPNOTSUPP, FFS_HAS_NO_CLEANER))
    }
}

/// A mounted file system that other threads share: runs one call with it
/// locked, as one kernel request would. The FUSE mount implements it over
/// its lock.
pub trait SharedFs: Clone + Send + 'static {
    /// The storage manager underneath.
    type Storage: ServedStorage;

    /// Runs `op` on the file system under its lock.
    fn with_fs<R>(&self, op: impl FnOnce(&mut FileSystem<Self::Storage>) -> Result<R>) -> Result<R>;

    /// Whether the file system has been unmounted: every call fails from
    /// then on. An access that cannot tell says no.
    fn is_unmounted(&self) -> bool {
        false
    }

    /// Whether the mount is read-only: the cleaner's requests that move
    /// or free anything are refused (EROFS), since what they wrote would
    /// only pile up in memory over the image.
    fn is_read_only(&self) -> bool {
        false
    }

    /// What `fslab stat` shows of any layout, read under one lock.
    fn mount_report(&self) -> Result<MountReport> {
        self.with_fs(|fs| Ok(MountReport { space: fs.statfs()?, layout: fs.storage().layout_report() }))
    }

    /// The daemon's resident memory (this process's: the server runs in
    /// the mount daemon) and the file system's structures, read under the
    /// lock.
    fn memory_report(&self) -> Result<super::MemoryReport> {
        let parts = self.with_fs(|fs| Ok(fs.memory()))?;
        Ok(super::MemoryReport { resident: fslab::memory::resident_bytes(), parts })
    }

    /// How the calls since mount took the lock. A mount that does not
    /// count says so (EOPNOTSUPP).
    fn lock_report(&self) -> Result<super::LockReport> {
        Err(errno(libc::EOPNOTSUPP, "this mount does not count how its lock is taken"))
    }

    /// The dirhash settings and counters, read under the lock.
    fn dirhash_report(&self) -> Result<super::DirhashReport> {
        self.with_fs(|fs| {
            Ok(super::DirhashReport { options: fs.dirhash_options(), stats: fs.dirhash_stats() })
        })
    }
}

/// The cleaner's access through a shared mount: each call reaches the log
/// under the mount's lock; on a layout without a log every call fails with
/// that layout's error ([`ServedStorage::log`]).
#[derive(Clone)]
pub struct LogAccess<F>(pub F);

impl<F: SharedFs> LfsAccess for LogAccess<F> {
    fn with_lfs<R>(&self, op: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
        self.0.with_fs(|fs| op(fs.storage().log()?))
    }

    fn is_unmounted(&self) -> bool {
        self.0.is_unmounted()
    }
}
