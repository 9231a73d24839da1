//! The file systems the model tests run against: [`Subject`] and its
//! kinds, [`MemSubject`] (the namespace over `MemStorage`), [`LfsSubject`]
//! (over `Lfs` on a `MemDisk`, which can remount and, with a cleaner, says
//! how much it holds) and [`FfsSubject`] (over `Ffs`, in any integrity
//! mode).

use std::sync::Arc;

use disk::{BlockDevice, MemDisk};
use fslab::lfs::{Lfs, MkfsOptions, MountOptions};
use fslab::storage::{MemStorage, StorageManager};
use fslab::ufs::{Creds, DirhashOptions, FileSystem};

use crate::model::Limits;
use crate::space::Capacity;

/// Clean inodes a subject's storage manager keeps: few, so that every test
/// meets inodes dropped from memory and found again (read from their
/// blocks, or decoded by a shared call from a cached block).
pub const SUBJECT_CLEAN_INODES: usize = 16;

/// A file system under test.
pub trait Subject {
    /// Its storage manager.
    type S: StorageManager;
    /// The file system.
    fn fs(&mut self) -> &mut FileSystem<Self::S>;
    /// Unmounts and mounts again from the same device. `Ok(false)` if this
    /// subject cannot (its contents live only in memory).
    fn remount(&mut self) -> fslab::Result<bool>;
    /// What the model must know of it.
    fn limits(&self) -> Limits;
    /// How many blocks it holds for the model's contents, as its `statfs`
    /// says now; `None` where the model cannot tell when it runs out of
    /// space (then an ENOSPC is compared with the model like any other
    /// answer).
    fn capacity(&mut self) -> Option<Capacity> {
        None
    }
    /// Unmounts, checks the image read-only with fsck, and mounts it
    /// again: `Err` with what fsck found. A subject whose contents live
    /// only in memory has no image to check.
    fn fsck(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// fsck, read-only, of the unmounted image on `dev`: `Err` listing every
/// problem found, and — unless `orphans_allowed` — the orphans it finds
/// pending reclaim (files unlinked while open, which are no damage when
/// the image was unmounted with them still open).
pub fn fsck_clean(dev: &dyn BlockDevice, orphans_allowed: bool) -> Result<(), String> {
    let report = fslab_check::check(dev, &fslab_check::Options::default(), &mut |_| {})
        .map_err(|e| format!("fsck could not run: {e}"))?;
    let mut bad: Vec<String> = report.problems.iter().map(|p| format!("{:?}: {p}", p.kind)).collect();
    if report.omitted > 0 {
        bad.push(format!("and {} problems more", report.omitted));
    }
    if !orphans_allowed && !report.pending_reclaim.is_empty() {
        bad.push(format!("orphans left pending reclaim: {:?}", report.pending_reclaim));
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("fsck reports: {}", bad.join("; ")))
    }
}

/// `fs` with dirhash's checking mode on, and every directory hashed: the
/// model tests cross-check each answer of a hash against the blocks.
pub fn checked<S: StorageManager>(mut fs: FileSystem<S>) -> FileSystem<S> {
    let options = fs.dirhash_options();
    fs.set_dirhash_options(DirhashOptions { check: true, min_dir_size: 0, ..options });
    fs
}

/// `FileSystem<MemStorage>`.
pub struct MemSubject {
    fs: FileSystem<MemStorage>,
}

impl MemSubject {
    /// A fresh file system of 4 KiB blocks.
    pub fn new() -> MemSubject {
        MemSubject { fs: checked(FileSystem::new(MemStorage::new(4096))) }
    }
}

impl Default for MemSubject {
    fn default() -> Self {
        MemSubject::new()
    }
}

impl Subject for MemSubject {
    type S = MemStorage;
    fn fs(&mut self) -> &mut FileSystem<MemStorage> {
        &mut self.fs
    }
    fn remount(&mut self) -> fslab::Result<bool> {
        Ok(false)
    }
    fn limits(&self) -> Limits {
        Limits { block_size: 4096 }
    }
}

/// `FileSystem<Lfs>` on a `MemDisk`, with or without a cleaner.
pub struct LfsSubject {
    disk: Arc<MemDisk>,
    mount: MountOptions,
    mkfs: MkfsOptions,
    /// The cleaner's policy (`fslab_cleaner::policy` names), installed at
    /// every mount as `fslab mount` does; `None`: none.
    cleaner: Option<&'static str>,
    fs: FileSystem<Lfs>,
}

impl LfsSubject {
    /// Makes a new LFS on a `disk_bytes` memory disk and mounts it with a
    /// `cache_bytes` buffer cache, without a cleaner.
    pub fn new(disk_bytes: u64, mkfs: MkfsOptions, cache_bytes: u64) -> fslab::Result<LfsSubject> {
        let disk = Arc::new(MemDisk::new(disk_bytes));
        let dev: Arc<dyn BlockDevice> = disk.clone();
        fslab::mkfs_lfs(dev.clone(), &mkfs, Creds::default())?;
        let mount =
            MountOptions { cache_bytes, clean_inodes: SUBJECT_CLEAN_INODES, ..MountOptions::default() };
        let fs = checked(FileSystem::new(Lfs::mount(dev, mount.clone())?));
        Ok(LfsSubject { disk, mount, mkfs, cleaner: None, fs })
    }

