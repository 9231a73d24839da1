//! fslab's file system as a library, on a `BlockDevice` the runner made: a
//! simulated disk or an image file. Generic over the storage manager
//! through [`Layout`], so that a new layout (FFS) is one `impl` and one
//! entry per variant in `crate::system`.

use super::{io_error, split_path, Backend, Fd, Usage};
use crate::cpu::{Checksummed, PaperChecksum};
use disk::sim::Stats as DiskStats;
use disk::{BlockDevice, SimDisk};
use fslab::format::inode::kind;
use fslab::format::{Ino, ROOT_INO};
use fslab::lfs::clean::CleanerCounters;
use fslab::storage::StorageManager;
use fslab::time::TimeSource;
use fslab::ufs::{Creds, DirhashOptions, FileSystem, RenameFlags};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

const CREDS: Creds = Creds { uid: 0, gid: 0 };

/// How a mount is made: its clock, whether it must be deterministic (no
/// threads), and the buffer cache's size (the paper machine's).
#[derive(Debug, Clone)]
pub struct MountEnv {
    /// The clock the mount decides by.
    pub clock: TimeSource,
    /// Whether the run is on virtual time and must repeat exactly: no
    /// thread of the file system's may write.
    pub deterministic: bool,
    /// Bytes of buffer cache.
    pub cache_bytes: u64,
}

/// A storage manager the lab can make, mount and read counters from.
pub trait Layout: StorageManager + Sized + 'static {
    /// What the system registry fixes about it (block size, segment size,
    /// cleaner, maxcontig…).
    type Params: Clone;

    /// Writes an empty file system (without the root directory, which
    /// [`Library::make`] creates through the namespace) on `dev`, with its
    /// journal on `log` if given; returns the device it mounts on (`dev`,
    /// or the two paired). Timestamps it writes come from `env`'s clock
    /// where the layout's mkfs takes one.
    fn mkfs(
        dev: Arc<dyn BlockDevice>,
        log: Option<Arc<dyn BlockDevice>>,
        params: &Self::Params,
        env: &MountEnv,
    ) -> fslab::Result<Arc<dyn BlockDevice>>;

    /// Mounts it.
    fn mount(dev: Arc<dyn BlockDevice>, params: &Self::Params, env: &MountEnv) -> fslab::Result<Self>;

    /// Blocks checksummed since mount.
    fn checksummed_blocks(&self) -> u64;

    /// Of those, segment summaries (which 4.4BSD's LFS summed whole, where
    /// it summed one word of every other block).
    fn summaries_written(&self) -> u64 {
        0
    }

    /// What the layout's ancestor in the papers checksummed of the same
    /// blocks (`--cpu-model paper`).
    const PAPER_CHECKSUM: PaperChecksum;

    /// Whether the namespace over it keeps dirhash's name index.
    fn dirhash(_params: &Self::Params) -> bool {
        true
    }

    /// Where every file's blocks lie, for a layout that places them.
    fn placements(&mut self) -> Option<fslab::Result<super::Placements>> {
        None
    }

    /// Every group's free space, for a layout that keeps groups.
    fn free_space(&self) -> Option<super::FreeSpaceMap> {
        None
    }

    /// How inodes divide among cylinder groups, for a layout that keeps
    /// groups.
    fn cylinder_groups(&self) -> Option<super::CylinderGroups> {
        None
    }

    /// The idle work of [`super::Backend::idle`].
    fn idle(&mut self) -> fslab::Result<()> {
        Ok(())
    }

    /// The cleaner's counters since mount, for a layout that cleans.
    fn cleaner(&self) -> Option<CleanerCounters> {
        None
    }
}

/// The namespace over `storage`, with the dirhash setting `params` give.
fn namespace<L: Layout>(storage: L, params: &L::Params) -> FileSystem<L> {
    let mut fs = FileSystem::new(storage);
    fs.set_dirhash_options(DirhashOptions { enabled: L::dirhash(params), ..DirhashOptions::default() });
    fs
}

