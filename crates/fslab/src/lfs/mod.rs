//! The log-structured storage manager (BSD-LFS, 1993 paper).
//!
//! Every write goes to the end of a log divided into segments; each partial
//! segment begins with a summary naming every block in it (§2.1, §3.3). The
//! ifile holds the inode map and the segment usage table (§4.2); a checkpoint
//! writes the ifile and then points a superblock at its inode (§4.5).
//!
//! Parts: [`layout`] (on-disk structures), [`ifile`] (the ifile in memory:
//! its tables and its inode), `usage` (the segment usage table), `bmap`
//! (block map, reads, writes, frees), `writer` (the segment writer), `log`
//! (where the log's heads stand, its serial numbers, and what the writer
//! keeps between writes), `checkpoint` (when one is due, writing it), `io`
//! (the thread that writes partial segments), `space` (the two kinds of block
//! accounting of §3.2), `placement` (which log head users' writes go to),
//! [`clean`] (the cleaner's mechanism, §3.5: all a policy may see and do),
//! `orphans` (the on-disk list of files unlinked while open, and their
//! reclaim at mount), `mount` (mkfs, mount, dump, and what a mount keeps of
//! its own life), `rollforward` (recovery of the log after the checkpoint,
//! §2.2), `inspect` (read-only helpers for fsck). Relies on the buffer cache
//! below it and on `disk::BlockDevice`; knows nothing of directories or
//! names. How it all works: `docs/design/lfs.md` and
//! `docs/design/cleaner.md`.

mod bmap;
mod checkpoint;
pub mod clean;
pub mod ifile;
mod imap;
pub mod inspect;
mod io;
pub mod layout;
mod log;
mod mount;
mod orphans;
mod placement;
mod rollforward;
mod space;
mod usage;
mod writer;

pub use mount::{dump, mkfs, mkfs_at, probe, CheckpointFallback};
pub use placement::UserSeparation;
pub use rollforward::Recovery;

use crate::cache::{block_of, BufferCache};
use crate::error::errno;
use crate::format::blockno::Geometry;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
use crate::storage::{Fetches, Hint, StatFs, StorageManager, Ticket, TxLog, TxSpec};
use crate::time::TimeSource;
use crate::Result;
use bmap::NewContents;
use disk::{AlignedBytes, BlockDevice};
use layout::Superblock;
use std::collections::HashSet;
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
        MkfsOptions { block_size: 4096, segment_size: DEFAULT_SEGMENT_SIZE as u32 }
    }
}

/// The segment size mkfs picks when the device has room for it.
pub const DEFAULT_SEGMENT_SIZE: u64 = 1 << 20;
/// The smallest block size.
pub const MIN_BLOCK_SIZE: u64 = 4 << 10;
/// The largest block size.
pub const MAX_BLOCK_SIZE: u64 = 64 << 10;
/// The fewest blocks a segment holds.
pub const MIN_SEGMENT_BLOCKS: u64 = 16;
/// The fewest segments a device holds: the cleaner needs room to move live
/// blocks out of the segments it cleans.
pub const MIN_SEGMENTS: u64 = 8;

