//! The segment writer (1993 paper §2.1, §3.3, §4.3).
//!
//! A segment write gathers dirty blocks, sorts each file's blocks by logical
//! block number, assigns them addresses at the head of the log, updates the
//! indirect blocks and inodes that point at them, packs dirty inodes into
//! inode blocks, updates the inode map, and writes each partial segment —
//! summary first, built front to back — with one device write.
//!
//! Order inside a write: (1) files not touched by a directory operation,
//! then their inodes; (2) files touched by directory operations, then their
//! inodes, in partial segments flagged SS_DIROP; (3) when a directory
//! operation happened or a checkpoint is asked for, the ifile and its inode
//! (§4.3: "the next segment write will append all dirty blocks from the
//! ifile"). All partial segments of step 2 and 3 but the last carry SS_CONT.
//! A checkpoint (`checkpoint`) is a segment write with the ifile.
//! The cleaner's `markv` writes the blocks it moved through `write_moved`:
//! only those, at their old age, the ifile last.

use super::layout::{
    Finfo, HeadPosition, Summary, WriteClock, FINFO_HEADER, SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY,
    SEGUSE_SUPERBLOCK, SS_CONT, SS_DIROP, SS_IFILE,
};
use super::Lfs;
use crate::cache::{block_of, BlockData};
use crate::error::errno;
use crate::format::blockno::{is_indirect, seal_indirect};
use crate::format::inode::INODE_SIZE;
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
use crate::Result;
use disk::AlignedBytes;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// A partial segment being assembled: its summary and its blocks, shared
/// with the cache (no copy) and handed whole to the segment I/O thread.
struct Partial {
    start: Daddr,
    summary: Summary,
    /// The blocks after the summary; an empty one is a slot still to fill.
    blocks: Vec<BlockData>,
    /// Blocks after the summary this partial may still take.
    capacity: u64,
}

impl Partial {
    fn nblocks(&self) -> u64 {
        self.blocks.len() as u64
    }
}

/// The partial segments of one segment write.
#[derive(Default)]
pub(super) struct Batch {
    done: Vec<Partial>,
    open: Option<Partial>,
    /// Flags given to partial segments opened from now on.
    flags: u16,
    /// For the cleaner's rewrites: how old each file's moved data is. Their
    /// summaries carry the age of the youngest data in them instead of the
    /// time of writing, so that data keeps its age through any number of
    /// cleanings (a policy sorts moved blocks by it).
    ages: Option<HashMap<Ino, WriteClock>>,
    /// The age of the blocks being placed now.
    next_age: Option<WriteClock>,
    /// The youngest age placed in the open partial segment.
    open_age: Option<WriteClock>,
    /// Files whose blocks are placed and whose inodes are not yet: room for
    /// their inode blocks is kept at the end of the open partial segment.
    pending_inodes: Vec<Ino>,
    /// For the cleaner's rewrites: the only indirect blocks to place, those
    /// it moved. The others its moves make dirty stay dirty and go out with
    /// the next segment write, as 4.4BSD's `lfs_markv` left the indirect
    /// blocks `lfs_updatemeta` dirtied to it (delayed writes). Written at
    /// once, every cleaned segment cost a fresh copy of each indirect block
    /// above its live blocks: on TPC-B's account file, 58 blocks per
    /// segment cleaned, more than a segment at 77% utilization frees.
    /// `None`: every dirty indirect block of the files written.
    only_metas: Option<HashSet<(Ino, Lbn)>>,
    /// For the cleaner's rewrites: the only data blocks to place, those it
    /// moved. A user's blocks of the same file still dirty wait for the
    /// next segment write with the indirect blocks above them: placed now,
    /// a new block would be named only by an indirect block left dirty, and
    /// the inode written would count a block its tree on disk does not
    /// reach. `None`: every dirty block of the files written.
    only_data: Option<HashSet<(Ino, Lbn)>>,
}

impl Batch {
    /// A batch of moved data, `ages` giving how old each file's data is.
    pub(super) fn aged(ages: HashMap<Ino, WriteClock>) -> Batch {
        Batch { ages: Some(ages), ..Batch::default() }
    }

    /// Places, of the files' dirty blocks, only the indirect blocks
    /// `metas` and the data blocks `data`: what the cleaner moved (see
    /// [`Batch::only_metas`], [`Batch::only_data`]).
    pub(super) fn placing_only(mut self, metas: HashSet<(Ino, Lbn)>, data: HashSet<(Ino, Lbn)>) -> Batch {
        self.only_metas = Some(metas);
        self.only_data = Some(data);
        self
    }

