//! The ifile's contents held in memory (1993 paper §4.2, Fig. 7): cleaner
//! info, the segment usage table and the inode map, with the set of ifile
//! blocks that changed since they were last written.
//!
//! Ifile layout by logical block: 0 = cleaner info; 1 ..= `segtab_blocks` =
//! segment usage table; then the inode map, which grows a block at a time
//! when the free-inode list runs dry (so the number of inodes grows with the
//! ifile, §4.2).

use super::imap::{decode_imap_block, not_loaded, walk_free_list, Imap, Slot};
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

/// The ifile's tables. Invariant: `imap.ninodes() == cleaner.ninodes`, a
/// multiple of the entries per block; every free inode other than 0, 1 is on
/// the free list exactly once. The inode map is held a block at a time
/// (`imap.rs`): what is not resident is read from the ifile by the file
/// system, and the methods here that change an entry fail if its block is
/// not resident.
pub struct Tables {
    block_size: u32,
    segtab_blocks: u64,
    /// Totals and the free-list head.
    pub cleaner: CleanerInfo,
    /// One entry per segment, changed only through [`Tables::update_segment`].
    usage: SegmentUsage,
    /// One entry per inode number, some blocks of them in memory.
    pub(super) imap: Imap,
    dirty: BTreeSet<u64>,
}

impl Tables {
    /// The memory the tables take: the inode map (an entry per inode
    /// number) and the segment usage table (an entry per segment).
    pub fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{btree_set_bytes, MemoryUse};
        let (blocks, bytes) = self.imap.resident();
        vec![
            MemoryUse::new("inode map", blocks * self.imap.per_block(), bytes as u64),
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
            imap: Imap::new(imap_entries_per_block(block_size), IMAP_RESIDENT_BYTES),
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
        self.imap_block_lbn(self.imap.block_of(ino))
    }

    /// Logical block of the ifile holding map block `index`.
    pub fn imap_block_lbn(&self, index: u64) -> u64 {
        1 + self.segtab_blocks + index
    }

    /// The map block held in ifile block `lbn`, if it holds one.
    pub(super) fn imap_index(&self, lbn: u64) -> Option<u64> {
        lbn.checked_sub(1 + self.segtab_blocks)
    }

    /// Blocks in the ifile.
    pub fn nblocks(&self) -> u64 {
        1 + self.segtab_blocks + self.imap.nblocks()
    }