impl MkfsOptions {
    /// The options for a device of `size` bytes with blocks of `block_size`
    /// bytes and segments of `segment_size` bytes, or, when none is given,
    /// the default segment size halved until [`MIN_SEGMENTS`] fit (but never
    /// below [`MIN_SEGMENT_BLOCKS`] blocks). The error says in words which
    /// limit a size breaks, for the person who chose it.
    pub fn for_device(
        size: u64,
        block_size: u64,
        segment_size: Option<u64>,
    ) -> std::result::Result<MkfsOptions, String> {
        use crate::format::human_bytes as human;
        if !block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
            return Err(format!(
                "block size must be a power of two from {} to {}, not {block_size}",
                human(MIN_BLOCK_SIZE),
                human(MAX_BLOCK_SIZE)
            ));
        }
        let min_segment = MIN_SEGMENT_BLOCKS * block_size;
        let max_segment = size / MIN_SEGMENTS;
        if max_segment < min_segment {
            return Err(format!(
                "{} is too small: with {block_size}-byte blocks it must hold {MIN_SEGMENTS} segments of \
                 {MIN_SEGMENT_BLOCKS} blocks, at least {}",
                human(size),
                human(MIN_SEGMENTS * min_segment)
            ));
        }
        let segment = match segment_size {
            Some(s) => s,
            None => {
                let fitting = 1u64 << max_segment.ilog2();
                DEFAULT_SEGMENT_SIZE.min(fitting).max(min_segment)
            }
        };
        if !segment.is_power_of_two() {
            return Err(format!("segment size must be a power of two, not {segment}"));
        }
        if segment < min_segment {
            return Err(format!(
                "segment size {} is less than {MIN_SEGMENT_BLOCKS} blocks of {block_size} bytes",
                human(segment)
            ));
        }
        if segment > max_segment {
            return Err(format!(
                "segment size {} is more than 1/{MIN_SEGMENTS} of the {} device (at most {})",
                human(segment),
                human(size),
                human(1u64 << max_segment.ilog2())
            ));
        }
        let segment_size =
            u32::try_from(segment).map_err(|_| format!("segment size {} is too large", human(segment)))?;
        // The range check above keeps the block size within a u32.
        Ok(MkfsOptions { block_size: block_size as u32, segment_size })
    }
}

/// Choices made at each mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// Memory the buffer cache may use.
    pub cache_bytes: u64,
    /// Time between automatic checkpoints, on `clock`.
    pub checkpoint_interval: Duration,
    /// Who writes partial segments to the device (default: a thread).
    pub segment_writes: SegmentWrites,
    /// The clock periodic checkpoints go by (default: the host's). A mount
    /// on a simulated disk is given the disk's virtual clock, so that a run
    /// repeats to the nanosecond.
    pub clock: TimeSource,
    /// Mount an image the last fsck left marked damaged (`SB_DAMAGED`),
    /// which every other mount refuses: for fsck's own repair, and for a
    /// read-only mount (over a `disk::ReadOnlyOverlay`), whose writes
    /// never reach the image and so cannot make the damage worse.
    pub allow_damaged: bool,
    /// Changed inodes past which a segment write starts (between
    /// directory operations), whatever the cache holds: creating empty
    /// files dirties inodes and hardly a block, and each changed inode is
    /// held in memory (and its directory operation's record) until a
    /// segment write takes it. `None`: only the cache's threshold and
    /// checkpoints write, as the lab's systems, which rerun papers, do.
    pub max_dirty_inodes: Option<usize>,
    /// Memory for blocks of the inode map beside those changed since the
    /// last ifile write: past it, the map is read from the ifile a block
    /// at a time (`imap.rs`), so a file system of millions of inodes does
    /// not hold 16 bytes for each.
    pub imap_resident_bytes: u64,
    /// Clean inodes kept in memory (`cache::InodeCache`); changed ones are
    /// kept until written whatever this says.
    pub clean_inodes: usize,
}

/// The default [`MountOptions::max_dirty_inodes`]: 16,384 inodes are
/// about 4 MiB in memory, and a segment write every 16,384 creates left
/// creating empty files through the mount no slower
/// (`docs/lab/analysis.md`, "Memory a file").
pub const MAX_DIRTY_INODES: usize = 16_384;

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            cache_bytes: 256 << 20,
            checkpoint_interval: Duration::from_secs(30),
            segment_writes: SegmentWrites::Thread,
            clock: TimeSource::wall(),
            allow_damaged: false,
            max_dirty_inodes: Some(MAX_DIRTY_INODES),
            imap_resident_bytes: ifile::IMAP_RESIDENT_BYTES,
            clean_inodes: crate::cache::DEFAULT_CLEAN_INODES,
        }
    }
}

impl MountOptions {
    /// Options for a deterministic run on a simulated disk: segments
    /// written inline and checkpoints by `clock`, so no thread and no host
    /// time takes part.
    pub fn deterministic(clock: TimeSource) -> MountOptions {
        MountOptions { segment_writes: SegmentWrites::Inline, clock, ..MountOptions::default() }
    }
}

