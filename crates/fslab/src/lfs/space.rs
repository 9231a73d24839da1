//! Block accounting (1993 paper §3.2), so that a write that is accepted will
//! be stored and one that cannot be stored fails at the system call.
//!
//! The log only ever advances into clean segments, so the space a user can
//! still write is what is left of the current segment, the next one and every
//! clean segment — plus segments whose live bytes have fallen to zero, which
//! become clean at the next checkpoint — less what the cache has already
//! promised (dirty blocks, inode blocks for dirty inodes, summaries) and the
//! reserves: one that lets a checkpoint always complete, the cleaner's share,
//! a share for the operations that free space (so a full disk can always be
//! emptied), and half a segment for metadata. With a cleaner installed,
//! a writer short of clean space runs it (`clean/trigger.rs`), and the dead
//! space in dirty segments counts as free in `statfs`.
//!
//! Two counts, as in BSD-LFS: live bytes per segment (the segment usage
//! table, changed as blocks are written and die), and space promised to dirty
//! buffers (checked when a buffer first becomes dirty).

use super::Lfs;
use crate::error::errno;
use crate::format::inode::INODE_SIZE;
use crate::format::NAME_MAX;
use crate::storage::{StatFs, TxKind};
use crate::Result;

/// Disks smaller than this keep one log head: a cold head holds two
/// segments (the one it fills and the next), too much of a small disk.
const MIN_SEGMENTS_FOR_COLD: u64 = 16;

/// What a promise of space is for. Each use leaves a different part of
/// the reserves untouched: whatever adds to the file system leaves the
/// cleaner's share and the share of the operations that free space, so
/// that on a full disk the cleaner can still run and every unlink, rmdir,
/// truncate and rename still succeeds (1993 paper §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpaceFor {
    /// Blocks of regular files.
    Data,
    /// Directories, symbolic links, extended attributes, inodes, for an
    /// operation that adds (create, mkdir, link, setxattr).
    Metadata,
    /// Any block an operation that frees space dirties: unlink, rmdir,
    /// rename, truncate, punching a hole, an orphan's reclaim, setattr.
    /// It may spend the freeing share; it leaves the cleaner's.
    Freeing,
}

/// The most blocks one namespace operation or truncate may dirty before it
/// ends: BSD-LFS's `lfs_reserve` takes `NIADDR + 3` blocks for each vnode
/// an operation changes (an inode block, a directory or data block, its
/// indirect blocks, a summary); a rename changes up to four (two
/// directories, the moved node, the node it replaces).
pub(super) const OPERATION_BLOCKS: u64 = 4 * (crate::format::blockno::NIADDR as u64 + 3);

pub(super) use super::usage::SegmentSpace;

/// What writing one file's partial segment alone takes beyond the share
/// of a summary and an inode block `promised_blocks` counts for it: its
/// own summary and inode block, and a summary more where the partial
/// segment crosses into the next segment.
const FSYNC_ALONE_BLOCKS: u64 = 4;

/// Whether a transaction of `kind` frees space (or changes no more than
/// it frees): what may use the freeing share. An exchange frees nothing
/// but changes no more than a rename does, which may. A change of
/// attributes (chmod, touch, an access time) may not: repeated on a full
/// disk without a cleaner, it used up the share, and then unlink failed.
fn frees_space(kind: TxKind) -> bool {
    matches!(kind, TxKind::Unlink | TxKind::Rename | TxKind::Exchange | TxKind::Reclaim | TxKind::Truncate)
}

impl Lfs {
    /// Blocks of segment `seg` that can hold log (all but a superblock copy).
    pub(super) fn usable_blocks(&self, seg: u64) -> u64 {
        self.ifile.tables.usage().usable_blocks(seg)
    }

    /// Adds `delta` bytes to segment `seg`'s live count.
    pub(super) fn adjust_live(&mut self, seg: u64, delta: i64) {
        self.ifile.tables.update_segment(seg, |s| {
            s.live_bytes = (s.live_bytes as i64 + delta).clamp(0, u32::MAX as i64) as u32;
        });
    }

    /// What is left of the cold head's segment (0 without a cold head).
    pub(super) fn cold_room(&self) -> u64 {
        self.writer.log.cold().map_or(0, |c| self.sb.blocks_per_segment().saturating_sub(c.offset))
    }

    /// What the users' head can still write: the rest of its segment and
    /// the next segment it holds.
    pub(super) fn users_head_room(&self) -> u64 {
        let head = self.writer.log.head();
        let rest = self.sb.blocks_per_segment().saturating_sub(head.offset);
        if head.next_segment != head.segment {
            rest + self.usable_blocks(head.next_segment)
        } else {
            rest
        }
    }

