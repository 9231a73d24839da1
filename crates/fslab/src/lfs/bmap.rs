//! The block map: where a file's block lives now, reading it, dirtying it,
//! and freeing ranges of it. Blocks are found through the inode's pointers
//! and indirect blocks named by negative logical block numbers (1993 paper
//! Fig. 6); indirect blocks are read through the buffer cache like any
//! other block.

use super::space::SpaceFor;
use super::Lfs;
use crate::cache::block_of;
use crate::error::{errno, Error};
use crate::format::blockno::{check_indirect, is_indirect, Geometry, Parent, NDADDR, NIADDR, POINTER_BYTES};
use crate::format::codec::{Decoder, Encoder};
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
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
            return Ok(&mut self.ifile);
        }
        Ok(&mut self.cached_inode(ino)?.inode)
    }

    /// The disk address recorded for block `lbn` of `ino` (0: none on disk).
    pub(super) fn pointer(&mut self, ino: Ino, lbn: Lbn) -> Result<Daddr> {
        let parent =
            self.geometry.parent(lbn).ok_or_else(|| errno(libc::EFBIG, "block number out of range"))?;
        let addr = match parent {
            Parent::Direct(i) => self.inode_of(ino)?.direct[i],
            Parent::Indirect(i) => self.inode_of(ino)?.indirect[i],
            Parent::Xattr => self.inode_of(ino)?.xattr,
            Parent::Meta { meta, index } => {
                if !self.ensure_cached(ino, meta)? {
                    return Ok(Daddr::NONE);
                }
                let block =
                    self.cache.get((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))?;
                Daddr::from_pointer(
                    Decoder::new(block)
                        .u32(index * POINTER_BYTES)
                        .map_err(|_| Error::corrupt("indirect block", 0u64, "short"))?,
                )
            }
        };
        if addr.get() >= self.total_disk_blocks() {
            return Err(Error::corrupt(
                "block pointer",
                addr,
                format!("inode {ino} block {lbn} points past the device"),
            ));
        }
        Ok(addr)
    }

    /// Records `addr` as the address of block `lbn` of `ino`, dirtying the
    /// indirect block or inode that holds the pointer.
    pub(super) fn set_pointer(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        let parent =
            self.geometry.parent(lbn).ok_or_else(|| errno(libc::EFBIG, "block number out of range"))?;
        let pointer = addr.to_pointer()?;
        match parent {
            Parent::Direct(i) => self.inode_of(ino)?.direct[i] = addr,
            Parent::Indirect(i) => self.inode_of(ino)?.indirect[i] = addr,
            Parent::Xattr => self.inode_of(ino)?.xattr = addr,
            Parent::Meta { meta, index } => {
                if !self.ensure_cached(ino, meta)? {
                    let zero = self.cache.zeroed();
                    self.cache.insert((ino, meta), zero, true);
                }
                let block = self
                    .cache
                    .get_mut_dirty((ino, meta))
                    .ok_or_else(|| errno(libc::EIO, "indirect block evicted"))?;
                Encoder::new(block).u32(index * POINTER_BYTES, pointer);
            }
        }
        if ino != IFILE_INO {
            self.mark_inode_dirty(ino)?;
        }
        Ok(())
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
        let mut buf = AlignedBytes::zeroed(self.block_size);
        self.read_addr(addr, &mut buf)?;
        if is_indirect(lbn) {
            check_indirect(&buf, ino, lbn, addr)?;
        }
        self.cache.insert((ino, lbn), Arc::new(buf), false);
        Ok(true)
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
    pub(super) fn read_file_blocks(&mut self, ino: Ino, first: Lbn, buf: &mut [u8]) -> Result<()> {
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
            let mut run = 1;
            while i + run < count && (run + 1) * bs <= MAX_READ_RUN_BYTES {
                let next = lbn + run as Lbn;
                if self.cache.contains((ino, next)) || self.pointer(ino, next)? != addr + run as u64 {
                    break;
                }
                run += 1;
            }
            let bytes = &mut buf[i * bs..(i + run) * bs];
            self.read_addr(addr, bytes)?;
            if run == 1 {
                self.cache.insert((ino, lbn), block_of(&bytes[..]), false);
            }
            i += run;
        }
        Ok(())
    }

    /// The indirect blocks above `lbn`, top first.
    pub(super) fn ancestors(&self, lbn: Lbn) -> Vec<Lbn> {
        if lbn < 0 {
            return Vec::new();
        }
        match self.geometry.path(lbn as u64) {
            Some(path) => path.metas[..path.levels].to_vec(),
            None => Vec::new(),
        }
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
            self.check_space(newly_dirty, if is_data { SpaceFor::Data } else { SpaceFor::Metadata })?;
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

    /// Frees block `lbn` of `ino` (data, indirect or xattr): forgets any
    /// cached copy, counts its old address dead, clears the pointer.
    pub(super) fn free_one(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        let addr = self.pointer(ino, lbn)?;
        let was_dirty = self.cache.remove((ino, lbn));
        if addr.is_some() {
            self.adjust_live(self.seg_of(addr), -(self.block_size as i64));
            self.note_death(self.seg_of(addr), self.block_size as u64, ino);
            self.set_pointer(ino, lbn, Daddr::NONE)?;
        }
        if addr.is_some() || was_dirty {
            let frags = self.bytes_per_frag();
            let inode = self.inode_of(ino)?;
            inode.blocks = inode.blocks.saturating_sub(frags);
        }
        Ok(())
    }

    /// First data block covered by each of the inode's indirect trees.
    fn tree_starts(&self) -> [u64; NIADDR] {
        let n = self.geometry.nindir;
        [NDADDR as u64, NDADDR as u64 + n, NDADDR as u64 + n + n * n]
    }

    /// Frees data blocks `first ..= last` of `ino` and every indirect block
    /// left covering only freed blocks.
    pub(super) fn free_range(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        self.cached_inode(ino)?;
        let last = last.min(self.geometry.max_blocks().saturating_sub(1));
        if first > last {
            return Ok(());
        }
        for lbn in first..=last.min(NDADDR as u64 - 1) {
            self.free_one(ino, lbn as Lbn)?;
        }
        for (i, &start) in self.tree_starts().iter().enumerate() {
            let level = i + 1;
            let span = self.geometry.nindir.pow(level as u32);
            let end = start + span - 1;
            if last < start || first > end {
                continue;
            }
            let top = Geometry::meta_lbn(level, start);
            self.free_tree(ino, top, level, start, first, last)?;
            if first <= start && last >= end {
                self.free_one(ino, top)?;
            }
        }
        Ok(())
    }

    /// Frees what `meta` (at `level`, first data block `meta_first`) covers
    /// inside `first ..= last`.
    fn free_tree(
        &mut self,
        ino: Ino,
        meta: Lbn,
        level: usize,
        meta_first: u64,
        first: u64,
        last: u64,
    ) -> Result<()> {
        if !self.ensure_cached(ino, meta)? {
            return Ok(());
        }
        let child_span = self.geometry.nindir.pow(level as u32 - 1);
        let lo = first.saturating_sub(meta_first) / child_span;
        let hi = ((last.min(meta_first + child_span * self.geometry.nindir - 1)) - meta_first) / child_span;
        for index in lo..=hi {
            let child_first = meta_first + index * child_span;
            if level == 1 {
                if self.pointer(ino, child_first as Lbn)?.is_some()
                    || self.cache.contains((ino, child_first as Lbn))
                {
                    self.free_one(ino, child_first as Lbn)?;
                }
                continue;
            }
            let child = Geometry::meta_lbn(level - 1, child_first);
            if self.pointer(ino, child)?.is_none() && !self.cache.contains((ino, child)) {
                continue;
            }
            self.free_tree(ino, child, level - 1, child_first, first, last)?;
            if first <= child_first && last >= child_first + child_span - 1 {
                self.free_one(ino, child)?;
            }
        }
        Ok(())
    }

    /// Whether block `lbn` of `ino` holds data (on disk or dirty in cache).
    fn has_block(&mut self, ino: Ino, lbn: Lbn) -> Result<bool> {
        Ok(self.cache.contains((ino, lbn)) || self.pointer(ino, lbn)?.is_some())
    }

    /// The first data block at or after `lbn` that holds data, below the
    /// file's size. Skips whole absent indirect trees.
    pub(super) fn find_next_data(&mut self, ino: Ino, lbn: u64) -> Result<Option<u64>> {
        let size = self.cached_inode(ino)?.inode.attr.size;
        let end = size.div_ceil(self.block_size as u64).min(self.geometry.max_blocks());
        let mut at = lbn;
        'search: while at < end {
            let path = self.geometry.path(at).ok_or_else(|| errno(libc::EFBIG, "block out of range"))?;
            for i in 0..path.levels {
                let meta = path.metas[i];
                if !self.has_block(ino, meta)? {
                    let (level, first) = self
                        .geometry
                        .meta_level(meta)
                        .ok_or_else(|| errno(libc::EIO, "bad indirect block number"))?;
                    at = first + self.geometry.nindir.pow(level as u32);
                    continue 'search;
                }
            }
            if self.has_block(ino, at as Lbn)? {
                return Ok(Some(at));
            }
            at += 1;
        }
        Ok(None)
    }
}
