//! Writing back what an FFS's cache holds: the cylinder groups and the
//! inode-table blocks they vouch for, the write-back of dirty buffers (in
//! clusters, through the integrity mode's hooks), the push of a cluster
//! as it fills (`cluster`), write-behind, sync and the unmount's last
//! sync.
//!
//! Relies on `cache::write_back` for the clustering and on the integrity
//! mode (`integrity`) for what each block may carry when it goes.

use super::fs::{Ffs, MAX_DELAYED_INODES, SYNC_ROUNDS, WRITE_BEHIND_BYTES};
use super::integrity::{IntegrityMode, WriteContext};
use super::layout::SB_CLEAN;
use super::Integrity;
use crate::bmap;
use crate::cache::{
    device_addr, device_key, write_back, BlockData, BlockKey, Placement, Seq, WriteAs, WriteDest, WriteHooks,
    WriteNow, DEVICE,
};
use crate::error::errno;
use crate::format::blockno::is_indirect;
use crate::format::{Daddr, Ino, Lbn};
use crate::Result;
use disk::AlignedBytes;
use std::sync::Arc;

impl Ffs {
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
                if !matches!(p.when, super::freed::FreeWhen::Committed(_)) {
                    continue;
                }
                // Refused only for what is free already: nothing to show.
                let _ = match p.what {
                    super::freed::Freed::Frags { start, count } if geo.group_of(start) == cg => {
                        group.free(geo.within_group(start), count)
                    }
                    super::freed::Freed::Inode { ino, is_dir } if geo.ino_group(ino) == cg => {
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

    /// Writes the dirty buffers among `keys` home, queued, as write-back
    /// writes them (the integrity mode decides how each goes).
    pub(super) fn write_dirty_among(&mut self, keys: &[BlockKey]) -> Result<()> {
        let dirty: Vec<BlockKey> = keys.iter().copied().filter(|&k| self.cache.is_dirty(k)).collect();
        if !dirty.is_empty() {
            let mut placements = self.placements_of(&dirty)?;
            self.write_placements(&mut placements)?;
        }
        Ok(())
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
        let join = self.dev.joins_writes();
        let done = write_back(&mut self.cache, dest, placements, unit, max_run, join, &mut hooks)?;
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
        let mut placements = self.dirty_placements(inos, device)?;
        self.write_placements(&mut placements)?;
        Ok(())
    }

    /// Writes back file `ino`'s dirty blocks for a caller about to wait
    /// for them (an fsync): on this thread when they fit one cluster, since
    /// handing so small a write to the writer thread and back costs two
    /// thread switches, more than the write; queued otherwise, so that a
    /// large file's writes overlap the next requests.
    pub(super) fn write_file_waited(&mut self, ino: Ino) -> Result<()> {
        self.write_file_waited_but(ino, &[])
    }

    /// [`Ffs::write_file_waited`], but for the blocks `kept` (a journal's,
    /// whose contents its log holds: they go home later).
    pub(super) fn write_file_waited_but(&mut self, ino: Ino, kept: &[BlockKey]) -> Result<()> {
        let mut placements = self.dirty_placements(Some(&[ino]), false)?;
        placements.retain(|p| !kept.contains(&p.key));
        let bytes: usize = placements.iter().map(|p| p.bytes).sum();
        if bytes <= self.sb.geometry.maxcontig as usize * self.block_size() {
            self.write_placements_now(&mut placements)?;
        } else {
            self.write_placements(&mut placements)?;
        }
        Ok(())
    }

    /// The placements of what [`Ffs::write_dirty`] writes.
    fn dirty_placements(&mut self, inos: Option<&[Ino]>, device: bool) -> Result<Vec<Placement>> {
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
        self.placements_of(&keys)
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
        // cache: 287 MiB, 74% of the CPU in the scan). When they keep the
        // dirty data over the start-write threshold, so that the next
        // operation would scan again, they go with their groups now; below
        // it they wait, as they did, for the sync. (Waiting for the cache's
        // limit instead left a 256 MiB cache full of them scanned at every
        // create: 10 million creates at 6,600 a second, 12% of the CPU in
        // the scan.)
        let fresh_bytes = self.fresh_inode_blocks.len() as u64 * self.block_size() as u64;
        if fresh_bytes >= self.cache.start_write_bytes() / 4 && self.cache.should_start_write() {
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
    mode: &'a dyn IntegrityMode<Ffs>,
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

impl Ffs {
    /// After a write that filled block `lbn` of `ino` to its end: for a
    /// regular file's data block, pushes the runs [`WriteClusters::note`]
    /// says are ready, their blocks still dirty, as one asynchronous write
    /// each. Directories and other metadata stay delayed (their order is
    /// `integrity`'s business).
    pub(super) fn after_filling(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        if lbn < 0 || !self.cached_inode(ino)?.attr.is_reg() {
            return Ok(());
        }
        let mut addr = bmap::pointer(self, ino, lbn)?;
        if addr.is_none() {
            return Ok(());
        }
        if let Some(moved) = self.realloc_run(ino, lbn, addr)? {
            addr = moved;
        }
        let fpb = self.frags_per_block();
        let maxcontig = self.sb.geometry.maxcontig;
        let ready = self.clusters.note(ino, lbn, addr, fpb, maxcontig, self.options.run_push);
        for run in ready.into_iter().flatten() {
            let keys: Vec<BlockKey> = run.keys(ino).filter(|&k| self.cache.is_dirty(k)).collect();
            if keys.is_empty() {
                continue;
            }
            self.write_dirty_among(&keys)?;
            self.stats.cluster_pushes += 1;
        }
        Ok(())
    }
}