    /// The small layout the model tests use: 4 KiB blocks, 64 KiB segments.
    pub fn small(disk_bytes: u64, cache_bytes: u64) -> fslab::Result<LfsSubject> {
        LfsSubject::new(disk_bytes, MkfsOptions { block_size: 4096, segment_size: 64 << 10 }, cache_bytes)
    }

    /// The same, cleaned by `policy` from now on and after every remount
    /// (as `fslab mount` does: writers short of space run it). Panics on
    /// a name `fslab_cleaner::policy` does not know.
    pub fn with_cleaner(mut self, policy: &'static str) -> LfsSubject {
        self.cleaner = Some(policy);
        self.install_cleaner();
        self
    }

    fn mount_again(&mut self) -> fslab::Result<()> {
        let dev: Arc<dyn BlockDevice> = self.disk.clone();
        self.fs = checked(FileSystem::new(Lfs::mount(dev, self.mount.clone())?));
        self.install_cleaner();
        Ok(())
    }

    fn install_cleaner(&mut self) {
        if let Some(name) = self.cleaner {
            let policy = fslab_cleaner::policy::by_name(name).unwrap_or_else(|| panic!("no policy {name}"));
            fslab_cleaner::Cleaner::new(policy).install(self.fs.storage());
        }
    }

    /// The device.
    pub fn disk(&self) -> &Arc<MemDisk> {
        &self.disk
    }
}

impl Subject for LfsSubject {
    type S = Lfs;
    fn fs(&mut self) -> &mut FileSystem<Lfs> {
        &mut self.fs
    }
    fn remount(&mut self) -> fslab::Result<bool> {
        self.fs.unmount()?;
        self.mount_again()?;
        Ok(true)
    }
    fn fsck(&mut self) -> Result<(), String> {
        self.fs.unmount().map_err(|e| format!("unmount: {e}"))?;
        let found = fsck_clean(self.disk.as_ref(), true);
        self.mount_again().map_err(|e| format!("mount after fsck: {e}"))?;
        found
    }
    fn limits(&self) -> Limits {
        Limits { block_size: self.mkfs.block_size as usize }
    }
    /// `statfs`'s total (reserves and two blocks a segment of summaries
    /// already left out) less, per docs/design/lfs.md "Block accounting":
    /// * an inode block per 16 blocks of contents — what moving live data
    ///   costs the cleaner, which `statfs` takes from the free space;
    /// * the summaries of what the cache may hold dirty (one per quarter
    ///   segment of dirty blocks, and two), which writes promise;
    /// * 16 blocks of ifile (cleaner info, segment table and inode map: 5
    ///   on a 24 MiB disk with 64 KiB segments and a few hundred inodes);
    /// * 8 blocks for a directory operation's own blocks (two directory
    ///   blocks and inode blocks), which the model counts only once done;
    /// * a block a segment: the cleaner moves a segment only at a gain, and
    ///   on a disk this full one whose dead space is about what moving it
    ///   costs (a summary, an inode block, indirect blocks it does not
    ///   move anyway) stays as it is, so some of what `statfs` counts free
    ///   is beyond a writer's reach (seen: 6 blocks of 777 on a 4 MiB disk
    ///   of 64 segments, in one seed of 40 of the full-disk model test).
    ///
    /// Without a cleaner, blocks that died hold their space until all of
    /// their segment has died, which the model cannot see: `None`.
    fn capacity(&mut self) -> Option<Capacity> {
        self.cleaner?;
        let statfs = self.fs.statfs().ok()?;
        let blocks_per_segment = (self.mkfs.segment_size / self.mkfs.block_size) as u64;
        let cache_blocks = self.mount.cache_bytes / self.mkfs.block_size as u64;
        let summaries = cache_blocks / (blocks_per_segment / 4).max(1) + 2;
        let segments = self.disk.size() / self.mkfs.segment_size as u64;
        Some(Capacity { total: statfs.total_blocks, fixed: summaries + 16 + 8 + segments, per: 16 })
    }
}

/// The small layout's mkfs options for `integrity`: a `file` journal for
/// the journal's modes.
fn small_mkfs(integrity: fslab::ffs::Integrity) -> fslab::ffs::MkfsOptions {
    let journaled = matches!(integrity, fslab::ffs::Integrity::Journal | fslab::ffs::Integrity::JournalSync);
    let journal = if journaled { fslab::ffs::JournalKind::File } else { fslab::ffs::JournalKind::None };
    fslab::ffs::MkfsOptions { group_size: 4 << 20, journal, ..Default::default() }
}

/// `FileSystem<Ffs>` on a `MemDisk`, in one integrity mode.
pub struct FfsSubject {
    disk: Arc<MemDisk>,
    mount: fslab::ffs::MountOptions,
    block_size: u32,
    fs: FileSystem<fslab::ffs::Ffs>,
}

impl FfsSubject {
    /// Makes a new FFS on a `disk_bytes` memory disk and mounts it with a
    /// `cache_bytes` buffer cache in `integrity` mode.
    pub fn new(
        disk_bytes: u64,
        mkfs: fslab::ffs::MkfsOptions,
        cache_bytes: u64,
        integrity: fslab::ffs::Integrity,
    ) -> fslab::Result<FfsSubject> {
        let mount = fslab::ffs::MountOptions {
            cache_bytes,
            integrity,
            clean_inodes: SUBJECT_CLEAN_INODES,
            ..Default::default()
        };
        FfsSubject::with_mount(disk_bytes, mkfs, mount)
    }