    /// Notes that a block of age `next_age` went into the open partial.
    fn note_age(&mut self) {
        if let Some(age) = self.next_age {
            self.open_age = Some(self.open_age.map_or(age, |a| a.max(age)));
        }
    }

    /// Sets the age of the blocks of `ino` placed from now on.
    fn age_of(&mut self, inos: &[Ino]) {
        self.next_age =
            self.ages.as_ref().and_then(|ages| inos.iter().filter_map(|i| ages.get(i)).max().copied());
    }
}

impl Lfs {
    /// Whether anything waits to be written.
    pub(super) fn has_changes(&self) -> bool {
        self.cache.dirty_count() > 0
            || !self.inodes.dirty().is_empty()
            || !self.ifile.tables.dirty_blocks().is_empty()
    }

    /// The first clean segment after `seg`, going round the disk.
    pub(super) fn clean_after(&self, seg: u64) -> Option<u64> {
        let n = self.sb.nsegments;
        (1..n).map(|i| (seg + i) % n).find(|&s| {
            !self.in_log_head(s)
                && self.ifile.tables.usage().get(s).is_some_and(|u| u.flags & SEGUSE_CLEAN != 0)
        })
    }

    /// Moves the log head into the next segment and chooses the one after.
    pub(super) fn advance_segment(&mut self) -> Result<()> {
        let old = self.writer.log.head().segment;
        let new = self.writer.log.head().next_segment;
        if new == old {
            return Err(errno(libc::ENOSPC, "the log has no clean segment to continue in"));
        }
        self.ifile.tables.update_segment(old, |s| s.flags &= !SEGUSE_ACTIVE);
        let offset = self.enter_segment(new)?;
        let next_segment = self.clean_after(new).unwrap_or(new);
        self.writer.log.move_head(HeadPosition { segment: new, offset, next_segment });
        self.clean.entered_segment(self.mount.options.clock.calendar_ns());
        Ok(())
    }

    /// Closes the cold head, at `c`. The log of its segment ends there. A
    /// partial segment may lie beyond it that a crash cut off from the log
    /// (one before it, at the other head, was lost); an open head would
    /// overwrite it, a closed one never will, so the block where it begins
    /// is cleared: no one walking the segment's summaries (fsck, a cleaner)
    /// takes it for log. The next checkpoint's barrier orders this before
    /// the superblock that closes the head.
    pub(super) fn close_cold_head(&mut self, c: HeadPosition) -> Result<()> {
        let bps = self.sb.blocks_per_segment();
        if c.offset < bps {
            // Through the queue: a read planned without the lock must
            // learn that this address was written.
            self.writer.io.write_zeros(crate::format::Daddr::new(c.segment * bps + c.offset))?;
        }
        self.ifile.tables.update_segment(c.segment, |s| s.flags &= !SEGUSE_ACTIVE);
        self.writer.log.set_cold(None);
        Ok(())
    }

    /// Marks clean segment `new` as the one a head writes into; returns the
    /// first block of it that can hold log.
    fn enter_segment(&mut self, new: u64) -> Result<u64> {
        let has_sb = self.ifile.tables.update_segment(new, |s| {
            s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_DIRTY | SEGUSE_ACTIVE;
            // Nothing in it yet: each partial segment written into it
            // sets it to the time of that write.
            s.lastmod = 0;
            s.flags & SEGUSE_SUPERBLOCK != 0
        });
        let has_sb = has_sb.ok_or_else(|| {
            crate::Error::corrupt_at(
                "segment usage table",
                crate::error::Location::Segment(new),
                "next segment out of range",
            )
        })?;
        Ok(u64::from(has_sb))
    }

    /// Runs the segment write `write` at the cold head (at the users' head
    /// if there is none). The writer's code serves both heads: the two are
    /// exchanged for the write and exchanged back after it, whatever it
    /// returns.
    pub(super) fn at_cold_head<R>(&mut self, write: impl FnOnce(&mut Lfs) -> Result<R>) -> Result<R> {
        let before = self.writer.stats.partial_segments;
        self.writer.log.swap_heads();
        let result = write(self);
        self.writer.log.swap_heads();
        self.writer.stats.cold_partial_segments += self.writer.stats.partial_segments - before;
        result
    }

