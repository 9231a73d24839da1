//! `MemStorage`: a storage manager that keeps inodes and blocks in memory.
//!
//! It exists so that the namespace can be tested without a layout (unit and
//! model tests). Blocks are named by (inode, logical block number) exactly as
//! the namespace names them; there are no disk addresses. It honours ENOSPC
//! against a configurable block limit, keeps `reserve_blocks` promises, and
//! records every transaction and hint so tests can check them.

use std::collections::{BTreeMap, HashMap};

use super::{Hint, StatFs, StorageManager, Ticket, TxLog, TxSpec, XATTR_LBN};
use crate::error::errno;
use crate::format::blockno::Geometry;
use crate::format::dirent::new_dir_block;
use crate::format::inode::{kind, Inode, InodeAttr};
use crate::format::{now_ns, Daddr, Ino, Lbn, NAME_MAX, ROOT_INO};
use crate::Result;

/// Inode numbers `MemStorage` reports as its capacity.
const TOTAL_INODES: u64 = 1 << 32;

/// An in-memory [`StorageManager`].
///
/// Invariants: every key of `blocks` names an inode in `inodes`;
/// `blocks.len() + reserved <= limit` when a limit is set.
#[derive(Debug)]
pub struct MemStorage {
    block_size: u32,
    max_file_size: u64,
    block_limit: Option<u64>,
    blocks_per_tx: Option<u64>,
    inodes: HashMap<Ino, Inode>,
    blocks: BTreeMap<(Ino, Lbn), Vec<u8>>,
    reserved: u64,
    free_inos: Vec<Ino>,
    next_ino: Ino,
    generations: HashMap<Ino, u32>,
    tx: TxLog,
    /// The hints of every transaction so far, for tests.
    hints: Vec<Hint>,
    block_reads: u64,
    unmounted: bool,
}

impl MemStorage {
    /// An empty file system of `block_size`-byte blocks (a multiple of 512)
    /// holding only the root directory, with no block limit.
    pub fn new(block_size: u32) -> MemStorage {
        let geometry = Geometry::new(block_size);
        let mut storage = MemStorage {
            block_size,
            max_file_size: geometry.max_blocks().saturating_mul(block_size as u64),
            block_limit: None,
            blocks_per_tx: None,
            inodes: HashMap::new(),
            blocks: BTreeMap::new(),
            reserved: 0,
            free_inos: Vec::new(),
            next_ino: ROOT_INO + 1,
            generations: HashMap::new(),
            tx: TxLog::recording(),
            hints: Vec::new(),
            block_reads: 0,
            unmounted: false,
        };
        let now = now_ns();
        let attr = InodeAttr {
            mode: kind::DIR | 0o755,
            nlink: 2,
            size: block_size as u64,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            ..InodeAttr::default()
        };
        storage.inodes.insert(ROOT_INO, Inode { ino: ROOT_INO, generation: 1, attr, ..Inode::default() });
        storage.blocks.insert((ROOT_INO, 0), new_dir_block(block_size as usize, ROOT_INO, ROOT_INO));
        storage.recount(ROOT_INO);
        storage
    }

    /// Limits the blocks (data and xattr) that may be stored; `None` for no limit.
    pub fn set_block_limit(&mut self, limit: Option<u64>) {
        self.block_limit = limit;
    }

    /// Bounds the blocks one transaction should allocate, free or move
    /// (`StorageManager::blocks_per_tx`), as a journal does.
    pub fn set_blocks_per_tx(&mut self, blocks: Option<u64>) {
        self.blocks_per_tx = blocks;
    }

    /// Lowers the largest file size (to test EFBIG without huge offsets).
    pub fn set_max_file_size(&mut self, bytes: u64) {
        self.max_file_size = bytes;
    }