    /// Makes a new FFS on a `disk_bytes` memory disk and mounts it, and
    /// every time again, with `mount`.
    pub fn with_mount(
        disk_bytes: u64,
        mkfs: fslab::ffs::MkfsOptions,
        mount: fslab::ffs::MountOptions,
    ) -> fslab::Result<FfsSubject> {
        let disk = Arc::new(MemDisk::new(disk_bytes));
        let dev: Arc<dyn BlockDevice> = disk.clone();
        fslab::mkfs_ffs(dev.clone(), &mkfs, Creds::default())?;
        let fs = checked(FileSystem::new(fslab::ffs::Ffs::mount(dev, mount.clone())?));
        Ok(FfsSubject { disk, mount, block_size: mkfs.block_size, fs })
    }

    /// The small layout the model tests use: 8 KiB blocks of 1 KiB
    /// fragments in 4 MiB cylinder groups.
    pub fn small(
        disk_bytes: u64,
        cache_bytes: u64,
        integrity: fslab::ffs::Integrity,
    ) -> fslab::Result<FfsSubject> {
        FfsSubject::new(disk_bytes, small_mkfs(integrity), cache_bytes, integrity)
    }

    /// [`FfsSubject::small`] with `realloc` moving a file's run at every
    /// block where a move is allowed (`MountOptions::realloc_always`), so
    /// that a model test sees blocks move all the time.
    pub fn small_realloc_always(
        disk_bytes: u64,
        cache_bytes: u64,
        integrity: fslab::ffs::Integrity,
    ) -> fslab::Result<FfsSubject> {
        let mount = fslab::ffs::MountOptions {
            cache_bytes,
            integrity,
            realloc: Some(true),
            realloc_always: true,
            clean_inodes: SUBJECT_CLEAN_INODES,
            ..Default::default()
        };
        FfsSubject::with_mount(disk_bytes, small_mkfs(integrity), mount)
    }