    /// Opens the cold head in a clean segment when it is wanted (on a disk
    /// large enough for one), and closes it when it is not. Only a
    /// checkpoint does this, before it writes the ifile: roll-forward finds
    /// the cold head's log only from a checkpoint that names it, so a head
    /// opened later would hide everything the log wrote after its first
    /// partial segment. A closed head's segment is an ordinary dirty one.
    pub(super) fn settle_cold_head(&mut self) -> Result<()> {
        let requested = self.writer.cold_demand.checkpoint_passed();
        let starved = self.writer.cold_demand.starved();
        let wanted =
            (requested || self.separation_wanted()) && !(starved && self.writer.log.cold().is_some());
        if let Some(c) = self.writer.log.cold().filter(|_| !wanted) {
            self.close_cold_head(c)?;
        }
        if !wanted || self.writer.log.cold().is_some() || self.cold_head_share() == 0 {
            return Ok(());
        }
        // Statfs sets the head's two segments aside, but a cleaner may have
        // used them meanwhile: open only where that leaves what the cache
        // was promised and the reserves below the cleaner's.
        // After the head was closed for want of space, it takes the
        // cleaner's reserve more to open it again.
        let starved = if starved { self.cleaner_reserve() } else { 0 };
        let needed = self.promised_blocks() + self.reserve_below_cleaner() + self.cold_head_share() + starved;
        if self.segment_space().writable < needed {
            return Ok(());
        }
        self.writer.cold_demand.fed();
        let Some(seg) = self.clean_after(self.writer.log.head().segment) else { return Ok(()) };
        let offset = self.enter_segment(seg)?;
        let next = self.clean_after(seg).unwrap_or(seg);
        self.writer.log.set_cold(Some(HeadPosition { segment: seg, offset, next_segment: next }));
        Ok(())
    }

    /// Opens a partial segment at the log head.
    fn open_partial(&mut self, batch: &mut Batch) -> Result<()> {
        let bps = self.sb.blocks_per_segment();
        if self.writer.log.head().offset + 2 > bps {
            self.advance_segment()?;
        }
        let head = self.writer.log.head();
        let start = Daddr::new(head.segment * bps + head.offset);
        batch.open = Some(Partial {
            start,
            summary: Summary {
                fs_id: self.sb.fs_id,
                serial: 0,
                clock: 0,
                next_segment: 0,
                flags: batch.flags,
                nblocks: 0,
                ninoblocks: 0,
                data_crc: 0,
                finfos: Vec::new(),
            },
            blocks: Vec::with_capacity((bps - head.offset - 1) as usize),
            capacity: bps - head.offset - 1,
        });
        Ok(())
    }

    /// Closes the open partial segment: fixes its summary fields and moves
    /// the log head past it. An empty partial is dropped.
    pub(super) fn close_partial(&mut self, batch: &mut Batch) {
        let Some(mut p) = batch.open.take() else { return };
        let n = p.nblocks();
        if n == 0 {
            return;
        }
        p.summary.nblocks = n as u32;
        let now = self.clean.write_clock();
        p.summary.clock = batch.open_age.take().unwrap_or(now);
        let seg = self.writer.log.head().segment;
        p.summary.next_segment = self.writer.log.head().next_segment;
        p.summary.serial = self.writer.log.append_partial(n);
        let ninoblocks = p.summary.ninoblocks;
        self.ifile.tables.update_segment(seg, |s| {
            s.nsums = s.nsums.saturating_add(1);
            s.ninos = s.ninos.saturating_add(ninoblocks);
            // When the segment was last written, not the age of what the
            // cleaner moved into it: ranking cleaned segments by the age of
            // their data made cost-benefit clean them too early (measured
            // in `scripts/bench-cleaner`; docs/lab/analysis.md, "The LFS cleaner").
            s.lastmod = s.lastmod.max(now);
        });
        batch.done.push(p);
    }

