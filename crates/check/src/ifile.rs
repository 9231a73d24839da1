//! Rebuilding an ifile block whose trailer fails (decision 0032).
//!
//! Every mount reads the whole ifile and refuses one whose block fails its
//! checksum, read-only mounts too: one damaged block left every file out
//! of reach. What the block held can be found again, each table its own
//! way, and the block is rewritten in place, sealed, with its partial
//! segment's data checksum recomputed (`repair::rewrite_ifile_blocks`):
//!
//! * **Inode map** (phase 2): for each inode number of the block, the
//!   newest copy of that inode in the checkpoint's log — every segment's
//!   partial segments are walked for their inode blocks, and the copy in
//!   the partial segment of the highest serial wins. Its block is the
//!   entry's address and its generation the version; a number with no
//!   copy is free. A file removed since its last copy was written comes
//!   back (nothing in the log says it was removed): unreachable, it goes
//!   to `/lost+found` in the same repair, and its blocks the log has
//!   reused since lose their pointers (`inodes.rs`). The free list is
//!   threaded again by the repair's mount.
//! * **Segment usage** (phase 5, once every live block is counted): each
//!   segment's live bytes as counted, its summaries and inode blocks as
//!   its walk finds them, clean where nothing is live and no log head is,
//!   and the checkpoint's write clock as the time it was last written.
//!   Not while an inode or indirect block could not be read: a segment
//!   counted empty would be handed out, and that file's blocks written
//!   over.
//! * **Cleaner info** (block 0, phase 5): the clean and dirty counts of
//!   the table, the number of inodes the map covers, and an empty free
//!   list for the repair's mount to thread again.

use crate::image::{Checker, Role};
use crate::{Fix, Kind};
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, IFILE_INO};
use fslab::lfs::layout::{
    seal_ifile_block, segtab_entries_per_block, CleanerInfo, ImapEntry, SegUse, IMAP_BYTES, SEGUSE_ACTIVE,
    SEGUSE_BYTES, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK,
};
use std::collections::HashMap;

/// An ifile block that failed its trailer, to be rebuilt.
#[derive(Debug, Clone)]
pub(crate) struct LostBlock {
    /// Its logical block in the ifile.
    pub lbn: u64,
    /// Where it lies.
    pub daddr: Daddr,
    /// What the check said of it.
    pub why: String,
}

