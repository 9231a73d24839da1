//! Roll-forward: recovering what was written after the newest checkpoint
//! (1993 paper §2.2 and §4.3).
//!
//! From the checkpoint's log heads (the users' and, if the log has one, the
//! cold head), follow the log: at each head, partial segments front to back
//! within a segment, then the segment its summaries name as next. The heads
//! share one serial counter, so the log is the merge of both in serial
//! order: the next partial segment is the one, at either head, carrying the
//! next serial number. A partial segment counts only if its summary
//! checksum, file-system id, serial number (one more than the last) and data
//! CRC32C are all valid; when neither head has one, the log ends.
//!
//! Directory-operation batching: a run of partial segments flagged
//! SS_DIROP|SS_CONT is applied only if the partial segment that ends it
//! (SS_DIROP without SS_CONT) is valid; otherwise the run and everything
//! after it are discarded.
//!
//! Applying a partial segment: one that ends with the ifile's inode (SS_IFILE)
//! carries a complete, consistent ifile — it becomes the state, as a
//! checkpoint would. Otherwise each inode in its inode blocks is installed in
//! the inode map, and the segment usage table learns what changed between
//! the inode's previous version and this one: every block this version's
//! tree reaches that the previous one did not becomes live, and every block
//! the previous version held that this one does not — overwritten,
//! truncated, a removed extended-attribute block, whole trees of indirect
//! blocks, or all of a previous file's blocks when the number now names
//! another file — dies. Blocks no installed inode reaches are ignored:
//! those whose inode never reached the log, and those the cleaner moved
//! whose new indirect block had not (the cleaner leaves indirect blocks to
//! the next segment write). Inodes freed after the checkpoint need nothing
//! here: a free is a directory operation, and its batch ends with the ifile.
//!
//! So the live bytes after roll-forward are exact, as after a checkpoint
//! (the crash explorer has fsck check it in every crash state). Where the
//! previous version cannot be read (damage), what it held stays counted:
//! space lost until fsck recounts, never a live block overwritten.

use super::layout::{
    HeadPosition, Summary, SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK, SS_CONT, SS_DIROP,
    SS_IFILE,
};
use super::Lfs;
use crate::format::blockno::{check_indirect, Geometry, NDADDR, NIADDR, POINTER_BYTES};
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{crc32c, Daddr, Ino, Lbn, IFILE_INO};
use crate::Result;
use std::collections::HashMap;

/// A valid partial segment found after the checkpoint.
struct Found {
    /// Which head wrote it: 0 the users', 1 the cold one.
    head: usize,
    /// Address of its summary block.
    start: Daddr,
    summary: Summary,
    /// Its inode blocks (the last `ninoblocks` blocks).
    inode_blocks: Vec<Vec<u8>>,
}

impl Found {
    /// Where its head stands after it, with `bps` blocks per segment.
    fn end(&self, bps: u64) -> HeadPosition {
        HeadPosition {
            segment: self.start.get() / bps,
            offset: self.start.get() % bps + 1 + self.summary.nblocks as u64,
            next_segment: self.summary.next_segment,
        }
    }
}

/// How an inode's tree of blocks changed between two versions.
#[derive(Default)]
struct TreeChanges {
    /// Addresses the previous version reached and this one does not.
    dropped: Vec<Daddr>,
    /// Addresses this version reaches and the previous one did not.
    added: Vec<Daddr>,
}

impl TreeChanges {
    /// Notes that `old` was replaced by `new` (either may be none).
    fn note(&mut self, old: Daddr, new: Daddr) {
        if old == new {
            return;
        }
        if old.is_some() {
            self.dropped.push(old);
        }
        if new.is_some() {
            self.added.push(new);
        }
    }
}

/// What roll-forward did, for tests and `dump`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Partial segments applied.
    pub applied: u64,
    /// Valid partial segments discarded (an unfinished directory operation).
    pub discarded: u64,
    /// Inodes installed from inode blocks.
    pub inodes: u64,
}

impl Lfs {
    /// The first block of segment `seg` that can hold log.
    fn log_start(&self, seg: u64) -> u64 {
        u64::from(self.sb.sb_segments[..self.sb.ncopies as usize].contains(&seg))
    }

