//! File blocks of a mounted FFS: where each lives, how big it is, reading
//! and writing it, and giving it a home (1993 paper §2.1; 4.4BSD
//! `ffs_balloc`, `ffs_realloccg`).
//!
//! Every block gets its address when it is first written — unlike LFS,
//! which waits for the segment writer — through the block-map engine's
//! `assign` hook, at the place `blkpref` prefers. A file's last block, if
//! it is a direct block and the file does not fill it, lives in just enough
//! fragments (its *tail*); it grows in place or moves as the file grows,
//! and becomes a whole block before any block after it is given space.
//!
//! Which block is the tail follows from the file's size and its map alone
//! (4.4BSD's `blksize`, extended for blocks preallocated past the end):
//! the block holding the last byte, when that block is direct, the size
//! does not end on a block boundary, and no block after it is allocated.
//! Every other block is whole. So the storage manager keeps the inode's
//! size up to date as blocks are written (as `ffs_write` does), and
//! `update` and `free_blocks` resize the tail when a size change or a free
//! makes another block the tail.

use super::freed::Freed;
use super::fs::Ffs;
use crate::bmap::{self, BlockTree};
use crate::cache::{block_of, BlockKey};
use crate::error::{errno, Error, Location};
use crate::format::blockno::{is_indirect, Geometry, Parent, NDADDR, XATTR_LBN};
use crate::format::codec::Decoder;
use crate::format::inode::Inode;
use crate::format::{Daddr, Ino, Lbn, IFILE_INO};
use crate::storage::{Fetch, Fetches, Hint};
use crate::Result;
use disk::AlignedBytes;
use std::sync::Arc;

/// The most one clustered read asks of the device (the largest FUSE read).
const MAX_READ_RUN_BYTES: usize = 1 << 20;

/// What a write puts into one block.
pub(super) enum NewContents<'a> {
    /// `data` at byte `offset`; the rest of the block keeps its contents.
    Part { offset: usize, data: &'a [u8] },
    /// A whole block, already in its own buffer.
    Whole(AlignedBytes),
}

impl NewContents<'_> {
    /// The bytes of the block the write reaches to.
    fn end(&self) -> usize {
        match self {
            NewContents::Part { offset, data } => offset + data.len(),
            NewContents::Whole(block) => block.len(),
        }
    }
}

impl Ffs {
    /// The file's tail for a size of `size` bytes: (its block, its bytes
    /// rounded up to fragments), or `None` when every block is whole.
    pub(super) fn tail_of(&mut self, ino: Ino, size: u64) -> Result<Option<(u64, usize)>> {
        let bs = self.block_size() as u64;
        let lbn = size / bs;
        if size.is_multiple_of(bs) || lbn >= NDADDR as u64 {
            return Ok(None);
        }
        if bmap::next_data(self, ino, lbn + 1, self.tree.max_blocks())?.is_some() {
            return Ok(None);
        }
        let fsize = self.frag_size();
        Ok(Some((lbn, ((size % bs).div_ceil(fsize) * fsize) as usize)))
    }

    /// The bytes block `lbn` of `ino` occupies on disk: its tail's
    /// fragments, or a whole block.
    pub(super) fn block_bytes(&mut self, ino: Ino, lbn: Lbn) -> Result<usize> {
        let bs = self.block_size();
        if !(0..NDADDR as Lbn).contains(&lbn) {
            return Ok(bs);
        }
        let size = self.cached_inode(ino)?.attr.size;
        Ok(self.tail_of(ino, size)?.filter(|&(t, _)| t == lbn as u64).map_or(bs, |(_, b)| b))
    }

    /// Reads block `lbn` of `ino` into `buf` (one block); holes and the
    /// bytes past a tail's fragments read as zeros.
    pub(super) fn read_file_block(&mut self, ino: Ino, lbn: Lbn, buf: &mut [u8]) -> Result<()> {
        if buf.len() != self.block_size() {
            return Err(errno(libc::EINVAL, "read buffer is not one block"));
        }
        self.fill_partial(ino, lbn, None)?;
        if let Some(block) = self.cache.get_held((ino, lbn)) {
            crate::storage::copy_block(block, buf);
            return Ok(());
        }
        let addr = bmap::pointer(self, ino, lbn)?;
        if addr.is_none() {
            buf.fill(0);
            return Ok(());
        }
        let bytes = self.block_bytes(ino, lbn)?;
        buf[bytes..].fill(0);
        self.read_at(addr, &mut buf[..bytes])?;
        // A tail is cached as its fragments; the rest are zeros.
        self.cache.insert((ino, lbn), block_of(&buf[..bytes]), false);
        Ok(())
    }