/// fslab on a device: the namespace over layout `L`.
///
/// Lifecycle: [`Library::make`] (mkfs, mount, root) → the workload's calls
/// → [`Backend::finish`] (unmount). `drop_caches` unmounts and mounts again
/// on the same device; counters that the layout keeps since mount are
/// carried across (`checksummed_base`, `cleaner_base`).
pub struct Library<L: Layout> {
    fs: Option<FileSystem<L>>,
    dev: Arc<dyn BlockDevice>,
    sim: Option<Arc<SimDisk>>,
    params: L::Params,
    env: MountEnv,
    /// Directories by path ("" is the root).
    dirs: HashMap<String, Ino>,
    open: HashMap<Fd, Ino>,
    next_fd: Fd,
    checksummed_base: Checksummed,
    scanned_base: u64,
    cleaner_base: Option<CleanerCounters>,
}

impl<L: Layout> Library<L> {
    /// Makes a file system of `params` on `dev` (its journal on `log`, if
    /// given) and mounts it. `sim` is the simulated disk under `dev`, if
    /// any, for its counters.
    pub fn make(
        dev: Arc<dyn BlockDevice>,
        log: Option<Arc<dyn BlockDevice>>,
        sim: Option<Arc<SimDisk>>,
        params: L::Params,
        env: MountEnv,
    ) -> io::Result<Library<L>> {
        let dev = L::mkfs(dev, log, &params, &env).map_err(io_error)?;
        let mut fs = namespace::<L>(L::mount(dev.clone(), &params, &env).map_err(io_error)?, &params);
        fs.create_root(0o755, CREDS).map_err(io_error)?;
        Ok(Library::serving(fs, dev, sim, params, env))
    }

    /// Mounts the file system already on `dev` (made by `fslab mkfs`, with
    /// its root), as [`Library::make`] does after its mkfs.
    pub fn open(
        dev: Arc<dyn BlockDevice>,
        sim: Option<Arc<SimDisk>>,
        params: L::Params,
        env: MountEnv,
    ) -> io::Result<Library<L>> {
        let fs = namespace::<L>(L::mount(dev.clone(), &params, &env).map_err(io_error)?, &params);
        Ok(Library::serving(fs, dev, sim, params, env))
    }

    /// A target over `fs`, mounted on `dev`, with nothing open yet.
    fn serving(
        fs: FileSystem<L>,
        dev: Arc<dyn BlockDevice>,
        sim: Option<Arc<SimDisk>>,
        params: L::Params,
        env: MountEnv,
    ) -> Library<L> {
        let mut dirs = HashMap::new();
        dirs.insert(String::new(), ROOT_INO);
        Library {
            fs: Some(fs),
            dev,
            sim,
            params,
            env,
            dirs,
            open: HashMap::new(),
            next_fd: 1,
            checksummed_base: Checksummed { paper: L::PAPER_CHECKSUM, ..Checksummed::default() },
            scanned_base: 0,
            cleaner_base: None,
        }
    }

    fn fs(&mut self) -> io::Result<&mut FileSystem<L>> {
        self.fs.as_mut().ok_or_else(|| io::Error::other("file system is unmounted"))
    }

