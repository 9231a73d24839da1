//! The block map: where a file's block lives now, reading it, dirtying it,
//! and freeing ranges of it. Blocks are found through the inode's pointers
//! and indirect blocks named by negative logical block numbers (1993 paper
//! Fig. 6); indirect blocks are read through the buffer cache like any
//! other block.

use super::space::SpaceFor;
use super::Lfs;
use crate::bmap::{self, BlockTree};
use crate::cache::block_of;
use crate::error::errno;
use crate::format::blockno::{check_indirect, is_indirect, Geometry};
use crate::format::inode::Inode;
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
use crate::storage::{Fetch, Fetches};
use crate::Result;
use disk::AlignedBytes;
use std::sync::Arc;

/// The most one clustered read asks of the device (the FUSE request size).
const MAX_READ_RUN_BYTES: usize = 1 << 20;

/// What a write puts into one block.
pub(super) enum NewContents<'a> {
    /// `data` at byte `offset`; the rest of the block keeps its contents.
    Part { offset: usize, data: &'a [u8] },
    /// A whole block, already in its own buffer.
    Whole(AlignedBytes),
}

/// New contents for the whole of a block.
enum Replacement<'a> {
    /// To be copied into a buffer of the cache.
    Bytes(&'a [u8]),
    /// Kept as the cache's buffer.
    Buffer(AlignedBytes),
}

impl Lfs {
    /// The inode of `ino`, the ifile included.
    pub(super) fn inode_of(&mut self, ino: Ino) -> Result<&mut crate::format::inode::Inode> {
        if ino == IFILE_INO {
            return Ok(&mut self.ifile.inode);
        }
        self.cached_inode(ino)
    }

    /// The disk address recorded for block `lbn` of `ino` (none: a hole or
    /// not yet written).
    pub(super) fn pointer(&mut self, ino: Ino, lbn: Lbn) -> Result<Daddr> {
        bmap::pointer(self, ino, lbn)
    }

    /// Records `addr` as the address of block `lbn` of `ino`, dirtying the
    /// indirect block or inode that holds the pointer.
    pub(super) fn set_pointer(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        bmap::set_pointer(self, ino, lbn, addr)
    }

    /// Makes sure block `lbn` of `ino` is in the cache if it exists; returns
    /// false for a hole.
    pub(super) fn ensure_cached(&mut self, ino: Ino, lbn: Lbn) -> Result<bool> {
        if self.cache.contains((ino, lbn)) {
            return Ok(true);
        }
        let addr = self.pointer(ino, lbn)?;
        if addr.is_none() {
            return Ok(false);
        }
        self.cache_from_disk(ino, lbn, addr)?;
        Ok(true)
    }

    /// Reads block `lbn` of `ino` from `addr` into the cache, checking an
    /// indirect block's trailer.
    fn cache_from_disk(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        let mut buf = AlignedBytes::zeroed(self.block_size);
        self.read_addr(addr, &mut buf)?;
        if is_indirect(lbn) {
            check_indirect(&buf, ino, lbn, addr)?;
        }
        self.cache.insert((ino, lbn), Arc::new(buf), false);
        Ok(())
    }

