//! A mounted FFS: its state, mount and unmount, and writing back what the
//! cache holds (1993 paper §2.1 for the layout; 2000 paper §2 for the
//! metadata-integrity modes).
//!
//! Nothing here is log-structured: every block has a home, assigned when
//! the block is first written (`blocks.rs`), and a dirty buffer is written
//! back to that home — synchronously and in order where the integrity mode
//! demands it (`integrity.rs`), in clusters otherwise (`cache::write_back`).

use super::alloc::Allocator;
use super::integrity::{mode_for, IntegrityMode, WriteContext};
use super::layout::{Superblock, SB_CLEAN, SB_JOURNALED, SB_SOFTDEP, SUPERBLOCK_BYTES};
use super::mkfs::{read_group, read_superblock};
use crate::cache::{
    device_addr, device_key, write_back, BlockData, BlockKey, BufferCache, CacheLimits, IntMap, Placement,
    Seq, Ticket, WriteAs, WriteDest, WriteHooks, WriteMode, WriteNow, WriteQueue, DEVICE,
};
use crate::error::errno;
use crate::format::blockno::{is_indirect, Geometry};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::TxLog;
use crate::time::TimeSource;
use crate::Result;
use disk::{AlignedBytes, BlockDevice};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// How FFS keeps its metadata recoverable across a crash (2000 paper §2,
/// §8: FFS and FFS-async).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// 4.4BSD FFS: each namespace operation writes the metadata it depends
    /// on synchronously, in the order that leaves an image fsck can repair
    /// without loss — an inode before the entry that names it, a raised
    /// link count before the entry it counts, an entry's removal before
    /// anything it named is freed. The operation is durable when it returns.
    Sync,
    /// Everything delayed, no ordering: the 2000 paper's FFS-async, the
    /// upper bound on what metadata integrity costs. After a crash, fsck
    /// makes the image mountable; what the namespace held may be lost.
    Async,
    /// Soft updates (McKusick and Ganger; 2000 paper §4): metadata written
    /// back as lazily as `Async`, but every pointer, entry and link count
    /// tracked so that whatever block reaches the disk, at whatever
    /// moment, carries only changes whose dependencies are durable (the
    /// others rolled back in the copy written). A crash leaves only leaks;
    /// the image mounts without fsck.
    Softdep,
    /// A write-ahead log of metadata (2000 paper §5, LFFS), committed
    /// asynchronously: integrity without durability, like soft updates
    /// (§6); the log is flushed by fsync, sync and once a second. After a
    /// crash, mount replays the log and needs no fsck.
    Journal,
    /// The journal with synchronous commits: a create, remove, rename,
    /// link, mkdir or rmdir is durable when it returns (FFS's promise,
    /// §6), operations finishing together sharing a flush.
    JournalSync,
}

impl Integrity {
    /// Every mode, in the order of the 2000 paper's tables.
    pub const ALL: [Integrity; 5] =
        [Integrity::Sync, Integrity::Async, Integrity::Softdep, Integrity::Journal, Integrity::JournalSync];

    /// The name `-o integrity=` takes and `fslab stat` shows.
    pub fn name(self) -> &'static str {
        match self {
            Integrity::Sync => "sync",
            Integrity::Async => "async",
            Integrity::Softdep => "softdep",
            Integrity::Journal => "journal",
            Integrity::JournalSync => "journal-sync",
        }
    }

    /// The mode named `name` (see [`Integrity::name`]).
    pub fn from_name(name: &str) -> Option<Integrity> {
        Integrity::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// Choices made at each mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// Memory the buffer cache may use.
    pub cache_bytes: u64,
    /// The metadata-integrity mode.
    pub integrity: Integrity,
    /// Time between automatic syncs (4.4BSD's update daemon ran every 30 s),
    /// on `clock`.
    pub sync_interval: Duration,
    /// Who writes back: the cache's writer thread, or the file system
    /// itself, inline.
    pub writes: WriteMode,
    /// The clock automatic syncs go by (default: the host's); a mount on a
    /// simulated disk is given the disk's virtual clock.
    pub clock: TimeSource,
    /// Mount an image that was not unmounted cleanly, whose bitmaps may be
    /// stale: only for a read-only mount (over a `disk::ReadOnlyOverlay`),
    /// which allocates nothing the image will keep.
    pub allow_unclean: bool,
    /// For tests: at every point where write-back may run, write a random
    /// part of what is dirty (seeded by this), so that a crash explorer
    /// sees blocks reach the disk at every moment the cache could send
    /// them, not only when it is full.
    pub adversary: Option<u64>,
    /// Operations a journal may gather into one transaction when none of
    /// them must be durable as it returns (a compound transaction, as
    /// jbd2's): fewer, larger transactions cost less to log. 1 logs each
    /// operation on its own, as the 2000 paper's LFFS did (§5).
    pub journal_batch: u32,
    /// For tests: soft updates track their dependencies but roll nothing
    /// back and order nothing, writing every block as cached — what a
    /// crash explorer runs to show that its checks catch a mode that does
    /// not keep the rules. Ignored by the other modes.
    pub disorder: bool,
    /// Whether a file's delayed blocks are moved to a contiguous free run
    /// as it is written (`realloc`); `None`: as the superblock says
    /// (`SB_REALLOC`, chosen at mkfs).
    pub realloc: Option<bool>,
    /// For tests: with `realloc` on, every filled block that continues a
    /// file's run moves the run, contiguous or not — so that a model test
    /// sees blocks move at every write where a move is allowed.
    pub realloc_always: bool,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            cache_bytes: 256 << 20,
            integrity: Integrity::Sync,
            sync_interval: Duration::from_secs(30),
            writes: WriteMode::Thread,
            clock: TimeSource::wall(),
            allow_unclean: false,
            adversary: None,
            journal_batch: DEFAULT_JOURNAL_BATCH,
            disorder: false,
            realloc: None,
            realloc_always: false,
        }
    }
}