/// Who hands partial segments to the device: the cache's writer thread
/// (the default), or the segment writer itself, inline.
pub use crate::cache::WriteMode as SegmentWrites;

/// Counters since mount, for `dump` and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Partial segments written.
    pub partial_segments: u64,
    /// Of those, the ones written at the cold head.
    pub cold_partial_segments: u64,
    /// Blocks written, summaries included.
    pub blocks_written: u64,
    /// Device writes issued.
    pub writes: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Segments made clean because nothing in them was live.
    pub segments_reclaimed: u64,
}

/// Segments of dirty data that make a write behind due. The 1993 paper's
/// LFS began its writes at about 800 KB (§3.1), one segment; waking the
/// write-behind thread for each segment's worth woke it on nearly every
/// 1 MiB request of a sequential write, and every wake-up is a switch (on a
/// virtual machine, a crossing to the other CPU). With four, a 1 GiB write
/// used 7% less CPU and ran 5% faster (five alternating runs each; two and
/// eight segments did no better).
const WRITE_BEHIND_SEGMENTS: u64 = 4;

/// A mounted LFS.
///
/// Lifecycle: [`Lfs::mount`] (or `mkfs`) → any [`StorageManager`] calls →
/// [`StorageManager::unmount`]. One thread at a time (`&mut self`).
///
/// State and who changes it:
/// * `inodes` — every inode touched since mount; dirty ones are written by
///   the segment writer into inode blocks, which updates the inode map.
/// * `cache` — data, indirect and xattr blocks by (inode, lbn). Dirtying a
///   block also dirties every indirect block above it, because the segment
///   writer will give the block a new address (no-overwrite).
/// * `ifile` — the ifile in memory (`ifile::Ifile`); its changed blocks
///   are written at every checkpoint and after every directory operation
///   (§4.3).
/// * `writer` — where the log goes on and what is in flight to it
///   (`log::LogWriter`); advanced only by the segment writer.
/// * `tx` — the open transaction and the directory operations not yet
///   written (`OpenTx`).
/// * `mount` — this mount's options, what mounting it found, and whether
///   it has ended (`mount::Mounted`).
/// * `clean`, `orphans` — the cleaner's and the orphan list's own state,
///   each owned by its module.
pub struct Lfs {
    dev: Arc<dyn BlockDevice>,
    sb: Superblock,
    geometry: Geometry,
    block_size: usize,
    cache: BufferCache,
    inodes: crate::cache::InodeCache,
    /// The ifile's tables, its own inode and where that inode lies.
    ifile: ifile::Ifile,
    /// The log's heads, which head users' writes go to, the writes in
    /// flight and the counts of what was written.
    writer: log::LogWriter,
    /// The open transaction and the directory operations since the last
    /// segment write.
    tx: OpenTx,
    /// This mount's options, recovery, checkpoint schedule and end.
    mount: mount::Mounted,
    /// The cleaner mechanism's state and counters.
    clean: clean::CleanState,
    /// Inodes with no name that are still open (`orphans`).
    orphans: orphans::OrphanList,
    /// Whether reads are sequential, for read-ahead (`bmap.rs`).
    read_ahead: crate::bmap::ReadAhead,
}

/// The open transaction, the inodes that directory operations changed
/// since the last segment write, and the files a truncate or a move of
/// blocks reshaped since. Kept together because they decide what a
/// segment write may write alone: it must not split a directory operation
/// (§4.3), nor write a reshaped file's inode without its blocks (see
/// `reshaped`). `dirop_inodes` grows only
/// while `log` has a namespace operation open; a segment write takes the
/// whole set at once, writing those inodes in SS_DIROP partial segments
/// followed by the ifile; and the writer starts on its own
/// (`maybe_write`) only while no such operation is open.
#[derive(Default)]
struct OpenTx {
    /// The open transaction: a namespace one is a directory operation.
    log: TxLog,
    /// Inodes changed inside directory operations since the last segment
    /// write.
    dirop_inodes: HashSet<Ino>,
    /// Files whose trees a truncate, a punched hole or a move of blocks
    /// changed since their last whole write: their inodes in memory name
    /// pointers cleared and blocks not yet placed, so only a write of all
    /// their dirty blocks may write those inodes, never the cleaner's write
    /// of the blocks it moved alone (`Batch::only_data`).
    reshaped: HashSet<Ino>,
}