    /// Reads block `lbn` of `ino` into `buf`; holes read as zeros.
    pub(super) fn read_file_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        if buf.len() != self.block_size {
            return Err(errno(libc::EINVAL, "read buffer is not one block"));
        }
        if let Some(block) = self.cache.get((ino, lbn)) {
            buf.copy_from_slice(block);
            return Ok(());
        }
        let addr = self.pointer(ino, lbn)?;
        if addr.is_none() {
            buf.fill(0);
            return Ok(());
        }
        self.read_addr(addr, buf)?;
        self.cache.insert((ino, lbn), block_of(&buf[..]), false);
        Ok(())
    }

    /// Reads blocks `first ..` of `ino` into `buf` (a whole number of
    /// blocks). Blocks that are not cached and lie one after another on disk
    /// — a file written in one go sits contiguous in the log — are read in
    /// one device read of up to [`MAX_READ_RUN_BYTES`] (read clustering).
    /// Only blocks read alone are cached: a run is what a sequential reader
    /// asks for, and the kernel's page cache keeps that already.
    ///
    /// With `later`, a run the device must supply is left there instead of
    /// read (module `storage::fetch`), its address checked as a read's is.
    pub(super) fn read_file_blocks(
        &mut self,
        ino: Ino,
        first: Lbn,
        buf: &mut [u8],
        mut later: Option<&mut Fetches>,
    ) -> Result<()> {
        let bs = self.block_size;
        if !buf.len().is_multiple_of(bs) {
            return Err(errno(libc::EINVAL, "read buffer is not whole blocks"));
        }
        let count = buf.len() / bs;
        let mut i = 0;
        while i < count {
            let lbn = first + i as Lbn;
            let block = &mut buf[i * bs..(i + 1) * bs];
            if let Some(cached) = self.cache.get((ino, lbn)) {
                block.copy_from_slice(cached);
                i += 1;
                continue;
            }
            let addr = self.pointer(ino, lbn)?;
            if addr.is_none() {
                block.fill(0);
                i += 1;
                continue;
            }
            let max = (count - i).min(MAX_READ_RUN_BYTES / bs);
            let run = bmap::contiguous_run(self, ino, lbn, addr, max, 1)?;
            if let Some(later) = later.as_deref_mut() {
                self.check_addr(addr, run as u64)?;
                later.push(Fetch { at: i * bs, addr, len: run * bs, lbn });
                i += run;
                continue;
            }
            let bytes = &mut buf[i * bs..(i + run) * bs];
            self.read_addr(addr, bytes)?;
            if run == 1 {
                self.cache.insert((ino, lbn), block_of(&bytes[..]), false);
            }
            i += run;
        }
        self.read_ahead_after(ino, first, count as u64);
        Ok(())
    }

    /// After a sequential read, posts the read of the next cluster
    /// ([`bmap::READ_AHEAD_BYTES`]) to the device, which reads it while the
    /// caller copies this one out. Only a hint: a failure here (a damaged
    /// indirect block, say) is left to the read that needs the blocks. On a
    /// device that ignores the hint (an image file), nothing is worked out.
    fn read_ahead_after(&mut self, ino: Ino, first: Lbn, count: u64) {
        if !self.dev.takes_read_ahead() {
            return;
        }
        let Some(next) = self.read_ahead.note(ino, first, count) else { return };
        let bs = self.block_size;
        let post = |lfs: &mut Lfs| -> Result<()> {
            let blocks = lfs.inode_of(ino)?.attr.size.div_ceil(bs as u64) as Lbn;
            let max = (blocks - next).clamp(0, (bmap::READ_AHEAD_BYTES / bs) as Lbn) as usize;
            if let Some((addr, run)) = bmap::read_ahead_run(lfs, ino, next, max, 1)? {
                lfs.read_ahead.posted(next, run);
                lfs.dev.read_ahead(addr.byte_offset(bs as u64), run * bs)?;
            }
            Ok(())
        };
        let _ = post(self);
    }

    /// The indirect blocks above `lbn`, top first.
    pub(super) fn ancestors(&self, lbn: Lbn) -> Vec<Lbn> {
        bmap::ancestors(&self.geometry, lbn)
    }

    /// Stores `data` at `offset` in block `lbn` of `ino`: the block and every
    /// indirect block above it become dirty, since the segment writer will
    /// give them all new addresses. Checks space first (§3.2), so a write
    /// that is accepted can be stored.
    pub(super) fn write_file_block(&mut self, ino: Ino, lbn: Lbn, contents: NewContents) -> Result<()> {
        let fits = match &contents {
            NewContents::Part { offset, data } => {
                offset.checked_add(data.len()).is_some_and(|end| end <= self.block_size)
            }
            NewContents::Whole(block) => block.len() == self.block_size,
        };
        if !fits {
            return Err(errno(libc::EINVAL, "write does not fit in one block"));
        }
        if lbn < 0 && lbn != crate::format::blockno::XATTR_LBN {
            return Err(errno(libc::EINVAL, "indirect blocks belong to the storage manager"));
        }
        if lbn >= 0 && self.geometry.path(lbn as u64).is_none() {
            return Err(errno(libc::EFBIG, "file too large"));
        }
        self.cached_inode(ino)?;
        let key = (ino, lbn);
        let metas = self.ancestors(lbn);
        if !self.cache.is_dirty(key) {
            let newly_dirty = 1 + metas.iter().filter(|&&m| !self.cache.is_dirty((ino, m))).count() as u64;
            let is_data = lbn >= 0 && self.inode_of(ino)?.attr.is_reg();
            self.check_space(newly_dirty, self.space_for(is_data))?;
        }
        // Indirect blocks first: a new one counts as allocated space.
        for &meta in &metas {
            self.dirty_block(ino, meta, None)?;
        }
        match contents {
            NewContents::Part { offset: 0, data } if data.len() == self.block_size => {
                self.dirty_block(ino, lbn, Some(Replacement::Bytes(data)))
            }
            NewContents::Whole(block) => self.dirty_block(ino, lbn, Some(Replacement::Buffer(block))),
            NewContents::Part { offset, data } => {
                self.dirty_block(ino, lbn, None)?;
                let block = self
                    .cache
                    .get_mut_dirty(key)
                    .ok_or_else(|| errno(libc::EIO, "block evicted while dirty"))?;
                block[offset..offset + data.len()].copy_from_slice(data);
                Ok(())
            }
        }
    }

    /// Makes block `lbn` of `ino` a dirty cached buffer, holding `contents`
    /// if given, else its current contents (zeros for a hole). Counts a hole
    /// that becomes a block in the inode's `blocks`.
    fn dirty_block(&mut self, ino: Ino, lbn: Lbn, contents: Option<Replacement>) -> Result<()> {
        let key = (ino, lbn);
        if self.cache.is_dirty(key) {
            match contents {
                Some(Replacement::Bytes(data)) => {
                    let block = self
                        .cache
                        .get_mut_dirty(key)
                        .ok_or_else(|| errno(libc::EIO, "block evicted while dirty"))?;
                    block.copy_from_slice(data);
                }
                Some(Replacement::Buffer(block)) => self.cache.insert(key, Arc::new(block), true),
                None => {}
            }
            return Ok(());
        }
        let addr = self.pointer(ino, lbn)?;
        match contents {
            Some(Replacement::Bytes(data)) => self.cache.insert(key, block_of(data), true),
            Some(Replacement::Buffer(block)) => self.cache.insert(key, Arc::new(block), true),
            None => {
                if !self.ensure_cached(ino, lbn)? {
                    let zero = self.cache.zeroed();
                    self.cache.insert(key, zero, true);
                }
                self.cache.mark_dirty(key);
            }
        }
        if addr.is_none() {
            let frags = self.bytes_per_frag();
            self.inode_of(ino)?.blocks += frags;
        }
        if ino != IFILE_INO {
            self.mark_inode_dirty(ino)?;
        }
        Ok(())
    }

    /// Frees data blocks `first ..= last` of `ino` and every indirect block
    /// left covering only freed blocks.
    pub(super) fn free_range(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        self.cached_inode(ino)?;
        bmap::free_range(self, ino, first, last)
    }

    /// Moves data blocks `from .. from + count` of `ino` to `to ..` (see
    /// `StorageManager::move_blocks`). Each block on disk is rewritten at
    /// its new place ([`BlockTree::relocate`]): a segment summary names a
    /// block by (inode, lbn), and the cleaner and roll-forward judge it by
    /// that name. Checks for room for every rewritten block and the
    /// indirect blocks above the old and new places before moving any.
    pub(super) fn move_file_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
        let size = self.cached_inode(ino)?.attr.size;
        if !size.is_multiple_of(self.block_size as u64) {
            return Err(errno(libc::EINVAL, "blocks move only in a file of whole blocks"));
        }
        let moved = bmap::data_blocks(self, ino, from, count)?.len() as u64;
        // As `reserve_blocks`: a share of each level and two ends, at the
        // old places and the new.
        let metas = 2 * (2 * moved.div_ceil(self.geometry.nindir) + 6);
        self.check_space(moved + metas, SpaceFor::Data)?;
        bmap::move_blocks(self, ino, from, to, count)
    }

    /// The first data block at or after `lbn` that holds data, past the
    /// file's size too (`StorageManager::next_data`).
    pub(super) fn find_next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        self.cached_inode(ino)?;
        bmap::next_data(self, ino, lbn, self.geometry.max_blocks())
    }
}

