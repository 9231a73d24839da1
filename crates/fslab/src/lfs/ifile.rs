//! The ifile's contents held in memory (1993 paper §4.2, Fig. 7): cleaner
//! info, the segment usage table and the inode map, with the set of ifile
//! blocks that changed since they were last written.
//!
//! Ifile layout by logical block: 0 = cleaner info; 1 ..= `segtab_blocks` =
//! segment usage table; then the inode map, which grows a block at a time
//! when the free-inode list runs dry (so the number of inodes grows with the
//! ifile, §4.2).

use super::layout::{
    imap_entries_per_block, seal_ifile_block, segtab_entries_per_block, CleanerInfo, ImapEntry, SegUse,
    IMAP_BYTES, SEGUSE_BYTES, SEGUSE_CLEAN,
};
use super::usage::SegmentUsage;
use crate::error::{Error, Location};
use crate::format::inode::Inode;
use crate::format::{Daddr, Ino, IFILE_INO};
use crate::Result;
use std::collections::BTreeSet;

/// The ifile as this mount holds it: its contents and its own inode,
/// which is not in the inode map. Kept together because they change
/// together: `tables` are the blocks of the ifile whose inode was last
/// written at `daddr` (none before mkfs's first checkpoint), plus the
/// changes their dirty set names; the next ifile write (`writer.rs`)
/// places those blocks through `inode`'s pointers, sets its size to cover
/// the tables, and moves `daddr` to the inode block it writes. Mount
/// (`load_ifile`) replaces all three or none.
pub(super) struct Ifile {
    /// The cleaner info, segment usage table and inode map.
    pub(super) tables: Tables,
    /// The ifile's inode: its block pointers and size.
    pub(super) inode: Inode,
    /// Where `inode` was last written.
    pub(super) daddr: Daddr,
}

/// The ifile's tables. Invariant: `imap.len() == cleaner.ninodes`, a
/// multiple of the entries per block; every free inode other than 0, 1 is on
/// the free list exactly once.
pub struct Tables {
    block_size: u32,
    segtab_blocks: u64,
    /// Totals and the free-list head.
    pub cleaner: CleanerInfo,
    /// One entry per segment, changed only through [`Tables::update_segment`].
    usage: SegmentUsage,
    /// One entry per inode number.
    pub imap: Vec<ImapEntry>,
    dirty: BTreeSet<u64>,
}