    /// Whether `seg` is a segment a log head is writing or will enter next
    /// (the users' head or the cold head): never clean, never cleaned.
    pub(super) fn in_log_head(&self, seg: u64) -> bool {
        self.writer.log.holds(seg)
    }

    /// Space in segments: what the usage table sums up (kept as it
    /// changes, `usage.rs`), less the segments the log heads hold (never
    /// clean, never cleaned), plus what the users' head has left: the rest
    /// of its segment and the next segment it holds.
    pub(super) fn segment_space(&self) -> SegmentSpace {
        let usage = self.ifile.tables.usage();
        let mut space = usage.space();
        // Asked for on every newly dirty block: no allocation here.
        let heads = self.writer.log.held_segments();
        for (i, &seg) in heads.iter().enumerate() {
            if seg != u64::MAX && !heads[..i].contains(&seg) {
                space.replace(usage.space_terms(seg), SegmentSpace::default());
            }
        }
        let writable = self.users_head_room();
        space.replace(SegmentSpace::default(), SegmentSpace { writable, ..SegmentSpace::default() });
        space
    }

    /// Clean segments normal writers leave to the cleaner (the paper
    /// suspends writers at two, §3.5), so that it can always move a
    /// segment's live data, hidden cost included, before it frees one.
    pub(super) fn cleaner_reserve_segments(&self) -> u64 {
        if self.sb.nsegments >= 16 {
            2
        } else {
            1
        }
    }

    /// The cleaner's share in blocks: its segments, plus room for two
    /// ifile writes. Space the cleaner frees becomes writable only at a
    /// checkpoint, which writes the ifile's changed blocks; with a share
    /// smaller than that, a pass could free less than the checkpoint that
    /// makes its gain usable costs, and writers would wait on a cleaner that
    /// loses ground (seen with 512 KiB segments and a 100-block ifile).
    pub(super) fn cleaner_reserve(&self) -> u64 {
        self.cleaner_reserve_segments() * self.sb.blocks_per_segment() + 2 * (self.ifile.tables.nblocks() + 8)
    }

    /// Blocks set aside for the cold head (two segments: the one it fills
    /// and the next) on disks large enough to have one. Until the head
    /// opens they are part of the cleaner's reserve; once open, it holds
    /// them itself, outside the space users can write.
    pub(super) fn cold_head_share(&self) -> u64 {
        if self.sb.nsegments >= MIN_SEGMENTS_FOR_COLD {
            2 * self.sb.blocks_per_segment()
        } else {
            0
        }
    }

    /// Clean-segment counts below which cleaning starts (low) and up to
    /// which background cleaning goes (high).
    pub(super) fn cleaning_thresholds(&self) -> (u64, u64) {
        let step = (self.sb.nsegments / 32).max(2);
        let low = self.cleaner_reserve_segments() + step;
        (low, low + step)
    }

    /// Whether an fsync writing one file alone could take space promised
    /// to what else the cache holds: its partial segment has a summary and
    /// an inode block of its own, where `promised_blocks` counts a share
    /// of each. Near the reserves an fsync writes everything, packed as
    /// promised (one file after another fsynced alone on a full disk used
    /// to run the log out of clean segments, and the mount went read-only
    /// with acknowledged writes in memory).
    pub(super) fn fsync_alone_overruns(&mut self) -> bool {
        self.available(false, SpaceFor::Data) < FSYNC_ALONE_BLOCKS
    }

    /// Blocks already promised to what the cache holds.
    pub(super) fn promised_blocks(&self) -> u64 {
        let inodes_per_block = (self.block_size / INODE_SIZE) as u64;
        let data = self.cache.dirty_count();
        let inode_blocks = self.dirty_inode_count().div_ceil(inodes_per_block);
        let summaries = (data + inode_blocks) / (self.sb.blocks_per_segment() / 4).max(1) + 2;
        data + inode_blocks + summaries
    }

    /// Blocks only a checkpoint may use: the whole ifile with its indirect
    /// blocks and summaries, and half a segment for the space lost when
    /// partial segments end short of a segment boundary.
    pub(super) fn checkpoint_reserve(&self) -> u64 {
        let ifile = self.ifile.tables.nblocks() + 2;
        ifile + ifile / self.geometry.nindir + 8 + self.sb.blocks_per_segment() / 2
    }