    /// Reads blocks `first ..` of `ino` into `buf` (whole blocks). Blocks
    /// that lie one after another on disk and are not cached are read in
    /// one device read (the 1993 paper's EFS: bmap returns the length of the
    /// contiguous run), as long as the caller asked for, up to
    /// [`MAX_READ_RUN_BYTES`]; a tail is read alone. Unlike writes, reads
    /// are not cut at `maxcontig`: a read loses no revolution between
    /// requests, since the drive's track buffer reads ahead (1995 paper
    /// §3.2), and a simulated disk splits a long read at its own maximum
    /// transfer.
    ///
    /// With `later`, a run the device must supply is left there instead of
    /// read (module `storage::fetch`); a tail is read now.
    pub(super) fn read_file_blocks(
        &mut self,
        ino: Ino,
        first: Lbn,
        buf: &mut [u8],
        mut later: Option<&mut Fetches>,
    ) -> Result<()> {
        let bs = self.block_size();
        if !buf.len().is_multiple_of(bs) {
            return Err(errno(libc::EINVAL, "read buffer is not whole blocks"));
        }
        let size = self.cached_inode(ino)?.attr.size;
        let tail_and_bytes = self.tail_of(ino, size)?;
        let tail = tail_and_bytes.map(|(t, _)| t as Lbn);
        let count = buf.len() / bs;
        let longest = (MAX_READ_RUN_BYTES / bs).max(1);
        let fpb = self.frags_per_block();
        let mut i = 0;
        while i < count {
            let lbn = first + i as Lbn;
            let block = &mut buf[i * bs..(i + 1) * bs];
            if Some(lbn) == tail && !self.cache.contains((ino, lbn)) {
                if let Some(later) = later.as_deref_mut() {
                    // A tail's fragments go alone, outside the lock too: a
                    // small file is all tail, and read under the lock one
                    // reader's device wait held up every other request.
                    let addr = bmap::pointer(self, ino, lbn)?;
                    // The tail's size comes from the search above, not a second one.
                    if let Some((_, bytes)) = tail_and_bytes.filter(|_| addr.is_some()) {
                        block[bytes..].fill(0);
                        self.stats.reads += 1;
                        later.push(Fetch { at: i * bs, addr, len: bytes, lbn });
                    } else {
                        block.fill(0);
                    }
                    i += 1;
                    continue;
                }
            }
            if self.cache.contains((ino, lbn)) || Some(lbn) == tail {
                self.read_file_block(ino, lbn, block)?;
                i += 1;
                continue;
            }
            let addr = bmap::pointer(self, ino, lbn)?;
            if addr.is_none() {
                block.fill(0);
                i += 1;
                continue;
            }
            let mut max = (count - i).min(longest);
            if let Some(t) = tail.filter(|&t| t > lbn) {
                max = max.min((t - lbn) as usize);
            }
            let run = bmap::contiguous_run(self, ino, lbn, addr, max, fpb)?;
            if let Some(later) = later.as_deref_mut() {
                self.stats.reads += 1;
                later.push(Fetch { at: i * bs, addr, len: run * bs, lbn });
                i += run;
                continue;
            }
            let bytes = &mut buf[i * bs..(i + run) * bs];
            self.read_at(addr, bytes)?;
            if run == 1 {
                self.cache.insert((ino, lbn), block_of(bytes), false);
            }
            i += run;
        }
        self.read_ahead_after(ino, first, count as u64, size, tail);
        Ok(())
    }

    /// After a sequential read, posts the read of the next cluster
    /// ([`bmap::READ_AHEAD_BYTES`], up to the tail) to the device, which
    /// reads it while the caller copies this one out. Only a hint: a
    /// failure here is left to the read that needs the blocks. On a device
    /// that ignores the hint (an image file), nothing is worked out.
    fn read_ahead_after(&mut self, ino: Ino, first: Lbn, count: u64, size: u64, tail: Option<Lbn>) {
        if !self.dev.takes_read_ahead() {
            return;
        }
        let Some(next) = self.read_ahead.note(ino, first, count) else { return };
        let bs = self.block_size();
        let end = tail.unwrap_or(size.div_ceil(bs as u64) as Lbn);
        let max = (end - next).clamp(0, (bmap::READ_AHEAD_BYTES / bs) as Lbn) as usize;
        let fpb = self.frags_per_block();
        let post = |ffs: &mut Ffs| -> Result<()> {
            if let Some((addr, run)) = bmap::read_ahead_run(ffs, ino, next, max, fpb)? {
                ffs.read_ahead.posted(next, run);
                ffs.dev.read_ahead(addr.byte_offset(ffs.frag_size()), run * bs)?;
            }
            Ok(())
        };
        let _ = post(self);
    }

