//! The inode map, read through memory a block at a time (1993 paper §4.2:
//! the map is the ifile's, and 4.4BSD's LFS reads it through the buffer
//! cache, `LFS_IENTRY`), so that what it holds is bounded by a budget and
//! not by the inode numbers the file system has ever handed out.
//!
//! [`Imap`] holds the resident blocks and does no I/O; the file system
//! (`impl Lfs` below) reads a block that is not resident from the ifile
//! and hands it over. A block stays resident while it is *held*: changed
//! since the last ifile write (its entries exist nowhere else), or
//! encoded by that write, whose partial segment may not have reached the
//! device yet, so a read of its address would find the older copy. The
//! next ifile write begins only after the previous one was handed to the
//! device, and lets go of those.

use super::layout::{check_ifile_block, ImapEntry, IMAP_BYTES};
use super::Lfs;
use crate::error::{errno, Error, Location};
use crate::format::{Daddr, Ino, IFILE_INO};
use crate::Result;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};

/// One block of map entries in memory.
struct Resident {
    entries: Box<[ImapEntry]>,
    /// Looked at since the eviction hand last passed (a second chance).
    referenced: AtomicBool,
}

/// What the map says of an inode number, as far as memory knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The number's entry.
    Entry(ImapEntry),
    /// The number exists, but the map block holding it (this index) is
    /// not in memory.
    NotResident(u64),
    /// No such number: past the end of the map.
    Beyond,
}

/// The inode map's entries: `len` of them, in blocks of `per_block`, some
/// resident.
pub struct Imap {
    per_block: usize,
    /// Entries in the map (a multiple of `per_block`).
    len: u64,
    /// Entries with an address.
    in_use: u64,
    blocks: HashMap<u64, Resident>,
    /// Blocks that must stay: changed since the last ifile write, or
    /// written by it.
    held: BTreeSet<u64>,
    /// Blocks the last ifile write encoded (held until the next begins).
    written: Vec<u64>,
    /// Resident blocks in the order the hand visits them.
    hand: VecDeque<u64>,
    /// Blocks kept beyond those held.
    budget_blocks: usize,
}

impl Imap {
    /// An empty map of `per_block` entries a block, keeping up to
    /// `budget_bytes` of blocks that are not held.
    pub fn new(per_block: usize, budget_bytes: u64) -> Imap {
        Imap {
            per_block,
            len: 0,
            in_use: 0,
            blocks: HashMap::new(),
            held: BTreeSet::new(),
            written: Vec::new(),
            hand: VecDeque::new(),
            budget_blocks: budget_blocks(per_block, budget_bytes),
        }
    }

    /// Entries in the map: the inode numbers it has.
    pub fn ninodes(&self) -> u64 {
        self.len
    }

    /// Entries with an address: inode numbers in use, as written.
    pub fn in_use(&self) -> u64 {
        self.in_use
    }

    /// Entries a block.
    pub fn per_block(&self) -> usize {
        self.per_block
    }

    /// Blocks in the map.
    pub fn nblocks(&self) -> u64 {
        self.len / self.per_block as u64
    }

    /// The map block (by index) holding `ino`.
    pub fn block_of(&self, ino: Ino) -> u64 {
        ino / self.per_block as u64
    }

    /// Blocks in memory, and the bytes their entries take.
    pub fn resident(&self) -> (usize, usize) {
        let n = self.blocks.len();
        (n, n * self.per_block * std::mem::size_of::<ImapEntry>())
    }

    /// What memory knows of `ino`'s entry.
    pub fn slot(&self, ino: Ino) -> Slot {
        if ino >= self.len {
            return Slot::Beyond;
        }
        let index = self.block_of(ino);
        match self.blocks.get(&index) {
            Some(block) => {
                block.referenced.store(true, Ordering::Relaxed);
                Slot::Entry(block.entries[(ino % self.per_block as u64) as usize])
            }
            None => Slot::NotResident(index),
        }
    }

    /// Replaces `ino`'s entry and holds its block until the next ifile
    /// write. Fails if the block is not resident (the caller reads it
    /// first) or the number does not exist.
    pub fn set(&mut self, ino: Ino, entry: ImapEntry) -> Result<()> {
        let index = self.block_of(ino);
        let at = (ino % self.per_block as u64) as usize;
        let block = self.blocks.get_mut(&index).filter(|_| ino < self.len).ok_or_else(|| not_loaded(ino))?;
        let old = std::mem::replace(&mut block.entries[at], entry);
        match (old.daddr.is_some(), entry.daddr.is_some()) {
            (false, true) => self.in_use += 1,
            (true, false) => self.in_use = self.in_use.saturating_sub(1),
            _ => {}
        }
        self.held.insert(index);
        Ok(())
    }