    /// The share only operations that free space may use: half a segment,
    /// and at least enough for the largest such operation. When
    /// it runs out, the next one checkpoints (the segments it emptied
    /// become clean) or cleans before it begins ([`Lfs::reserve_for`]).
    pub(super) fn freeing_reserve(&self) -> u64 {
        (self.sb.blocks_per_segment() / 2).max(OPERATION_BLOCKS)
    }

    /// The reserves below the cleaner's: what the cleaner must leave (a
    /// checkpoint's share, and the share of the operations that free
    /// space, which must not fail while it cleans).
    pub(super) fn reserve_below_cleaner(&self) -> u64 {
        self.checkpoint_reserve() + self.freeing_reserve()
    }

    /// Blocks that could still be promised for `use_of` without cleaning.
    pub(super) fn available(&mut self, include_reclaimable: bool, use_of: SpaceFor) -> u64 {
        let space = self.segment_space();
        let have = space.writable + if include_reclaimable { space.reclaimable } else { 0 };
        have.saturating_sub(self.promised_blocks() + self.floor(use_of))
    }

    /// The blocks promises for `use_of` must leave. The reserves, from
    /// the bottom: a checkpoint's (only a checkpoint may use it); then,
    /// side by side, the cleaner's segments and the freeing share; then
    /// half a segment that only metadata may use, so that mkdir and
    /// create still work when file data has filled the disk; then, while
    /// the cold head is not open, its two segments.
    ///
    /// An operation that frees space may use everything but the
    /// checkpoint's share and, when a cleaner is installed, the cleaner's;
    /// without one (`cleaner=off`) nothing else would use those segments.
    fn floor(&self, use_of: SpaceFor) -> u64 {
        match use_of {
            SpaceFor::Data => {
                let unopened_cold = if self.writer.log.cold().is_none() { self.cold_head_share() } else { 0 };
                self.data_floor(unopened_cold)
            }
            SpaceFor::Metadata => self.reserve_below_cleaner() + self.cleaner_reserve(),
            SpaceFor::Freeing => {
                self.checkpoint_reserve() + if self.has_cleaner() { self.cleaner_reserve() } else { 0 }
            }
        }
    }

    /// What file data must leave: every reserve, with `cold` blocks for
    /// the cold head's segments.
    fn data_floor(&self, cold: u64) -> u64 {
        self.reserve_below_cleaner() + self.cleaner_reserve() + self.sb.blocks_per_segment() / 2 + cold
    }

    /// The use a block newly dirtied inside the open transaction is for:
    /// inside one that frees space, whatever it dirties (a directory
    /// block, an inode, the partial blocks at the ends of a punched hole)
    /// is part of freeing.
    pub(super) fn space_for(&self, is_data: bool) -> SpaceFor {
        match self.tx.log.kind() {
            Some(kind) if frees_space(kind) => SpaceFor::Freeing,
            _ if is_data => SpaceFor::Data,
            _ => SpaceFor::Metadata,
        }
    }

    /// Before a transaction of `kind` begins: makes sure the blocks it may
    /// dirty are there for it, checkpointing or cleaning now if they are
    /// not, since inside a directory operation neither may happen (§4.3)
    /// — as BSD-LFS's `lfs_reserve` does at the start of each vnode
    /// operation. Writes check their own blocks as they go.
    pub(super) fn reserve_for(&mut self, kind: TxKind) -> Result<()> {
        let use_of = match kind {
            _ if frees_space(kind) => SpaceFor::Freeing,
            TxKind::Create | TxKind::Link => SpaceFor::Metadata,
            _ => return Ok(()),
        };
        self.check_space(OPERATION_BLOCKS, use_of)
    }

    /// How a cleaning round changed the space: what [`Lfs::available`]
    /// with reclaimable space counts, signed (below zero when promises and
    /// reserves exceed the space), plus what is left of the cold head's
    /// segment. A round whose moves made the cold head enter its next
    /// segment sets a whole clean segment aside as the one after; without
    /// the room that opened up, such a round would look like no progress.
    fn space_margin(&mut self, use_of: SpaceFor) -> i64 {
        let space = self.segment_space();
        let cold_room = self.cold_room();
        (space.writable + space.reclaimable + cold_room) as i64
            - (self.promised_blocks() + self.floor(use_of)) as i64
    }

    /// Blocks that could still be promised for `use_of` once a cleaner has
    /// compacted every dirty segment's live data.
    fn available_after_cleaning(&mut self, use_of: SpaceFor) -> u64 {
        let dead = self.segment_space().dead;
        self.available(true, use_of) + dead
    }