    /// Reads and validates the partial segment at block `offset` of `seg`,
    /// which must carry serial number `serial`.
    fn read_partial(&self, seg: u64, offset: u64, serial: u64) -> Option<Found> {
        let bs = self.block_size;
        let bps = self.sb.blocks_per_segment();
        if seg >= self.sb.nsegments || offset + 1 >= bps {
            return None;
        }
        let start = Daddr::new(seg * bps + offset);
        let mut block = vec![0u8; bs];
        self.dev.read_at(start.byte_offset(bs as u64), &mut block).ok()?;
        let summary = Summary::decode(&block, start).ok()?;
        if summary.fs_id != self.sb.fs_id || summary.serial != serial || summary.nblocks == 0 {
            return None;
        }
        let n = summary.nblocks as u64;
        if offset + 1 + n > bps || summary.ninoblocks as u64 > n || summary.next_segment >= self.sb.nsegments
        {
            return None;
        }
        let mut data = vec![0u8; n as usize * bs];
        self.dev.read_at((start + 1).byte_offset(bs as u64), &mut data).ok()?;
        if crc32c(&data) != summary.data_crc {
            return None;
        }
        let first_inode_block = (n - summary.ninoblocks as u64) as usize;
        let inode_blocks = data[first_inode_block * bs..].chunks_exact(bs).map(|b| b.to_vec()).collect();
        Some(Found { head: 0, start, summary, inode_blocks })
    }

    /// How many valid partial segments follow the checkpoint.
    pub(super) fn log_after_checkpoint(&self) -> usize {
        self.scan_log().len()
    }

    /// Every valid partial segment after the checkpoint, in log order.
    ///
    /// The log has up to two heads (the users' and the cold one), which
    /// draw serial numbers from one counter: the partial segment with the
    /// next serial number is at one of them, either where that head stands
    /// or at the start of the segment it names as next (the writer moves
    /// on when a partial segment no longer fits). Serial numbers are never
    /// reused (a new epoch at every mount), so a valid summary with the
    /// expected number can only be the one the writer wrote.
    fn scan_log(&self) -> Vec<Found> {
        let mut found = Vec::new();
        // Where each head stands while the log is scanned.
        let mut heads: Vec<HeadPosition> =
            std::iter::once(self.writer.log.head()).chain(self.writer.log.cold()).collect();
        let mut serial = self.writer.log.next_serial();
        let limit = self.sb.nsegments * self.sb.blocks_per_segment();
        while (found.len() as u64) < limit {
            let Some((h, p)) =
                heads.iter().enumerate().find_map(|(h, c)| self.next_partial(c, serial).map(|p| (h, p)))
            else {
                break;
            };
            heads[h] = p.end(self.sb.blocks_per_segment());
            serial += 1;
            found.push(Found { head: h, ..p });
        }
        found
    }

    /// The partial segment with serial number `serial` that continues the
    /// head at `c`, if the log holds one.
    fn next_partial(&self, c: &HeadPosition, serial: u64) -> Option<Found> {
        self.read_partial(c.segment, c.offset, serial).or_else(|| {
            (c.next_segment != c.segment)
                .then(|| self.read_partial(c.next_segment, self.log_start(c.next_segment), serial))
                .flatten()
        })
    }

    /// Rolls the log forward from the checkpoint (see the module comment).
    /// The caller writes a checkpoint afterwards if anything was applied.
    pub(super) fn roll_forward(&mut self) -> Result<Recovery> {
        let found = self.scan_log();
        let mut recovery = Recovery::default();
        let mut accepted: Vec<Found> = Vec::new();
        let mut run: Vec<Found> = Vec::new();
        let total = found.len() as u64;
        for p in found {
            let flags = p.summary.flags;
            if flags & SS_DIROP != 0 && flags & SS_CONT != 0 {
                run.push(p);
            } else if flags & SS_DIROP != 0 {
                accepted.append(&mut run);
                accepted.push(p);
            } else if run.is_empty() {
                accepted.push(p);
            } else {
                // A plain partial segment after an unfinished directory
                // operation: the operation never completed.
                break;
            }
        }
        recovery.discarded = total - accepted.len() as u64;
        // The inode map grows a block at a time, only as inodes are created:
        // no inode in the log can lie further past its end than the log has
        // inode slots. A larger number is damage and must not size the map.
        let slots: u64 = accepted.iter().map(|p| p.summary.ninoblocks as u64).sum::<u64>()
            * (self.block_size / INODE_SIZE) as u64;
        let per_block = super::layout::imap_entries_per_block(self.block_size as u32) as u64;
        let mut inode_limit = self.ifile.tables.ninodes() + slots + per_block;
        let mut written: HashMap<Ino, Vec<Daddr>> = HashMap::new();
        let bps = self.sb.blocks_per_segment();
        for p in &accepted {
            if p.summary.flags & SS_IFILE != 0 {
                // The ifile inode is alone in the last inode block; the ifile
                // was encoded after this partial segment was accounted for.
                let daddr = p.start + p.summary.nblocks as u64;
                self.load_ifile(daddr)?;
                // The newer ifile's map may have grown past the
                // checkpoint's (inodes made, then removed before they were
                // written): later inodes are bounded by it.
                inode_limit = inode_limit.max(self.ifile.tables.ninodes() + slots + per_block);
                self.inodes.clear();
                written.clear();
            } else {
                self.mark_written(p);
                let mut at = p.start + 1;
                for f in &p.summary.finfos {
                    for _ in &f.lbns {
                        if f.ino != IFILE_INO {
                            written.entry(f.ino).or_default().push(at);
                        }
                        at += 1;
                    }
                }
                let first_inode_block = p.start + 1 + (p.summary.nblocks - p.summary.ninoblocks) as u64;
                for (k, block) in p.inode_blocks.iter().enumerate() {
                    let daddr = first_inode_block + k as u64;
                    for slot in block.chunks_exact(INODE_SIZE) {
                        let Ok(inode) = Inode::decode(slot) else { continue };
                        if inode.ino <= IFILE_INO || inode.ino >= inode_limit {
                            continue;
                        }
                        if inode.attr.nlink == 0 {
                            self.orphans.note_recovered(inode.ino);
                        }
                        let blocks = written.remove(&inode.ino).unwrap_or_default();
                        self.replay_inode(inode, daddr, &blocks)?;
                        recovery.inodes += 1;
                    }
                }
            }
            recovery.applied += 1;
            self.writer.log.recovered(p.head != 0, p.end(bps), p.summary.serial);
            self.clean.clock_base = self.clean.clock_base.max(p.summary.clock);
        }
        // Made again, too, when the list the checkpoint holds is not sound
        // (a cycle, a number in use on it): its checksums vouch only for
        // its bytes, and a cycle would hand one number to two files.
        if recovery.inodes > 0 || self.check_free_list()?.is_err() {
            self.rebuild_free_list()?;
        }
        if recovery.applied > 0 {
            self.settle_log_head();
        }
        Ok(recovery)
    }