    /// Adds a block of free entries at the end, held, threaded onto the
    /// free list whose head is `free_head` (the lowest new number first,
    /// the reserved ones left off); returns the new head.
    pub fn grow(&mut self, mut free_head: Ino) -> Ino {
        let index = self.nblocks();
        let first = self.len;
        let mut entries = vec![ImapEntry::default(); self.per_block].into_boxed_slice();
        for (at, entry) in entries.iter_mut().enumerate().rev() {
            let ino = first + at as u64;
            if ino > IFILE_INO {
                entry.next_free = free_head as u32;
                free_head = ino;
            }
        }
        self.blocks.insert(index, Resident { entries, referenced: AtomicBool::new(true) });
        self.hand.push_back(index);
        self.held.insert(index);
        self.len += self.per_block as u64;
        free_head
    }

    /// Takes block `index`, read from the ifile, into memory (unless it is
    /// there already, when memory's copy is the newer), and lets go of
    /// blocks past the budget.
    pub fn adopt(&mut self, index: u64, entries: Box<[ImapEntry]>) {
        if index >= self.nblocks() || self.blocks.contains_key(&index) || entries.len() != self.per_block {
            return;
        }
        self.blocks.insert(index, Resident { entries, referenced: AtomicBool::new(true) });
        self.hand.push_back(index);
        self.evict();
    }

    /// Appends block `index` as mount reads the map in order, counting
    /// its entries in use; it stays resident if the budget allows.
    pub fn load(&mut self, entries: Box<[ImapEntry]>) {
        let index = self.nblocks();
        self.in_use += entries.iter().filter(|e| e.daddr.is_some()).count() as u64;
        self.len += self.per_block as u64;
        self.adopt(index, entries);
    }

    /// Marks block `index` to be held until the next ifile write (its
    /// contents are to be written again). Fails if it is not resident.
    pub fn hold(&mut self, index: u64) -> Result<()> {
        if !self.blocks.contains_key(&index) {
            return Err(not_loaded(index * self.per_block as u64));
        }
        self.held.insert(index);
        Ok(())
    }

    /// An ifile write begins, writing the blocks `indices`: those the
    /// previous one wrote are on their way to the device and may go;
    /// these are held until the next.
    pub fn writing(&mut self, indices: impl IntoIterator<Item = u64>) {
        for index in std::mem::take(&mut self.written) {
            self.held.remove(&index);
        }
        self.written = indices.into_iter().collect();
        self.held.extend(self.written.iter().copied());
        self.evict();
    }

    /// The entries of resident block `index`.
    pub fn block(&self, index: u64) -> Option<&[ImapEntry]> {
        self.blocks.get(&index).map(|b| &b.entries[..])
    }

    /// Changes the free-list links of resident block `index` with
    /// `change` (which returns whether it changed any; addresses are not
    /// its to change) and holds the block if so. Returns whether it did.
    pub fn relink_block(
        &mut self,
        index: u64,
        change: impl FnOnce(&mut [ImapEntry]) -> bool,
    ) -> Result<bool> {
        let block = self.blocks.get_mut(&index).ok_or_else(|| not_loaded(index * self.per_block as u64))?;
        let addresses: Vec<Daddr> = block.entries.iter().map(|e| e.daddr).collect();
        if change(&mut block.entries) {
            // The count of entries in use stays right only if no address moved.
            for (entry, daddr) in block.entries.iter_mut().zip(addresses) {
                entry.daddr = daddr;
            }
            self.held.insert(index);
            return Ok(true);
        }
        Ok(false)
    }

    /// Whether every block of the map is in memory.
    pub fn all_resident(&self) -> bool {
        self.blocks.len() as u64 == self.nblocks()
    }

    /// Lets go of resident blocks that are not held, oldest unreferenced
    /// first, until no more than the budget's worth remain beside those
    /// held.
    fn evict(&mut self) {
        let mut visits = 2 * self.hand.len();
        while self.blocks.len() > self.budget_blocks + self.held.len() && visits > 0 {
            visits -= 1;
            let Some(index) = self.hand.pop_front() else { break };
            let Some(block) = self.blocks.get(&index) else { continue };
            if self.held.contains(&index) || block.referenced.swap(false, Ordering::Relaxed) {
                self.hand.push_back(index);
            } else {
                self.blocks.remove(&index);
            }
        }
    }
}

/// Blocks of `per_block` entries that `bytes` hold (at least one).
fn budget_blocks(per_block: usize, bytes: u64) -> usize {
    let block_bytes = (per_block * std::mem::size_of::<ImapEntry>()).max(1) as u64;
    usize::try_from(bytes / block_bytes).unwrap_or(usize::MAX).max(1)
}