    /// Puts `data` (an empty slot to fill later, if empty) into the next
    /// slot of the log as block `lbn` of `ino` (version `version`) and
    /// returns its address.
    fn reserve_slot(
        &mut self,
        batch: &mut Batch,
        ino: Ino,
        version: u32,
        lbn: Lbn,
        data: BlockData,
    ) -> Result<Daddr> {
        let bs = self.block_size;
        loop {
            if batch.open.is_none() {
                self.open_partial(batch)?;
            }
            // Room for the full inode blocks of the inodes held back, this
            // file's among them (the ifile's inode is placed on its own,
            // after all of them).
            let this_one = ino != IFILE_INO && batch.pending_inodes.last() != Some(&ino);
            let held = batch.pending_inodes.len() + usize::from(this_one);
            let inode_blocks = (held / (bs / INODE_SIZE)) as u64;
            let p = batch.open.as_mut().ok_or_else(|| errno(libc::EIO, "no open partial segment"))?;
            let same_file = p.summary.finfos.last().is_some_and(|f| f.ino == ino && f.version == version);
            let grows = if same_file { 8 } else { FINFO_HEADER + 8 };
            // An empty partial takes the block regardless: it may be all
            // that is left of the segment.
            let room = p.nblocks() + inode_blocks < p.capacity || (p.nblocks() == 0 && p.capacity > 0);
            let fits = room && p.summary.ninoblocks == 0 && p.summary.encoded_len() + grows <= bs;
            if !fits {
                // The segment ends here: the full inode blocks go in before
                // it does. (A full summary only starts another partial
                // segment in the same segment.)
                if !room {
                    self.place_full_inode_blocks(batch)?;
                }
                self.close_partial(batch);
                continue;
            }
            if !same_file {
                p.summary.finfos.push(Finfo { ino, version, last_length: bs as u32, lbns: Vec::new() });
            }
            if let Some(f) = p.summary.finfos.last_mut() {
                f.lbns.push(lbn);
            }
            let daddr = p.start + 1 + p.nblocks();
            p.blocks.push(data);
            batch.note_age();
            return Ok(daddr);
        }
    }

    /// Appends an inode block to the open partial segment; inode blocks are
    /// its last blocks.
    fn place_inode_block(&mut self, batch: &mut Batch, block: AlignedBytes) -> Result<Daddr> {
        let block = Arc::new(block);
        loop {
            if batch.open.is_none() {
                self.open_partial(batch)?;
            }
            let p = batch.open.as_mut().ok_or_else(|| errno(libc::EIO, "no open partial segment"))?;
            if p.nblocks() >= p.capacity {
                self.close_partial(batch);
                continue;
            }
            let daddr = p.start + 1 + p.nblocks();
            p.blocks.push(block);
            p.summary.ninoblocks += 1;
            batch.note_age();
            return Ok(daddr);
        }
    }

    /// Puts `data` into the slot at `daddr` of a partial not yet written.
    fn fill(&self, batch: &mut Batch, daddr: Daddr, data: BlockData) -> Result<()> {
        let p = batch
            .done
            .iter_mut()
            .chain(batch.open.iter_mut())
            .find(|p| daddr > p.start && daddr <= p.start + p.nblocks())
            .ok_or_else(|| errno(libc::EIO, "slot is not in an unwritten partial segment"))?;
        p.blocks[(daddr.units_after(p.start) - 1) as usize] = data;
        Ok(())
    }

    /// Hands the closed partial segments to the segment I/O thread. A
    /// non-final flush happens in the middle of a write, so its
    /// directory-operation partials all continue.
    pub(super) fn flush_partials(&mut self, batch: &mut Batch, last: bool) -> Result<()> {
        let bs = self.block_size;
        let last_dirop =
            if last { batch.done.iter().rposition(|p| p.summary.flags & SS_DIROP != 0) } else { None };
        let partials = batch.done.len() as u64;
        for (i, mut p) in std::mem::take(&mut batch.done).into_iter().enumerate() {
            if p.summary.flags & SS_DIROP != 0 && Some(i) != last_dirop {
                p.summary.flags |= SS_CONT;
            }
            if p.blocks.iter().any(|b| b.len() != bs) {
                return Err(errno(libc::EIO, "partial segment has an unfilled slot"));
            }
            seal_indirect_blocks(&mut p);
            self.writer.stats.partial_segments += 1;
            self.writer.stats.blocks_written += p.blocks.len() as u64 + 1;
            self.writer.stats.writes += 1;
            let data_blocks: usize = p
                .summary
                .finfos
                .iter()
                .filter(|f| f.ino != IFILE_INO)
                .map(|f| f.lbns.iter().filter(|&&lbn| lbn >= 0).count())
                .sum();
            self.clean.count_written(p.blocks.len() as u64 + 1, data_blocks as u64, bs);
            self.writer.io.submit(p.start, p.summary, p.blocks)?;
        }
        if partials > 0 {
            self.advance_segment_clock(partials);
        }
        Ok(())
    }