    /// Notes in the usage table that partial segment `p` was written.
    fn mark_written(&mut self, p: &Found) {
        let seg = self.seg_of(p.start);
        self.ifile.tables.update_segment(seg, |s| {
            if s.flags & SEGUSE_CLEAN != 0 {
                s.nsums = 0;
                s.ninos = 0;
            }
            s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_DIRTY;
            s.nsums = s.nsums.saturating_add(1);
            s.ninos = s.ninos.saturating_add(p.summary.ninoblocks);
            s.lastmod = s.lastmod.max(p.summary.clock);
        });
    }

    /// Installs `inode`, found in the inode block at `daddr`; `blocks` are
    /// those the log wrote for it since its previous inode block.
    ///
    /// What becomes live and what dies is the difference between the
    /// previous version's tree of blocks and this one's, not the blocks
    /// written: the cleaner's partial segments carry moved blocks whose
    /// indirect block, and so the tree that reaches them, comes only with a
    /// later segment write (`writer.rs`, `write_moved`). A block written but
    /// not yet in the tree is dead until an inode whose tree holds it is
    /// installed. Only where the previous version cannot be read are the
    /// written blocks counted instead (space lost until fsck recounts,
    /// never a live block left uncounted).
    fn replay_inode(&mut self, inode: Inode, daddr: Daddr, blocks: &[Daddr]) -> Result<()> {
        let ino = inode.ino;
        self.ifile.tables.ensure_inode(ino);
        let old = self.imap_entry(ino)?.unwrap_or_default();
        let bs = self.block_size as i64;
        let changes = if old.daddr.is_some() {
            // The previous version is the one the checkpoint or an earlier
            // partial segment installed; it and its indirect blocks are
            // intact on disk, since the log never overwrites a block live
            // at the checkpoint or written after it.
            let before = match self.inodes.get(ino) {
                Some(&cached) => Some(cached),
                None => self.find_inode_in_block(old.daddr, ino).ok(),
            };
            self.adjust_live(self.seg_of(old.daddr), -(INODE_SIZE as i64));
            before.map(|before| self.tree_changes(Some(&before), &inode))
        } else {
            Some(self.tree_changes(None, &inode))
        };
        match changes {
            Some(TreeChanges { dropped, added }) => {
                for dead in dropped {
                    self.adjust_live(self.seg_of(dead), -bs);
                }
                for new in added {
                    self.adjust_live(self.seg_of(new), bs);
                }
            }
            None => {
                for &new in blocks {
                    self.adjust_live(self.seg_of(new), bs);
                }
            }
        }
        self.adjust_live(self.seg_of(daddr), INODE_SIZE as i64);
        self.imap_ready(ino)?;
        self.ifile.tables.install_inode(ino, inode.generation, daddr)?;
        for key in self.cache.keys_in(ino, Lbn::MIN..=Lbn::MAX) {
            self.cache.remove(key);
        }
        self.inodes.insert(inode, false);
        Ok(())
    }