impl MountOptions {
    /// What a run on a simulated disk needs to repeat to the nanosecond:
    /// write-back inline and syncs by `clock`, so no thread and no host
    /// time decides anything.
    pub fn deterministic(clock: TimeSource) -> MountOptions {
        MountOptions { writes: WriteMode::Inline, clock, ..MountOptions::default() }
    }
}

/// Operations a journal gathers into one transaction unless told
/// otherwise: enough that a batch's diffs cost a few percent of what its
/// operations' own would, few enough that a batch's blocks stay cached.
pub const DEFAULT_JOURNAL_BATCH: u32 = 64;

/// Counters since mount, for benchmarks and `fslab stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Device writes issued (a cluster is one).
    pub writes: u64,
    /// Blocks (or fragment runs) written.
    pub blocks_written: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Writes the integrity mode made synchronous (each followed by a flush).
    pub sync_writes: u64,
    /// Device reads issued.
    pub reads: u64,
    /// Syncs of the whole file system.
    pub syncs: u64,
    /// Blocks written whose checksums FFS computed: inode-table blocks (a
    /// CRC per inode), indirect blocks and cylinder-group areas (the lab's
    /// CPU model charges for them).
    pub checksummed_blocks: u64,
    /// Runs of a file's blocks written as they filled (`cluster`), ahead
    /// of the write-back threshold.
    pub cluster_pushes: u64,
    /// Runs of a file's blocks moved to contiguous free space (`realloc`).
    pub reallocations: u64,
}

/// Dirty bytes at which the write-behind thread is woken (as LFS's four
/// segments: a sequential writer then finds the cache cleaned for it).
const WRITE_BEHIND_BYTES: u64 = 4 << 20;

/// Rounds of writes in a row that leave no less waiting, after which a sync
/// gives up on blocks whose rolled-back changes still wait (soft updates
/// need two or three rounds, and one more for each level of a removed
/// tree).
pub(super) const SYNC_ROUNDS: usize = 12;

/// Changed inodes held in memory past which a write-back stores them too
/// (their blocks are 4 MiB; the memory they hold, about as much).
const MAX_DELAYED_INODES: usize = 16_384;