    /// Blocks stored now.
    pub fn blocks_used(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Inodes allocated now (the root included).
    pub fn inodes_used(&self) -> u64 {
        self.inodes.len() as u64
    }

    /// Transactions begun and committed so far (nested ones included).
    pub fn transaction_counts(&self) -> (u64, u64) {
        self.tx.counts()
    }

    /// Transactions open now (0 between calls of the namespace).
    pub fn transaction_depth(&self) -> u32 {
        self.tx.depth()
    }

    /// Every hint reported so far, in order; `clear_hints` starts over.
    pub fn hints(&self) -> &[Hint] {
        &self.hints
    }

    /// Forgets the hints reported so far.
    pub fn clear_hints(&mut self) {
        self.hints.clear();
    }

    /// Records a hint; outside a transaction it is a bug of the caller.
    fn record(&mut self, hint: Hint) -> Result<()> {
        if !self.tx.is_open() {
            return Err(errno(libc::EINVAL, "a hint outside a transaction"));
        }
        self.tx.hint(hint);
        self.hints.push(hint);
        Ok(())
    }

    /// `read_block` calls so far.
    pub fn block_reads(&self) -> u64 {
        self.block_reads
    }

    /// Whether `unmount` has been called.
    pub fn is_unmounted(&self) -> bool {
        self.unmounted
    }

    /// Whether block `lbn` of `ino` is stored (not a hole).
    pub fn has_block(&self, ino: Ino, lbn: Lbn) -> bool {
        self.blocks.contains_key(&(ino, lbn))
    }

    /// The stored bytes of a block, to let tests damage them.
    pub fn block_mut(&mut self, ino: Ino, lbn: Lbn) -> Option<&mut [u8]> {
        self.blocks.get_mut(&(ino, lbn)).map(|b| b.as_mut_slice())
    }

    fn free_now(&self) -> u64 {
        match self.block_limit {
            Some(limit) => limit.saturating_sub(self.blocks.len() as u64 + self.reserved),
            None => u64::MAX / 2,
        }
    }

    /// Sets the inode's `blocks` (512-byte units) and xattr pointer from what is stored.
    fn recount(&mut self, ino: Ino) {
        let count = self.blocks.range((ino, Lbn::MIN)..=(ino, Lbn::MAX)).count() as u64;
        let has_xattr = self.blocks.contains_key(&(ino, XATTR_LBN));
        if let Some(inode) = self.inodes.get_mut(&ino) {
            inode.blocks = count * (self.block_size as u64 / 512);
            // A fake but nonzero address, so that "has an xattr block" reads as it would on disk.
            inode.xattr = Daddr::new(u64::from(has_xattr));
        }
    }

    fn check_lbn(&self, ino: Ino, lbn: Lbn) -> Result<()> {
        if !self.inodes.contains_key(&ino) {
            return Err(errno(libc::ENOENT, "no such inode"));
        }
        if lbn < 0 && lbn != XATTR_LBN {
            return Err(errno(libc::EINVAL, "the namespace names no indirect block"));
        }
        if lbn >= 0 && (lbn as u64).saturating_mul(self.block_size as u64) >= self.max_file_size {
            return Err(errno(libc::EFBIG, "block past the largest file"));
        }
        Ok(())
    }
}

impl StorageManager for MemStorage {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn max_file_size(&self) -> u64 {
        self.max_file_size
    }

    fn blocks_per_tx(&self) -> Option<u64> {
        self.blocks_per_tx
    }

    fn valloc(&mut self, _parent: Ino, _mode: u32) -> Result<Inode> {
        let ino = match self.free_inos.pop() {
            Some(ino) => ino,
            None if self.next_ino < TOTAL_INODES => {
                self.next_ino += 1;
                self.next_ino - 1
            }
            None => return Err(errno(libc::ENOSPC, "no free inode")),
        };
        let generation = self.generations.entry(ino).or_insert(0);
        *generation += 1;
        let inode = Inode { ino, generation: *generation, ..Inode::default() };
        self.inodes.insert(ino, inode);
        Ok(inode)
    }

    fn vfree(&mut self, ino: Ino) -> Result<()> {
        if self.blocks.range((ino, Lbn::MIN)..=(ino, Lbn::MAX)).next().is_some() {
            return Err(errno(libc::EBUSY, "vfree of an inode that still has blocks"));
        }
        if ino == ROOT_INO || self.inodes.remove(&ino).is_none() {
            return Err(errno(libc::EINVAL, "vfree of an inode not allocated"));
        }
        self.free_inos.push(ino);
        Ok(())
    }

    fn vget(&mut self, ino: Ino) -> Result<Inode> {
        self.inodes.get(&ino).copied().ok_or(errno(libc::ENOENT, "no such inode"))
    }

    fn update(&mut self, ino: Ino, attr: &InodeAttr) -> Result<()> {
        let inode = self.inodes.get_mut(&ino).ok_or(errno(libc::ENOENT, "no such inode"))?;
        inode.attr = *attr;
        Ok(())
    }