    /// The device.
    pub fn disk(&self) -> &Arc<MemDisk> {
        &self.disk
    }

    fn mount_again(&mut self) -> fslab::Result<()> {
        let dev: Arc<dyn BlockDevice> = self.disk.clone();
        self.fs = checked(FileSystem::new(fslab::ffs::Ffs::mount(dev, self.mount.clone())?));
        Ok(())
    }
}

impl Subject for FfsSubject {
    type S = fslab::ffs::Ffs;
    fn fs(&mut self) -> &mut FileSystem<fslab::ffs::Ffs> {
        &mut self.fs
    }
    fn remount(&mut self) -> fslab::Result<bool> {
        self.fs.unmount()?;
        self.mount_again()?;
        Ok(true)
    }
    fn fsck(&mut self) -> Result<(), String> {
        self.fs.unmount().map_err(|e| format!("unmount: {e}"))?;
        let found = fsck_clean(self.disk.as_ref(), true);
        self.mount_again().map_err(|e| format!("mount after fsck: {e}"))?;
        found
    }
    fn limits(&self) -> Limits {
        Limits { block_size: self.block_size as usize }
    }
    /// `statfs`'s total (the data area above `minfree`), less 8 blocks
    /// for a directory operation's own blocks, which the model counts only
    /// once done, and a block per cylinder group: a group's last free
    /// blocks may lie in fragments too scattered for a whole block. The
    /// model's count is an upper bound already (it counts every file's last
    /// block whole, and inode slots, which FFS keeps in fixed tables).
    fn capacity(&mut self) -> Option<Capacity> {
        let statfs = self.fs.statfs().ok()?;
        let groups = self.fs.storage().superblock().geometry.ncg as u64;
        Some(Capacity { total: statfs.total_blocks, fixed: 8 + groups, per: 1 << 20 })
    }
}

/// The layouts (and FFS's integrity modes) the layout-generic tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// LFS, with 64 KiB segments.
    Lfs,
    /// FFS with synchronous, ordered metadata.
    FfsSync,
    /// FFS with every write delayed.
    FfsAsync,
    /// FFS with soft updates: writes delayed, but ordered so the image on
    /// the disk stays consistent.
    FfsSoftdep,
    /// FFS with its journal (a `file` log, asynchronous commits).
    FfsJournal,
}

/// Every layout, in the order tests run them.
pub const LAYOUTS: [Layout; 5] =
    [Layout::Lfs, Layout::FfsSync, Layout::FfsAsync, Layout::FfsSoftdep, Layout::FfsJournal];

/// A test body that runs on a subject of any layout.
pub trait WithSubject {
    /// Runs on `subject`.
    fn run<T: Subject>(self, subject: T);
}

impl Layout {
    /// Runs `body` on a fresh file system of this layout, on a `disk_bytes`
    /// memory disk with a `cache_bytes` buffer cache; an LFS gets the
    /// cleaner of `cleaner` (`fslab_cleaner::policy` names), if any.
    pub fn with_subject(
        self,
        disk_bytes: u64,
        cache_bytes: u64,
        cleaner: Option<&'static str>,
        body: impl WithSubject,
    ) {
        match self {
            Layout::Lfs => {
                let subject = LfsSubject::small(disk_bytes, cache_bytes).expect("mkfs and mount a fresh LFS");
                match cleaner {
                    Some(policy) => body.run(subject.with_cleaner(policy)),
                    None => body.run(subject),
                }
            }
            Layout::FfsSync | Layout::FfsAsync | Layout::FfsSoftdep | Layout::FfsJournal => {
                let integrity = match self {
                    Layout::FfsSync => fslab::ffs::Integrity::Sync,
                    Layout::FfsAsync => fslab::ffs::Integrity::Async,
                    Layout::FfsJournal => fslab::ffs::Integrity::Journal,
                    _ => fslab::ffs::Integrity::Softdep,
                };
                body.run(
                    FfsSubject::small(disk_bytes, cache_bytes, integrity)
                        .expect("mkfs and mount a fresh FFS"),
                )
            }
        }
    }
}
