//! Rebuilding an ifile block whose trailer fails, or the inode block
//! holding the ifile's inode (decision 0032).
//!
//! Every mount reads the whole ifile and refuses one whose block fails its
//! checksum, read-only mounts too: one damaged block left every file out
//! of reach. What the block held can be found again, each table its own
//! way, and the block is rewritten in place, sealed, with its partial
//! segment's data checksum recomputed (`repair::write_before_mount`):
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
//!   threaded again by the repair (`Fix::RebuildFreeList`).
//! * **Segment usage** (phase 5, once every live block is counted): each
//!   segment's live bytes as counted, its summaries and inode blocks as
//!   its walk finds them, clean where nothing is live and no log head is,
//!   and the checkpoint's write clock as the time it was last written.
//!   Not while an inode or indirect block could not be read: a segment
//!   counted empty would be handed out, and that file's blocks written
//!   over.
//! * **Cleaner info** (block 0, phase 5): the clean and dirty counts of
//!   the table, the number of inodes the map covers, and an empty free
//!   list for the repair to thread again.
//! * **The ifile's inode** (phase 2), when the inode block the newest
//!   checkpoint names for it reads whole but holds no sound copy, and no
//!   older checkpoint's can be read instead (a mount would use that one,
//!   and so does the check): from the newest copy of each ifile block in
//!   the log, with the fields of its newest older copy; the block is
//!   written again with it and with the newest older copy of each other
//!   inode the map places there (of the same generation; what changed in
//!   them since is lost, and a number with no such copy is freed).

use crate::image::{Checker, LostBlock, Role};
use crate::{Fix, Kind};
use fslab::format::blockno::NDADDR;
use fslab::format::inode::{Inode, INODE_SIZE};
use fslab::format::{Daddr, Ino, IFILE_INO};
use fslab::lfs::layout::{
    seal_ifile_block, segtab_entries_per_block, CleanerInfo, ImapEntry, SegUse, IMAP_BYTES, SEGUSE_ACTIVE,
    SEGUSE_BYTES, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK,
};
use std::collections::HashMap;