/// A mounted FFS.
///
/// Lifecycle: [`Ffs::mount`] → any `StorageManager` calls → `unmount`. One
/// thread at a time (`&mut self`). Mount refuses an image not unmounted
/// cleanly (its bitmaps cannot be trusted until fsck has rebuilt them) and
/// marks the image in use until unmount.
///
/// State and who changes it:
/// * `alloc` — every cylinder group, decoded; written back at sync
///   (`take_changed`), after every inode-table block it newly initialised;
/// * `inodes` — inodes touched since mount; a dirty one is encoded into
///   its inode-table block (a buffer named by device address) by
///   `store_inode`, the one place an inode reaches a block;
/// * `cache` — file blocks by (inode, lbn), inode-table blocks by address;
///   every block already has its disk address (`blocks.rs`);
/// * `tx` — the open transaction and, in sync mode, its hints.
pub struct Ffs {
    pub(super) dev: Arc<dyn BlockDevice>,
    /// Write-back goes through a thread of its own; a synchronous write,
    /// a sync and the groups' writes wait for it to drain.
    pub(super) queue: Arc<WriteQueue>,
    pub(super) sb: Superblock,
    pub(super) tree: Geometry,
    pub(super) alloc: Allocator,
    pub(super) cache: BufferCache,
    pub(super) inodes: crate::cache::InodeCache,
    /// Inode-table blocks zeroed in the cache by lazy initialisation and
    /// not yet on disk: they must reach it before any group that counts
    /// them as initialised.
    pub(super) fresh_inode_blocks: BTreeSet<Daddr>,
    pub(super) tx: TxLog,
    /// The integrity mode (`integrity`): when and in what order metadata
    /// reaches the device.
    pub(super) mode: Arc<dyn IntegrityMode>,
    /// The durability the open transaction's ordered writes wait for.
    pub(super) tx_ticket: Ticket,
    /// Frees waiting for the removal of their last pointer to be durable
    /// (`frees`).
    pub(super) pending_frees: Vec<super::frees::PendingFree>,
    /// The inodes among `pending_frees`, for lookups.
    pub(super) pending_inodes: std::collections::HashSet<Ino>,
    /// Fragments promised by `reserve_blocks` and not yet allocated.
    pub(super) reserved_frags: u64,
    /// Sizes as the namespace last set them, of inodes whose size a write
    /// of the open transaction raised and `update` has not confirmed: if the
    /// operation fails before it does, commit puts them back (4.4BSD's
    /// `ffs_write` truncates back to the old size on an error).
    pub(super) size_before: IntMap<Ino, u64>,
    /// Set while the block-map engine places blocks of a directory, symbolic
    /// link or extended attributes, which may use the `minfree` reserve.
    pub(super) placing_metadata: bool,
    pub(super) options: MountOptions,
    /// When the last sync was, on `options.clock`.
    pub(super) last_sync: Duration,
    pub(super) stats: Stats,
    pub(super) unmounted: bool,
    /// Inodes with no name that are still open, head first (`orphans`);
    /// `sb.orphan_head` is the first.
    pub(super) orphans: Vec<Ino>,
    /// What mount did with the orphan list it found.
    pub(super) orphan_report: crate::storage::orphans::OrphanReport,
    /// Whether reads are sequential, for read-ahead (`blocks.rs`).
    pub(super) read_ahead: crate::bmap::ReadAhead,
    /// Each file's run of blocks not yet pushed (`cluster`).
    pub(super) clusters: super::cluster::WriteClusters,
    /// Whether runs are moved to contiguous space as they grow (`realloc`):
    /// the mount's choice, else the superblock's.
    pub(super) realloc: bool,
    /// Runs moved since mount (`realloc`).
    pub(super) reallocated: u64,
    /// The background scan for what a crash leaked, while it runs
    /// (`leaks`).
    pub(super) leak_scan: Option<super::leaks::LeakScan>,
    /// What it found and freed.
    pub(super) leak_report: super::leaks::LeakReport,
    /// The superblock as last stored in its buffer, its time zeroed
    /// (`write_superblock_if_changed`).
    pub(super) sb_stored: Option<Superblock>,
    /// Set while write-back runs because the cache passed its threshold,
    /// not because anything waits for it: a mode may hold back what would
    /// cost a wait (a journal, a block whose log is not yet durable).
    pub(super) writing_in_background: bool,
    /// Dirty bytes the last write-back left behind: blocks it may not
    /// write yet (fresh inode-table blocks waiting for `write_groups`,
    /// blocks held or parked by the integrity mode). Write-behind is due
    /// only once [`WRITE_BEHIND_BYTES`] more wait; measured from zero, it
    /// woke at every request once that many were held and scanned the
    /// whole cache to write nothing (20,000 creates: 41,000 writes and
    /// 500,000 lock hand-overs where LFS made 700).
    pub(super) write_behind_floor: u64,
}