impl Checker<'_> {
    /// Phase 2: entries for inode map block `lost`, covering inode numbers
    /// `first .. first + count`, found again in the log (see the module
    /// comment), and the problem that rewrites the block with them.
    pub(crate) fn rebuild_imap_block(&mut self, lost: LostBlock, first: Ino, count: usize) -> Vec<ImapEntry> {
        let newest = self.newest_inode_copies(first, first + count as Ino);
        let entries: Vec<ImapEntry> = (0..count as Ino)
            .map(|i| match newest.get(&(first + i)) {
                Some(&(daddr, version, _)) => ImapEntry { version, next_free: 0, daddr },
                None => ImapEntry::default(),
            })
            .collect();
        let mut block = vec![0u8; self.bs];
        for (j, entry) in entries.iter().enumerate() {
            entry.encode(&mut block, j * IMAP_BYTES);
        }
        seal_ifile_block(&mut block);
        let found = newest.len();
        let message = format!(
            "ifile block {} (inode map, inodes {first} to {}) {}; repair writes it again from the newest \
             copy of each inode in the log ({found} found)",
            lost.lbn,
            first + count as Ino - 1,
            lost.why
        );
        self.push_rebuild(lost, block, message);
        entries
    }

    /// Phase 5: the segment usage blocks and the cleaner info among
    /// `lost`, rebuilt from what the walk counted (see the module comment).
    pub(crate) fn rebuild_usage_blocks(&mut self, lost: &[LostBlock], blind: bool) {
        let segtab = self.sb.segtab_blocks as u64;
        let per_block = segtab_entries_per_block(self.sb.block_size);
        let nsegments = self.sb.nsegments as usize;
        for l in lost.iter().filter(|l| l.lbn >= 1 && l.lbn <= segtab) {
            let first = (l.lbn as usize - 1) * per_block;
            let segments = first..(first + per_block).min(nsegments);
            if blind {
                let message = format!(
                    "ifile block {} (segment usage) {}; it cannot be rebuilt while an inode or indirect \
                     block cannot be read: live data would go uncounted",
                    l.lbn, l.why
                );
                self.damage(Kind::Ifile, Some(IFILE_INO), message, None);
                continue;
            }
            let mut block = vec![0u8; self.bs];
            for (j, seg) in segments.clone().enumerate() {
                let entry = self.rebuilt_usage(seg as u64);
                entry.encode(&mut block, j * SEGUSE_BYTES);
                self.seguse[seg] = Some(entry);
            }
            seal_ifile_block(&mut block);
            let message = format!(
                "ifile block {} (segment usage of segments {} to {}) {}; repair writes it again from the \
                 live data counted",
                l.lbn,
                segments.start,
                segments.end - 1,
                l.why
            );
            self.push_rebuild(l.clone(), block, message);
        }
        if let Some(l) = lost.iter().find(|l| l.lbn == 0) {
            let Some(table) = self.seguse.iter().copied().collect::<Option<Vec<SegUse>>>() else {
                let message = format!(
                    "ifile block 0 (the cleaner info) {}; it cannot be rebuilt while the segment usage \
                     table cannot be read",
                    l.why
                );
                self.damage(Kind::Ifile, Some(IFILE_INO), message, None);
                return;
            };
            let info = CleanerInfo {
                clean_segments: table.iter().filter(|s| s.flags & SEGUSE_CLEAN != 0).count() as u64,
                dirty_segments: table.iter().filter(|s| s.flags & SEGUSE_DIRTY != 0).count() as u64,
                free_head: 0,
                ninodes: self.imap.len() as u64,
            };
            let mut block = vec![0u8; self.bs];
            info.encode(&mut block);
            self.cleaner = Some(info);
            let message = format!(
                "ifile block 0 (the cleaner info) {}; repair writes it again from the tables (the free \
                 list is threaded again)",
                l.why
            );
            self.push_rebuild(l.clone(), block, message);
        }
    }

    /// The usage entry of segment `seg` as the walk found it.
    fn rebuilt_usage(&mut self, seg: u64) -> SegUse {
        let c = self.sb.checkpoint;
        let live = self.live.get(seg as usize).copied().unwrap_or(0);
        let head = seg == c.log_segment || c.cold.is_some_and(|h| h.segment == seg);
        let superblock = if self.superblock_segment(seg) { SEGUSE_SUPERBLOCK } else { 0 };
        if live == 0 && !head {
            return SegUse { flags: superblock | SEGUSE_CLEAN, ..SegUse::default() };
        }
        if !self.seg_counts.contains_key(&seg) {
            // Walks the segment, which counts its summaries.
            self.role(Daddr::new(seg * self.bps));
        }
        let count = self.seg_counts.get(&seg).copied().unwrap_or_default();
        SegUse {
            live_bytes: live as u32,
            flags: superblock | SEGUSE_DIRTY | if head { SEGUSE_ACTIVE } else { 0 },
            lastmod: c.write_clock,
            nsums: count.nsums,
            ninos: count.ninos,
        }
    }

    /// For inode numbers `first .. end`, the newest copy of each in the
    /// checkpoint's log: (its inode block, its generation, its partial
    /// segment's serial). Walks every segment.
    fn newest_inode_copies(&mut self, first: Ino, end: Ino) -> HashMap<Ino, (Daddr, u32, u64)> {
        let mut newest: HashMap<Ino, (Daddr, u32, u64)> = HashMap::new();
        for seg in 0..self.sb.nsegments {
            self.progress.tick("phase 2 (rebuilding the inode map)", seg, self.sb.nsegments);
            for (daddr, serial) in self.inode_blocks_of(seg) {
                let Ok(block) = self.read_block(daddr) else { continue };
                for slot in block.chunks_exact(INODE_SIZE) {
                    let Ok(inode) = Inode::decode(slot) else { continue };
                    if inode.ino < first || inode.ino >= end || inode.ino <= IFILE_INO {
                        continue;
                    }
                    let newer = newest.get(&inode.ino).is_none_or(|&(_, _, s)| serial > s);
                    if newer {
                        newest.insert(inode.ino, (daddr, inode.generation, serial));
                    }
                }
            }
        }
        newest
    }

    /// Records the problem of lost block `lost`, whose repair writes `block`.
    fn push_rebuild(&mut self, lost: LostBlock, block: Vec<u8>, message: String) {
        let partial = self.partial_of(lost.daddr);
        let fix = partial.map(|partial| Fix::RewriteIfileBlock { daddr: lost.daddr, partial, block });
        let message = if fix.is_some() {
            message
        } else {
            format!("{message} — but no partial segment of the checkpoint holds it, so it is not")
        };
        self.damage(Kind::Ifile, Some(IFILE_INO), message, fix);
    }

    /// The inode blocks of segment `seg` in partial segments of the
    /// checkpoint, with each partial segment's serial.
    fn inode_blocks_of(&mut self, seg: u64) -> Vec<(Daddr, u64)> {
        let bps = self.bps;
        (0..bps)
            .filter_map(|offset| {
                let daddr = Daddr::new(seg * bps + offset);
                match self.role_in_checkpoint(daddr) {
                    Some((Role::Inodes { .. }, serial)) => Some((daddr, serial)),
                    _ => None,
                }
            })
            .collect()
    }
}