    /// Inode numbers the map has entries for.
    pub fn ninodes(&self) -> u64 {
        self.imap.ninodes()
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

    /// Marks the block holding `ino`'s map entry for the next ifile write.
    fn touch_inode(&mut self, ino: Ino) {
        self.dirty.insert(self.imap_lbn(ino));
    }

    /// Ifile blocks changed since they were last taken.
    pub fn dirty_blocks(&self) -> &BTreeSet<u64> {
        &self.dirty
    }

    /// Marks ifile block `lbn` changed. A map block must be resident
    /// (`Lfs::imap_ready`), since it is encoded from memory.
    pub fn mark_dirty(&mut self, lbn: u64) -> Result<()> {
        if let Some(index) = self.imap_index(lbn).filter(|&i| i < self.imap.nblocks()) {
            self.imap.hold(index)?;
        }
        self.dirty.insert(lbn);
        Ok(())
    }

    /// Takes the changed set (its blocks are being written).
    pub fn take_dirty(&mut self) -> BTreeSet<u64> {
        std::mem::take(&mut self.dirty)
    }

    /// The ifile write that takes blocks `lbns` begins (`Imap::writing`).
    pub fn writing(&mut self, lbns: &BTreeSet<u64>) {
        let indices: Vec<u64> = lbns.iter().filter_map(|&lbn| self.imap_index(lbn)).collect();
        self.imap.writing(indices);
    }

    /// Adds one block of inode numbers to the map and the free list.
    fn grow_imap(&mut self) {
        let first = self.imap.ninodes();
        self.cleaner.free_head = self.imap.grow(self.cleaner.free_head);
        self.cleaner.ninodes = self.imap.ninodes();
        self.dirty.insert(0);
        self.dirty.insert(self.imap_lbn(first));
    }

    /// The entry of `ino`, whose block must be resident.
    fn resident(&self, ino: Ino) -> Result<ImapEntry> {
        match self.imap.slot(ino) {
            Slot::Entry(entry) => Ok(entry),
            Slot::Beyond => {
                Err(Error::corrupt_at("inode map", Location::Inode(ino), "inode number past the inode map"))
            }
            Slot::NotResident(_) => Err(not_loaded(ino)),
        }
    }

    /// Changes the free-list links of resident map block `index`
    /// (`Imap::relink_block`) and, if that changed any, marks it for the
    /// next ifile write.
    pub(super) fn relink_imap_block(
        &mut self,
        index: u64,
        change: impl FnOnce(&mut [ImapEntry]) -> bool,
    ) -> Result<()> {
        if self.imap.relink_block(index, change)? {
            self.dirty.insert(self.imap_block_lbn(index));
        }
        Ok(())
    }

    /// Replaces the entry of `ino` (resident) and marks its block.
    fn put(&mut self, ino: Ino, entry: ImapEntry) -> Result<()> {
        self.imap.set(ino, entry)?;
        self.touch_inode(ino);
        Ok(())
    }

    /// The free list's head: the number [`Tables::alloc_inode`] hands out
    /// next, whose block it needs resident (0 when it must grow the map).
    pub fn free_head(&self) -> Ino {
        self.cleaner.free_head
    }

    /// Sets the free list's head (its entries were threaded already).
    pub(super) fn set_free_head(&mut self, head: Ino) {
        self.cleaner.free_head = head;
        self.dirty.insert(0);
    }

    /// Takes an inode number off the free list (§4.2), growing the map when
    /// the list is empty. Returns the number and its new version. The head's
    /// block must be resident.
    pub fn alloc_inode(&mut self) -> Result<(Ino, u32)> {
        if self.cleaner.free_head == 0 {
            if self.imap.ninodes() >= u32::MAX as u64 - imap_entries_per_block(self.block_size) as u64 {
                return Err(crate::error::errno(libc::ENOSPC, "no inode numbers left"));
            }
            self.grow_imap();
        }
        let ino = self.cleaner.free_head;
        let entry = match self.imap.slot(ino) {
            Slot::Beyond => {
                return Err(Error::corrupt_at(
                    "inode free list",
                    Location::Inode(ino),
                    "points past the inode map",
                ))
            }
            _ => self.resident(ino)?,
        };
        if entry.daddr.is_some() {
            return Err(Error::corrupt_at(
                "inode free list",
                Location::Inode(ino),
                "free inode has an address",
            ));
        }
        self.put(ino, ImapEntry { next_free: 0, ..entry })?;
        self.set_free_head(entry.next_free as Ino);
        Ok((ino, entry.version))
    }

    /// Returns `ino` (resident) to the free list, bumping its version so
    /// blocks of the old file can be told dead.
    pub fn free_inode(&mut self, ino: Ino) -> Result<()> {
        if ino >= self.imap.ninodes() {
            return Ok(());
        }
        let entry = self.resident(ino)?;
        let head = self.cleaner.free_head;
        self.put(
            ino,
            ImapEntry { daddr: Daddr::NONE, version: entry.version.wrapping_add(1), next_free: head as u32 },
        )?;
        self.set_free_head(ino);
        Ok(())
    }

    /// Grows the inode map until it covers `ino` (roll-forward found an
    /// inode allocated after the checkpoint). The free list must be rebuilt
    /// afterwards.
    pub fn ensure_inode(&mut self, ino: Ino) {
        while self.imap.ninodes() <= ino {
            self.grow_imap();
        }
    }

    /// Records that inode `ino` (resident), of version `version`, lives in
    /// the block at `daddr`. The free list must be rebuilt afterwards.
    pub fn install_inode(&mut self, ino: Ino, version: u32, daddr: Daddr) -> Result<()> {
        if ino >= self.imap.ninodes() {
            return Ok(());
        }
        self.put(ino, ImapEntry { version, next_free: 0, daddr })
    }

    /// Checks the invariant written on the type and the sums of the
    /// segment usage table; says which one fails. Walks the free list as
    /// far as its blocks are resident: each number on it exists, is no
    /// reserved one, has no address and appears once.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let per = imap_entries_per_block(self.block_size) as u64;
        if self.imap.ninodes() != self.cleaner.ninodes || !self.imap.ninodes().is_multiple_of(per) {
            return Err(format!(
                "inode map of {} entries for {} inodes ({per} a block)",
                self.imap.ninodes(),
                self.cleaner.ninodes
            ));
        }
        walk_free_list(self.cleaner.free_head, self.imap.ninodes(), |ino| Ok(self.imap.slot(ino)))
            .map_err(|e| e.to_string())??;
        self.usage.check_invariants()
    }