    /// Gives block `lbn` of `ino` a new address at the log head, with
    /// `contents` (or a placeholder to be filled later when `None`).
    fn place_block(
        &mut self,
        batch: &mut Batch,
        ino: Ino,
        version: u32,
        lbn: Lbn,
        fill: bool,
    ) -> Result<Daddr> {
        let data = if fill {
            self.cache.share((ino, lbn)).ok_or_else(|| errno(libc::EIO, "dirty block left the cache"))?
        } else {
            block_of(&[])
        };
        let daddr = self.reserve_slot(batch, ino, version, lbn, data)?;
        let old = self.pointer(ino, lbn)?;
        self.set_pointer(ino, lbn, daddr)?;
        if old.is_some() {
            self.adjust_live(self.seg_of(old), -(self.block_size as i64));
            self.note_death(self.seg_of(old), self.block_size as u64, ino);
        } else if ino == IFILE_INO {
            self.ifile.inode.blocks += self.bytes_per_frag();
        }
        self.adjust_live(self.seg_of(daddr), self.block_size as i64);
        self.cache.mark_clean((ino, lbn));
        Ok(daddr)
    }

    /// Places the dirty indirect blocks of `ino` (those `batch` allows),
    /// deepest level first, so each is written after the blocks it points
    /// at have their addresses.
    fn place_metas(&mut self, batch: &mut Batch, ino: Ino, version: u32) -> Result<()> {
        for level in 1..=3 {
            let mut metas: Vec<(u64, Lbn)> = self
                .cache
                .dirty_keys_in(ino, Lbn::MIN..=-2)
                .into_iter()
                .filter(|key| batch.only_metas.as_ref().is_none_or(|only| only.contains(key)))
                .filter_map(|(_, lbn)| match self.geometry.meta_level(lbn) {
                    Some((l, first)) if l == level => Some((first, lbn)),
                    _ => None,
                })
                .collect();
            metas.sort_unstable();
            for (_, lbn) in metas {
                self.place_block(batch, ino, version, lbn, true)?;
            }
        }
        Ok(())
    }

    /// Places the dirty blocks of each file in `inos`, then their inodes.
    /// A partial segment that reaches the end of its segment first takes
    /// the inodes of the files whose blocks are placed, as many as fill
    /// whole inode blocks (`reserve_slot` keeps room for them), so most
    /// inodes land in the segment that holds their file's data, or the last
    /// of it, and a segment the cleaner empties takes the inodes with the
    /// data. Placed after the whole batch instead, the inodes of a large
    /// write (a cleaning pass moves a thousand one-block files) filled
    /// segments of their own, which died as fast as the cleaner moved those
    /// files, not as fast as users rewrote them: half-full segments, costly
    /// to clean.
    pub(super) fn write_files(&mut self, batch: &mut Batch, inos: &[Ino]) -> Result<()> {
        for &ino in inos {
            batch.age_of(&[ino]);
            let version = self.imap_entry(ino)?.map_or(0, |e| e.version);
            let data: Vec<Lbn> = self
                .cache
                .dirty_keys_in(ino, -1..=Lbn::MAX)
                .into_iter()
                .filter(|key| batch.only_data.as_ref().is_none_or(|only| only.contains(key)))
                .map(|(_, lbn)| lbn)
                .collect();
            for lbn in data {
                self.place_block(batch, ino, version, lbn, true)?;
            }
            self.place_metas(batch, ino, version)?;
            // A cleaner's write leaves a reshaped file's inode to the next
            // whole write: written now, it would name the cleared pointers
            // and the unplaced blocks while the indirect blocks on disk
            // still held the old ones (a crash then kept freed blocks, or
            // lost the moved ones). The blocks moved here stay reachable
            // from the inode on disk through their old copies until then.
            let whole = batch.only_data.is_none();
            if self.inodes.is_dirty(ino) && (whole || !self.tx.reshaped.contains(&ino)) {
                batch.pending_inodes.push(ino);
            }
            if batch.done.len() >= 4 {
                self.flush_partials(batch, false)?;
            }
        }
        self.place_pending_inodes(batch)
    }

    /// Places the inodes `batch` holds back, in the open partial segment.
    fn place_pending_inodes(&mut self, batch: &mut Batch) -> Result<()> {
        let files = std::mem::take(&mut batch.pending_inodes);
        self.place_inodes(batch, &files)
    }