impl Ffs {
    /// Mounts the FFS on `dev`: the primary superblock and every cylinder
    /// group, validated. Fails with EUCLEAN if the image was not unmounted
    /// cleanly (run `fslab fsck --repair` first).
    pub fn mount(dev: Arc<dyn BlockDevice>, options: MountOptions) -> Result<Ffs> {
        let mut sb = read_superblock(dev.as_ref())?;
        // A journal mount's crash leaves nothing that replaying its log
        // does not put right (on a read-only mount, the overlay takes the
        // replay's writes).
        let replayed = super::journal::needs_replay(&sb);
        if replayed {
            super::journal::replay(dev.as_ref(), &sb)?;
            sb = read_superblock(dev.as_ref())?;
        }
        // Soft updates leave an image that needs no fsck after a crash:
        // nothing is wrong on it but leaks (blocks and inodes held that
        // nothing names, link counts too high).
        let softdep_image = sb.flags & SB_SOFTDEP != 0;
        if sb.flags & SB_CLEAN == 0 && !options.allow_unclean && !softdep_image && !replayed {
            return Err(errno(
                libc::EUCLEAN,
                "the file system was not unmounted cleanly: run `fslab fsck --repair` on it first",
            ));
        }
        let unclean = sb.flags & SB_CLEAN == 0 && !replayed;
        let groups = (0..sb.geometry.ncg)
            .map(|cg| {
                read_group(dev.as_ref(), &sb, cg).map_err(|e| match e {
                    // A group area torn by the crash (one checksum per area).
                    crate::Error::Corrupt { .. } if unclean && softdep_image => errno(
                        libc::EUCLEAN,
                        "a cylinder group was torn by the crash: run `fslab fsck --repair` on it first",
                    ),
                    other => other,
                })
            })
            .collect::<Result<_>>()?;
        let alloc = Allocator::new(&sb, groups)?;
        let limits = CacheLimits::for_memory(options.cache_bytes);
        let unit = sb.geometry.frag_size as u64;
        let queue = Arc::new(WriteQueue::with_mode(
            dev.clone(),
            "fslab-ffs-io",
            unit,
            0,
            limits.stop_access_bytes,
            options.writes,
        ));
        let last_sync = options.clock.now();
        let realloc = options.realloc.unwrap_or(sb.realloc());
        let mut ffs = Ffs {
            queue,
            tree: sb.indirect_geometry(),
            cache: BufferCache::new(sb.geometry.block_size, limits),
            dev,
            sb,
            alloc,
            inodes: crate::cache::InodeCache::new(),
            fresh_inode_blocks: BTreeSet::new(),
            tx: TxLog::recording(),
            mode: mode_for(&options),
            tx_ticket: Ticket::none(),
            pending_frees: Vec::new(),
            pending_inodes: std::collections::HashSet::new(),
            reserved_frags: 0,
            size_before: IntMap::default(),
            placing_metadata: false,
            options,
            last_sync,
            stats: Stats::default(),
            unmounted: false,
            orphans: Vec::new(),
            orphan_report: Default::default(),
            read_ahead: Default::default(),
            clusters: Default::default(),
            realloc,
            reallocated: 0,
            leak_scan: None,
            leak_report: Default::default(),
            sb_stored: None,
            writing_in_background: false,
            write_behind_floor: 0,
        };
        // In use from now on: a crash leaves the image marked unclean, and
        // says whether soft updates kept it.
        ffs.sb.flags &= !(SB_CLEAN | SB_SOFTDEP | SB_JOURNALED);
        match ffs.options.integrity {
            Integrity::Softdep => ffs.sb.flags |= SB_SOFTDEP,
            Integrity::Journal | Integrity::JournalSync => {
                ffs.sb.flags |= SB_JOURNALED;
                // Transactions of this mount carry its generation, so that
                // replay never takes an older mount's for its own.
                ffs.sb.journal.generation += 1;
            }
            _ => {}
        }
        ffs.write_superblock()?;
        ffs.queue.flush()?;
        ffs.mode().mounted(&mut ffs)?;
        ffs.reclaim_orphans()?;
        if unclean && softdep_image && !ffs.options.allow_unclean {
            ffs.begin_leak_scan();
        }
        Ok(ffs)
    }

    /// The superblock as of the last write of it.
    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// Counters since mount.
    pub fn stats(&self) -> Stats {
        Stats { reallocations: self.reallocated, ..self.stats }
    }

    /// Whether every cylinder group agrees with its own bitmaps (counts,
    /// fragment runs, cluster summary): what a test or a check asks after
    /// allocating and freeing. Says which group is wrong and how.
    pub fn check_groups(&self) -> std::result::Result<(), String> {
        for g in self.alloc.groups() {
            g.check().map_err(|e| format!("cylinder group {}: {e}", g.index))?;
        }
        Ok(())
    }

    /// Whether this mount moves runs of delayed blocks to contiguous space
    /// as files are written (`realloc`).
    pub fn realloc(&self) -> bool {
        self.realloc
    }

    /// Runs of a file's blocks moved to contiguous space since mount
    /// (`realloc`).
    pub fn reallocations(&self) -> u64 {
        self.reallocated
    }

    /// The integrity mode of this mount.
    pub fn integrity(&self) -> Integrity {
        self.options.integrity
    }

    pub(super) fn block_size(&self) -> usize {
        self.sb.geometry.block_size as usize
    }

    pub(super) fn frag_size(&self) -> u64 {
        self.sb.geometry.frag_size as u64
    }

    pub(super) fn frags_per_block(&self) -> u64 {
        self.sb.geometry.frags_per_block as u64
    }