    /// Runs `work` with `key` (if any) pinned in the cache, and unpins it
    /// whatever `work` returns: the one way FFS holds a buffer it must find
    /// again, so that no error path leaves a pin behind
    /// ([`BufferCache::pin`](crate::cache::BufferCache::pin)).
    pub(super) fn with_pinned<T>(
        &mut self,
        key: Option<BlockKey>,
        work: impl FnOnce(&mut Ffs) -> Result<T>,
    ) -> Result<T> {
        if let Some(key) = key {
            self.cache.pin(key);
        }
        let result = work(self);
        if let Some(key) = key {
            self.cache.unpin(key);
        }
        result
    }

    /// Stores `contents` in block `lbn` of `ino` (a data block or the
    /// extended-attribute block), giving it space first — 4.4BSD's
    /// `ffs_balloc` followed by the copy into the buffer. Keeps the inode's
    /// size covering what was written. `metadata` blocks (directories,
    /// symbolic links, extended attributes) may use the `minfree` reserve.
    pub(super) fn write_file_block(&mut self, ino: Ino, lbn: Lbn, contents: NewContents) -> Result<()> {
        let bs = self.block_size();
        let fits = match &contents {
            NewContents::Part { offset, data } => offset.checked_add(data.len()).is_some_and(|e| e <= bs),
            NewContents::Whole(block) => block.len() == bs,
        };
        if !fits {
            return Err(errno(libc::EINVAL, "write does not fit in one block"));
        }
        self.tx.dirtied(ino, lbn);
        if lbn < 0 && lbn != XATTR_LBN {
            return Err(errno(libc::EINVAL, "indirect blocks belong to the storage manager"));
        }
        if lbn >= 0 && self.tree.path(lbn as u64).is_none() {
            return Err(errno(libc::EFBIG, "file too large"));
        }
        let inode = *self.cached_inode(ino)?;
        if let NewContents::Part { offset, data } = contents {
            if self.write_without_reading(ino, lbn, &inode, offset, data)? {
                return Ok(());
            }
        }
        let metadata = lbn == XATTR_LBN || !inode.attr.is_reg();
        let key = (ino, lbn);
        let end = contents.end();
        // The block's present contents go into the cache first, pinned — a
        // partial write keeps them, a tail that moves takes them along, and
        // a buffer could be evicted while allocation reads indirect blocks
        // (which lost data once: the test
        // `random_operations_on_a_disk_that_fills_up_get_enospc_only_when_it_is_full`).
        let partial = matches!(contents, NewContents::Part { .. });
        if partial {
            self.load_block(ino, lbn)?;
        }
        let shrank = self.with_pinned(partial.then_some(key), |fs| {
            fs.place_file_block(ino, lbn, inode.attr.size, end, metadata)
        })?;
        if inode.attr.is_dir() {
            self.mode().dir_block_changing(self, key);
        }
        match contents {
            NewContents::Whole(block) => self.cache.insert(key, Arc::new(block), true),
            NewContents::Part { offset, data } => {
                if !self.cache.contains(key) {
                    let zero = self.cache.zeroed();
                    self.cache.insert(key, zero, true);
                }
                let block = self
                    .cache
                    .get_mut_dirty(key)
                    .ok_or_else(|| errno(libc::EIO, "block evicted while dirty"))?;
                block[offset..offset + data.len()].copy_from_slice(data);
            }
        }
        if lbn >= 0 {
            let reach = lbn as u64 * bs as u64 + end as u64;
            if reach > inode.attr.size {
                if self.tx.is_open() {
                    self.size_before.entry(ino).or_insert(inode.attr.size);
                }
                self.inode_mut(ino)?.attr.size = reach;
            }
        }
        if shrank {
            // The inode with the size that makes the block a tail goes
            // before its freed fragments can be given out (rule 4).
            self.after_free(ino)?;
        }
        Ok(())
    }

    /// Stores `data` at `offset` of block `lbn` of `ino` without reading
    /// the block, if it may: part of a regular file's whole block already
    /// on disk and not cached whole, inside the file, in whole fragments
    /// (`BufferCache::write_partial`). The block keeps its place and the
    /// file its size, so nothing else changes. A 4 KiB random write into
    /// 8 KiB blocks otherwise reads each block it meets first, the
    /// read-modify-write 4.4BSD's `ffs_write` does through `bread`. Returns
    /// whether it did.
    fn write_without_reading(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        inode: &Inode,
        offset: usize,
        data: &[u8],
    ) -> Result<bool> {
        Ok(self.may_write_unread(ino, lbn, inode, offset, data.len())?
            && self.cache.write_partial((ino, lbn), offset, data))
    }

