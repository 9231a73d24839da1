//! Block accounting (1993 paper §3.2), so that a write that is accepted will
//! be stored and one that cannot be stored fails at the system call.
//!
//! The log only ever advances into clean segments, so the space a user can
//! still write is what is left of the current segment, the next one and every
//! clean segment — plus segments whose live bytes have fallen to zero, which
//! become clean at the next checkpoint — less what the cache has already
//! promised (dirty blocks, inode blocks for dirty inodes, summaries) and a
//! reserve that lets a checkpoint always complete.
//!
//! Two counts, as in BSD-LFS: live bytes per segment (the segment usage
//! table, changed as blocks are written and die), and space promised to dirty
//! buffers (checked when a buffer first becomes dirty).

use super::layout::{SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};
use super::Lfs;

/// What a promise of space is for: file data must leave the metadata
/// reserve untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpaceFor {
    /// Blocks of regular files.
    Data,
    /// Directories, symbolic links, extended attributes, inodes.
    Metadata,
}
use crate::error::errno;
use crate::format::inode::INODE_SIZE;
use crate::format::NAME_MAX;
use crate::storage::StatFs;
use crate::Result;

impl Lfs {
    /// Blocks of segment `seg` that can hold log (all but a superblock copy).
    pub(super) fn usable_blocks(&self, seg: u64) -> u64 {
        let sb_block = self.tables.seguse.get(seg as usize).is_some_and(|s| s.flags & SEGUSE_SUPERBLOCK != 0);
        self.sb.blocks_per_segment() - u64::from(sb_block)
    }

    /// Adds `delta` bytes to segment `seg`'s live count.
    pub(super) fn adjust_live(&mut self, seg: u64, delta: i64) {
        if let Some(s) = self.tables.seguse.get_mut(seg as usize) {
            s.live_bytes = (s.live_bytes as i64 + delta).clamp(0, u32::MAX as i64) as u32;
            self.tables.touch_segment(seg);
            self.segment_space = None;
        }
    }

    /// Whether `seg` is the segment being written or the one after it.
    fn in_log_head(&self, seg: u64) -> bool {
        seg == self.log.segment || seg == self.log.next_segment
    }

    /// Blocks of clean segments and of empty dirty ones, recounted only
    /// after the segment usage table changes (the scan is O(segments) and
    /// space is checked on every newly dirty block).
    fn segment_space(&mut self) -> (u64, u64) {
        if let Some(space) = self.segment_space {
            return space;
        }
        let space = (self.writable_blocks(), self.reclaimable_blocks());
        self.segment_space = Some(space);
        space
    }

    /// Blocks the log can still advance into without reclaiming anything.
    fn writable_blocks(&self) -> u64 {
        let bps = self.sb.blocks_per_segment();
        let mut total = bps.saturating_sub(self.log.offset);
        if self.log.next_segment != self.log.segment {
            total += self.usable_blocks(self.log.next_segment);
        }
        for (seg, s) in self.tables.seguse.iter().enumerate() {
            let seg = seg as u64;
            if s.flags & SEGUSE_CLEAN != 0 && !self.in_log_head(seg) {
                total += self.usable_blocks(seg);
            }
        }
        total
    }

    /// Blocks in dirty segments with nothing live: clean after a checkpoint.
    fn reclaimable_blocks(&self) -> u64 {
        self.tables
            .seguse
            .iter()
            .enumerate()
            .filter(|(seg, s)| {
                s.flags & SEGUSE_DIRTY != 0 && s.live_bytes == 0 && !self.in_log_head(*seg as u64)
            })
            .map(|(seg, _)| self.usable_blocks(seg as u64))
            .sum()
    }

    /// Blocks already promised to what the cache holds.
    fn promised_blocks(&self) -> u64 {
        let inodes_per_block = (self.block_size / INODE_SIZE) as u64;
        let data = self.cache.dirty_count();
        let inode_blocks = self.dirty_inode_count().div_ceil(inodes_per_block);
        let summaries = (data + inode_blocks) / (self.sb.blocks_per_segment() / 4).max(1) + 2;
        data + inode_blocks + summaries
    }

    /// Blocks held back from file data: what a checkpoint needs (the whole
    /// ifile with its indirect blocks and summaries), half a segment for
    /// the space lost when partial segments end short of a segment
    /// boundary, and half a segment that only metadata may use — so that
    /// unlink, rmdir and rename still work on a disk full of data.
    fn reserve(&self, use_of: SpaceFor) -> u64 {
        let ifile = self.tables.nblocks() + 2;
        let checkpoint = ifile + ifile / self.geometry.nindir + 8 + self.sb.blocks_per_segment() / 2;
        match use_of {
            SpaceFor::Data => checkpoint + self.sb.blocks_per_segment() / 2,
            SpaceFor::Metadata => checkpoint,
        }
    }

    /// Blocks that could still be promised for `use_of`.
    fn available(&mut self, include_reclaimable: bool, use_of: SpaceFor) -> u64 {
        let (writable, reclaimable) = self.segment_space();
        let have = writable + if include_reclaimable { reclaimable } else { 0 };
        have.saturating_sub(self.promised_blocks() + self.reserve(use_of))
    }

    /// Promises space for `blocks` more dirty blocks, or fails with ENOSPC.
    /// Reclaims empty segments with a checkpoint when that would make room.
    pub(super) fn check_space(&mut self, blocks: u64, use_of: SpaceFor) -> Result<()> {
        if self.available(false, use_of) >= blocks {
            return Ok(());
        }
        if self.available(true, use_of) >= blocks && self.dirop_depth == 0 {
            self.checkpoint(false)?;
            if self.available(false, use_of) >= blocks {
                return Ok(());
            }
        }
        Err(errno(libc::ENOSPC, "no space left in the log"))
    }

    /// Space for one more dirty inode: a new inode block every
    /// `inodes_per_block` dirty inodes.
    pub(super) fn check_inode_space(&mut self) -> Result<()> {
        let per = (self.block_size / INODE_SIZE) as u64;
        if self.dirty_inode_count().is_multiple_of(per) {
            self.check_space(1, SpaceFor::Metadata)?;
        }
        Ok(())
    }

    /// What `statfs` reports.
    pub(super) fn space_report(&mut self) -> StatFs {
        let usable: u64 = (0..self.sb.nsegments).map(|s| self.usable_blocks(s)).sum();
        let free = self.available(true, SpaceFor::Data);
        // An inode allocated since the last segment write has no address in
        // the inode map yet, but it is in use.
        let unwritten =
            self.inodes.keys().filter(|&&ino| self.tables.entry(ino).is_some_and(|e| e.daddr == 0)).count()
                as u64;
        let in_use = self.tables.inodes_in_use() + unwritten;
        let free_inodes = (self.tables.imap.len() as u64).saturating_sub(in_use + 2)
            + free * (self.block_size / INODE_SIZE) as u64;
        StatFs {
            block_size: self.block_size as u32,
            total_blocks: usable.saturating_sub(self.reserve(SpaceFor::Data)),
            free_blocks: free,
            total_inodes: in_use + free_inodes,
            free_inodes,
            name_max: NAME_MAX as u32,
        }
    }
}