    /// Places as many of the inodes `batch` holds back as fill whole inode
    /// blocks, oldest first, and keeps the rest back: a part-filled block
    /// at the end of every segment would cost space that, on a disk 90%
    /// full, the cleaner feels (greedy's write cost on uniform overwrites
    /// rose from 9.5 to 10.1).
    fn place_full_inode_blocks(&mut self, batch: &mut Batch) -> Result<()> {
        let per_block = self.block_size / INODE_SIZE;
        let whole = batch.pending_inodes.len() / per_block * per_block;
        if whole == 0 {
            return Ok(());
        }
        let files: Vec<Ino> = batch.pending_inodes.drain(..whole).collect();
        self.place_inodes(batch, &files)
    }

    /// Places the inode blocks holding the inodes of `files`.
    fn place_inodes(&mut self, batch: &mut Batch, files: &[Ino]) -> Result<()> {
        for group in files.chunks(self.block_size / INODE_SIZE) {
            self.place_inode_group(batch, group)?;
        }
        Ok(())
    }

    /// Places one inode block holding the inodes of `group` (at most a
    /// block's worth) and points the inode map at it.
    fn place_inode_group(&mut self, batch: &mut Batch, group: &[Ino]) -> Result<()> {
        batch.age_of(group);
        let mut block = AlignedBytes::zeroed(self.block_size);
        let partial = batch.only_data.is_some();
        // Inodes written with fewer blocks than they count in memory.
        let mut short = Vec::new();
        for (slot, &ino) in group.iter().enumerate() {
            let Some(&inode) = self.inodes.get(ino) else { continue };
            let mut image = inode;
            if partial {
                image.blocks =
                    image.blocks.saturating_sub(self.unplaced_new_blocks(ino)? * self.bytes_per_frag());
                if image.blocks != inode.blocks {
                    short.push(ino);
                }
            }
            image.encode(&mut block[slot * INODE_SIZE..])?;
        }
        let daddr = self.place_inode_block(batch, block)?;
        for &ino in group {
            if let Some(old) = self.imap_entry(ino)?.map(|e| e.daddr) {
                if old.is_some() {
                    self.adjust_live(self.seg_of(old), -(INODE_SIZE as i64));
                }
            }
            self.ifile.tables.set_inode_addr(ino, daddr)?;
            self.adjust_live(self.seg_of(daddr), INODE_SIZE as i64);
            // One whose image counts fewer blocks stays changed: dropped
            // as clean, it would come back with the image's count, and
            // the blocks placed later would never be counted again.
            if !short.contains(&ino) {
                self.inodes.mark_clean(ino);
            }
            if !partial {
                self.tx.reshaped.remove(&ino);
            }
        }
        Ok(())
    }

    /// Blocks of `ino` counted in its `blocks` that no pointer on disk can
    /// reach yet: dirty ones never given an address (a hole a user filled,
    /// a new indirect block). A cleaner's partial write leaves them for the
    /// next segment write, and the inode it writes must count only what its
    /// tree on disk holds, or a crash before that write leaves a count
    /// fsck finds wrong.
    fn unplaced_new_blocks(&mut self, ino: Ino) -> Result<u64> {
        let mut unplaced = 0;
        for (_, lbn) in self.cache.dirty_keys_in(ino, Lbn::MIN..=Lbn::MAX) {
            if self.pointer(ino, lbn)?.is_none() {
                unplaced += 1;
            }
        }
        Ok(unplaced)
    }

    /// The segments a write of about `blocks` blocks will touch: the current
    /// one and those the log will advance into, chosen as `advance_segment`
    /// will choose them.
    fn segments_for(&self, blocks: u64) -> Vec<u64> {
        let bps = self.sb.blocks_per_segment();
        let head = self.writer.log.head();
        let mut segs = vec![head.segment];
        let mut room = bps - head.offset;
        let mut need = blocks + 2;
        let mut next = head.next_segment;
        while room < need + 1 && segs.len() < self.sb.nsegments as usize {
            need = need.saturating_sub(room.saturating_sub(1));
            if next == *segs.last().unwrap_or(&next) {
                break;
            }
            segs.push(next);
            room = self.usable_blocks(next);
            need += 1;
            next = (1..self.sb.nsegments)
                .map(|i| (next + i) % self.sb.nsegments)
                .find(|s| {
                    !segs.contains(s)
                        && !self.in_log_head(*s)
                        && self.ifile.tables.usage().get(*s).is_some_and(|u| u.flags & SEGUSE_CLEAN != 0)
                })
                .unwrap_or(next);
        }
        segs
    }