/// A change to (or write of) an entry whose block was not read first: a
/// fault of the caller, never of the disk.
pub(super) fn not_loaded(_ino: Ino) -> Error {
    errno(libc::EIO, "an inode map block is not in memory")
}

impl Lfs {
    /// Inode `ino`'s map entry, reading its block from the ifile if it is
    /// not in memory; `None` if there is no such number.
    pub(super) fn imap_entry(&mut self, ino: Ino) -> Result<Option<ImapEntry>> {
        match self.ifile.tables.imap.slot(ino) {
            Slot::Entry(entry) => Ok(Some(entry)),
            Slot::Beyond => Ok(None),
            Slot::NotResident(index) => {
                self.read_imap_block(index)?;
                match self.ifile.tables.imap.slot(ino) {
                    Slot::Entry(entry) => Ok(Some(entry)),
                    _ => Err(not_loaded(ino)),
                }
            }
        }
    }

    /// Makes the map block holding `ino` resident (nothing if there is no
    /// such number), so that the tables can change its entry.
    pub(super) fn imap_ready(&mut self, ino: Ino) -> Result<()> {
        self.imap_block_ready(self.ifile.tables.imap.block_of(ino))
    }

    /// Makes map block `index` resident (nothing if there is none).
    pub(super) fn imap_block_ready(&mut self, index: u64) -> Result<()> {
        let imap = &self.ifile.tables.imap;
        if index < imap.nblocks() && imap.block(index).is_none() {
            self.read_imap_block(index)?;
        }
        Ok(())
    }

    /// Reads map block `index` from the ifile into memory.
    fn read_imap_block(&mut self, index: u64) -> Result<()> {
        let lbn = self.ifile.tables.imap_block_lbn(index);
        let addr = self.pointer(IFILE_INO, lbn as i64)?;
        if addr.is_none() {
            return Err(Error::corrupt_at(
                "ifile",
                Location::FileBlock { ino: IFILE_INO, lbn },
                "the ifile has a hole in its inode map".to_string(),
            ));
        }
        let mut block = vec![0u8; self.block_size];
        self.read_addr(addr, &mut block)?;
        let entries = decode_imap_block(&block, lbn, self.ifile.tables.imap.per_block())?;
        self.ifile.tables.imap.adopt(index, entries);
        Ok(())
    }

    /// Runs `visit` on every map block, last first, with the number of its
    /// first entry, reading those not in memory; `visit` may change the
    /// free-list links (returning whether it did), not the addresses.
    fn imap_relink_each_block(&mut self, mut visit: impl FnMut(u64, &mut [ImapEntry]) -> bool) -> Result<()> {
        let per = self.ifile.tables.imap.per_block() as u64;
        for index in (0..self.ifile.tables.imap.nblocks()).rev() {
            self.imap_block_ready(index)?;
            self.ifile.tables.relink_imap_block(index, |entries| visit(index * per, entries))?;
        }
        Ok(())
    }

    /// Runs `visit` on every map entry in order, reading the blocks not in
    /// memory.
    pub(super) fn imap_scan(&mut self, mut visit: impl FnMut(Ino, &ImapEntry)) -> Result<()> {
        let per = self.ifile.tables.imap.per_block() as u64;
        for index in 0..self.ifile.tables.imap.nblocks() {
            self.imap_block_ready(index)?;
            let block = self.ifile.tables.imap.block(index).ok_or_else(|| not_loaded(index * per))?;
            for (k, entry) in block.iter().enumerate() {
                visit(index * per + k as u64, entry);
            }
        }
        Ok(())
    }

    /// Threads every free inode number onto the free list, lowest first
    /// (after roll-forward, or when the list is not sound).
    pub(super) fn rebuild_free_list(&mut self) -> Result<()> {
        let mut head = 0u32;
        self.imap_relink_each_block(|first, entries| {
            let mut changed = false;
            for (at, entry) in entries.iter_mut().enumerate().rev() {
                let ino = first + at as u64;
                if ino <= IFILE_INO || entry.daddr.is_some() {
                    continue;
                }
                if entry.next_free != head {
                    entry.next_free = head;
                    changed = true;
                }
                head = ino as u32;
            }
            changed
        })?;
        self.ifile.tables.set_free_head(head as Ino);
        Ok(())
    }

    /// Walks the free list: each number on it exists, is no reserved one,
    /// has no address and appears once. Says which one fails.
    pub(super) fn check_free_list(&mut self) -> Result<std::result::Result<(), String>> {
        let (head, ninodes) = (self.ifile.tables.cleaner.free_head, self.ifile.tables.imap.ninodes());
        walk_free_list(head, ninodes, |ino| Ok(self.imap_entry(ino)?.map_or(Slot::Beyond, Slot::Entry)))
    }
}