    /// Whether [`Ffs::write_without_reading`] would store `len` bytes at
    /// `offset` of block `lbn` of `ino`.
    pub(super) fn may_write_unread(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        inode: &Inode,
        offset: usize,
        len: usize,
    ) -> Result<bool> {
        let (bs, fsize) = (self.block_size() as u64, self.frag_size());
        let aligned = (offset as u64).is_multiple_of(fsize) && (len as u64).is_multiple_of(fsize);
        let inside = (lbn as u64 * bs).saturating_add(offset.saturating_add(len) as u64) <= inode.attr.size;
        let key = (ino, lbn);
        if lbn < 0
            || !inode.attr.is_reg()
            || !aligned
            || !inside
            || !self.cache.takes_partial(key, offset, len)
        {
            return Ok(false);
        }
        if self.cache.contains(key) {
            return Ok(true);
        }
        Ok(bmap::pointer(self, ino, lbn)?.is_some() && self.block_bytes(ino, lbn)? == bs as usize)
    }

    /// Makes a block held in part in the cache whole: reads it (from
    /// `at`, an address and its bytes, or where the file's map puts it)
    /// under the bytes written since.
    fn fill_partial(&mut self, ino: Ino, lbn: Lbn, at: Option<(Daddr, usize)>) -> Result<()> {
        if self.cache.partial((ino, lbn)).is_none() {
            return Ok(());
        }
        let (addr, bytes) = match at {
            Some(at) => at,
            None => (bmap::pointer(self, ino, lbn)?, self.block_bytes(ino, lbn)?),
        };
        if addr.is_none() {
            return Err(Error::corrupt_at(
                "block map",
                Location::FileBlock { ino, lbn: lbn as u64 },
                "a block written in part has no address",
            ));
        }
        let mut buf = AlignedBytes::zeroed(self.block_size());
        self.read_at(addr, &mut buf[..bytes])?;
        self.cache.insert((ino, lbn), Arc::new(buf), false);
        Ok(())
    }

    /// Brings block `lbn` of `ino` into the cache if it is on disk.
    fn load_block(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        self.fill_partial(ino, lbn, None)?;
        if self.cache.contains((ino, lbn)) {
            return Ok(());
        }
        if bmap::pointer(self, ino, lbn)?.is_some() {
            let mut buf = vec![0u8; self.block_size()];
            self.read_file_block(ino, lbn, &mut buf)?;
        }
        Ok(())
    }

    /// Brings block `lbn` of `ino`, which lives at `addr` in `bytes` bytes,
    /// into the cache, the rest of the buffer zero: for a block being
    /// resized, whose size the rule no longer gives once the size or map
    /// has changed.
    fn load_block_of(&mut self, ino: Ino, lbn: Lbn, addr: Daddr, bytes: usize) -> Result<()> {
        self.fill_partial(ino, lbn, Some((addr, bytes)))?;
        if self.cache.contains((ino, lbn)) {
            return Ok(());
        }
        let mut buf = AlignedBytes::zeroed(self.block_size());
        self.read_at(addr, &mut buf[..bytes])?;
        self.cache.insert((ino, lbn), Arc::new(buf), false);
        Ok(())
    }

    /// Before block `lbn` gets space past a tail, the tail becomes a whole
    /// block (4.4BSD `ffs_balloc`: "if the file currently ends in a
    /// fragment, grow it to a full block first").
    /// Returns the tail it grew, as it was.
    fn make_tail_whole_before(&mut self, ino: Ino, lbn: u64, metadata: bool) -> Result<Option<(u64, usize)>> {
        let size = self.cached_inode(ino)?.attr.size;
        let Some((tail, bytes)) = self.tail_of(ino, size)? else { return Ok(None) };
        if tail >= lbn {
            return Ok(None);
        }
        let addr = bmap::pointer(self, ino, tail as Lbn)?;
        if addr.is_some() && bytes < self.block_size() {
            self.resize_block(ino, tail as Lbn, addr, bytes, self.block_size(), metadata)?;
            return Ok(Some((tail, bytes)));
        }
        Ok(None)
    }