impl Tables {
    /// The memory the tables take: the inode map (an entry per inode
    /// number) and the segment usage table (an entry per segment).
    pub fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{btree_set_bytes, vec_bytes, MemoryUse};
        vec![
            MemoryUse::new("inode map", self.imap.len(), vec_bytes(&self.imap, self.imap.capacity())),
            MemoryUse::new(
                "segment usage table",
                self.usage.len() as usize,
                self.usage.memory_bytes() + btree_set_bytes(&self.dirty),
            ),
        ]
    }

    /// Tables of a new file system: every segment clean, one block of free
    /// inodes starting at the root's number.
    pub fn new(block_size: u32, nsegments: u64, blocks_per_segment: u64, segtab_blocks: u64) -> Tables {
        let clean = SegUse { flags: SEGUSE_CLEAN, ..SegUse::default() };
        let mut t = Tables {
            block_size,
            segtab_blocks,
            cleaner: CleanerInfo::default(),
            usage: SegmentUsage::new(vec![clean; nsegments as usize], blocks_per_segment, block_size),
            imap: Vec::new(),
            dirty: BTreeSet::new(),
        };
        t.grow_imap();
        // A new ifile is written whole.
        t.dirty.extend(0..t.nblocks());
        t
    }

    /// Logical block of the ifile holding segment `seg`'s usage entry.
    pub fn seguse_lbn(&self, seg: u64) -> u64 {
        1 + seg / segtab_entries_per_block(self.block_size) as u64
    }

    /// Logical block of the ifile holding inode `ino`'s map entry.
    pub fn imap_lbn(&self, ino: Ino) -> u64 {
        1 + self.segtab_blocks + ino / imap_entries_per_block(self.block_size) as u64
    }

    /// Blocks in the ifile.
    pub fn nblocks(&self) -> u64 {
        1 + self.segtab_blocks + self.imap.len() as u64 / imap_entries_per_block(self.block_size) as u64
    }

    /// The segment usage table.
    pub fn usage(&self) -> &SegmentUsage {
        &self.usage
    }

    /// Changes segment `seg`'s usage entry with `change` and, if that
    /// changed it, marks the block holding it (and the cleaner info, which
    /// counts clean and dirty segments) for the next ifile write. `None`,
    /// and nothing changed, if there is no such segment.
    pub fn update_segment<R>(&mut self, seg: u64, change: impl FnOnce(&mut SegUse) -> R) -> Option<R> {
        let before = self.usage.get(seg)?;
        let result = self.usage.update(seg, change)?;
        if self.usage.get(seg) != Some(before) {
            self.dirty.insert(self.seguse_lbn(seg));
            self.dirty.insert(0);
        }
        Some(result)
    }

    /// Notes that inode `ino`'s map entry changed.
    pub fn touch_inode(&mut self, ino: Ino) {
        self.dirty.insert(self.imap_lbn(ino));
    }

    /// Ifile blocks changed since they were last taken.
    pub fn dirty_blocks(&self) -> &BTreeSet<u64> {
        &self.dirty
    }

    /// Marks ifile block `lbn` changed.
    pub fn mark_dirty(&mut self, lbn: u64) {
        self.dirty.insert(lbn);
    }

    /// Forgets the changed set (its blocks are being written).
    pub fn take_dirty(&mut self) -> BTreeSet<u64> {
        std::mem::take(&mut self.dirty)
    }

    /// Adds one block of inode numbers to the map and the free list.
    fn grow_imap(&mut self) {
        let per = imap_entries_per_block(self.block_size);
        let first = self.imap.len();
        self.imap.resize(first + per, ImapEntry::default());
        // Push in reverse so the lowest new number comes off the list first.
        for ino in (first..first + per).rev() {
            if ino as Ino <= IFILE_INO {
                continue;
            }
            self.imap[ino].next_free = self.cleaner.free_head as u32;
            self.cleaner.free_head = ino as Ino;
        }
        self.cleaner.ninodes = self.imap.len() as u64;
        self.dirty.insert(0);
        for lbn in self.imap_lbn(first as Ino)..self.nblocks() {
            self.dirty.insert(lbn);
        }
    }

    /// Takes an inode number off the free list (§4.2), growing the map when
    /// the list is empty. Returns the number and its new version.
    pub fn alloc_inode(&mut self) -> Result<(Ino, u32)> {
        if self.cleaner.free_head == 0 {
            if self.imap.len() as u64 >= u32::MAX as u64 - imap_entries_per_block(self.block_size) as u64 {
                return Err(crate::error::errno(libc::ENOSPC, "no inode numbers left"));
            }
            self.grow_imap();
        }
        let ino = self.cleaner.free_head;
        let entry = self.imap.get_mut(ino as usize).ok_or_else(|| {
            Error::corrupt_at("inode free list", Location::Inode(ino), "points past the inode map")
        })?;
        if entry.daddr.is_some() {
            return Err(Error::corrupt_at(
                "inode free list",
                Location::Inode(ino),
                "free inode has an address",
            ));
        }
        self.cleaner.free_head = entry.next_free as Ino;
        entry.next_free = 0;
        let version = entry.version;
        self.dirty.insert(0);
        self.touch_inode(ino);
        Ok((ino, version))
    }

    /// Returns `ino` to the free list, bumping its version so blocks of the
    /// old file can be told dead.
    pub fn free_inode(&mut self, ino: Ino) {
        let head = self.cleaner.free_head;
        if let Some(entry) = self.imap.get_mut(ino as usize) {
            entry.daddr = Daddr::NONE;
            entry.version = entry.version.wrapping_add(1);
            entry.next_free = head as u32;
            self.cleaner.free_head = ino;
            self.dirty.insert(0);
            self.touch_inode(ino);
        }
    }

    /// Grows the inode map until it covers `ino` (roll-forward found an
    /// inode allocated after the checkpoint). The free list must be rebuilt
    /// afterwards.
    pub fn ensure_inode(&mut self, ino: Ino) {
        while (self.imap.len() as u64) <= ino {
            self.grow_imap();
        }
    }

    /// Records that inode `ino`, of version `version`, lives in the block at
    /// `daddr`. The free list must be rebuilt afterwards.
    pub fn install_inode(&mut self, ino: Ino, version: u32, daddr: Daddr) {
        if let Some(e) = self.imap.get_mut(ino as usize) {
            *e = ImapEntry { version, next_free: 0, daddr };
        }
        self.touch_inode(ino);
    }

    /// Threads every free inode number onto the free list, lowest first.
    pub fn rebuild_free_list(&mut self) {
        let mut head = 0u32;
        for ino in (IFILE_INO as usize + 1..self.imap.len()).rev() {
            if self.imap[ino].daddr.is_none() {
                if self.imap[ino].next_free != head {
                    self.imap[ino].next_free = head;
                    self.touch_inode(ino as Ino);
                }
                head = ino as u32;
            }
        }
        self.cleaner.free_head = head as Ino;
        self.dirty.insert(0);
    }

    /// Checks the invariant written on the type and the sums of the
    /// segment usage table; says which one fails. Walks the free list:
    /// each number on it exists, is no reserved one, has no address and
    /// appears once.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let per = imap_entries_per_block(self.block_size);
        if self.imap.len() as u64 != self.cleaner.ninodes || !self.imap.len().is_multiple_of(per) {
            return Err(format!(
                "inode map of {} entries for {} inodes ({per} a block)",
                self.imap.len(),
                self.cleaner.ninodes
            ));
        }
        self.check_free_list()?;
        self.usage.check_invariants()
    }

    /// Walks the free list: each number on it exists, is no reserved one,
    /// has no address and appears once. Says which one fails.
    pub fn check_free_list(&self) -> std::result::Result<(), String> {
        let mut seen = vec![false; self.imap.len()];
        let mut ino = self.cleaner.free_head;
        while ino != 0 {
            let entry =
                self.imap.get(ino as usize).ok_or_else(|| format!("free inode {ino} is past the map"))?;
            if ino <= IFILE_INO || entry.daddr.is_some() || std::mem::replace(&mut seen[ino as usize], true) {
                return Err(format!(
                    "inode {ino} on the free list is reserved, has an address or came twice"
                ));
            }
            ino = entry.next_free as Ino;
        }
        Ok(())
    }

    /// Inode numbers in use.
    pub fn inodes_in_use(&self) -> u64 {
        self.imap.iter().filter(|e| e.daddr.is_some()).count() as u64
    }

    /// Encodes ifile block `lbn` from the tables (sealed with its trailer).
    pub fn encode_block(&mut self, lbn: u64, out: &mut [u8]) {
        out.fill(0);
        if lbn == 0 {
            let (clean, dirty) = self.usage.clean_and_dirty();
            self.cleaner.clean_segments = clean;
            self.cleaner.dirty_segments = dirty;
            self.cleaner.encode(out);
            return;
        }
        if lbn <= self.segtab_blocks {
            let per = segtab_entries_per_block(self.block_size);
            let first = (lbn as usize - 1) * per;
            for (i, s) in self.usage.iter().skip(first).take(per).enumerate() {
                s.encode(out, i * SEGUSE_BYTES);
            }
        } else {
            let per = imap_entries_per_block(self.block_size);
            let first = (lbn - 1 - self.segtab_blocks) as usize * per;
            for (i, e) in self.imap.iter().skip(first).take(per).enumerate() {
                e.encode(out, i * IMAP_BYTES);
            }
        }
        seal_ifile_block(out);
    }

    /// Rebuilds the tables from the ifile's blocks, validating each.
    pub fn decode(
        block_size: u32,
        nsegments: u64,
        blocks_per_segment: u64,
        segtab_blocks: u64,
        blocks: &[Vec<u8>],
    ) -> Result<Tables> {
        let bad = |lbn: u64, why: &str| {
            Error::corrupt_at("ifile", Location::FileBlock { ino: IFILE_INO, lbn }, why.to_string())
        };
        let first = blocks.first().ok_or_else(|| bad(0, "ifile is empty"))?;
        let cleaner = CleanerInfo::decode(first)?;
        if (blocks.len() as u64) < 1 + segtab_blocks {
            return Err(bad(0, "ifile shorter than its segment usage table"));
        }
        let mut seguse = Vec::with_capacity(nsegments as usize);
        let per_seg = segtab_entries_per_block(block_size);
        for lbn in 1..=segtab_blocks {
            let block = &blocks[lbn as usize];
            super::layout::check_ifile_block(block, lbn)?;
            for i in 0..per_seg {
                if seguse.len() as u64 == nsegments {
                    break;
                }
                seguse.push(SegUse::decode(block, i * SEGUSE_BYTES).ok_or_else(|| bad(lbn, "short"))?);
            }
        }
        let mut t = Tables {
            block_size,
            segtab_blocks,
            cleaner,
            usage: SegmentUsage::new(seguse, blocks_per_segment, block_size),
            imap: Vec::new(),
            dirty: BTreeSet::new(),
        };
        let per_ino = imap_entries_per_block(block_size);
        for (i, block) in blocks.iter().enumerate().skip(1 + segtab_blocks as usize) {
            super::layout::check_ifile_block(block, i as u64)?;
            for j in 0..per_ino {
                t.imap.push(ImapEntry::decode(block, j * IMAP_BYTES).ok_or_else(|| bad(i as u64, "short"))?);
            }
        }
        if t.imap.len() as u64 != t.cleaner.ninodes {
            return Err(bad(0, "inode count disagrees with the inode map's size"));
        }
        if t.cleaner.free_head != 0 && t.cleaner.free_head >= t.cleaner.ninodes {
            return Err(bad(0, "free-inode list head is past the inode map"));
        }
        Ok(t)
    }

    /// The inode map entry of `ino`, if the number exists.
    pub fn entry(&self, ino: Ino) -> Option<&ImapEntry> {
        self.imap.get(ino as usize)
    }

    /// Sets the address of inode `ino`'s current copy.
    pub fn set_inode_addr(&mut self, ino: Ino, daddr: Daddr) {
        if let Some(e) = self.imap.get_mut(ino as usize) {
            e.daddr = daddr;
        }
        self.touch_inode(ino);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_list_hands_out_root_first_and_grows_when_empty() {
        let mut t = Tables::new(4096, 8, 256, 1);
        let per = imap_entries_per_block(4096);
        let (first, _) = t.alloc_inode().expect("alloc");
        assert_eq!(first, crate::format::ROOT_INO);
        for _ in 0..per {
            let (ino, _) = t.alloc_inode().expect("alloc");
            t.set_inode_addr(ino, Daddr::new(100));
        }
        assert_eq!(t.imap.len(), 2 * per, "the map grew by one block");
        assert_eq!(t.nblocks(), 4);
        t.free_inode(5);
        assert_eq!(t.check_invariants(), Ok(()));
        // A free list that comes back on itself, or names a live inode.
        let head = t.cleaner.free_head as usize;
        t.imap[head].next_free = head as u32;
        assert!(t.check_invariants().is_err_and(|e| e.contains("free list")));
        t.imap[head].next_free = 0;
        t.imap[head].daddr = Daddr::new(7);
        assert!(t.check_invariants().is_err_and(|e| e.contains("free list")));
    }

    #[test]
    fn freeing_bumps_the_version_and_reuses_the_number() {
        let mut t = Tables::new(4096, 8, 256, 1);
        let (ino, v) = t.alloc_inode().expect("alloc");
        t.set_inode_addr(ino, Daddr::new(50));
        t.free_inode(ino);
        let (again, v2) = t.alloc_inode().expect("alloc");
        assert_eq!(again, ino);
        assert_eq!(v2, v + 1);
    }

    #[test]
    fn tables_round_trip_through_blocks() {
        let mut t = Tables::new(4096, 300, 256, 2);
        t.update_segment(299, |s| s.live_bytes = 1234);
        let (ino, _) = t.alloc_inode().expect("alloc");
        t.set_inode_addr(ino, Daddr::new(77));
        let blocks: Vec<Vec<u8>> = (0..t.nblocks())
            .map(|lbn| {
                let mut b = vec![0u8; 4096];
                t.encode_block(lbn, &mut b);
                b
            })
            .collect();
        let back = Tables::decode(4096, 300, 256, 2, &blocks).expect("decode");
        assert_eq!(back.usage().get(299).map(|s| s.live_bytes), Some(1234));
        assert_eq!(back.imap[ino as usize].daddr, Daddr::new(77));
        assert_eq!(back.cleaner.free_head, t.cleaner.free_head);
    }
}