    /// Inode numbers in use (with an address in the map).
    pub fn inodes_in_use(&self) -> u64 {
        self.imap.in_use()
    }

    /// Encodes ifile block `lbn` from the tables (sealed with its trailer).
    /// A map block must be resident: those being written are held.
    pub fn encode_block(&mut self, lbn: u64, out: &mut [u8]) -> Result<()> {
        out.fill(0);
        if lbn == 0 {
            let (clean, dirty) = self.usage.clean_and_dirty();
            self.cleaner.clean_segments = clean;
            self.cleaner.dirty_segments = dirty;
            self.cleaner.encode(out);
            return Ok(());
        }
        if lbn <= self.segtab_blocks {
            let per = segtab_entries_per_block(self.block_size);
            let first = (lbn as usize - 1) * per;
            for (i, s) in self.usage.iter().skip(first).take(per).enumerate() {
                s.encode(out, i * SEGUSE_BYTES);
            }
        } else {
            let index = self.imap_index(lbn).unwrap_or_default();
            let entries =
                self.imap.block(index).ok_or_else(|| not_loaded(index * self.imap.per_block() as u64))?;
            for (i, e) in entries.iter().enumerate() {
                e.encode(out, i * IMAP_BYTES);
            }
        }
        seal_ifile_block(out);
        Ok(())
    }

    /// Rebuilds the tables from the ifile's blocks, validating each, with
    /// every map block resident.
    pub fn decode(
        block_size: u32,
        nsegments: u64,
        blocks_per_segment: u64,
        segtab_blocks: u64,
        blocks: &[Vec<u8>],
    ) -> Result<Tables> {
        let head = blocks.get(..1 + segtab_blocks as usize).unwrap_or(blocks);
        let mut t =
            Tables::decode_head(block_size, nsegments, blocks_per_segment, segtab_blocks, head, u64::MAX)?;
        for block in &blocks[head.len()..] {
            t.load_imap_block(block)?;
        }
        t.finish_load()?;
        Ok(t)
    }

    /// The tables from the ifile's cleaner info and segment usage table
    /// (`head`, blocks 0 ..= `segtab_blocks`), with an empty map that
    /// keeps up to `imap_budget` bytes of blocks in memory; the map's
    /// blocks follow in order ([`Tables::load_imap_block`]), then
    /// [`Tables::finish_load`].
    pub fn decode_head(
        block_size: u32,
        nsegments: u64,
        blocks_per_segment: u64,
        segtab_blocks: u64,
        head: &[Vec<u8>],
        imap_budget: u64,
    ) -> Result<Tables> {
        let bad = |lbn: u64, why: &str| {
            Error::corrupt_at("ifile", Location::FileBlock { ino: IFILE_INO, lbn }, why.to_string())
        };
        let first = head.first().ok_or_else(|| bad(0, "ifile is empty"))?;
        let cleaner = CleanerInfo::decode(first)?;
        if (head.len() as u64) < 1 + segtab_blocks {
            return Err(bad(0, "ifile shorter than its segment usage table"));
        }
        let mut seguse = Vec::with_capacity(nsegments as usize);
        let per_seg = segtab_entries_per_block(block_size);
        for lbn in 1..=segtab_blocks {
            let block = &head[lbn as usize];
            super::layout::check_ifile_block(block, lbn)?;
            for i in 0..per_seg {
                if seguse.len() as u64 == nsegments {
                    break;
                }
                seguse.push(SegUse::decode(block, i * SEGUSE_BYTES).ok_or_else(|| bad(lbn, "short"))?);
            }
        }
        Ok(Tables {
            block_size,
            segtab_blocks,
            cleaner,
            usage: SegmentUsage::new(seguse, blocks_per_segment, block_size),
            imap: Imap::new(imap_entries_per_block(block_size), imap_budget),
            dirty: BTreeSet::new(),
        })
    }

    /// Validates and appends the map's next block, as read from the ifile.
    pub fn load_imap_block(&mut self, block: &[u8]) -> Result<()> {
        let lbn = self.nblocks();
        let entries = decode_imap_block(block, lbn, self.imap.per_block())?;
        self.imap.load(entries);
        Ok(())
    }