impl Checker<'_> {
    /// Phase 2: the inode map blocks in `lost`, each with the first inode
    /// number it covers (`per_block` of them), found again in the log from
    /// one walk of it (see the module comment): their entries go into the
    /// map, and a problem each rewrites the block with them.
    pub(crate) fn rebuild_imap_blocks(&mut self, lost: Vec<(LostBlock, Ino)>, per_block: usize) {
        let covered =
            |ino: Ino| lost.iter().any(|&(_, first)| ino >= first && ino < first + per_block as Ino);
        let newest = self.newest_inode_copies(|ino| ino > IFILE_INO && covered(ino));
        for (block_lost, first) in lost {
            let mut block = vec![0u8; self.bs];
            let mut found = 0;
            for i in 0..per_block {
                let ino = first + i as Ino;
                let entry = match newest.get(&ino) {
                    Some(&(daddr, version, _)) => {
                        found += 1;
                        ImapEntry { version, next_free: 0, daddr }
                    }
                    None => ImapEntry::default(),
                };
                entry.encode(&mut block, i * IMAP_BYTES);
                if let Some(slot) = self.imap.get_mut(ino as usize) {
                    *slot = Some(entry);
                }
            }
            seal_ifile_block(&mut block);
            let message = format!(
                "ifile block {} (inode map, inodes {first} to {}) {}; repair writes it again from the newest \
                 copy of each inode in the log ({found} found)",
                block_lost.lbn,
                first + per_block as Ino - 1,
                block_lost.why
            );
            self.push_rebuild(block_lost, block, message);
        }
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

    /// For the inode numbers `wanted` says, the newest copy of each in the
    /// checkpoint's log outside a rebuilt inode block: (its inode block,
    /// its generation, its partial segment's serial). Walks every segment
    /// once.
    fn newest_inode_copies(&mut self, wanted: impl Fn(Ino) -> bool) -> HashMap<Ino, (Daddr, u32, u64)> {
        let mut newest: HashMap<Ino, (Daddr, u32, u64)> = HashMap::new();
        for seg in 0..self.sb.nsegments {
            self.progress.tick("phase 2 (rebuilding the inode map)", seg, self.sb.nsegments);
            for (daddr, serial) in self.inode_blocks_of(seg) {
                let Ok(block) = self.read_block(daddr) else { continue };
                for slot in block.chunks_exact(INODE_SIZE) {
                    let Ok(inode) = Inode::decode(slot) else { continue };
                    if !wanted(inode.ino) || daddr == self.lost_inode_block {
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
            format!("{message}; but no partial segment of the checkpoint holds it, so the repair cannot")
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

    /// Phase 2: the checkpoint's ifile inode cannot be found in its block
    /// at `at`, which reads whole. Rebuilds it from the newest copy of each
    /// ifile block in the checkpoint's log (the ifile's blocks and the
    /// indirect blocks above them are written together at every
    /// checkpoint, so the newest copies agree), with the fields of its
    /// newest older copy, and puts it into the block the repair writes in
    /// place of the one at `at` (`finish_inode_block` adds the block's
    /// other inodes once the map says which). `None` if some ifile block
    /// has no copy, or the ifile needs more than its single indirect tree.
    pub(crate) fn rebuild_ifile_inode(&mut self, at: Daddr) -> Option<Inode> {
        self.lost_inode_block = at;
        let mut newest: HashMap<i64, (Daddr, u64)> = HashMap::new();
        for seg in 0..self.sb.nsegments {
            self.progress.tick("phase 2 (rebuilding the ifile's inode)", seg, self.sb.nsegments);
            for offset in 0..self.bps {
                let daddr = Daddr::new(seg * self.bps + offset);
                let Some((Role::Block { ino, lbn, .. }, serial)) = self.role_in_checkpoint(daddr) else {
                    continue;
                };
                if ino as Ino == IFILE_INO && newest.get(&lbn).is_none_or(|&(_, s)| serial > s) {
                    newest.insert(lbn, (daddr, serial));
                }
            }
        }
        let nblocks = newest.keys().filter(|&&lbn| lbn >= 0).max().map_or(0, |&max| max as u64 + 1);
        let ndirect = NDADDR as u64;
        if nblocks == 0 || nblocks > ndirect + self.geometry.nindir {
            return None;
        }
        let template = self.newest_inode_copies(|ino| ino == IFILE_INO).get(&IFILE_INO).copied();
        let mut inode = template
            .and_then(|(daddr, _, _)| self.read_block(daddr).ok())
            .and_then(|block| {
                block
                    .chunks_exact(INODE_SIZE)
                    .find_map(|slot| Inode::decode(slot).ok().filter(|i| i.ino == IFILE_INO))
            })
            .unwrap_or(Inode {
                ino: IFILE_INO,
                attr: fslab::format::inode::InodeAttr {
                    mode: fslab::format::inode::kind::REG | 0o400,
                    nlink: 1,
                    ..Default::default()
                },
                ..Inode::default()
            });
        inode.direct = Default::default();
        inode.indirect = Default::default();
        for lbn in 0..nblocks {
            let &(daddr, _) = newest.get(&(lbn as i64))?;
            if lbn < ndirect {
                inode.direct[lbn as usize] = daddr;
            }
        }
        let mut held = nblocks;
        if nblocks > ndirect {
            let meta = fslab::format::blockno::Geometry::meta_lbn(1, ndirect);
            inode.indirect[0] = newest.get(&meta)?.0;
            held += 1;
        }
        inode.attr.size = nblocks * self.bs as u64;
        inode.blocks = held * (self.bs as u64 / 512);
        let mut block = vec![0u8; self.bs];
        inode.encode(&mut block[..INODE_SIZE]).ok()?;
        self.rebuilt_blocks.insert(at, block);
        // The failed look at the block kept it as read.
        self.inode_blocks.remove(&at);
        Some(inode)
    }

    /// Phase 2, after the map is read: the rebuilt inode block at
    /// `self.lost_inode_block` gets the newest older copy of every other
    /// inode the map places there, and the problem whose repair writes it.
    pub(crate) fn finish_inode_block(&mut self) {
        let at = self.lost_inode_block;
        let Some(mut block) = self.rebuilt_blocks.remove(&at) else { return };
        let placed: Vec<Ino> = (IFILE_INO + 1..self.imap.len() as Ino)
            .filter(|&ino| self.imap[ino as usize].is_some_and(|e| e.daddr == at))
            .collect();
        let mut kept = 0;
        let copies = self.newest_inode_copies(|ino| placed.contains(&ino));
        for (slot, &ino) in block.chunks_exact_mut(INODE_SIZE).skip(1).zip(&placed) {
            // A copy of an earlier file of that number (another
            // generation) is not this one: left out, the number is freed.
            let version = self.imap[ino as usize].map_or(0, |e| e.version);
            let copy = copies.get(&ino).copied();
            let inode = copy.and_then(|(daddr, _, _)| self.read_block(daddr).ok()).and_then(|b| {
                b.chunks_exact(INODE_SIZE)
                    .find_map(|s| Inode::decode(s).ok().filter(|i| i.ino == ino && i.generation == version))
            });
            if let Some(inode) = inode {
                if inode.encode(slot).is_ok() {
                    kept += 1;
                }
            }
        }
        let message = format!(
            "inode block {at} holds no sound copy of the checkpoint's ifile inode; repair writes the block \
             again: the ifile's inode from the newest copies of its blocks, and {kept} of the {} other \
             inodes the map places there from their newest older copies (what changed in them since is lost)",
            placed.len()
        );
        self.rebuilt_blocks.insert(at, block.clone());
        self.inode_blocks.remove(&at);
        self.push_rebuild(LostBlock { lbn: 0, daddr: at, why: String::new() }, block, message);
    }
}
