//! FFS as a [`StorageManager`]: the Table 4 operations of the 1993 paper
//! (§4.1) over the cylinder-group layout.

use super::blocks::NewContents;
use super::fs::Ffs;
use crate::bmap;
use crate::error::errno;
use crate::format::blockno::XATTR_LBN;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, Lbn, NAME_MAX};
use crate::storage::{Hint, StatFs, StorageManager, TxKind};
use crate::Result;
use disk::AlignedBytes;

impl StorageManager for Ffs {
    fn block_size(&self) -> u32 {
        self.sb.geometry.block_size
    }

    fn max_file_size(&self) -> u64 {
        self.tree.max_blocks().saturating_mul(self.block_size() as u64).min(i64::MAX as u64)
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
        Ok(*self.cached_inode(ino)?)
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
        if let Some(block) = self.cache.get((ino, lbn)) {
            return crate::storage::copy_part(block, offset, buf);
        }
        let mut block = vec![0u8; self.block_size()];
        self.read_file_block(ino, lbn, &mut block)?;
        crate::storage::copy_part(&block, offset, buf)
    }

    fn read_blocks(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<()> {
        self.read_file_blocks(ino, first, buf)
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

    fn write_whole_block(&mut self, ino: Ino, lbn: Lbn, block: AlignedBytes) -> Result<()> {
        self.check_mounted()?;
        self.write_file_block(ino, lbn, NewContents::Whole(block))?;
        self.after_filling(ino, lbn)?;
        self.maybe_write()
    }

    fn next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        let size = self.cached_inode(ino)?.attr.size;
        let end = size.div_ceil(self.block_size() as u64);
        bmap::next_data(self, ino, lbn, end)
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

    /// Promises space for `blocks` whole blocks of file data, out of what
    /// users (not the `minfree` reserve) may have.
    fn reserve_blocks(&mut self, blocks: u64) -> Result<()> {
        let frags = blocks.saturating_mul(self.frags_per_block());
        let free = self.alloc.free_space(self.sb.policy.minfree) - self.reserved_frags as i64;
        if free < frags as i64 {
            return Err(errno(libc::ENOSPC, "file system full"));
        }
        self.reserved_frags += frags;
        Ok(())
    }

    fn begin(&mut self, kind: TxKind) -> Result<()> {
        self.check_mounted()?;
        self.tx.begin(kind);
        Ok(())
    }

    fn hint(&mut self, hint: Hint) -> Result<()> {
        self.on_hint(hint)
    }

    fn commit(&mut self) -> Result<()> {
        if self.tx.commit()?.is_some() {
            self.restore_unconfirmed_sizes()?;
            self.maybe_write()?;
        }
        Ok(())
    }

    fn fsync(&mut self, ino: Ino, _datasync: bool) -> Result<()> {
        self.check_mounted()?;
        self.cached_inode(ino)?;
        self.fsync_file(ino)
    }

    fn sync(&mut self) -> Result<()> {
        self.check_mounted()?;
        self.sync_all()
    }

    fn tick(&mut self) -> Result<()> {
        if self.unmounted {
            return Ok(());
        }
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

    fn statfs(&mut self) -> Result<StatFs> {
        let geo = self.sb.geometry;
        let fpb = self.frags_per_block() as i64;
        let free = (self.alloc.free_space(self.sb.policy.minfree) - self.reserved_frags as i64).max(0) / fpb;
        let total = self.alloc.data_frags() as i64 * (100 - self.sb.policy.minfree as i64) / 100 / fpb;
        let totals = self.alloc.totals();
        let inodes = geo.ninodes().saturating_sub(2);
        Ok(StatFs {
            block_size: geo.block_size,
            total_blocks: total.max(0) as u64,
            free_blocks: free.min(total).max(0) as u64,
            total_inodes: inodes,
            free_inodes: totals.free_inodes,
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
