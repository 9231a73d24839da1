//! FFS as a [`StorageManager`]: the Table 4 operations of the 1993 paper
//! (§4.1) over the cylinder-group layout.

use super::blocks::NewContents;
use super::fs::Ffs;
use crate::bmap;
use crate::cache::block_of;
use crate::error::errno;
use crate::format::blockno::XATTR_LBN;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, Lbn, NAME_MAX};
use crate::storage::{Fetches, Hint, StatFs, StorageManager, Ticket, TxSpec};
use crate::Result;
use disk::AlignedBytes;

impl Ffs {
    /// The whole blocks of file data one new file could still be given,
    /// as `ext4`'s `f_bavail` promises: its data blocks must fit in what
    /// users may have above the `minfree` reserve (4.4BSD `freespace`),
    /// and, with the indirect blocks a file of that many blocks needs,
    /// in the wholly free blocks (a fragment left in a partly used block
    /// holds no block). Space promised by `reserve_blocks` is taken from
    /// both.
    pub(super) fn available_blocks(&self) -> u64 {
        let fpb = self.frags_per_block();
        let reserved = self.reserved_frags;
        // Frees not yet allocatable are given to the allocation that needs
        // them (`frees`).
        let pending = self.pending_free_frags();
        let users = (self.alloc.free_space(self.sb.policy.minfree) + pending as i64 - reserved as i64).max(0)
            as u64
            / fpb;
        let whole = (self.alloc.totals().free_blocks + self.pending_whole_blocks())
            .saturating_sub(reserved.div_ceil(fpb));
        let nindir = self.tree.nindir;
        let fits = |n: u64| n.saturating_add(indirect_blocks(n, nindir)) <= whole;
        // Each indirect block serves thousands of data blocks, so the
        // answer lies a few steps below the first guess.
        let mut n = users.min(whole);
        n = n.saturating_sub((n + indirect_blocks(n, nindir)).saturating_sub(whole));
        while n > 0 && !fits(n) {
            n -= 1;
        }
        while n < users.min(whole) && fits(n + 1) {
            n += 1;
        }
        n
    }
}

/// Indirect blocks of every level a file of `blocks` data blocks, from
/// block 0, needs when an indirect block holds `nindir` pointers.
fn indirect_blocks(blocks: u64, nindir: u64) -> u64 {
    let nindir = nindir.max(1);
    let mut left = blocks.saturating_sub(crate::format::blockno::NDADDR as u64);
    if left == 0 {
        return 0;
    }
    let single = left.min(nindir);
    left -= single;
    let mut count = 1;
    if left == 0 {
        return count;
    }
    let span = nindir.saturating_mul(nindir);
    let double = left.min(span);
    left -= double;
    count += 1 + double.div_ceil(nindir);
    if left > 0 {
        count += 1 + left.div_ceil(span) + left.div_ceil(nindir);
    }
    count
}

impl StorageManager for Ffs {
    fn memory(&self) -> Vec<crate::memory::MemoryUse> {
        use crate::memory::{btree_set_bytes, hash_map_bytes, hash_set_bytes, vec_bytes, MemoryUse};
        let mut parts = self.cache.memory();
        parts.push(self.inodes.memory());
        parts.push(self.alloc.memory());
        parts.push(self.clusters.memory());
        parts.push(MemoryUse::new(
            "fresh inode blocks",
            self.fresh_inode_blocks.len(),
            btree_set_bytes(&self.fresh_inode_blocks),
        ));
        parts.push(MemoryUse::new(
            "pending frees",
            self.pending_frees.len(),
            vec_bytes(&self.pending_frees, self.pending_frees.capacity())
                + hash_set_bytes(&self.pending_inodes),
        ));
        parts.push(MemoryUse::new(
            "unconfirmed sizes",
            self.size_before.len(),
            hash_map_bytes(&self.size_before),
        ));
        parts
    }

    fn block_size(&self) -> u32 {
        self.sb.geometry.block_size
    }

    fn now(&self) -> crate::format::TimeNs {
        self.options.clock.calendar_ns()
    }

    fn max_file_size(&self) -> u64 {
        self.tree.max_blocks().saturating_mul(self.block_size() as u64).min(i64::MAX as u64)
    }

    fn blocks_per_tx(&self) -> Option<u64> {
        self.mode().blocks_per_tx()
    }

    fn valloc(&mut self, parent: Ino, mode: u32) -> Result<Inode> {
        self.check_mounted()?;
        self.alloc_inode(parent, mode)
    }