impl Lfs {
    /// Mounts the file system on `dev`: the newest valid checkpoint, then
    /// roll-forward through the log written after it, then a checkpoint if
    /// anything was recovered.
    pub fn mount(dev: Arc<dyn BlockDevice>, options: MountOptions) -> Result<Lfs> {
        let allow_damaged = options.allow_damaged;
        let mut lfs = mount::mount(dev, options)?;
        if lfs.sb.checkpoint.flags & layout::SB_DAMAGED != 0 && !allow_damaged {
            return Err(crate::Error::Foreign(
                "the last fsck left damage it could not repair, and a mount that writes could \
                 overwrite what a damaged file still holds: run `fslab fsck --repair` again, \
                 or mount it read-only (-o ro) to copy off what can be read"
                    .into(),
            ));
        }
        let (listed, damage) = lfs.read_orphan_list();
        lfs.mount.recovery = lfs.roll_forward()?;
        let reclaimed = lfs.reclaim_orphans(listed, damage)?;
        if lfs.mount.recovery.applied > 0 || reclaimed {
            lfs.checkpoint(false)?;
        }
        Ok(lfs)
    }

    /// Records whether fsck left damage it could not repair, in this and
    /// every later checkpoint (`SB_DAMAGED`): set, mounts refuse to write
    /// to the image until a clean fsck clears it.
    pub fn set_damaged(&mut self, damaged: bool) {
        if damaged {
            self.sb.checkpoint.flags |= layout::SB_DAMAGED;
        } else {
            self.sb.checkpoint.flags &= !layout::SB_DAMAGED;
        }
    }

    /// Whether the mount fell back from a damaged newest checkpoint to an
    /// older one, and which.
    pub fn checkpoint_fallback(&self) -> Option<&CheckpointFallback> {
        self.mount.fallback.as_ref()
    }

    /// What roll-forward recovered at mount.
    pub fn recovery(&self) -> Recovery {
        self.mount.recovery
    }

    /// Counters since mount.
    pub fn stats(&self) -> Stats {
        self.writer.stats
    }

