//! Moving live blocks (1993 paper §3.5, Table 3): [`Lfs::bmapv`] (where each
//! named block lives now), [`Lfs::markv`] (rewrites the live ones at a log
//! head, within the cleaner's budget, [`Lfs::markv_cost`]), and
//! [`Lfs::segclean`] (declares a segment empty once nothing in it is live).
//! Relies on the segment writer (`Lfs::write_moved`, `Lfs::at_cold_head`) to
//! write what it marks, and on the block accounting (`space`) for the room.

use super::{parse_segment, BlockKind, BlockRef, Destination, MarkBlock, Markv, RECENT_CLEANED};
use crate::cache::block_of;
use crate::error::errno;
use crate::format::blockno::{check_indirect, is_indirect};
use crate::format::inode::INODE_SIZE;
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
use crate::lfs::layout::{WriteClock, SEGUSE_CLEAN};
use crate::lfs::Lfs;
use crate::storage::{Fetch, Fetches};
use crate::Result;
use disk::AlignedBytes;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The most bytes [`Lfs::live_block_fetches`] plans for one request (16
/// segments of 4 MiB); markv reads what lies beyond it itself, under the
/// lock, a block at a time.
const MAX_FETCH_BYTES: usize = 64 << 20;

impl Lfs {
    /// The current address of each block or inode (0: it no longer exists
    /// or belongs to another version of the file). A block whose current
    /// address is the one its summary gave it is live.
    pub fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>> {
        blocks.iter().map(|b| self.current_address(b)).collect()
    }

    fn current_address(&mut self, b: &BlockRef) -> Result<Daddr> {
        if b.ino == IFILE_INO {
            return match b.kind {
                BlockKind::Inode => Ok(self.ifile.daddr),
                BlockKind::Block(lbn) if self.geometry.parent(lbn).is_some() => self.pointer(IFILE_INO, lbn),
                BlockKind::Block(_) => Ok(Daddr::NONE),
            };
        }
        let Some(entry) = self.imap_entry(b.ino)? else { return Ok(Daddr::NONE) };
        if entry.daddr.is_none() || entry.version != b.version {
            return Ok(Daddr::NONE);
        }
        match b.kind {
            BlockKind::Inode => Ok(entry.daddr),
            BlockKind::Block(lbn) if self.geometry.parent(lbn).is_some() => self.pointer(b.ino, lbn),
            BlockKind::Block(_) => Ok(Daddr::NONE),
        }
    }

    /// Blocks that rewriting `blocks` will consume: the blocks themselves,
    /// the indirect blocks above them and inode blocks for their files (the
    /// "hidden cost"), the ifile when its own blocks move, and summaries.
    pub fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64> {
        let mut data = 0u64;
        let mut metas: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut inos: HashSet<Ino> = HashSet::new();
        let mut files_per_summary = 0u64;
        let mut ifile_moved = 0u64;
        let moved: HashSet<(Ino, Lbn)> = blocks
            .iter()
            .filter_map(|b| match b.kind {
                BlockKind::Block(lbn) => Some((b.ino, lbn)),
                BlockKind::Inode => None,
            })
            .collect();
        for b in blocks {
            if b.ino == IFILE_INO {
                ifile_moved += 1;
                continue;
            }
            inos.insert(b.ino);
            if let BlockKind::Block(lbn) = b.kind {
                files_per_summary += 1;
                if self.cache.is_dirty((b.ino, lbn)) {
                    continue;
                }
                data += 1;
                // Indirect blocks above it get new addresses too, unless
                // they are moved anyway or already dirty.
                for meta in self.ancestors(lbn) {
                    if !self.cache.is_dirty((b.ino, meta)) && !moved.contains(&(b.ino, meta)) {
                        metas.insert((b.ino, meta));
                    }
                }
            }
        }
        // Blocks of these files already dirty are written with them, but
        // their space was promised when they became dirty: not counted.
        let per_inode_block = (self.block_size / INODE_SIZE) as u64;
        let inode_blocks = (inos.len() as u64).div_ceil(per_inode_block) + 1;
        // Moving files changes only the ifile in memory, which any write may
        // do: the next ifile write is what the checkpoint reserve is for.
        // Moving the ifile's own blocks writes it now: those blocks, the
        // segment usage table and the indirect blocks above them. (Blocks
        // already changed go with them, but the checkpoint reserve covers
        // those, as for any ifile write.)
        let ifile_blocks = if ifile_moved > 0 {
            (ifile_moved + u64::from(self.sb.segtab_blocks) + 3).min(self.ifile.tables.nblocks() + 4)
        } else {
            0
        };
        let body = data + metas.len() as u64 + inode_blocks + ifile_blocks;
        // A summary holds at most this many one-block files.
        let per_summary = ((self.block_size - crate::lfs::layout::SUMMARY_HEADER)
            / (crate::lfs::layout::FINFO_HEADER + 8))
            .max(1) as u64;
        // One partial segment per segment the blocks span, one more where
        // they cross into the next, and one more each time a summary fills.
        let partials = body.div_ceil((self.sb.blocks_per_segment() - 2).max(1)) + 1;
        let summaries = partials + files_per_summary.max(data) / per_summary;
        Ok(body + summaries)
    }

    /// Blocks the cleaner may consume: clean space less what the cache has
    /// been promised and the reserves below the cleaner's (a checkpoint's
    /// share, and the share of the operations that free space); with
    /// `after_reclaim`, as it will be once the next checkpoint reclaims
    /// empty segments.
    pub(super) fn cleaner_budget(&mut self, after_reclaim: bool) -> u64 {
        let space = self.segment_space();
        let reclaim = after_reclaim && space.reclaimable > 0;
        // The checkpoint that reclaims writes the ifile's changed blocks.
        let checkpoint = if reclaim { self.checkpoint_blocks() } else { 0 };
        let have = space.writable + if reclaim { space.reclaimable } else { 0 };
        have.saturating_sub(self.promised_blocks() + self.reserve_below_cleaner() + checkpoint)
    }

    /// The cleaner's budget at the cold head: what is left of its segment,
    /// plus clean segments — those outside the users' head, as far as the
    /// users' promised blocks and the reserves below the cleaner's do not
    /// need them (those fill the users' segment and the next first). The
    /// segment the cold head enters next is not counted: entering it sets
    /// another clean one aside as the next.
    pub(in crate::lfs) fn cold_budget(&mut self, after_reclaim: bool) -> u64 {
        if self.writer.log.cold().is_none() {
            return 0;
        }
        let user_head = self.users_head_room();
        let space = self.segment_space();
        let reclaim = if after_reclaim { space.reclaimable } else { 0 };
        let clean = (space.writable + reclaim).saturating_sub(user_head);
        self.cold_room() + clean.min(self.cleaner_budget(after_reclaim))
    }

    /// Blocks the next checkpoint writes: the ifile's changed blocks, its
    /// segment usage table, indirect blocks and summaries.
    fn checkpoint_blocks(&self) -> u64 {
        let changed = self.ifile.tables.dirty_blocks().len() as u64 + u64::from(self.sb.segtab_blocks);
        (changed + 8).min(self.ifile.tables.nblocks() + 8)
    }

    /// The device reads [`Lfs::markv`] would make of `blocks` — data and
    /// indirect blocks handed over without contents and not cached —
    /// planned so that a caller sharing the file system can run them
    /// without its lock (`storage::Fetches`), and the index in `blocks` of
    /// each. The caller puts what a transfer read, unless a write since
    /// may have reached it, into the block's `data`, and counts it with
    /// [`Lfs::count_cleaner_read`]; markv checks, as it does for a whole
    /// segment read earlier, that each block still lies where it was read.
    pub fn live_block_fetches(&mut self, blocks: &[MarkBlock]) -> (Fetches, Vec<usize>) {
        let mut fetches = Fetches::new(Arc::new(self.writer.io.reader()), self.block_size);
        let mut owners = Vec::new();
        // A block named twice is read once, and no request reads more than
        // MAX_FETCH_BYTES ahead (the rest markv reads itself): one request
        // must not size a buffer by whatever references a client sends.
        let mut queued = std::collections::HashSet::new();
        for (i, b) in blocks.iter().enumerate() {
            let BlockKind::Block(lbn) = b.block.kind else { continue };
            let key = (b.block.ino, lbn);
            if b.data.is_some() || b.block.ino == IFILE_INO || self.cache.contains(key) {
                continue;
            }
            if (owners.len() + 1) * self.block_size > MAX_FETCH_BYTES || !queued.insert(key) {
                continue;
            }
            if self.check_addr(b.block.daddr, 1).is_err() {
                // markv reports a damaged address itself.
                continue;
            }
            let at = owners.len() * self.block_size;
            fetches.push(Fetch { at, addr: b.block.daddr, len: self.block_size, lbn });
            owners.push(i);
        }
        (fetches, owners)
    }

    /// Counts `bytes` a cleaner read itself for [`Lfs::markv`] (through
    /// [`Lfs::live_block_fetches`]) in the write cost's bytes read.
    pub fn count_cleaner_read(&mut self, bytes: u64) {
        self.clean.counters.cleaner_bytes_read += bytes;
    }

    /// Rewrites the live blocks among `blocks` at the log head `to` names
    /// (or at the other one, when that one is short of room), in
    /// the order given (a policy sorts them, e.g. by age), leaving every
    /// inode's times as they were. Blocks that died since `bmapv` are
    /// skipped. Fails with ENOSPC, writing nothing, when the rewrite (hidden
    /// cost included) does not fit in the space the cleaner may use, and
    /// with EBUSY inside a directory operation. Asking for the cold head
    /// when there is none makes the next checkpoint open one.
    pub fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv> {
        self.check_mounted()?;
        if self.in_dirop() {
            return Err(errno(libc::EBUSY, "a directory operation is in progress"));
        }
        // A segment write must not split a directory operation (§4.3):
        // write out any that completed before moving their files. Done
        // first, since it moves blocks: only then is "live" settled.
        if !self.tx.dirop_inodes.is_empty() {
            self.write_segments(false)?;
        }
        let mut report = Markv::default();
        let mut live: Vec<&MarkBlock> = Vec::with_capacity(blocks.len());
        for b in blocks {
            if self.current_address(&b.block)? == b.block.daddr && b.block.daddr.is_some() {
                live.push(b);
            } else {
                report.skipped += 1;
            }
        }
        if live.is_empty() {
            return Ok(report);
        }
        let refs: Vec<BlockRef> = live.iter().map(|b| b.block).collect();
        let cost = self.markv_cost(&refs)?;
        // Either head will do when the one asked for lacks room: the cold
        // head's two segments are the cleaner's, and on a nearly full disk
        // a move must not fail for want of space one head has.
        let budget = |lfs: &mut Lfs, after_reclaim: bool| {
            lfs.cold_budget(after_reclaim).max(lfs.cleaner_budget(after_reclaim))
        };
        if cost > budget(self, false) {
            if cost <= budget(self, true) {
                // Segments cleaned earlier become writable at a checkpoint.
                self.checkpoint(false)?;
            }
            if cost > budget(self, false) {
                return Err(errno(libc::ENOSPC, "not enough clean space to move these blocks"));
            }
        }
        if to == Destination::Cold {
            self.writer.cold_demand.request();
        }
        let cold = match to {
            Destination::Cold => cost <= self.cold_budget(false),
            Destination::Shared => cost > self.cleaner_budget(false),
        };
        let mut order: Vec<Ino> = Vec::new();
        let mut seen: HashSet<Ino> = HashSet::new();
        let mut moved_metas: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut moved_data: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut ifile = false;
        let mut ages: HashMap<Ino, WriteClock> = HashMap::new();
        for b in &live {
            // A checkpoint above wrote every dirty block: one that was
            // dirty then has a new address, and its copy here is stale
            // (reading it would bring old contents back).
            if self.current_address(&b.block)? != b.block.daddr {
                report.skipped += 1;
                continue;
            }
            report.moved += 1;
            let ino = b.block.ino;
            let age = ages.entry(ino).or_insert(b.block.age);
            *age = (*age).max(b.block.age);
            if ino == IFILE_INO {
                ifile = true;
                if let BlockKind::Block(lbn) = b.block.kind {
                    self.mark_ifile_block(lbn)?;
                }
                continue;
            }
            if seen.insert(ino) {
                order.push(ino);
            }
            match b.block.kind {
                BlockKind::Inode => self.mark_inode_dirty(ino)?,
                BlockKind::Block(lbn) => {
                    if is_indirect(lbn) {
                        moved_metas.insert((ino, lbn));
                    } else {
                        moved_data.insert((ino, lbn));
                    }
                    self.mark_block(ino, lbn, b)?
                }
            }
        }
        let before = self.writer.stats.blocks_written;
        self.clean.writing = true;
        let written = if cold {
            self.at_cold_head(|lfs| lfs.write_moved(&order, moved_metas, moved_data, ifile, ages))
        } else {
            self.write_moved(&order, moved_metas, moved_data, ifile, ages)
        };
        self.clean.writing = false;
        written?;
        report.blocks_written = self.writer.stats.blocks_written - before;
        self.clean.counters.blocks_moved += report.moved;
        Ok(report)
    }

    /// Makes block `lbn` of `ino` dirty with its current contents.
    fn mark_block(&mut self, ino: Ino, lbn: Lbn, b: &MarkBlock) -> Result<()> {
        let key = (ino, lbn);
        if self.cache.is_dirty(key) {
            return Ok(());
        }
        if self.cache.contains(key) {
            self.cache.mark_dirty(key);
            return Ok(());
        }
        let data = match &b.data {
            Some(d) if d.len() == self.block_size => block_of(d),
            _ => {
                let mut buf = AlignedBytes::zeroed(self.block_size);
                self.read_addr(b.block.daddr, &mut buf)?;
                self.clean.counters.cleaner_bytes_read += self.block_size as u64;
                Arc::new(buf)
            }
        };
        // The move reseals an indirect block: a damaged one must fail here,
        // not come out of the cleaner with a valid checksum.
        if is_indirect(lbn) {
            check_indirect(&data, ino, lbn, b.block.daddr)?;
        }
        self.cache.insert(key, data, true);
        Ok(())
    }

    /// Makes ifile block `lbn` part of the next ifile write.
    fn mark_ifile_block(&mut self, lbn: Lbn) -> Result<()> {
        if lbn >= 0 {
            let lbn = lbn as u64;
            if let Some(index) = self.ifile.tables.imap_index(lbn) {
                self.imap_block_ready(index)?;
            }
            self.ifile.tables.mark_dirty(lbn)?;
        } else if self.ensure_cached(IFILE_INO, lbn)? {
            self.cache.mark_dirty((IFILE_INO, lbn));
        }
        Ok(())
    }

    /// Declares segment `seg` empty after its live blocks were moved: it is
    /// clean, and the log may enter it, from the next checkpoint on. Checks
    /// that nothing in it is live (fails with EBUSY otherwise), so a policy
    /// cannot lose data by calling it too early.
    pub fn segclean(&mut self, seg: u64) -> Result<()> {
        self.check_mounted()?;
        let Some(s) = self.ifile.tables.usage().get(seg) else {
            return Err(errno(libc::EINVAL, "no such segment"));
        };
        if s.flags & SEGUSE_CLEAN != 0 {
            return Ok(());
        }
        if !self.cleanable(seg) {
            return Err(errno(libc::EBUSY, "the log is being written in this segment"));
        }
        if s.live_bytes != 0 {
            // Accounting says something is left: the summaries decide
            // (the table is trusted only when it says nothing is).
            let bytes = self.read_segment(seg)?;
            let table = self.segment_table();
            let refs = parse_segment(&table, seg, &bytes);
            let now = self.bmapv(&refs)?;
            if refs.iter().zip(&now).any(|(r, &at)| at == r.daddr) {
                return Err(errno(libc::EBUSY, "segment still holds live blocks"));
            }
            self.ifile.tables.update_segment(seg, |s| s.live_bytes = 0);
        }
        self.clean.counters.segments_cleaned += 1;
        let u = self.clean.read_utilization.remove(&seg).unwrap_or(0.0);
        self.clean.cleaned.push_back((seg, u));
        if self.clean.cleaned.len() > RECENT_CLEANED {
            self.clean.cleaned.pop_front();
        }
        Ok(())
    }
}
