//! A mounted FFS: its state, mount, and the superblock (1993 paper §2.1 for
//! the layout; 2000 paper §2 for the metadata-integrity modes). Writing
//! back what the cache holds, syncs and unmount are `writeback.rs`.
//!
//! Nothing here is log-structured: every block has a home, assigned when
//! the block is first written (`blocks.rs`), and a dirty buffer is written
//! back to that home — synchronously and in order where the integrity mode
//! demands it (`integrity`), in clusters otherwise (`cache::write_back`).

use super::alloc::Allocator;
use super::integrity::IntegrityMode;
use super::layout::{Superblock, SB_CLEAN, SB_JOURNALED, SB_SOFTDEP, SUPERBLOCK_BYTES};
use super::mkfs::{read_group, read_superblock};
use super::options::{Integrity, MountOptions};
use crate::cache::{device_key, BlockKey, BufferCache, CacheLimits, IntMap, Placement, Ticket, WriteQueue};
use crate::error::errno;
use crate::format::blockno::Geometry;
use crate::format::{Daddr, Ino};
use crate::storage::TxLog;
use crate::Result;
use disk::{AlignedBytes, BlockDevice};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

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
pub(super) const WRITE_BEHIND_BYTES: u64 = 4 << 20;

/// Rounds of writes in a row that leave no less waiting, after which a sync
/// gives up on blocks whose rolled-back changes still wait (soft updates
/// need two or three rounds, and one more for each level of a removed
/// tree).
pub(super) const SYNC_ROUNDS: usize = 12;

/// Changed inodes held in memory past which a write-back stores them too
/// (their blocks are 4 MiB; the memory they hold, about as much).
pub(super) const MAX_DELAYED_INODES: usize = 16_384;

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
    pub(super) mode: Arc<dyn IntegrityMode<Ffs>>,
    /// The durability the open transaction's ordered writes wait for.
    pub(super) tx_ticket: Ticket,
    /// Frees waiting for the removal of their last pointer to be durable
    /// (`frees`).
    pub(super) pending_frees: Vec<super::freed::PendingFree>,
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
    /// A failed write (the mount read-only since) was reported by a tick
    /// once; later ticks say nothing more.
    pub(super) failure_reported: bool,
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
    pub(super) leak_scan: Option<super::leak_scan::LeakScan>,
    /// What it found and freed.
    pub(super) leak_report: super::leak_scan::LeakReport,
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
            inodes: crate::cache::InodeCache::with_clean_limit(options.clean_inodes),
            fresh_inode_blocks: BTreeSet::new(),
            tx: TxLog::recording(),
            mode: Ffs::mode_for(&options),
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
            failure_reported: false,
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
        ffs.mode().suits(&ffs)?;
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
}