    /// Writes the ifile's changed blocks and the ifile inode (§4.2, §4.3).
    ///
    /// Writing the ifile changes the segment usage table it holds (new
    /// blocks are live, old ones die), so the set of blocks to write is
    /// closed first: every usage block that this write can change joins it.
    /// Blocks get their addresses with placeholder contents, and are encoded
    /// from the tables only after all accounting is done.
    pub(super) fn write_ifile(&mut self, batch: &mut Batch) -> Result<()> {
        self.close_partial(batch);
        let mut lbns: BTreeSet<u64> = self.ifile.tables.take_dirty();
        lbns.insert(0);
        let nblocks = self.ifile.tables.nblocks();
        loop {
            let mut more: BTreeSet<u64> = BTreeSet::new();
            let estimate = lbns.len() as u64 * 2 + 4;
            for seg in self.segments_for(estimate) {
                more.insert(self.ifile.tables.seguse_lbn(seg));
            }
            more.insert(self.ifile.tables.seguse_lbn(self.seg_of(self.ifile.daddr)));
            for &lbn in &lbns {
                let mut names = vec![lbn as Lbn];
                if let Some(path) = self.geometry.path(lbn) {
                    names.extend_from_slice(&path.metas[..path.levels]);
                }
                for name in names {
                    let old = self.pointer(IFILE_INO, name)?;
                    if old.is_some() {
                        more.insert(self.ifile.tables.seguse_lbn(self.seg_of(old)));
                    }
                }
            }
            if more.is_subset(&lbns) {
                break;
            }
            lbns.extend(more);
        }
        // Dirty the ifile's indirect blocks above every block to be written.
        for &lbn in &lbns {
            if let Some(path) = self.geometry.path(lbn) {
                for &meta in &path.metas[..path.levels] {
                    if !self.ensure_cached(IFILE_INO, meta)? {
                        // Counted in `blocks` when `place_block` gives it its
                        // first address.
                        let zero = self.cache.zeroed();
                        self.cache.insert((IFILE_INO, meta), zero, true);
                    }
                    self.cache.mark_dirty((IFILE_INO, meta));
                }
            }
        }
        let mut placed: BTreeMap<u64, Daddr> = BTreeMap::new();
        for &lbn in &lbns {
            let daddr = self.place_block(batch, IFILE_INO, 0, lbn as Lbn, false)?;
            placed.insert(lbn, daddr);
        }
        self.place_metas(batch, IFILE_INO, 0)?;
        self.ifile.inode.attr.size = nblocks * self.block_size as u64;
        self.ifile.inode.attr.mtime = self.mount.options.clock.calendar_ns();
        self.ifile.inode.attr.ctime = self.ifile.inode.attr.mtime;
        let mut block = AlignedBytes::zeroed(self.block_size);
        self.ifile.inode.encode(&mut block)?;
        let daddr = self.place_inode_block(batch, block)?;
        if self.ifile.daddr.is_some() {
            self.adjust_live(self.seg_of(self.ifile.daddr), -(INODE_SIZE as i64));
        }
        self.ifile.daddr = daddr;
        self.adjust_live(self.seg_of(daddr), INODE_SIZE as i64);
        if let Some(p) = batch.open.as_mut() {
            p.summary.flags |= SS_IFILE;
        }
        self.close_partial(batch);
        // Every change this write made must fall inside the closed set.
        let escaped: Vec<u64> = self.ifile.tables.take_dirty().difference(&lbns).copied().collect();
        debug_assert!(escaped.is_empty(), "ifile blocks changed outside the closed set: {escaped:?}");
        for lbn in escaped {
            self.ifile.tables.mark_dirty(lbn)?;
        }
        // The previous ifile write reached the device's queue before this
        // one began; this one's map blocks stay in memory until the next.
        self.ifile.tables.writing(&lbns);
        for (&lbn, &daddr) in &placed {
            let mut buf = AlignedBytes::zeroed(self.block_size);
            self.ifile.tables.encode_block(lbn, &mut buf)?;
            self.fill(batch, daddr, Arc::new(buf))?;
        }
        Ok(())
    }

    /// Writes the dirty blocks and the inode of `ino` alone (for fsync), at
    /// the cold head if it is cold data.
    pub(super) fn write_file_now(&mut self, ino: Ino) -> Result<()> {
        self.writing(|lfs| lfs.write_file_unguarded(ino))
    }

    fn write_file_unguarded(&mut self, ino: Ino) -> Result<()> {
        self.ensure_new_serial_epoch()?;
        let plain = self.write_cold_part(vec![ino], false)?;
        if plain.is_empty() {
            return Ok(());
        }
        let mut batch = Batch::default();
        self.write_files(&mut batch, &plain)?;
        self.close_partial(&mut batch);
        self.flush_partials(&mut batch, true)
    }