    fn dir(&mut self, path: &str) -> io::Result<Ino> {
        if let Some(&ino) = self.dirs.get(path) {
            return Ok(ino);
        }
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        let inode = self.fs()?.lookup(parent, name.as_bytes()).map_err(io_error)?;
        if inode.attr.mode & kind::MASK != kind::DIR {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        self.dirs.insert(path.to_string(), inode.ino);
        Ok(inode.ino)
    }

    fn lookup(&mut self, path: &str) -> io::Result<Ino> {
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        Ok(self.fs()?.lookup(parent, name.as_bytes()).map_err(io_error)?.ino)
    }

    fn handle(&self, fd: Fd) -> io::Result<Ino> {
        self.open.get(&fd).copied().ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    fn new_fd(&mut self, ino: Ino) -> Fd {
        let fd = self.next_fd;
        self.next_fd += 1;
        self.open.insert(fd, ino);
        fd
    }
}

impl<L: Layout> Backend for Library<L> {
    fn works_on_the_callers_thread(&self) -> bool {
        true
    }

    fn mkdir(&mut self, path: &str) -> io::Result<()> {
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        let inode = self.fs()?.mkdir(parent, name.as_bytes(), 0o755, CREDS).map_err(io_error)?;
        self.dirs.insert(path.to_string(), inode.ino);
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> io::Result<()> {
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        self.fs()?.rmdir(parent, name.as_bytes()).map_err(io_error)?;
        self.dirs.remove(path);
        Ok(())
    }

    fn create(&mut self, path: &str) -> io::Result<Fd> {
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        let inode =
            self.fs()?.mknod(parent, name.as_bytes(), kind::REG | 0o644, 0, CREDS).map_err(io_error)?;
        Ok(self.new_fd(inode.ino))
    }

    fn open(&mut self, path: &str) -> io::Result<Fd> {
        let ino = self.lookup(path)?;
        Ok(self.new_fd(ino))
    }

    fn close(&mut self, fd: Fd) -> io::Result<()> {
        self.open.remove(&fd).map(|_| ()).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))
    }

    /// A short write goes on with the rest, as a program's write loop
    /// (and `Dir`'s `write_all_at`) does: the next call says why it
    /// stopped (ENOSPC on a full file system).
    fn write(&mut self, fd: Fd, offset: u64, data: &[u8]) -> io::Result<()> {
        let ino = self.handle(fd)?;
        let mut done = 0;
        while done < data.len() {
            let written = self.fs()?.write(ino, offset + done as u64, &data[done..]).map_err(io_error)?;
            if written == 0 {
                return Err(io::Error::other(format!("short write: {done} of {} bytes", data.len())));
            }
            done += written;
        }
        Ok(())
    }

    fn read(&mut self, fd: Fd, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let ino = self.handle(fd)?;
        let data = self.fs()?.read(ino, offset, buf.len()).map_err(io_error)?;
        buf[..data.len()].copy_from_slice(&data);
        buf[data.len()..].fill(0);
        Ok(())
    }

    fn fsync(&mut self, fd: Fd) -> io::Result<()> {
        let ino = self.handle(fd)?;
        self.fs()?.fsync(ino, false).map_err(io_error)
    }

    fn truncate(&mut self, fd: Fd, size: u64) -> io::Result<()> {
        let ino = self.handle(fd)?;
        let change = fslab::ufs::SetAttr { size: Some(size), ..Default::default() };
        self.fs()?.setattr(ino, &change).map(drop).map_err(io_error)
    }

    fn unlink(&mut self, path: &str) -> io::Result<()> {
        let (parent, name) = split_path(path);
        let parent = self.dir(parent)?;
        self.fs()?.unlink(parent, name.as_bytes()).map_err(io_error)
    }

    fn rename(&mut self, from: &str, to: &str) -> io::Result<()> {
        let (parent, name) = split_path(from);
        let (new_parent, new_name) = split_path(to);
        let parent = self.dir(parent)?;
        let new_parent = self.dir(new_parent)?;
        self.fs()?
            .rename(parent, name.as_bytes(), new_parent, new_name.as_bytes(), RenameFlags::default())
            .map_err(io_error)?;
        // A renamed directory's cached path, and those under it, are stale.
        let prefix = format!("{from}/");
        self.dirs.retain(|path, _| path != from && !path.starts_with(&prefix));
        Ok(())
    }

    fn stat(&mut self, path: &str) -> io::Result<Option<u64>> {
        match self.lookup(path) {
            Ok(ino) => Ok(Some(self.fs()?.getattr(ino).map_err(io_error)?.attr.size)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        self.fs()?.sync().map_err(io_error)
    }

    fn drop_caches(&mut self) -> io::Result<bool> {
        let (checksummed, cleaner) = (self.checksummed(), self.cleaner());
        let scanned = self.dir_blocks_scanned().0;
        if let Some(mut fs) = self.fs.take() {
            fs.unmount().map_err(io_error)?;
        }
        let storage = L::mount(self.dev.clone(), &self.params, &self.env).map_err(io_error)?;
        self.fs = Some(namespace::<L>(storage, &self.params));
        self.checksummed_base = checksummed;
        self.scanned_base = scanned;
        self.cleaner_base = cleaner;
        // Inode numbers stay valid across a remount; names are looked up again.
        self.dirs.retain(|path, _| path.is_empty());
        Ok(true)
    }

    fn tick(&mut self) -> io::Result<()> {
        self.fs()?.tick().map_err(io_error)
    }

    fn usage(&mut self) -> io::Result<Usage> {
        let st = self.fs()?.statfs().map_err(io_error)?;
        let bs = st.block_size as u64;
        Ok(Usage { total: st.total_blocks * bs, free: st.free_blocks * bs })
    }

    fn checksummed(&mut self) -> Checksummed {
        let base = self.checksummed_base;
        match self.fs.as_mut() {
            Some(fs) => {
                let block_size = fs.block_size();
                let storage = fs.storage();
                Checksummed {
                    blocks: base.blocks + storage.checksummed_blocks(),
                    summaries: base.summaries + storage.summaries_written(),
                    block_size,
                    paper: L::PAPER_CHECKSUM,
                }
            }
            None => base,
        }
    }

    /// Only without dirhash: a hashed lookup's cost is in the calibrated
    /// cost of a call (`crate::cpu`), and how many chunks it confirms
    /// depends on its table's random key (2002 §3.5), which would make
    /// virtual time differ from run to run.
    fn dir_blocks_scanned(&mut self) -> (u64, u32) {
        if L::dirhash(&self.params) {
            return (0, 0);
        }
        match self.fs.as_mut() {
            Some(fs) => (self.scanned_base + fs.dirhash_stats().blocks_read, fs.block_size()),
            None => (self.scanned_base, 0),
        }
    }

    fn disk_stats(&mut self) -> Option<DiskStats> {
        self.sim.as_ref().map(|d| d.stats())
    }

    fn cleaner(&mut self) -> Option<CleanerCounters> {
        let now = self.fs.as_mut()?.storage().cleaner()?;
        Some(match self.cleaner_base {
            Some(base) => CleanerCounters {
                segments_cleaned: base.segments_cleaned + now.segments_cleaned,
                user_bytes_written: base.user_bytes_written + now.user_bytes_written,
                user_data_bytes_written: base.user_data_bytes_written + now.user_data_bytes_written,
                cleaner_bytes_written: base.cleaner_bytes_written + now.cleaner_bytes_written,
                cleaner_bytes_read: base.cleaner_bytes_read + now.cleaner_bytes_read,
                blocks_moved: base.blocks_moved + now.blocks_moved,
            },
            None => now,
        })
    }

    fn placements(&mut self) -> Option<io::Result<super::Placements>> {
        let fs = self.fs.as_mut()?;
        fs.storage().placements().map(|r| r.map_err(io_error))
    }

    fn free_space(&mut self) -> Option<super::FreeSpaceMap> {
        self.fs.as_mut()?.storage().free_space()
    }

    fn cylinder_groups(&mut self) -> Option<super::CylinderGroups> {
        self.fs.as_mut()?.storage().cylinder_groups()
    }

    fn idle(&mut self) -> io::Result<()> {
        self.fs()?.storage().idle().map_err(io_error)
    }

    fn inode(&mut self, path: &str) -> Option<io::Result<u64>> {
        Some(self.lookup(path))
    }

    fn finish(&mut self) -> io::Result<()> {
        if let Some(mut fs) = self.fs.take() {
            fs.unmount().map_err(io_error)?;
        }
        Ok(())
    }
}