    /// Checks the map read against the cleaner info.
    pub fn finish_load(&self) -> Result<()> {
        let bad = |why: &str| {
            Error::corrupt_at("ifile", Location::FileBlock { ino: IFILE_INO, lbn: 0 }, why.to_string())
        };
        if self.imap.ninodes() != self.cleaner.ninodes {
            return Err(bad("inode count disagrees with the inode map's size"));
        }
        if self.cleaner.free_head != 0 && self.cleaner.free_head >= self.cleaner.ninodes {
            return Err(bad("free-inode list head is past the inode map"));
        }
        Ok(())
    }

    /// The inode map entry of `ino`, if the number exists and its block is
    /// resident (`Lfs::imap_entry` reads it otherwise).
    pub fn entry(&self, ino: Ino) -> Option<ImapEntry> {
        match self.imap.slot(ino) {
            Slot::Entry(entry) => Some(entry),
            _ => None,
        }
    }

    /// The entries of the map blocks in memory, with their numbers, lowest
    /// first (every entry, for tables from [`Tables::decode`]).
    pub fn entries_in_memory(&self) -> impl Iterator<Item = (Ino, ImapEntry)> + '_ {
        let per = self.imap.per_block() as u64;
        (0..self.imap.nblocks()).filter_map(move |index| self.imap.block(index).map(|b| (index, b))).flat_map(
            move |(index, block)| block.iter().enumerate().map(move |(k, &e)| (index * per + k as u64, e)),
        )
    }

    /// Sets the address of inode `ino`'s current copy (resident).
    pub fn set_inode_addr(&mut self, ino: Ino, daddr: Daddr) -> Result<()> {
        if ino >= self.imap.ninodes() {
            return Ok(());
        }
        let entry = self.resident(ino)?;
        self.put(ino, ImapEntry { daddr, ..entry })
    }
}

/// Map blocks kept in memory beside those changed or being written, by
/// default: 8 MiB, the entries of 524,288 inode numbers, so that a file
/// system of fewer inodes (every one the lab's papers measured) keeps its
/// whole map as 4.4BSD's buffer cache would have, and a larger one reads
/// its map a block at a time (`MountOptions::imap_resident_bytes`).
pub const IMAP_RESIDENT_BYTES: u64 = 8 << 20;

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
            t.set_inode_addr(ino, Daddr::new(100)).expect("resident");
        }
        assert_eq!(t.ninodes(), 2 * per as u64, "the map grew by one block");
        assert_eq!(t.nblocks(), 4);
        t.free_inode(5).expect("resident");
        assert_eq!(t.check_invariants(), Ok(()));
        // A free list that comes back on itself, or names a live inode.
        let head = t.cleaner.free_head;
        let entry = t.entry(head).expect("resident");
        t.imap.set(head, ImapEntry { next_free: head as u32, ..entry }).expect("resident");
        assert!(t.check_invariants().is_err_and(|e| e.contains("free list")));
        t.imap.set(head, ImapEntry { next_free: 0, daddr: Daddr::new(7), ..entry }).expect("resident");
        assert!(t.check_invariants().is_err_and(|e| e.contains("free list")));
    }

    #[test]
    fn freeing_bumps_the_version_and_reuses_the_number() {
        let mut t = Tables::new(4096, 8, 256, 1);
        let (ino, v) = t.alloc_inode().expect("alloc");
        t.set_inode_addr(ino, Daddr::new(50)).expect("resident");
        t.free_inode(ino).expect("resident");
        let (again, v2) = t.alloc_inode().expect("alloc");
        assert_eq!(again, ino);
        assert_eq!(v2, v + 1);
    }

    #[test]
    fn tables_round_trip_through_blocks() {
        let mut t = Tables::new(4096, 300, 256, 2);
        t.update_segment(299, |s| s.live_bytes = 1234);
        let (ino, _) = t.alloc_inode().expect("alloc");
        t.set_inode_addr(ino, Daddr::new(77)).expect("resident");
        let blocks: Vec<Vec<u8>> = (0..t.nblocks())
            .map(|lbn| {
                let mut b = vec![0u8; 4096];
                t.encode_block(lbn, &mut b).expect("resident");
                b
            })
            .collect();
        let back = Tables::decode(4096, 300, 256, 2, &blocks).expect("decode");
        assert_eq!(back.usage().get(299).map(|s| s.live_bytes), Some(1234));
        assert_eq!(back.entry(ino).map(|e| e.daddr), Some(Daddr::new(77)));
        assert_eq!(back.inodes_in_use(), 1);
        assert_eq!(back.cleaner.free_head, t.cleaner.free_head);
    }
}