/// The block map of LFS: blocks and indirect blocks are cached by (inode,
/// lbn); a block written since the last segment write is dirty in the
/// cache and has no address until the segment writer gives it one.
impl BlockTree for Lfs {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn address_limit(&self) -> u64 {
        self.total_disk_blocks()
    }

    fn inode(&mut self, ino: Ino) -> Result<&Inode> {
        Ok(self.inode_of(ino)?)
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        if ino != IFILE_INO {
            self.mark_inode_dirty(ino)?;
        }
        self.inode_of(ino)
    }

    fn in_memory(&self, ino: Ino, lbn: Lbn) -> bool {
        self.cache.contains((ino, lbn))
    }

    fn first_in_memory(&self, ino: Ino, lbns: std::ops::Range<Lbn>) -> Option<Lbn> {
        self.cache.first_in(ino, lbns)
    }

    fn read_indirect(&mut self, ino: Ino, meta: Lbn, addr: Daddr) -> Result<()> {
        self.cache_from_disk(ino, meta, addr)
    }

    fn indirect(&mut self, ino: Ino, meta: Lbn) -> Result<&[u8]> {
        self.cache.get((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))
    }

    fn indirect_mut(&mut self, ino: Ino, meta: Lbn) -> Result<&mut [u8]> {
        self.cache.get_or_zeroed_mut((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))
    }