    /// Promises space for `blocks` more dirty blocks, or fails with ENOSPC.
    /// Reclaims empty segments with a checkpoint when that would make room,
    /// and runs the cleaner when it could: the writer waits while it cleans
    /// (§3.2: ENOSPC only when live data and the reserve fill the disk).
    pub(super) fn check_space(&mut self, blocks: u64, use_of: SpaceFor) -> Result<()> {
        if self.available(false, use_of) >= blocks {
            return Ok(());
        }
        // A segment write must not split a directory operation (§4.3).
        if self.in_dirop() {
            return Err(errno(libc::ENOSPC, "no space left in the log"));
        }
        let mut closed_cold = false;
        // The margin when the last round began.
        let mut margin_then: Option<i64> = None;
        loop {
            if self.available(true, use_of) >= blocks {
                self.checkpoint(false)?;
                if self.available(false, use_of) >= blocks {
                    return Ok(());
                }
            }
            // Each round must leave more space than it found, or the
            // cleaner can do no more for this writer. Measured without
            // saturating: far below the reserves, a round's gain may not
            // yet bring what can be promised above zero. And measured from
            // one round's start to the next, after the checkpoint that made
            // the round's space writable: that checkpoint writes the ifile
            // blocks the round dirtied, and on a disk nearly full of live
            // data it can take back all the round gained, round after round.
            let margin = self.space_margin(use_of);
            let progressed = margin_then.is_none_or(|then| margin > then);
            margin_then = Some(margin);
            let stuck =
                !progressed || !self.has_cleaner() || self.available_after_cleaning(use_of) < blocks || {
                    let ran = self.run_cleaner(super::clean::Urgency::Need(blocks))?;
                    !ran || self.space_margin(use_of) <= margin
                };
            if !stuck {
                continue;
            }
            // On a nearly full disk the cold head's two segments may be
            // what the cleaner lacks: close it and try once more (it opens
            // again only once space is plentiful).
            if closed_cold || self.writer.log.cold().is_none() || !self.has_cleaner() {
                break;
            }
            closed_cold = true;
            self.writer.cold_demand.starve();
            self.checkpoint(false)?;
            margin_then = None;
        }
        Err(errno(libc::ENOSPC, "no space left in the log"))
    }

    /// Space for one more dirty inode: a new inode block every
    /// `inodes_per_block` dirty inodes.
    pub(super) fn check_inode_space(&mut self) -> Result<()> {
        let per = (self.block_size / INODE_SIZE) as u64;
        if self.dirty_inode_count().is_multiple_of(per) {
            self.check_space(1, self.space_for(false))?;
        }
        Ok(())
    }

    /// What `statfs` reports.
    pub(super) fn space_report(&mut self) -> StatFs {
        let usable: u64 = (0..self.sb.nsegments).map(|s| self.usable_blocks(s)).sum();
        // Live data rewritten by the cleaner needs summaries again: space
        // that never holds data (two blocks a segment, as in `clean_and_dead`).
        let overhead = 2 * self.sb.nsegments;
        let total_blocks = usable.saturating_sub(self.data_floor(self.cold_head_share()) + overhead);
        let free = if self.has_cleaner() {
            self.available_after_cleaning(SpaceFor::Data)
        } else {
            self.available(true, SpaceFor::Data)
        };
        // Clean segments carry the same two blocks of overhead as `total`.
        let free = free.saturating_sub(2 * self.segment_space().clean_segments);
        // An inode allocated since the last segment write has no address in
        // the inode map yet, but it is in use.
        let unwritten = self
            .inodes
            .numbers()
            .filter(|&ino| self.ifile.tables.entry(ino).is_some_and(|e| e.daddr.is_none()))
            .count() as u64;
        let in_use = self.ifile.tables.inodes_in_use() + unwritten;
        // No more than the numbers the inode map may still hand out
        // (`IfileTables::alloc_inode`'s bound), however much space is free.
        let numbers_left = (u32::MAX as u64)
            .saturating_sub(super::layout::imap_entries_per_block(self.block_size as u32) as u64)
            .saturating_sub(in_use + 2);
        let free_inodes = (self.ifile.tables.ninodes().saturating_sub(in_use + 2)
            + free * (self.block_size / INODE_SIZE) as u64)
            .min(numbers_left);
        StatFs {
            block_size: self.block_size as u32,
            total_blocks,
            free_blocks: free.min(total_blocks),
            total_inodes: in_use + free_inodes,
            free_inodes,
            name_max: NAME_MAX as u32,
        }
    }
}