    fn read_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        self.check_lbn(ino, lbn)?;
        if buf.len() != self.block_size as usize {
            return Err(errno(libc::EINVAL, "read_block buffer is not one block"));
        }
        self.block_reads += 1;
        match self.blocks.get(&(ino, lbn)) {
            Some(block) => buf.copy_from_slice(block),
            None => buf.fill(0),
        }
        Ok(())
    }

    fn write_block(&mut self, ino: Ino, lbn: Lbn, offset: usize, data: &[u8]) -> Result<()> {
        self.check_lbn(ino, lbn)?;
        let bs = self.block_size as usize;
        if offset.checked_add(data.len()).is_none_or(|end| end > bs) {
            return Err(errno(libc::EINVAL, "write_block past the end of the block"));
        }
        self.tx.dirtied(ino, lbn);
        // A reservation covers the next writes, new blocks or not (in a log
        // every write takes a new block).
        let reserved = self.reserved > 0;
        self.reserved = self.reserved.saturating_sub(1);
        if !self.blocks.contains_key(&(ino, lbn)) {
            if !reserved && self.free_now() == 0 {
                return Err(errno(libc::ENOSPC, "block limit reached"));
            }
            self.blocks.insert((ino, lbn), vec![0; bs]);
            self.recount(ino);
            if self.tx.is_open() {
                self.record(Hint::BlocksAllocated { ino, lbn })?;
            }
        }
        if let Some(block) = self.blocks.get_mut(&(ino, lbn)) {
            block[offset..offset + data.len()].copy_from_slice(data);
        }
        Ok(())
    }