    /// The addresses `before` (the previous version of an inode, if any)
    /// points at, directly or through indirect blocks, that `after` does
    /// not, and those `after` points at that `before` does not. The walk
    /// goes down only where the two differ: an address both share is the
    /// same block with the same contents (no block is written twice), so
    /// everything below it is shared too.
    fn tree_changes(&self, before: Option<&Inode>, after: &Inode) -> TreeChanges {
        let mut changes = TreeChanges::default();
        let none = [Daddr::NONE; NDADDR];
        let (old_direct, old_xattr, old_indirect) = match before {
            Some(b) => (&b.direct[..], b.xattr, b.indirect),
            None => (&none[..], Daddr::NONE, [Daddr::NONE; NIADDR]),
        };
        let pairs = old_direct.iter().zip(&after.direct).chain(std::iter::once((&old_xattr, &after.xattr)));
        for (&old, &new) in pairs {
            changes.note(old, new);
        }
        let mut first = NDADDR as u64;
        for level in 1..=NIADDR {
            self.tree_diff(
                after.ino,
                level,
                first,
                old_indirect[level - 1],
                after.indirect[level - 1],
                &mut changes,
            );
            first += self.geometry.nindir.pow(level as u32);
        }
        changes
    }

    /// Adds to `changes` how the level-`level` indirect block at `new`
    /// (first data block `first`) and what it reaches differ from the one
    /// at `old` ([`Daddr::NONE`]: no block). An indirect block that cannot
    /// be read stops the walk on its side so that nothing is wrongly
    /// declared dead: below a damaged new block nothing is counted either
    /// way, below a damaged old one everything new is counted live.
    fn tree_diff(
        &self,
        ino: Ino,
        level: usize,
        first: u64,
        old: Daddr,
        new: Daddr,
        changes: &mut TreeChanges,
    ) {
        if old == new {
            return;
        }
        changes.note(old, new);
        let lbn = Geometry::meta_lbn(level, first);
        let count = self.geometry.nindir as usize;
        let children = |at: Daddr| {
            if at.is_none() {
                Some(vec![Daddr::NONE; count])
            } else {
                self.indirect_pointers(ino, lbn, at)
            }
        };
        let Some(new_children) = children(new) else { return };
        let old_children = children(old).unwrap_or_else(|| vec![Daddr::NONE; count]);
        let span = self.geometry.nindir.pow(level as u32 - 1);
        for (i, (&o, &n)) in old_children.iter().zip(&new_children).enumerate() {
            if level == 1 {
                if o != n {
                    changes.note(o, n);
                }
            } else {
                self.tree_diff(ino, level - 1, first + i as u64 * span, o, n, changes);
            }
        }
    }

    /// The pointers of indirect block `lbn` of `ino` at `daddr`, read from
    /// the device and checked; `None` if it cannot be read or is damaged.
    fn indirect_pointers(&self, ino: Ino, lbn: Lbn, daddr: Daddr) -> Option<Vec<Daddr>> {
        let mut block = vec![0u8; self.block_size];
        self.read_addr(daddr, &mut block).ok()?;
        check_indirect(&block, ino, lbn, daddr).ok()?;
        let count = self.geometry.nindir as usize;
        Some(
            block
                .chunks_exact(POINTER_BYTES)
                .take(count)
                .map(|p| Daddr::from_pointer(u32::from_le_bytes([p[0], p[1], p[2], p[3]])))
                .collect(),
        )
    }

    /// At mount and after roll-forward: the segments at the log's heads,
    /// and only they, are active; the ones each head enters next are clean.
    pub(super) fn settle_log_head(&mut self) {
        let head = self.writer.log.head().segment;
        let cold = self.writer.log.cold().map(|c| c.segment);
        for seg in 0..self.ifile.tables.usage().len() {
            if self.ifile.tables.usage().has_flags(seg, SEGUSE_ACTIVE) && seg != head && Some(seg) != cold {
                self.ifile.tables.update_segment(seg, |s| s.flags &= !SEGUSE_ACTIVE);
            }
        }
        for head in std::iter::once(head).chain(cold) {
            self.ifile.tables.update_segment(head, |s| {
                s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_DIRTY | SEGUSE_ACTIVE
            });
        }
        if !self.next_is_clean(head, self.writer.log.head().next_segment) {
            self.writer.log.set_next_segment(self.clean_after(head).unwrap_or(head));
        }
        if let Some(c) = self.writer.log.cold() {
            if !self.next_is_clean(c.segment, c.next_segment)
                || c.next_segment == self.writer.log.head().next_segment
            {
                let next = self.clean_after(c.segment).unwrap_or(c.segment);
                self.writer.log.set_cold(Some(HeadPosition { next_segment: next, ..c }));
            }
        }
    }

    /// Whether `next` may follow `head` in the log: clean, and not `head`.
    fn next_is_clean(&self, head: u64, next: u64) -> bool {
        next != head && self.ifile.tables.usage().get(next).is_some_and(|s| s.flags & SEGUSE_CLEAN != 0)
    }
}