    pub(super) fn check_mounted(&self) -> Result<()> {
        if self.unmounted {
            return Err(errno(libc::EIO, "file system is unmounted"));
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes from address `addr`, which the caller has
    /// checked lies on the file system.
    pub(super) fn read_at(&mut self, addr: Daddr, buf: &mut [u8]) -> Result<()> {
        self.stats.reads += 1;
        self.queue.wait_for(addr, (buf.len() as u64).div_ceil(self.frag_size()));
        self.dev.read_at(addr.byte_offset(self.frag_size()), buf)?;
        Ok(())
    }

    /// The cache key of the primary superblock's block (the first of the
    /// device; the rest of it is zeros, as mkfs wrote it).
    pub(super) fn superblock_key(&self) -> BlockKey {
        device_key(Daddr::new(0))
    }

    /// Stores the primary superblock, with the allocator's totals and
    /// policy, in its cached block, which becomes dirty: it reaches the
    /// device through write-back, as every metadata block does.
    pub(super) fn store_superblock(&mut self) {
        self.sb.totals = self.alloc.totals();
        self.sb.policy = *self.alloc.policy();
        self.sb.time = self.options.clock.calendar_ns();
        let mut block = AlignedBytes::zeroed(self.block_size());
        let bytes = self.sb.encode();
        debug_assert_eq!(bytes.len(), SUPERBLOCK_BYTES);
        block[..bytes.len()].copy_from_slice(&bytes);
        let key = self.superblock_key();
        self.cache.insert(key, Arc::new(block), true);
        self.sb_stored = Some(Superblock { time: 0, ..self.sb });
    }

    /// Whether the superblock as stored in its buffer differs from what it
    /// would store now in more than its time, totals (a hint: the groups
    /// are the truth) and policy — what a journal logs of it.
    pub(super) fn superblock_needs_store(&self) -> bool {
        let Some(stored) = self.sb_stored else { return true };
        Superblock { time: 0, totals: stored.totals, policy: stored.policy, ..self.sb } != stored
    }

    /// What the journal has done since mount, on a journal mount.
    pub fn journal_stats(&self) -> Option<super::JournalStats> {
        self.mode.journal_stats()
    }

    /// [`Ffs::write_superblock`] unless nothing but its time would change:
    /// the superblock as last stored is what it would store, and that copy
    /// is not waiting to be written. A sync's every round wrote it, one
    /// write more in each (soft updates' syncs take two or three rounds).
    pub(super) fn write_superblock_if_changed(&mut self) -> Result<()> {
        let now =
            Superblock { time: 0, totals: self.alloc.totals(), policy: *self.alloc.policy(), ..self.sb };
        if self.sb_stored == Some(now) && !self.cache.is_dirty(self.superblock_key()) {
            return Ok(());
        }
        self.write_superblock()
    }

    /// Stores the superblock and issues its write (durable after the next
    /// barrier).
    pub(super) fn write_superblock(&mut self) -> Result<()> {
        self.store_superblock();
        let key = self.superblock_key();
        let mut placements = [Placement { key, addr: Daddr::new(0), bytes: self.block_size() }];
        self.write_placements_now(&mut placements)?;
        Ok(())
    }

    /// Writes every cylinder group changed since the last write of them.
    /// Inode-table blocks they count as initialised go first, behind a
    /// barrier: a group must never vouch for inode slots that hold whatever
    /// the device held before mkfs.
    pub(super) fn write_groups(&mut self) -> Result<()> {
        if !self.fresh_inode_blocks.is_empty() {
            let fresh: Vec<Daddr> = std::mem::take(&mut self.fresh_inode_blocks).into_iter().collect();
            let bs = self.block_size();
            let mut placements: Vec<Placement> = fresh
                .iter()
                .map(|&addr| Placement { key: crate::cache::device_key(addr), addr, bytes: bs })
                .collect();
            self.write_placements(&mut placements)?;
            self.queue.flush()?;
        }
        let (changed, mut placements) = self.store_groups();
        let last = self.write_placements(&mut placements)?;
        self.mode().groups_written(&changed, last);
        Ok(())
    }

    /// Encodes every cylinder group changed since the last call into its
    /// cached blocks, which become dirty; returns the groups and their
    /// blocks. A free a journal defers shows as done in what is stored
    /// (`FreeWhen::Committed`): only the allocator waits for it.
    pub(super) fn store_groups(&mut self) -> (Vec<u32>, Vec<Placement>) {
        let geo = self.sb.geometry;
        let now = self.options.clock.calendar_ns();
        let bs = self.block_size();
        let mut placements = Vec::new();
        let changed = self.alloc.take_changed();
        for &cg in &changed {
            let Some(group) = self.alloc.groups().get(cg as usize) else { continue };
            let mut group = group.clone();
            group.time = now;
            for p in &self.pending_frees {
                if !matches!(p.when, super::frees::FreeWhen::Committed(_)) {
                    continue;
                }
                // Refused only for what is free already: nothing to show.
                let _ = match p.what {
                    super::frees::Freed::Frags { start, count } if geo.group_of(start) == cg => {
                        group.free(geo.within_group(start), count)
                    }
                    super::frees::Freed::Inode { ino, is_dir } if geo.ino_group(ino) == cg => {
                        group.free_inode(geo.ino_slot(ino), is_dir)
                    }
                    _ => Ok(()),
                };
            }
            // The area goes into the cache block by block, like any
            // metadata, and out through write-back (one clustered write).
            let area = group.encode(&geo, self.sb.fs_id);
            for (i, chunk) in area.chunks(bs).enumerate() {
                let addr = Daddr::new(geo.cg_addr(cg) + i as u64 * geo.frags_per_block as u64);
                let mut block = AlignedBytes::zeroed(bs);
                block[..chunk.len()].copy_from_slice(chunk);
                self.cache.insert(device_key(addr), Arc::new(block), true);
                placements.push(Placement { key: device_key(addr), addr, bytes: bs });
            }
        }
        (changed, placements)
    }

    /// Where each of `keys` goes and how many of its bytes: a device block
    /// at its own address; a file's block at the address its pointer holds.
    pub(super) fn placements_of(&mut self, keys: &[BlockKey]) -> Result<Vec<Placement>> {
        let bs = self.block_size();
        let mut out = Vec::with_capacity(keys.len());
        for &key in keys {
            if let Some(addr) = device_addr(key) {
                out.push(Placement { key, addr, bytes: bs });
                continue;
            }
            let (ino, lbn) = key;
            let addr = crate::bmap::pointer(self, ino, lbn)?;
            if addr.is_none() {
                return Err(crate::Error::corrupt_at(
                    "block map",
                    crate::error::Location::FileBlock { ino, lbn: lbn as u64 },
                    "a dirty block has no address",
                ));
            }
            let bytes = self.block_bytes(ino, lbn)?;
            out.push(Placement { key, addr, bytes });
        }
        Ok(out)
    }

    /// Queues `placements` in address order, clustered up to `maxcontig`
    /// blocks a write (the 1993 paper's EFS), and marks them clean; they are
    /// on the device once `queue.wait_idle` returns. The integrity mode
    /// sees each block as it goes. Returns the number of the last write.
    pub(super) fn write_placements(&mut self, placements: &mut [Placement]) -> Result<Seq> {
        self.write_placements_to(placements, false)
    }

    /// [`Ffs::write_placements`] for writes waited for at once: on this
    /// thread when nothing is in flight (`WriteQueue::write_now`).
    pub(super) fn write_placements_now(&mut self, placements: &mut [Placement]) -> Result<Seq> {
        self.write_placements_to(placements, true)
    }

    fn write_placements_to(&mut self, placements: &mut [Placement], now: bool) -> Result<Seq> {
        let keys: Vec<BlockKey> = placements.iter().map(|p| p.key).collect();
        self.mode().writes_starting(self, &keys)?;
        let max_run = self.sb.geometry.maxcontig as usize * self.block_size();
        let unit = self.frag_size();
        let mode = self.mode();
        let ctx = WriteContext {
            durable: self.queue.durable(),
            tree: self.tree,
            background: self.writing_in_background,
        };
        let mut hooks = FfsHooks { mode: mode.as_ref(), ctx: &ctx };
        self.stats.checksummed_blocks +=
            placements.iter().filter(|p| p.key.0 == DEVICE || is_indirect(p.key.1)).count() as u64;
        let (mut queued, mut direct) = (&*self.queue, WriteNow(&self.queue));
        let dest: &mut dyn WriteDest = if now { &mut direct } else { &mut queued };
        let done = write_back(&mut self.cache, dest, placements, unit, max_run, &mut hooks)?;
        for p in placements.iter() {
            // Still dirty: written rolled back.
            self.cache.park(p.key, ctx.durable);
            if p.key.0 != DEVICE && p.key.1 >= 0 {
                // A block on the disk is never moved (`realloc`).
                self.clusters.written(p.key.0, p.key.1);
            }
        }
        self.stats.writes += done.writes;
        self.stats.blocks_written += done.blocks;
        self.stats.bytes_written += done.bytes;
        Ok(done.last)
    }

    /// Writes back the dirty blocks of the files in `inos` (all of them
    /// when `None`), and the dirty inode-table blocks when `device` is set.
    pub(super) fn write_dirty(&mut self, inos: Option<&[Ino]>, device: bool) -> Result<()> {
        let mut keys = Vec::new();
        let files: Vec<Ino> = match inos {
            Some(list) => list.to_vec(),
            None => self.cache.dirty_inodes(),
        };
        for ino in files {
            if ino == DEVICE && !device {
                continue;
            }
            keys.extend(self.cache.dirty_keys_in(ino, Lbn::MIN..=Lbn::MAX));
        }
        if device && inos.is_some() {
            keys.extend(self.cache.dirty_keys_in(DEVICE, Lbn::MIN..=Lbn::MAX));
        }
        keys.sort_unstable();
        keys.dedup();
        // Fresh inode-table blocks wait for `write_groups`, which orders them.
        keys.retain(|&k| device_addr(k).is_none_or(|a| !self.fresh_inode_blocks.contains(&a)));
        // A block written rolled back, unchanged since, with nothing durable
        // since, would be written the same again (soft updates' write-back
        // rewrote every such block at every call until a sync).
        let durable = self.queue.durable();
        keys.retain(|&k| !self.cache.is_parked(k, durable));
        let mut placements = self.placements_of(&keys)?;
        self.write_placements(&mut placements)?;
        Ok(())
    }

    /// Writes everything: inodes into their blocks, every dirty buffer, the
    /// cylinder groups and the superblock, then a barrier. Everything
    /// written before it returns is durable.
    pub(super) fn sync_all(&mut self) -> Result<()> {
        // A mode that rolls changes back (soft updates) leaves blocks dirty
        // after a round: each round makes what the next depends on durable
        // (the oldest change waiting always depends only on older ones, so
        // every round lets at least one through). Most syncs take two or
        // three rounds; a removed tree takes one more per level, since a
        // directory's slot is cleared on the disk only once its own name is
        // gone there, and only then may its children's be. So rounds go on
        // while each leaves less waiting, up to SYNC_ROUNDS in a row that
        // do not.
        let mut stalled = 0;
        let mut waiting = (u64::MAX, usize::MAX, usize::MAX);
        while stalled < SYNC_ROUNDS {
            self.store_dirty_inodes()?;
            self.write_dirty(None, true)?;
            self.clusters.clear();
            self.write_groups()?;
            self.write_superblock_if_changed()?;
            self.queue.flush()?;
            self.mode().prune(self.queue.durable());
            if !self.has_changes() {
                break;
            }
            self.release_durable_frees()?;
            let now = (self.cache.dirty_count(), self.pending_frees.len(), self.mode().waiting());
            let less = now.0 < waiting.0 || now.1 < waiting.1 || now.2 < waiting.2;
            stalled = if less { 0 } else { stalled + 1 };
            waiting = (waiting.0.min(now.0), waiting.1.min(now.1), waiting.2.min(now.2));
        }
        if self.release_durable_frees()? > 0 {
            // The groups the releases changed go too: a clean unmount
            // leaves no free pending.
            self.write_groups()?;
            self.write_superblock_if_changed()?;
            self.queue.flush()?;
        }
        if self.has_changes() && self.options.integrity == Integrity::Softdep {
            return Err(errno(
                libc::EIO,
                "soft updates: blocks still wait for their dependencies after a sync",
            ));
        }
        self.mode().synced(self)?;
        self.write_behind_floor = self.cache.dirty_bytes();
        self.stats.syncs += 1;
        self.last_sync = self.options.clock.now();
        Ok(())
    }

    /// Whether anything waits to be written.
    pub(super) fn has_changes(&self) -> bool {
        // An inode changed only by a size its operation has not confirmed
        // is stored as it may be (`store_inode`); the operation's end
        // stores the rest.
        self.cache.dirty_count() > 0
            || self.inodes.dirty().iter().any(|ino| !self.size_before.contains_key(ino))
            || !self.fresh_inode_blocks.is_empty()
            || self.has_inodes_to_clear()
    }

    /// Writes back dirty buffers once they pass the cache's start-write
    /// threshold (4.4BSD's delayed writes go when the buffer cache needs
    /// the memory).
    pub(super) fn maybe_write(&mut self) -> Result<()> {
        // Not in the middle of a namespace operation: its blocks change
        // before its hints say in what order they may go (a directory
        // block with a new entry before the hint that writes the inode it
        // names), and its commit writes back instead. 4.4BSD wrote the new
        // inode before touching the directory block; here the integrity
        // mode orders both at the hint, which write-back must not
        // overtake.
        if self.tx.in_namespace_op() {
            return Ok(());
        }
        if self.options.adversary.is_some() {
            self.write_some_at_random()?;
        }
        if self.cache.should_start_write() {
            self.write_delayed()?;
        }
        Ok(())
    }

    /// The adversary of [`MountOptions::adversary`]: each dirty buffer
    /// written with even odds, or none at all (also even odds).
    fn write_some_at_random(&mut self) -> Result<()> {
        let Some(mut state) = self.options.adversary else { return Ok(()) };
        let mut coin = || super::alloc::xorshift64_star(&mut state) >> 63 == 1;
        let mut chosen = Vec::new();
        if coin() {
            for ino in self.cache.dirty_inodes() {
                chosen.extend(self.cache.dirty_keys_in(ino, Lbn::MIN..=Lbn::MAX));
            }
            chosen.retain(|&k| device_addr(k).is_none_or(|a| !self.fresh_inode_blocks.contains(&a)));
            chosen.retain(|_| coin());
        }
        self.options.adversary = Some(state);
        let mut placements = self.placements_of(&chosen)?;
        self.write_placements(&mut placements)?;
        Ok(())
    }

    /// Writes every dirty buffer. Changed inodes stay in memory for the
    /// next sync, as 4.4BSD left an inode to `ffs_update` at sync or fsync
    /// rather than to the buffer cache's write-back — unless more than
    /// [`MAX_DELAYED_INODES`] wait. Storing them at every write-back wrote a
    /// file's inode block between its own data clusters while it was being
    /// written, a seek away and back each time.
    ///
    /// A mode that rolls changes back leaves what it rolled back dirty
    /// until a barrier makes what those changes wait for durable; without
    /// one, every later write-back wrote the same blocks again (soft updates
    /// past [`MAX_DELAYED_INODES`] removed inodes: 17,000 unlinks made
    /// 951,000 writes). Write-back skips a block so held back; when the mode
    /// still waits and write-back did not make room, a sync settles it, in
    /// rounds.
    pub(super) fn write_delayed(&mut self) -> Result<()> {
        let crowded = self.inodes.dirty().len() > MAX_DELAYED_INODES;
        if crowded {
            self.store_dirty_inodes()?;
        }
        self.writing_in_background = true;
        let written = self.write_dirty(None, true);
        self.writing_in_background = false;
        written?;
        // What write-back could not take below half the threshold is held
        // back (parked, `write_dirty`): left there, it would keep the cache
        // over the threshold and every later change would be written the
        // moment it is made.
        let held = |fs: &Self| fs.cache.dirty_bytes() >= fs.cache.start_write_bytes() / 2;
        // Inode-table blocks that new inodes initialised wait for their
        // groups (`write_groups` writes them first, behind a barrier). A
        // burst of creates between syncs left so many that the cache grew
        // past its limit, dirty and unevictable, and every operation
        // scanned it to write nothing (10 million creates in a 16 MiB
        // cache: 287 MiB, 74% of the CPU in the scan). When they hold the
        // cache at its limit they go with their groups now; below it they
        // wait, as they did, for the sync.
        let fresh_bytes = self.fresh_inode_blocks.len() as u64 * self.block_size() as u64;
        if fresh_bytes >= self.cache.start_write_bytes() / 4
            && self.cache.dirty_bytes() >= self.cache.memory_limit_bytes()
        {
            self.write_groups()?;
        }
        if !crowded && held(self) && self.mode().force_commits(self)? {
            // Blocks held only for the log (the write-ahead rule) may go
            // once it is durable: a log write and a flush, where a sync
            // would also store every delayed inode and write every group,
            // scattered blocks the next sync writes again (2000 §5: the
            // log is flushed before a buffer it covers is written).
            self.writing_in_background = true;
            let written = self.write_dirty(None, true);
            self.writing_in_background = false;
            written?;
        }
        if (crowded || held(self)) && self.mode().waiting() > 0 {
            self.sync_all()?;
        }
        self.write_behind_floor = self.cache.dirty_bytes();
        Ok(())
    }

    /// Whether enough dirty data waits that the write-behind thread should
    /// write it now.
    pub(super) fn write_behind_is_due(&self) -> bool {
        !self.unmounted
            && !self.tx.is_open()
            && self.cache.dirty_bytes() >= self.write_behind_floor.saturating_add(WRITE_BEHIND_BYTES)
    }

    /// Finishes the leak scan if one runs, syncs everything and marks the
    /// image clean — unless the scan stopped or left work for fsck: the
    /// image then stays as a crash left it, so that fsck is asked for.
    pub(super) fn unmount_now(&mut self) -> Result<()> {
        if self.unmounted {
            return Ok(());
        }
        while self.leak_scan_step()? {}
        self.sync_all()?;
        if !self.leak_report.leaks_remain() {
            self.sb.flags |= SB_CLEAN;
        }
        self.write_superblock()?;
        self.queue.flush()?;
        self.mode().synced(self)?;
        self.unmounted = true;
        Ok(())
    }
}

/// FFS's write hooks: the integrity mode sees every block and may hand
/// back a rolled-back copy; then an indirect block (the copy, if any) gets
/// its trailer (a checksum bound to its file and position, FORMAT.md) as it
/// goes to the disk. The cache keeps the current, unsealed pointers.
struct FfsHooks<'a> {
    mode: &'a dyn IntegrityMode,
    /// What the mode is told; its `tree` says how indirect blocks are
    /// sealed.
    ctx: &'a WriteContext,
}

impl WriteHooks for FfsHooks<'_> {
    fn write_starting(&mut self, key: BlockKey, addr: Daddr, data: &BlockData) -> Result<WriteAs> {
        let chosen = self.mode.write_starting(key, addr, data, self.ctx)?;
        let (ino, lbn) = key;
        if ino == DEVICE || !is_indirect(lbn) {
            return Ok(chosen);
        }
        let seal = |bytes: &BlockData| {
            let mut sealed = AlignedBytes::zeroed(bytes.len());
            sealed.copy_from_slice(bytes);
            self.ctx.tree.seal(&mut sealed, ino, lbn);
            Arc::new(sealed)
        };
        Ok(match chosen {
            WriteAs::Cached => WriteAs::Sealed(seal(data)),
            WriteAs::Sealed(copy) => WriteAs::Sealed(seal(&copy)),
            WriteAs::RolledBack(copy) => WriteAs::RolledBack(seal(&copy)),
            WriteAs::Held => WriteAs::Held,
        })
    }

    fn write_done(&mut self, key: BlockKey, addr: Daddr, seq: Seq) {
        self.mode.write_done(key, addr, seq);
    }
}