    /// The superblock, with the latest checkpoint.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    fn bytes_per_frag(&self) -> u64 {
        self.block_size as u64 / 512
    }

    fn seg_of(&self, daddr: Daddr) -> u64 {
        daddr.get() / self.sb.blocks_per_segment()
    }

    fn total_disk_blocks(&self) -> u64 {
        self.sb.nsegments * self.sb.blocks_per_segment()
    }

    /// The inode of `ino` as held in memory, loading it if needed.
    fn cached_inode(&mut self, ino: Ino) -> Result<&mut Inode> {
        if ino == IFILE_INO {
            return Err(errno(libc::EPERM, "the ifile is not a namespace file"));
        }
        if self.inodes.get(ino).is_none() {
            self.load_inode_block(ino)?;
        }
        self.inodes.get_mut(ino).ok_or_else(|| errno(libc::ENOENT, "inode vanished from the cache"))
    }

    /// Reads the block the inode map names for `ino` and keeps `ino` and
    /// every other inode in it whose current copy it is, as 4.4BSD's LFS
    /// reads inodes through the buffer cache (lfs_vget reads the inode
    /// block, which stays cached): files written together share inode
    /// blocks, and reading them in creation order (1995 Fig. 4) costs one
    /// read per block, not one per file.
    fn load_inode_block(&mut self, ino: Ino) -> Result<()> {
        use crate::format::inode::INODE_SIZE;
        let entry = self.imap_entry(ino)?.ok_or_else(|| errno(libc::ENOENT, "no such inode number"))?;
        if entry.daddr.is_none() {
            return Err(errno(libc::ENOENT, "inode is not allocated"));
        }
        let mut block = vec![0u8; self.block_size];
        self.read_addr(entry.daddr, &mut block)?;
        let mut wanted = None;
        for inode in block.chunks_exact(INODE_SIZE).filter_map(|slot| Inode::decode(slot).ok()) {
            let other = inode.ino;
            if other == ino {
                wanted = Some(inode);
                continue;
            }
            let current =
                other != IFILE_INO && self.imap_entry(other)?.is_some_and(|e| e.daddr == entry.daddr);
            if current && self.inodes.get(other).is_none() {
                self.inodes.insert(inode, false);
            }
        }
        let Some(inode) = wanted else {
            return Err(crate::Error::corrupt(
                "inode block",
                entry.daddr,
                format!("inode {ino} is not in the block the inode map names"),
            ));
        };
        // Last: an insert into a full cache drops half of its clean
        // inodes, and one of its neighbours' inserts could drop it.
        self.inodes.insert(inode, false);
        Ok(())
    }

    /// Finds inode `ino` in the inode block at `daddr`.
    fn find_inode_in_block(&self, daddr: Daddr, ino: Ino) -> Result<Inode> {
        use crate::format::inode::INODE_SIZE;
        let mut block = vec![0u8; self.block_size];
        self.read_addr(daddr, &mut block)?;
        for slot in block.chunks_exact(INODE_SIZE) {
            if let Ok(inode) = Inode::decode(slot) {
                if inode.ino == ino {
                    return Ok(inode);
                }
            }
        }
        Err(crate::Error::corrupt(
            "inode block",
            daddr,
            format!("inode {ino} is not in the block the inode map names"),
        ))
    }

    /// Reads the blocks from disk address `daddr` on into `buf` (a whole
    /// number of blocks), which must lie on the device and outside the first
    /// block (a superblock), once no write in flight covers them.
    /// Fails unless `blocks` blocks from `daddr` lie on the device: a
    /// damaged pointer is reported, never read through.
    fn check_addr(&self, daddr: Daddr, blocks: u64) -> Result<()> {
        if daddr.is_none() || daddr.get().saturating_add(blocks) > self.total_disk_blocks() {
            return Err(crate::Error::corrupt("block pointer", daddr, "address outside the device"));
        }
        Ok(())
    }

    fn read_addr(&self, daddr: Daddr, buf: &mut [u8]) -> Result<()> {
        let blocks = (buf.len() / self.block_size) as u64;
        self.check_addr(daddr, blocks)?;
        self.writer.io.wait_for(daddr, blocks);
        self.dev.read_at(daddr.byte_offset(self.block_size as u64), buf)?;
        Ok(())
    }

    /// A user's write into block `lbn` of `ino`.
    fn store_user_block(&mut self, ino: Ino, lbn: Lbn, contents: NewContents) -> Result<()> {
        self.check_mounted()?;
        self.tx.log.dirtied(ino, lbn);
        self.note_user_write(ino)?;
        self.write_file_block(ino, lbn, contents)?;
        self.note_dirop(ino);
        self.maybe_write()
    }

    /// Whether a directory operation (a namespace transaction) is open.
    fn in_dirop(&self) -> bool {
        self.tx.log.in_namespace_op()
    }

    fn note_dirop(&mut self, ino: Ino) {
        if self.in_dirop() {
            self.tx.dirop_inodes.insert(ino);
        }
    }

    /// Starts a segment write if the cache asks for one, or too many
    /// inodes wait (`MountOptions::max_dirty_inodes`), and no directory
    /// operation is open (a segment write must not split one, §4.3).
    fn maybe_write(&mut self) -> Result<()> {
        let inodes_due =
            self.mount.options.max_dirty_inodes.is_some_and(|max| self.inodes.dirty().len() >= max.max(1));
        if !self.in_dirop() && (self.cache.should_start_write() || inodes_due) {
            self.write_segments(false)?;
        }
        self.maybe_clean()
    }

    /// Dirty bytes worth writing behind the writers' backs: a few segments'
    /// worth ([`WRITE_BEHIND_SEGMENTS`]), never more than the start-write
    /// threshold at which the writers themselves begin. Each write pays its
    /// own inode, indirect blocks and summary; at a segment that is well
    /// under 1% of what it writes.
    fn write_behind_bytes(&self) -> u64 {
        (WRITE_BEHIND_SEGMENTS * self.sb.blocks_per_segment() * self.block_size as u64)
            .min(self.cache.start_write_bytes())
    }

    fn dirty_inode_count(&self) -> u64 {
        self.inodes.dirty().len() as u64
    }

    /// Marks inode `ino` as needing to be written.
    fn mark_inode_dirty(&mut self, ino: Ino) -> Result<()> {
        self.cached_inode(ino)?;
        self.inodes.mark_dirty(ino);
        Ok(())
    }

    fn check_mounted(&self) -> Result<()> {
        if self.mount.unmounted {
            return Err(errno(libc::EIO, "file system is unmounted"));
        }
        if self.mount.failed.is_some() {
            return Err(errno(
                libc::EIO,
                "the log writer failed earlier: read-only until mounted again (what was synced is safe)",
            ));
        }
        Ok(())
    }

    /// The log writer's first error, if one made this mount read-only
    /// ([`Mounted::failed`](mount::Mounted)).
    pub fn writer_failure(&self) -> Option<&str> {
        self.mount.failed.as_deref()
    }

    /// Runs `write`, a write of partial segments, on a mount that may
    /// still change; an error it returns makes the mount read-only.
    fn writing<R>(&mut self, write: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
        self.check_mounted()?;
        let result = write(self);
        if let Err(e) = &result {
            if self.mount.failed.is_none() {
                self.mount.failed = Some(e.to_string());
            }
        }
        result
    }
}