    fn vfree(&mut self, ino: Ino) -> Result<()> {
        self.check_mounted()?;
        self.size_before.remove(&ino);
        self.clusters.forget(ino);
        self.free_inode(ino)
    }

    fn vget(&mut self, ino: Ino) -> Result<Inode> {
        if self.is_free_pending(ino) {
            // Freed, its slot or bit not yet cleared on the disk.
            return Err(errno(libc::ENOENT, "inode is not allocated"));
        }
        Ok(*self.cached_inode(ino)?)
    }

    fn peek_inode(&self, ino: Ino) -> Option<Inode> {
        if self.is_free_pending(ino) {
            return None;
        }
        // A stat of a file whose clean inode the cache dropped would
        // otherwise take the file system exclusively to decode it again.
        self.inodes.get(ino).copied().or_else(|| self.peek_inode_in_block(ino))
    }

    fn peek_block(&self, ino: Ino, lbn: Lbn) -> Option<&[u8]> {
        self.cache.peek((ino, lbn))
    }

    /// Replaces the attributes; a new size makes another block the tail,
    /// or none, and the blocks concerned are resized (`blocks.rs`).
    fn update(&mut self, ino: Ino, attr: &InodeAttr) -> Result<()> {
        self.check_mounted()?;
        self.size_before.remove(&ino);
        let old = self.cached_inode(ino)?.attr;
        let before = if old.size != attr.size { self.tail_of(ino, old.size)? } else { None };
        self.mark_inode_dirty(ino)?;
        self.cached_inode(ino)?.attr = *attr;
        if old.size != attr.size {
            if let Err(e) = self.settle_tail(ino, before, !attr.is_reg()) {
                // The tail could not grow (ENOSPC): the size stays.
                self.cached_inode(ino)?.attr = old;
                return Err(e);
            }
        }
        if attr.size < old.size {
            // A shorter tail gave fragments back.
            self.after_free(ino)?;
        }
        Ok(())
    }