/// Walks the free list from `head` through `entry`, which gives a number's
/// entry as far as it knows (a block not resident ends the walk there,
/// unchecked): each number on it exists, is no reserved one, has no
/// address and appears once. Says which one fails.
pub(super) fn walk_free_list(
    head: Ino,
    ninodes: u64,
    mut entry: impl FnMut(Ino) -> Result<Slot>,
) -> Result<std::result::Result<(), String>> {
    let mut seen = vec![0u64; ninodes.div_ceil(64) as usize];
    let mut ino = head;
    while ino != 0 {
        let entry = match entry(ino)? {
            Slot::Entry(entry) => entry,
            Slot::NotResident(_) => break,
            Slot::Beyond => return Ok(Err(format!("free inode {ino} is past the map"))),
        };
        let (word, bit) = ((ino / 64) as usize, 1u64 << (ino % 64));
        if ino <= IFILE_INO || entry.daddr.is_some() || seen[word] & bit != 0 {
            return Ok(Err(format!(
                "inode {ino} on the free list is reserved, has an address or came twice"
            )));
        }
        seen[word] |= bit;
        ino = entry.next_free as Ino;
    }
    Ok(Ok(()))
}

/// Decodes the map entries of ifile block `lbn`, checking its trailer.
pub(super) fn decode_imap_block(block: &[u8], lbn: u64, per_block: usize) -> Result<Box<[ImapEntry]>> {
    check_ifile_block(block, lbn)?;
    (0..per_block)
        .map(|j| {
            ImapEntry::decode(block, j * IMAP_BYTES).ok_or_else(|| {
                Error::corrupt_at("ifile", Location::FileBlock { ino: IFILE_INO, lbn }, "short".to_string())
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(daddr: u64) -> ImapEntry {
        ImapEntry { version: 1, next_free: 0, daddr: Daddr::new(daddr) }
    }

    #[test]
    fn blocks_past_the_budget_go_but_held_ones_stay() {
        let per = 4;
        let block_bytes = (per * std::mem::size_of::<ImapEntry>()) as u64;
        let mut map = Imap::new(per, 2 * block_bytes);
        for k in 0..6u64 {
            map.load(vec![entry(100 + k); per].into_boxed_slice());
        }
        assert_eq!(map.ninodes(), 24);
        assert_eq!(map.in_use(), 24);
        assert_eq!(map.resident().0, 2, "only the budget's two blocks stay");
        assert!(matches!(map.slot(1), Slot::NotResident(0)));
        assert_eq!(map.slot(24), Slot::Beyond);
        // A changed block is held however many are read after it.
        map.adopt(0, vec![entry(7); per].into_boxed_slice());
        map.set(1, ImapEntry::default()).expect("resident");
        assert_eq!(map.in_use(), 23);
        for k in 1..6u64 {
            map.adopt(k, vec![entry(100 + k); per].into_boxed_slice());
        }
        assert_eq!(map.slot(1), Slot::Entry(ImapEntry::default()));
        assert!(map.resident().0 <= 3);
        // Written by an ifile write, it stays until the next one begins.
        map.writing([0]);
        map.adopt(3, vec![entry(9); per].into_boxed_slice());
        map.adopt(4, vec![entry(9); per].into_boxed_slice());
        assert!(matches!(map.slot(1), Slot::Entry(_)));
        map.writing([]);
        for k in 1..6u64 {
            map.adopt(k, vec![entry(9); per].into_boxed_slice());
            let _ = map.slot(k * per as u64);
        }
        assert!(matches!(map.slot(1), Slot::NotResident(0)), "let go once written and flushed");
        assert!(map.set(1, ImapEntry::default()).is_err(), "a block not in memory cannot be changed");
    }

    #[test]
    fn a_grown_block_is_resident_and_held() {
        let mut map = Imap::new(4, 1);
        assert_eq!(map.grow(0), 2, "0 and 1 are reserved");
        assert_eq!(map.grow(2), 4);
        assert_eq!(map.ninodes(), 8);
        assert_eq!(map.resident().0, 2);
        assert_eq!(map.slot(2), Slot::Entry(ImapEntry { next_free: 3, ..ImapEntry::default() }));
        assert_eq!(map.slot(3), Slot::Entry(ImapEntry::default()), "the first block's list ends");
        assert_eq!(map.slot(4), Slot::Entry(ImapEntry { next_free: 5, ..ImapEntry::default() }));
        assert_eq!(map.slot(7), Slot::Entry(ImapEntry { next_free: 2, ..ImapEntry::default() }));
    }
}