impl StorageManager for Lfs {
    fn block_size(&self) -> u32 {
        self.block_size as u32
    }

    fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{hash_set_bytes, MemoryUse};
        let mut parts = self.cache.memory();
        parts.push(self.inodes.memory());
        parts.extend(self.ifile.tables.memory());
        parts.push(self.writer.separation.memory());
        parts.push(MemoryUse::new(
            "directory operations' inodes",
            self.tx.dirop_inodes.len(),
            hash_set_bytes(&self.tx.dirop_inodes),
        ));
        parts.push(MemoryUse::new(
            "files reshaped since written",
            self.tx.reshaped.len(),
            hash_set_bytes(&self.tx.reshaped),
        ));
        parts
    }

    fn now(&self) -> crate::format::TimeNs {
        self.mount.options.clock.calendar_ns()
    }

    fn max_file_size(&self) -> u64 {
        self.geometry.max_blocks().saturating_mul(self.block_size as u64).min(i64::MAX as u64)
    }

    fn valloc(&mut self, _parent: Ino, _mode: u32) -> Result<Inode> {
        self.check_mounted()?;
        self.check_space(1, space::SpaceFor::Metadata)?;
        let head = self.ifile.tables.free_head();
        self.imap_ready(head)?;
        let (ino, version) = self.ifile.tables.alloc_inode()?;
        let inode = Inode { ino, generation: version, ..Inode::default() };
        self.inodes.insert(inode, true);
        self.note_dirop(ino);
        Ok(inode)
    }

    fn vfree(&mut self, ino: Ino) -> Result<()> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        for key in self.cache.keys_in(ino, Lbn::MIN..=Lbn::MAX) {
            self.cache.remove(key);
        }
        self.inodes.remove(ino);
        if let Some(entry) = self.imap_entry(ino)? {
            if entry.daddr.is_some() {
                self.adjust_live(self.seg_of(entry.daddr), -(crate::format::inode::INODE_SIZE as i64));
            }
        }
        self.ifile.tables.free_inode(ino)?;
        self.note_dirop(ino);
        Ok(())
    }

    fn vget(&mut self, ino: Ino) -> Result<Inode> {
        Ok(*self.cached_inode(ino)?)
    }

    fn peek_inode(&self, ino: Ino) -> Option<Inode> {
        if ino == IFILE_INO {
            return None;
        }
        self.inodes.get(ino).copied()
    }

    fn peek_block(&self, ino: Ino, lbn: Lbn) -> Option<&[u8]> {
        if ino == IFILE_INO {
            return None;
        }
        self.cache.peek((ino, lbn))
    }

    fn update(&mut self, ino: Ino, attr: &InodeAttr) -> Result<()> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        if !self.inodes.is_dirty(ino) {
            self.check_inode_space()?;
        }
        self.cached_inode(ino)?.attr = *attr;
        self.mark_inode_dirty(ino)?;
        self.note_dirop(ino);
        Ok(())
    }

    fn read_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        self.cached_inode(ino)?;
        self.read_file_block(ino, lbn, buf)
    }

    fn read_block_part(&mut self, ino: Ino, lbn: Lbn, offset: usize, buf: &mut [u8]) -> Result<()> {
        self.cached_inode(ino)?;
        let bs = self.block_size() as usize;
        if let Some(block) = self.cache.get_held((ino, lbn)) {
            return crate::storage::copy_part(block, bs, offset, buf);
        }
        let mut block = vec![0u8; bs];
        self.read_file_block(ino, lbn, &mut block)?;
        crate::storage::copy_part(&block, bs, offset, buf)
    }

    fn read_blocks(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<()> {
        self.cached_inode(ino)?;
        self.read_file_blocks(ino, first, buf, None)
    }

    fn read_blocks_later(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<Option<Fetches>> {
        self.cached_inode(ino)?;
        let mut later = Fetches::new(Arc::new(self.writer.io.reader()), self.block_size);
        self.read_file_blocks(ino, first, buf, Some(&mut later))?;
        Ok((!later.is_empty()).then_some(later))
    }

    /// A block read alone is cached, as [`Lfs::read_file_blocks`] caches
    /// it: if no write since the plan reached its address and it still
    /// lies there (had the file or the cleaner rewritten it, it would lie
    /// elsewhere now).
    fn adopt_fetched(&mut self, ino: Ino, fetches: &Fetches, buf: &[u8]) {
        for (fetch, bytes) in fetches.unwritten_single_blocks(buf) {
            let key = (ino, fetch.lbn);
            if !self.cache.contains(key) && matches!(self.pointer(ino, fetch.lbn), Ok(a) if a == fetch.addr) {
                self.cache.insert(key, block_of(bytes), false);
            }
        }
    }

    fn write_block(&mut self, ino: Ino, lbn: Lbn, offset: usize, data: &[u8]) -> Result<()> {
        self.store_user_block(ino, lbn, NewContents::Part { offset, data })
    }

    fn write_whole_block(&mut self, ino: Ino, lbn: Lbn, block: AlignedBytes) -> Result<()> {
        self.store_user_block(ino, lbn, NewContents::Whole(block))
    }

    fn next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        self.find_next_data(ino, lbn)
    }

    fn free_blocks(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        self.check_mounted()?;
        self.tx.reshaped.insert(ino);
        self.free_range(ino, first, last)?;
        self.note_dirop(ino);
        Ok(())
    }

    fn move_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
        self.check_mounted()?;
        self.tx.reshaped.insert(ino);
        self.move_file_blocks(ino, from, to, count)?;
        self.note_dirop(ino);
        self.maybe_write()
    }

    fn free_xattr(&mut self, ino: Ino) -> Result<()> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        crate::bmap::free_one(self, ino, crate::format::blockno::XATTR_LBN)?;
        self.note_dirop(ino);
        Ok(())
    }

    fn reserve_blocks(&mut self, blocks: u64) -> Result<()> {
        // With the indirect blocks the writes (and the frees beside them)
        // dirty: for a run of blocks, a share of each level and two ends;
        // the file's inode block; and the summaries `promised_blocks`
        // counts for them, which the writes will be checked against (left
        // out, an fallocate of what statfs showed failed halfway, its
        // blocks written past the end).
        let metas = 2 * (blocks.div_ceil(self.geometry.nindir) + 3);
        let written = blocks + metas + 1;
        let summaries = written.div_ceil((self.sb.blocks_per_segment() / 4).max(1)) + 1;
        self.check_space(written + summaries, space::SpaceFor::Data)
    }

    fn begin(&mut self, spec: TxSpec) -> Result<()> {
        self.check_mounted()?;
        if !self.tx.log.is_open() {
            self.reserve_for(spec.kind)?;
        }
        self.tx.log.begin(spec);
        Ok(())
    }

    fn tx_over_bound(&self) -> Option<crate::storage::OverBound> {
        self.tx.log.over_bound()
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        self.cache.check_invariants().map_err(|e| format!("buffer cache: {e}"))?;
        self.ifile.tables.check_invariants()
    }

    /// LFS orders nothing by hints: a directory operation's blocks go to
    /// the log together, and roll-forward applies them all or none (§4.3).
    /// It keeps its orphan list by them.
    fn hint(&mut self, hint: Hint) -> Result<()> {
        match hint {
            Hint::Orphaned { ino } => self.join_orphans(ino),
            Hint::Reclaimed { ino } => self.leave_orphans(ino),
            _ => Ok(()),
        }
    }

    /// A directory operation is durable at the next checkpoint or fsync,
    /// not at commit: nothing to wait for.
    fn commit(&mut self) -> Result<Ticket> {
        match self.tx.log.commit()? {
            Some(kind) if kind.is_namespace() => self.maybe_write()?,
            _ => {}
        }
        Ok(Ticket::none())
    }

    /// The partial segments are queued here; the ticket waits for them to
    /// reach the device and for the barrier after them, which a caller can
    /// do without the file system and share with other fsyncs.
    fn start_fsync(&mut self, ino: Ino, _datasync: bool) -> Result<Ticket> {
        // Roll-forward makes a partial segment durable on its own, so fsync
        // writes the file's blocks and inode and a barrier — not the ifile.
        // A pending directory operation may be what names this file (or is
        // this directory's change): then the whole batch goes, with the
        // ifile that commits it (§4.3).
        self.check_mounted()?;
        if self.tx.dirop_inodes.is_empty() && !self.fsync_alone_overruns() {
            self.write_file_now(ino)?;
        } else {
            self.write_segments(false)?;
        }
        Ok(self.writer.io.ticket())
    }

    fn sync(&mut self) -> Result<()> {
        self.check_mounted()?;
        debug_assert_eq!(self.check_invariants(), Ok(()));
        self.checkpoint(false)
    }

    fn write_behind_due(&self) -> bool {
        // Only file data: with directory operations pending, each early
        // write would also write the ifile and the directories again, and
        // creating or deleting many small files got 5-10% slower.
        !self.mount.unmounted
            && self.mount.failed.is_none()
            && !self.in_dirop()
            && self.tx.dirop_inodes.is_empty()
            && self.cache.dirty_bytes() >= self.write_behind_bytes()
    }

    fn write_behind(&mut self) -> Result<()> {
        if !self.write_behind_due() {
            return Ok(());
        }
        self.write_segments(false)?;
        self.maybe_clean()
    }

    fn tick(&mut self) -> Result<()> {
        // A failed writer was reported where it failed; the mount stays
        // read-only, with nothing to write.
        if self.mount.unmounted || self.mount.failed.is_some() {
            return Ok(());
        }
        if self.mount.checkpoints.due(self.mount.options.clock.now(), self.mount.options.checkpoint_interval)
            && self.has_changes()
        {
            return self.checkpoint(false);
        }
        self.maybe_write()
    }

    fn statfs(&mut self) -> Result<StatFs> {
        Ok(self.space_report())
    }

    fn device_blocks(&mut self) -> Result<u64> {
        Ok(self.total_disk_blocks())
    }

    fn unmount(&mut self) -> Result<()> {
        if self.mount.unmounted {
            return Ok(());
        }
        if self.mount.failed.is_some() {
            // No checkpoint: the image keeps its last one and the log
            // written after it, which the next mount rolls forward.
            self.mount.unmounted = true;
            return Err(errno(libc::EIO, "the log writer had failed: unmounted without a checkpoint"));
        }
        self.checkpoint(true)?;
        self.mount.unmounted = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