    /// Forgets any cached copy, counts the old address dead and the block
    /// gone from the inode's count.
    fn release(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        let was_dirty = self.cache.remove((ino, lbn));
        if addr.is_some() {
            self.adjust_live(self.seg_of(addr), -(self.block_size as i64));
            self.note_death(self.seg_of(addr), self.block_size as u64, ino);
        }
        if addr.is_some() || was_dirty {
            let frags = self.bytes_per_frag();
            let inode = self.inode_of(ino)?;
            inode.blocks = inode.blocks.saturating_sub(frags);
        }
        Ok(())
    }

    /// Moves the block's copy in memory — reading it first if it is only
    /// on disk — to its new name, dirty, with the indirect blocks above
    /// it, and counts the old address dead: the segment writer gives it a
    /// new address (no-overwrite, §2.1). The inode's block count stays.
    fn relocate(&mut self, ino: Ino, from: Lbn, to: Lbn, addr: Daddr) -> Result<Daddr> {
        for meta in self.ancestors(to) {
            self.dirty_block(ino, meta, None)?;
        }
        let block = match self.cache.share((ino, from)) {
            Some(block) => block,
            None => {
                let mut buf = AlignedBytes::zeroed(self.block_size);
                self.read_addr(addr, &mut buf)?;
                Arc::new(buf)
            }
        };
        self.cache.remove((ino, from));
        self.cache.insert((ino, to), block, true);
        if addr.is_some() {
            self.adjust_live(self.seg_of(addr), -(self.block_size as i64));
            self.note_death(self.seg_of(addr), self.block_size as u64, ino);
        }
        self.mark_inode_dirty(ino)?;
        Ok(Daddr::NONE)
    }

    /// Never now: the segment writer gives a block its address (§2.1).
    fn assign(&mut self, _ino: Ino, _lbn: Lbn, _preference: Daddr) -> Result<Daddr> {
        Ok(Daddr::NONE)
    }
}