    /// The files with a dirty block or a dirty inode, the ifile aside.
    pub(super) fn dirty_files(&self) -> BTreeSet<Ino> {
        let mut files: BTreeSet<Ino> = self.cache.dirty_inodes().into_iter().collect();
        files.extend(self.inodes.dirty().iter().copied());
        files.remove(&IFILE_INO);
        files
    }

    /// Writes every dirty block and inode to the log; with `with_ifile`, or
    /// when a directory operation happened since the last write, the ifile
    /// too.
    pub(super) fn write_segments(&mut self, with_ifile: bool) -> Result<()> {
        self.writing(|lfs| lfs.write_segments_unguarded(with_ifile))
    }

    fn write_segments_unguarded(&mut self, with_ifile: bool) -> Result<()> {
        self.ensure_new_serial_epoch()?;
        let dirops = std::mem::take(&mut self.tx.dirop_inodes);
        let files = self.dirty_files();
        let (in_dirop, plain): (Vec<Ino>, Vec<Ino>) = files.into_iter().partition(|ino| dirops.contains(ino));
        let plain = self.write_cold_part(plain, true)?;
        let mut batch = Batch::default();
        self.write_files(&mut batch, &plain)?;
        if !dirops.is_empty() {
            self.close_partial(&mut batch);
            batch.flags |= SS_DIROP;
            self.write_files(&mut batch, &in_dirop)?;
        }
        if with_ifile || !dirops.is_empty() {
            self.write_ifile(&mut batch)?;
        }
        self.close_partial(&mut batch);
        self.flush_partials(&mut batch, true)?;
        // Every dirty file went whole: none is reshaped in memory alone
        // (removed files among them, whose inodes are not written again).
        self.tx.reshaped.clear();
        Ok(())
    }

    /// Writes the files in `order` (of their dirty blocks only those moved,
    /// `moved_metas` and `moved_data`, then their inodes, counting only the
    /// blocks their trees on disk reach) and, with `ifile`, the
    /// ifile; partial segments carry the age of the youngest data in them,
    /// from `ages`.
    ///
    /// The indirect blocks the moves dirty stay in the cache for the next
    /// segment write (see `Batch::only_metas`). Until then the inodes
    /// written here still name the indirect blocks' old copies, which point
    /// at the moved blocks' old copies: a consistent file, and the segments
    /// holding those copies are not reused before a checkpoint, which
    /// writes every dirty block first. Roll-forward counts a block live
    /// only once an inode's tree reaches it (`rollforward.rs`). The ifile,
    /// whose segment usage table counts the moves as done, must not reach
    /// the log before the blocks that make them so: with `ifile`, every
    /// dirty block goes first, as at a checkpoint.
    pub(super) fn write_moved(
        &mut self,
        order: &[Ino],
        moved_metas: HashSet<(Ino, Lbn)>,
        moved_data: HashSet<(Ino, Lbn)>,
        ifile: bool,
        ages: HashMap<Ino, WriteClock>,
    ) -> Result<()> {
        self.writing(|lfs| {
            lfs.ensure_new_serial_epoch()?;
            let mut batch = Batch::aged(ages);
            if !ifile {
                batch = batch.placing_only(moved_metas, moved_data);
            }
            lfs.write_files(&mut batch, order)?;
            if ifile {
                let rest: Vec<Ino> = lfs.dirty_files().into_iter().collect();
                lfs.write_files(&mut batch, &rest)?;
                lfs.write_ifile(&mut batch)?;
            }
            lfs.close_partial(&mut batch);
            lfs.flush_partials(&mut batch, true)
        })
    }
}

/// Seals every indirect block of `p` (`blockno::seal_indirect`) now that
/// its pointers are final. The cache keeps its unsealed copy: the trailer
/// holds no pointers, and every write seals anew.
fn seal_indirect_blocks(p: &mut Partial) {
    let mut slot = 0;
    for f in &p.summary.finfos {
        for &lbn in &f.lbns {
            if is_indirect(lbn) {
                if let Some(block) = p.blocks.get_mut(slot) {
                    let mut sealed = AlignedBytes::zeroed(block.len());
                    sealed.copy_from_slice(block);
                    seal_indirect(&mut sealed, f.ino, lbn);
                    *block = Arc::new(sealed);
                }
            }
            slot += 1;
        }
    }
}