    fn next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        if !self.inodes.contains_key(&ino) {
            return Err(errno(libc::ENOENT, "no such inode"));
        }
        let start = Lbn::try_from(lbn).unwrap_or(Lbn::MAX);
        Ok(self.blocks.range((ino, start)..=(ino, Lbn::MAX)).next().map(|(&(_, l), _)| l as u64))
    }

    fn free_blocks(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        if !self.inodes.contains_key(&ino) {
            return Err(errno(libc::ENOENT, "no such inode"));
        }
        if first > last {
            return Ok(());
        }
        let range =
            (ino, Lbn::try_from(first).unwrap_or(Lbn::MAX))..=(ino, Lbn::try_from(last).unwrap_or(Lbn::MAX));
        let gone: Vec<_> = self.blocks.range(range).map(|(&k, _)| k).collect();
        let freed = !gone.is_empty();
        for key in gone {
            self.blocks.remove(&key);
        }
        self.recount(ino);
        if freed && self.tx.is_open() {
            self.record(Hint::BlocksFreed { ino, first, last })?;
        }
        Ok(())
    }

    fn move_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
        let size = self.vget(ino)?.attr.size;
        if !size.is_multiple_of(self.block_size as u64) {
            return Err(errno(libc::EINVAL, "blocks move only in a file of whole blocks"));
        }
        if from == to || count == 0 {
            return Ok(());
        }
        let end = from.max(to).checked_add(count).ok_or(errno(libc::EFBIG, "block past the largest file"))?;
        self.check_lbn(ino, Lbn::try_from(end - 1).unwrap_or(Lbn::MAX))?;
        let taken = |at: u64| (ino, at as Lbn)..(ino, (at + count) as Lbn);
        let sources: Vec<(Lbn, Vec<u8>)> =
            self.blocks.range(taken(from)).map(|(&(_, l), b)| (l, b.clone())).collect();
        let landed: Vec<(Ino, Lbn)> = self.blocks.range(taken(to)).map(|(&k, _)| k).collect();
        for key in sources.iter().map(|&(l, _)| (ino, l)).chain(landed.iter().copied()) {
            self.blocks.remove(&key);
        }
        if !landed.is_empty() && self.tx.is_open() {
            self.record(Hint::BlocksFreed { ino, first: to, last: to + count - 1 })?;
        }
        for (lbn, block) in sources {
            let target = lbn - from as Lbn + to as Lbn;
            self.blocks.insert((ino, target), block);
            if self.tx.is_open() {
                self.record(Hint::BlocksAllocated { ino, lbn: target })?;
            }
        }
        self.recount(ino);
        Ok(())
    }

    fn free_xattr(&mut self, ino: Ino) -> Result<()> {
        self.blocks.remove(&(ino, XATTR_LBN));
        self.recount(ino);
        Ok(())
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        if let Some(&(ino, lbn)) = self.blocks.keys().find(|(ino, _)| !self.inodes.contains_key(ino)) {
            return Err(format!("block {lbn} of inode {ino}, which is not allocated"));
        }
        match self.block_limit {
            Some(limit) if self.blocks.len() as u64 + self.reserved > limit => Err(format!(
                "{} blocks stored and {} reserved past the limit of {limit}",
                self.blocks.len(),
                self.reserved
            )),
            _ => Ok(()),
        }
    }

    fn reserve_blocks(&mut self, blocks: u64) -> Result<()> {
        if blocks > self.free_now() {
            return Err(errno(libc::ENOSPC, "cannot reserve that many blocks"));
        }
        self.reserved += blocks;
        Ok(())
    }

    /// Nothing: a reservation here lasts until writes use it, across
    /// commits, so the first step's covers them all.
    fn reserve_promised_blocks(&mut self, _blocks: u64) -> Result<()> {
        Ok(())
    }

    fn begin(&mut self, spec: TxSpec) -> Result<()> {
        if self.unmounted {
            return Err(errno(libc::EIO, "file system is unmounted"));
        }
        self.tx.begin(spec);
        Ok(())
    }

    fn tx_over_bound(&self) -> Option<crate::storage::OverBound> {
        self.tx.over_bound()
    }

    fn hint(&mut self, hint: Hint) -> Result<()> {
        self.record(hint)
    }

    /// Memory promises no durability: nothing to wait for.
    fn commit(&mut self) -> Result<Ticket> {
        self.tx.commit().map(|_| Ticket::none())
    }

    fn start_fsync(&mut self, ino: Ino, _datasync: bool) -> Result<Ticket> {
        self.vget(ino).map(|_| Ticket::none())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn tick(&mut self) -> Result<()> {
        Ok(())
    }

    fn statfs(&mut self) -> Result<StatFs> {
        let used = self.blocks.len() as u64;
        Ok(StatFs {
            block_size: self.block_size,
            total_blocks: self.block_limit.unwrap_or(used + self.free_now()),
            free_blocks: self.free_now(),
            total_inodes: TOTAL_INODES,
            free_inodes: TOTAL_INODES - self.inodes.len() as u64,
            name_max: NAME_MAX as u32,
        })
    }

    fn unmount(&mut self) -> Result<()> {
        self.unmounted = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_past_the_limit_fail_with_enospc_unless_reserved() {
        let mut s = MemStorage::new(512);
        let ino = s.valloc(ROOT_INO, kind::REG).expect("valloc").ino;
        s.set_block_limit(Some(s.blocks_used() + 2));
        s.write_block(ino, 0, 0, b"a").expect("first");
        s.write_block(ino, 5, 0, b"b").expect("second");
        assert_eq!(s.write_block(ino, 6, 0, b"c").map_err(|e| e.errno()), Err(libc::ENOSPC));
        s.write_block(ino, 5, 1, b"overwrite").expect("an existing block needs no space");
        assert_eq!(s.next_data(ino, 1).expect("next"), Some(5));
        assert_eq!(s.vget(ino).expect("vget").blocks, 2);
        s.free_blocks(ino, 0, 0).expect("free");
        assert_eq!(s.reserve_blocks(2).map_err(|e| e.errno()), Err(libc::ENOSPC));
        s.reserve_blocks(1).expect("reserve");
        s.write_block(ino, 9, 0, b"d").expect("reserved block");
        assert_eq!(s.vfree(ino).map_err(|e| e.errno()), Err(libc::EBUSY));
        s.free_blocks(ino, 0, u64::MAX).expect("free all");
        s.vfree(ino).expect("vfree");
        let again = s.valloc(ROOT_INO, kind::REG).expect("valloc");
        assert_eq!((again.ino, again.generation), (ino, 2));
    }

    #[test]
    fn part_of_a_block_is_its_bytes_and_never_past_its_end() {
        let mut s = MemStorage::new(512);
        let ino = s.valloc(ROOT_INO, kind::REG).expect("valloc").ino;
        s.write_block(ino, 2, 100, b"hello").expect("write");
        let mut part = [0u8; 8];
        s.read_block_part(ino, 2, 98, &mut part).expect("part");
        assert_eq!(&part, b"\0\0hello\0");
        assert_eq!(s.read_block_part(ino, 2, 505, &mut part).map_err(|e| e.errno()), Err(libc::EINVAL));
    }
}