    fn read_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        self.cached_inode(ino)?;
        self.read_file_block(ino, lbn, buf)
    }

    fn read_block_part(&mut self, ino: Ino, lbn: Lbn, offset: usize, buf: &mut [u8]) -> Result<()> {
        self.cached_inode(ino)?;
        let bs = self.block_size();
        if let Some(block) = self.cache.get_held((ino, lbn)) {
            return crate::storage::copy_part(block, bs, offset, buf);
        }
        let mut block = vec![0u8; bs];
        self.read_file_block(ino, lbn, &mut block)?;
        crate::storage::copy_part(&block, bs, offset, buf)
    }

    fn read_blocks(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<()> {
        self.read_file_blocks(ino, first, buf, None)
    }

    fn read_blocks_later(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<Option<Fetches>> {
        let mut later = Fetches::new(std::sync::Arc::new(self.queue.reader()), self.block_size());
        self.read_file_blocks(ino, first, buf, Some(&mut later))?;
        Ok((!later.is_empty()).then_some(later))
    }

    /// A block read alone is cached, as [`Ffs::read_file_blocks`] caches
    /// it: if no write since the plan reached its address (a block
    /// rewritten in place is written there) and the file's block still
    /// lies there (truncated, moved by realloc or given to the file again,
    /// it would not, or would have been written).
    fn adopt_fetched(&mut self, ino: Ino, fetches: &Fetches, buf: &[u8]) {
        for (fetch, bytes) in fetches.unwritten_single_blocks(buf) {
            let key = (ino, fetch.lbn);
            // The block still takes as many bytes as were read: a tail
            // that grew since is not cached as the fragments it was.
            let same_size = matches!(self.block_bytes(ino, fetch.lbn), Ok(n) if n == fetch.len);
            if !self.cache.contains(key)
                && same_size
                && matches!(bmap::pointer(self, ino, fetch.lbn), Ok(a) if a == fetch.addr)
            {
                // A tail keeps only its fragments' bytes: the rest are zeros.
                self.cache.insert(key, block_of(&bytes[..fetch.len.min(bytes.len())]), false);
            }
        }
    }

    fn write_block(&mut self, ino: Ino, lbn: Lbn, offset: usize, data: &[u8]) -> Result<()> {
        self.check_mounted()?;
        // A write that covers the whole block replaces it without reading
        // it first, as 4.4BSD's ffs_write asks ffs_balloc to clear (read)
        // the buffer only for a write shorter than a block. Reading it cost
        // a 4 MB overwrite, larger than the cache, a disk read per block.
        let filled = offset.saturating_add(data.len()) == self.block_size();
        let contents = if offset == 0 && filled {
            NewContents::Whole(AlignedBytes::copy_of(data))
        } else {
            NewContents::Part { offset, data }
        };
        self.write_file_block(ino, lbn, contents)?;
        if filled {
            self.after_filling(ino, lbn)?;
        }
        self.maybe_write()
    }

    fn writes_part_unread(&mut self, ino: Ino, lbn: Lbn, offset: usize, len: usize) -> Result<bool> {
        self.check_mounted()?;
        let inode = *self.cached_inode(ino)?;
        self.may_write_unread(ino, lbn, &inode, offset, len)
    }

    fn write_whole_block(&mut self, ino: Ino, lbn: Lbn, block: AlignedBytes) -> Result<()> {
        self.check_mounted()?;
        self.write_file_block(ino, lbn, NewContents::Whole(block))?;
        self.after_filling(ino, lbn)?;
        self.maybe_write()
    }

    fn next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        self.cached_inode(ino)?;
        bmap::next_data(self, ino, lbn, self.tree.max_blocks())
    }

    fn free_blocks(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        self.check_mounted()?;
        self.clusters.forget(ino);
        self.free_range(ino, first, last)?;
        self.after_free(ino)
    }

    fn move_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
        self.check_mounted()?;
        self.move_file_blocks(ino, from, to, count)?;
        self.after_free(ino)?;
        self.maybe_write()
    }

    fn free_xattr(&mut self, ino: Ino) -> Result<()> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        bmap::free_one(self, ino, XATTR_LBN)?;
        self.after_free(ino)
    }

    /// A file whose last name's removal is not durable yet is freed, whole,
    /// once it is (soft updates' background delete,
    /// `FreeWhen::NamesGone`); anything else at once.
    fn free_file(&mut self, ino: Ino) -> Result<()> {
        self.check_mounted()?;
        let is_dir = self.cached_inode(ino)?.attr.is_dir();
        if self.frees_when_names_gone(ino, is_dir) {
            return self.free_file_later(ino);
        }
        self.free_blocks(ino, 0, u64::MAX)?;
        self.free_xattr(ino)?;
        self.vfree(ino)
    }

    /// Promises space for `blocks` whole blocks of file data, out of what
    /// users (not the `minfree` reserve) may have, with the indirect
    /// blocks they may need: no more than `statfs` reports available
    /// ([`Ffs::available_blocks`]).
    fn reserve_blocks(&mut self, blocks: u64) -> Result<()> {
        if blocks > self.available_blocks() {
            return Err(errno(libc::ENOSPC, "file system full"));
        }
        self.reserved_frags += blocks.saturating_mul(self.frags_per_block());
        Ok(())
    }

    /// Unchecked: the check would refuse the last steps of a call that
    /// fits. `statfs` sets aside the indirect blocks of one file from its
    /// first block, out of the `minfree` reserve where that is kept; the
    /// indirect blocks of the earlier steps came out of what users may
    /// have instead, as nothing was promised across the commit between.
    fn reserve_promised_blocks(&mut self, blocks: u64) -> Result<()> {
        self.reserved_frags += blocks.saturating_mul(self.frags_per_block());
        Ok(())
    }

    /// A block that holds data is rewritten where it lies (a tail within
    /// the file's size holds the fragments the rewrite touches).
    fn rewrites_take_space(&self) -> bool {
        false
    }

    fn dir_chunk_held(&mut self, dir: Ino, offset: u64) -> bool {
        let bs = self.block_size() as u64;
        let key = (dir, (offset / bs) as crate::format::Lbn);
        self.mode().dir_chunk_held(key, (offset % bs) as usize / crate::format::dirent::DIRBLKSIZ)
    }

    fn dir_chunk_keeping(&mut self, dir: Ino, name: &[u8], ino: Ino) -> Option<u64> {
        let bs = self.block_size() as u64;
        let ((_, lbn), chunk) = self.mode().dir_chunk_keeping(dir, name, ino)?;
        Some(lbn as u64 * bs + (chunk * crate::format::dirent::DIRBLKSIZ) as u64)
    }

    fn begin(&mut self, spec: TxSpec) -> Result<()> {
        self.check_mounted()?;
        // After a failed write the mount is read-only until mounted again:
        // changes made only in memory could never be written (and would
        // pile up there), and the image keeps what was synced before.
        self.queue.failure()?;
        if !self.tx.is_open() {
            self.mode().tx_beginning(self, spec.kind)?;
        }
        self.tx.begin(spec);
        Ok(())
    }

    fn tx_over_bound(&self) -> Option<crate::storage::OverBound> {
        self.tx.over_bound()
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        self.cache.check_invariants().map_err(|e| format!("buffer cache: {e}"))?;
        self.alloc.check_invariants()
    }

    fn hint(&mut self, hint: Hint) -> Result<()> {
        self.on_hint(hint)
    }

    /// At the outermost commit, what `reserve_blocks` promised and the
    /// operation did not use (a block it found already there) is free
    /// again.
    /// The integrity mode says what the caller waits for.
    fn commit(&mut self) -> Result<Ticket> {
        if self.tx.commit()?.is_none() {
            return Ok(Ticket::none());
        }
        self.reserved_frags = 0;
        let restored = self.restore_unconfirmed_sizes();
        let ticket = self.mode().commit(self);
        restored?;
        self.maybe_write()?;
        ticket
    }

    fn start_fsync(&mut self, ino: Ino, _datasync: bool) -> Result<Ticket> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        self.fsync_file(ino)
    }

    fn sync(&mut self) -> Result<()> {
        self.check_mounted()?;
        debug_assert_eq!(self.check_invariants(), Ok(()));
        self.sync_all()
    }

    fn tick(&mut self) -> Result<()> {
        if self.unmounted {
            return Ok(());
        }
        if let Err(e) = self.queue.failure() {
            // Read-only since (`begin`): said once, not every second.
            let first = !self.failure_reported;
            self.failure_reported = true;
            return if first { Err(e) } else { Ok(()) };
        }
        self.mode().tick(self)?;
        self.release_durable_frees()?;
        self.leak_scan_step()?;
        let since = self.options.clock.now().saturating_sub(self.last_sync);
        if since >= self.options.sync_interval && self.has_changes() {
            return self.sync_all();
        }
        Ok(())
    }

    fn write_behind_due(&self) -> bool {
        self.write_behind_is_due()
    }

    fn write_behind(&mut self) -> Result<()> {
        if !self.write_behind_is_due() {
            return Ok(());
        }
        self.write_delayed()
    }

    /// Free blocks are what one new file could be given, as `fallocate`
    /// and `write` give it: see [`Ffs::available_blocks`]. The minfree
    /// reserve is in neither count, since no caller's writes may use it
    /// (the storage manager is not told who the caller is).
    fn statfs(&mut self) -> Result<StatFs> {
        let geo = self.sb.geometry;
        let fpb = self.frags_per_block() as i64;
        let total = self.alloc.data_frags() as i64 * (100 - self.sb.policy.minfree as i64) / 100 / fpb;
        let free = self.available_blocks();
        let totals = self.alloc.totals();
        let inodes = geo.ninodes().saturating_sub(2);
        Ok(StatFs {
            block_size: geo.block_size,
            total_blocks: total.max(0) as u64,
            free_blocks: free.min(total.max(0) as u64),
            total_inodes: inodes,
            free_inodes: totals.free_inodes + self.pending_frees().1,
            name_max: NAME_MAX as u32,
        })
    }

    fn device_blocks(&mut self) -> Result<u64> {
        Ok(self.sb.geometry.total_frags / self.frags_per_block())
    }

    fn unmount(&mut self) -> Result<()> {
        self.unmount_now()
    }
}

#[cfg(test)]
mod tests {
    use super::indirect_blocks;

    #[test]
    fn a_file_needs_an_indirect_block_per_nindir_blocks_past_the_direct_ones_and_those_above() {
        assert_eq!(indirect_blocks(0, 10), 0);
        assert_eq!(indirect_blocks(12, 10), 0);
        assert_eq!(indirect_blocks(13, 10), 1);
        assert_eq!(indirect_blocks(22, 10), 1);
        // The double tree: its top block and one per 10 below it.
        assert_eq!(indirect_blocks(23, 10), 3);
        assert_eq!(indirect_blocks(22 + 100, 10), 1 + 1 + 10);
        // The triple tree: its top, a double-level block per 100, a
        // single-level one per 10.
        assert_eq!(indirect_blocks(22 + 100 + 1, 10), 12 + 3);
        assert_eq!(indirect_blocks(22 + 100 + 101, 10), 12 + 1 + 2 + 11);
    }
}