    /// Gives direct block `lbn` of `ino` the space it needs when the file
    /// will be `new_size` bytes: fragments if it will be the tail, else a
    /// whole block; a new block near `blkpref`'s choice, an existing one
    /// grown in place or moved, or a whole one shrunk to the tail it
    /// becomes (then returns true: fragments were freed).
    fn place_direct(&mut self, ino: Ino, lbn: Lbn, new_size: u64, metadata: bool) -> Result<bool> {
        let bs = self.block_size();
        let want = match self.tail_of(ino, new_size)? {
            Some((t, bytes)) if t == lbn as u64 => bytes,
            _ => bs,
        };
        let addr = bmap::pointer(self, ino, lbn)?;
        if addr.is_none() {
            let pref = self.blkpref(ino, lbn)?;
            let new = self.allocate(ino, pref, want, metadata)?;
            bmap::set_pointer(self, ino, lbn, new)?;
            self.count_blocks(ino, want as i64)?;
            self.tx.hint(Hint::BlocksAllocated { ino, lbn });
            return Ok(false);
        }
        let have = self.block_bytes(ino, lbn)?;
        if have < want {
            self.resize_block(ino, lbn, addr, have, want, metadata)?;
        } else if have > want {
            // A whole block preallocated past the end (fallocate with
            // KEEP_SIZE) becomes the tail as the size reaches into it:
            // the size and the map now say it holds `want` bytes, so the
            // fragments past them go back, or nothing would free them.
            // Only a partial write gets here (a whole one ends the block),
            // and it has put the block's contents in the cache, dirty.
            self.shrink_block(ino, addr, have, want)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Gives block `lbn` of `ino` its space for a write reaching `end`
    /// bytes into it, the file's tail made whole first if the write goes
    /// past it. Returns whether the file's last block became a shorter
    /// tail (`place_direct`).
    fn place_file_block(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        size: u64,
        end: usize,
        metadata: bool,
    ) -> Result<bool> {
        let bs = self.block_size();
        let grown = if lbn >= 0 { self.make_tail_whole_before(ino, lbn as u64, metadata)? } else { None };
        let placed = if (0..NDADDR as Lbn).contains(&lbn) {
            let new_size = size.max(lbn as u64 * bs as u64 + end as u64);
            self.place_direct(ino, lbn, new_size, metadata)
        } else {
            self.placing_metadata = metadata;
            let placed = bmap::balloc(self, ino, lbn);
            self.placing_metadata = false;
            placed.map(|_| false)
        };
        if placed.is_err() {
            if let Some((tail, _)) = grown {
                // The size was not raised: the grown tail goes back to the
                // fragments the size gives it, or it would stay a whole
                // block (counted, and freed only in part) under a size that
                // makes it a tail. The placement's error is the one to tell.
                let _ = self.settle_tail(ino, Some((tail, bs)), metadata);
            }
        }
        placed
    }

    /// Grows block `lbn` of `ino` at `addr` from `have` to `want` bytes
    /// (4.4BSD `ffs_realloccg`): in place if the fragments after it are
    /// free, else to a new run, its contents (in the cache) following it and
    /// the old fragments freed. The whole block is left dirty: the fragments
    /// it gained hold whatever the disk held.
    fn resize_block(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        addr: Daddr,
        have: usize,
        want: usize,
        metadata: bool,
    ) -> Result<()> {
        let fsize = self.frag_size() as usize;
        let (old_frags, new_frags) = ((have / fsize) as u32, (want / fsize) as u32);
        self.load_block_of(ino, lbn, addr, have)?;
        // Pinned: the buffer must stay while `blkpref` and the allocator
        // read indirect blocks, and it moves with the fragments.
        self.with_pinned(Some((ino, lbn)), |fs| {
            fs.grow_in_place_or_move(ino, lbn, addr, old_frags, new_frags, metadata)
        })?;
        self.count_blocks(ino, (want - have) as i64)?;
        if !self.cache.contains((ino, lbn)) {
            let zero = self.cache.zeroed();
            self.cache.insert((ino, lbn), zero, true);
        }
        self.cache.mark_dirty((ino, lbn));
        self.tx.hint(Hint::BlocksAllocated { ino, lbn });
        Ok(())
    }

    /// `ffs_realloccg`: extends the fragments of block `lbn` of `ino` at
    /// `addr` in place, or moves them to a new place and frees the old.
    fn grow_in_place_or_move(
        &mut self,
        ino: Ino,
        lbn: Lbn,
        addr: Daddr,
        old_frags: u32,
        new_frags: u32,
        metadata: bool,
    ) -> Result<()> {
        self.use_space((new_frags - old_frags) as u64, metadata)?;
        let pref = self.blkpref(ino, lbn)?;
        let grown = self.with_frees_released(|fs| {
            fs.alloc.realloccg(addr.get(), old_frags, new_frags, pref.get(), true)
        })?;
        match grown {
            super::Realloc::Extended => self.mode().block_extended(self, addr),
            super::Realloc::Moved(new) => {
                self.mode().block_allocated(self, Daddr::new(new));
                bmap::set_pointer(self, ino, lbn, Daddr::new(new))?;
                self.cache.mark_dirty((ino, lbn));
                self.before_freeing_moved(ino, lbn)?;
                self.free_or_defer(ino, Freed::Frags { start: addr.get(), count: old_frags })?;
            }
        }
        Ok(())
    }

    /// Shrinks the tail of `ino` at `addr` from `have` to `want` bytes,
    /// freeing the fragments past `want` (what they held lies past the end
    /// of the file).
    fn shrink_block(&mut self, ino: Ino, addr: Daddr, have: usize, want: usize) -> Result<()> {
        let fsize = self.frag_size() as usize;
        let keep = (want / fsize) as u64;
        let count = ((have - want) / fsize) as u32;
        self.free_or_defer(ino, Freed::Frags { start: addr.get() + keep, count })?;
        self.count_blocks(ino, -((have - want) as i64))?;
        Ok(())
    }

    /// Puts the tail right after a change of size or of the block map:
    /// `before` is the tail as it was (block, bytes); the block that is the
    /// tail now, and the one that was, get the size the rule gives them.
    pub(super) fn settle_tail(
        &mut self,
        ino: Ino,
        before: Option<(u64, usize)>,
        metadata: bool,
    ) -> Result<()> {
        let bs = self.block_size();
        let size = self.cached_inode(ino)?.attr.size;
        let after = self.tail_of(ino, size)?;
        if before == after {
            return Ok(());
        }
        // The old tail, if it is no longer the tail, becomes whole; the new
        // tail (a whole block until now, unless it is the old one) shrinks
        // or grows to its fragments.
        let mut changes: Vec<(u64, usize, usize)> = Vec::new();
        if let Some((t, bytes)) = before {
            let now = after.filter(|&(a, _)| a == t).map_or(bs, |(_, b)| b);
            changes.push((t, bytes, now));
        }
        if let Some((t, bytes)) = after {
            if before.is_none_or(|(b, _)| b != t) {
                changes.push((t, bs, bytes));
            }
        }
        for (lbn, have, want) in changes {
            let addr = bmap::pointer(self, ino, lbn as Lbn)?;
            if addr.is_none() || have == want {
                continue;
            }
            // Only a whole block is held in part (`may_write_unread`):
            // one that changes size is made whole first.
            self.fill_partial(ino, lbn as Lbn, Some((addr, have)))?;
            if want > have {
                self.resize_block(ino, lbn as Lbn, addr, have, want, metadata)?;
            } else {
                self.shrink_block(ino, addr, have, want)?;
            }
        }
        Ok(())
    }

    /// Puts back the sizes a failed operation raised (see
    /// `Ffs::size_before`), resizing the tails they change.
    pub(super) fn restore_unconfirmed_sizes(&mut self) -> Result<()> {
        let pending: Vec<(Ino, u64)> = self.size_before.drain().collect();
        for (ino, size) in pending {
            let Ok(cached) = self.cached_inode(ino) else { continue };
            let (now, metadata) = (cached.attr.size, !cached.attr.is_reg());
            if now == size {
                continue;
            }
            let before = self.tail_of(ino, now)?;
            self.inode_mut(ino)?.attr.size = size;
            self.settle_tail(ino, before, metadata)?;
        }
        Ok(())
    }

    /// Adds `bytes` (negative: removes) to the space inode `ino` holds.
    fn count_blocks(&mut self, ino: Ino, bytes: i64) -> Result<()> {
        self.leak_scan_touch(ino);
        let inode = self.inode_mut(ino)?;
        inode.blocks = inode.blocks.saturating_add_signed(bytes / 512);
        Ok(())
    }

    /// Takes `frags` fragments of space for a write. File data comes out
    /// of what `reserve_blocks` promised if anything is left of it, and
    /// may not dig into the `minfree` reserve; metadata (indirect blocks,
    /// directories, symbolic links, extended attributes) may (so that a
    /// full disk still lets directories change, as LFS's metadata reserve
    /// does), and leaves the promise to the data it was made for: an
    /// indirect block that took a promised block left the last data
    /// block of an `fallocate` of all the space `statfs` offered with
    /// none. Fails with ENOSPC before anything changes.
    fn use_space(&mut self, frags: u64, metadata: bool) -> Result<()> {
        // Space freed but not yet allocatable is made so, and counted.
        self.with_frees_released(|fs| fs.check_space(frags, metadata))
    }

    /// [`Ffs::use_space`] with what is allocatable now.
    fn check_space(&mut self, frags: u64, metadata: bool) -> Result<()> {
        if metadata {
            if self.alloc.free_space(0) - (self.reserved_frags as i64) < frags as i64 {
                return Err(errno(libc::ENOSPC, "file system full"));
            }
            return Ok(());
        }
        if self.reserved_frags >= frags {
            self.reserved_frags -= frags;
            return Ok(());
        }
        let free = self.alloc.free_space(self.sb.policy.minfree);
        if free - (self.reserved_frags as i64) < frags as i64 {
            return Err(errno(libc::ENOSPC, "file system full"));
        }
        Ok(())
    }

    /// Allocates `bytes` (a whole block or a run of fragments) near `pref`.
    fn allocate(&mut self, ino: Ino, pref: Daddr, bytes: usize, metadata: bool) -> Result<Daddr> {
        let frags = bytes as u64 / self.frag_size();
        self.use_space(frags, metadata)?;
        let addr =
            Daddr::new(self.with_frees_released(|fs| fs.alloc.alloc(ino, pref.get(), frags as u32, true))?);
        self.mode().block_allocated(self, addr);
        Ok(addr)
    }

    /// Where `blkpref` prefers block `lbn` of `ino` (for an indirect block,
    /// the data block its tree starts at, with no pointer array: 4.4BSD
    /// asks `ffs_blkpref(ip, lbn, 0, NULL)` for indirect blocks).
    pub(super) fn blkpref(&mut self, ino: Ino, lbn: Lbn) -> Result<Daddr> {
        if lbn < 0 {
            let first = self.tree.meta_level(lbn).map_or(NDADDR as u64, |(_, first)| first);
            return Ok(Daddr::new(self.alloc.blkpref(ino, first as Lbn, 0, &[])));
        }
        let pref = match self.tree.parent(lbn) {
            Some(Parent::Direct(i)) => {
                let direct = self.cached_inode(ino)?.direct;
                self.alloc.blkpref_with(ino, lbn, i, |k| direct.get(k).map_or(0, |d| d.get()))
            }
            Some(Parent::Meta { meta, index }) => {
                bmap::load_indirect(self, ino, meta)?;
                let block =
                    self.cache.get((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))?;
                let d = Decoder::new(block);
                let tree = self.tree;
                self.alloc
                    .blkpref_with(ino, lbn, index, |k| d.u32(tree.pointer_offset(k)).map_or(0, u64::from))
            }
            _ => 0,
        };
        Ok(Daddr::new(pref))
    }

    /// Frees data blocks `first ..= last` of `ino` and the indirect blocks
    /// left empty, then puts the tail right.
    pub(super) fn free_range(&mut self, ino: Ino, first: u64, last: u64) -> Result<()> {
        let inode = *self.cached_inode(ino)?;
        let before = self.tail_of(ino, inode.attr.size)?;
        bmap::free_range(self, ino, first, last)?;
        if first <= last {
            self.tx.hint(Hint::BlocksFreed { ino, first, last });
        }
        let metadata = !inode.attr.is_reg();
        self.settle_tail(ino, before.filter(|&(t, _)| t < first || t > last), metadata)
    }
}

impl Ffs {
    /// Moves data blocks `from .. from + count` of `ino` to `to ..` by
    /// their pointers (see `StorageManager::move_blocks`). The file must
    /// have no tail: a block in fragments cannot move as a block, so the
    /// caller makes the size whole blocks first and settles the tail with
    /// the final size. Checks for room for the indirect blocks the new
    /// places lack before moving any.
    pub(super) fn move_file_blocks(&mut self, ino: Ino, from: u64, to: u64, count: u64) -> Result<()> {
        let size = self.cached_inode(ino)?.attr.size;
        if !size.is_multiple_of(self.block_size() as u64) {
            return Err(errno(libc::EINVAL, "blocks move only in a file of whole blocks"));
        }
        let moved = bmap::data_blocks(self, ino, from, count)?;
        let mut missing = std::collections::BTreeSet::new();
        for &lbn in &moved {
            for meta in bmap::ancestors(&self.tree, (lbn - from + to) as Lbn) {
                if !missing.contains(&meta) && !bmap::exists(self, ino, meta)? {
                    missing.insert(meta);
                }
            }
        }
        let frags = missing.len() as u64 * self.frags_per_block();
        if self.alloc.free_space(0) - (self.reserved_frags as i64) < frags as i64 {
            return Err(errno(libc::ENOSPC, "file system full"));
        }
        if !bmap::data_blocks(self, ino, to, count)?.is_empty() {
            self.tx.hint(Hint::BlocksFreed { ino, first: to, last: to + count - 1 });
        }
        bmap::move_blocks(self, ino, from, to, count)
    }
}

/// The block map of FFS: blocks and indirect blocks cached by (inode, lbn),
/// each with its disk address from the moment it is written.
impl BlockTree for Ffs {
    fn geometry(&self) -> Geometry {
        self.tree
    }

    fn address_limit(&self) -> u64 {
        self.sb.geometry.total_frags
    }

    fn inode(&mut self, ino: Ino) -> Result<&Inode> {
        Ok(self.cached_inode(ino)?)
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        if ino == IFILE_INO {
            return Err(errno(libc::EPERM, "inode 1 is reserved"));
        }
        self.mark_inode_dirty(ino)?;
        self.cached_inode(ino)
    }

    fn in_memory(&self, ino: Ino, lbn: Lbn) -> bool {
        self.cache.contains((ino, lbn))
    }

    fn first_in_memory(&self, ino: Ino, lbns: std::ops::Range<Lbn>) -> Option<Lbn> {
        self.cache.first_in(ino, lbns)
    }

    fn read_indirect(&mut self, ino: Ino, meta: Lbn, addr: Daddr) -> Result<()> {
        let mut buf = AlignedBytes::zeroed(self.block_size());
        self.read_at(addr, &mut buf)?;
        self.tree.check(&buf, ino, meta, addr)?;
        self.cache.insert((ino, meta), Arc::new(buf), false);
        Ok(())
    }

    fn indirect(&mut self, ino: Ino, meta: Lbn) -> Result<&[u8]> {
        self.cache.get((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))
    }

    fn indirect_mut(&mut self, ino: Ino, meta: Lbn) -> Result<&mut [u8]> {
        self.mode().indirect_changing(self, (ino, meta));
        self.cache.get_or_zeroed_mut((ino, meta)).ok_or_else(|| errno(libc::EIO, "indirect block evicted"))
    }

    /// The integrity mode's hook, while the pointer still names the block
    /// (soft updates writes a directory block with removals waiting on it).
    fn releasing(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        self.mode().block_released(self, ino, lbn)
    }

    /// Returns the block's fragments to its cylinder group (4.4BSD
    /// `ffs_blkfree`) and forgets any cached copy.
    fn release(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        let bytes = self.block_bytes(ino, lbn)?;
        self.cache.remove((ino, lbn));
        if addr.is_some() {
            let frags = (bytes as u64 / self.frag_size()) as u32;
            self.free_or_defer(ino, Freed::Frags { start: addr.get(), count: frags }).map_err(
                |e| match e {
                    Error::Corrupt { why, .. } => Error::corrupt_at(
                        "block pointer",
                        Location::FileBlock { ino, lbn: lbn as u64 },
                        format!("freeing {frags} fragments at {addr}: {why}"),
                    ),
                    other => other,
                },
            )?;
            self.count_blocks(ino, -(bytes as i64))?;
        }
        Ok(())
    }

    /// The cached copy follows the pointer; indirect blocks above the new
    /// place get space now, as `ffs_balloc` gives them. The block keeps
    /// its address.
    fn relocate(&mut self, ino: Ino, from: Lbn, to: Lbn, addr: Daddr) -> Result<Daddr> {
        // Only a whole block is ever held in part.
        let bs = self.block_size();
        self.fill_partial(ino, from, Some((addr, bs)))?;
        if let Some(block) = self.cache.share((ino, from)) {
            let dirty = self.cache.is_dirty((ino, from));
            self.cache.remove((ino, from));
            self.cache.insert((ino, to), block, dirty);
        }
        self.after_relocating(ino, from, to);
        bmap::balloc_above(self, ino, to)?;
        self.tx.hint(Hint::BlocksAllocated { ino, lbn: to });
        Ok(addr)
    }

    /// A whole block at `blkpref`'s choice, now (4.4BSD `ffs_balloc`).
    fn assign(&mut self, ino: Ino, lbn: Lbn, _preference: Daddr) -> Result<Daddr> {
        let pref = self.blkpref(ino, lbn)?;
        let bs = self.block_size();
        // Indirect blocks are metadata; a data block follows its file.
        let metadata = lbn < 0 || self.placing_metadata;
        let addr = self.allocate(ino, pref, bs, metadata)?;
        self.count_blocks(ino, bs as i64)?;
        self.tx.hint(Hint::BlocksAllocated { ino, lbn });
        if is_indirect(lbn) {
            self.write_new_indirect(ino, lbn, addr)?;
        }
        Ok(addr)
    }
}
