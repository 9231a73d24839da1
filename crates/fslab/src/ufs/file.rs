//! File contents by byte offset: read, write, truncate (via setattr),
//! fallocate, SEEK_DATA / SEEK_HOLE, copy_file_range, and symlink targets.
//!
//! Files are sparse: a hole is a block the storage manager has never stored
//! and reads as zeros. Invariant kept by every operation here: every byte
//! past a regular file's size reads as zero, so growing a file (truncate up,
//! a write past the end) never exposes old data.

use super::{Ns, Privilege, SetAttr, TimeSet};
use crate::error::errno;
use crate::format::inode::{Inode, InodeAttr};
use crate::format::{Ino, Lbn};
use crate::storage::{Fetches, StorageManager};
use crate::Result;
use disk::AlignedBytes;
use std::ops::Range;

/// The whole blocks a write covers, each copied out of the write's data
/// into a buffer of its own. A caller that keeps the file system behind a
/// lock makes these copies before it takes the lock, so that copying a
/// large write overlaps whatever holds the lock meanwhile (a segment being
/// written behind); the storage manager then keeps the buffers instead of
/// copying again ([`StorageManager::write_whole_block`]).
#[derive(Debug, Default)]
pub struct BlockCopies {
    block_size: u64,
    first_lbn: u64,
    blocks: Vec<Option<AlignedBytes>>,
}

impl BlockCopies {
    /// Copies of the whole `block_size`-byte blocks that `data`, written
    /// at `offset`, covers.
    pub fn of(offset: u64, data: &[u8], block_size: u32) -> BlockCopies {
        let bs = u64::from(block_size);
        let Some(first_lbn) = offset.checked_next_multiple_of(bs).map(|start| start / bs) else {
            return BlockCopies::default();
        };
        let skip = usize::try_from(first_lbn * bs - offset).unwrap_or(usize::MAX);
        let blocks = match data.get(skip..) {
            Some(rest) => rest.chunks_exact(bs as usize).map(|b| Some(AlignedBytes::copy_of(b))).collect(),
            None => Vec::new(),
        };
        BlockCopies { block_size: bs, first_lbn, blocks }
    }

    /// The copy of block `lbn` of a file with `block_size`-byte blocks,
    /// if one was made.
    pub(super) fn take(&mut self, lbn: u64, block_size: u64) -> Option<AlignedBytes> {
        if block_size != self.block_size {
            return None;
        }
        let i = usize::try_from(lbn.checked_sub(self.first_lbn)?).ok()?;
        self.blocks.get_mut(i)?.take()
    }
}

/// `fallocate` modes this layer implements (Linux `FALLOC_FL_*`).
const KEEP_SIZE: i32 = libc::FALLOC_FL_KEEP_SIZE;
const PUNCH_HOLE: i32 = libc::FALLOC_FL_PUNCH_HOLE;
const ZERO_RANGE: i32 = libc::FALLOC_FL_ZERO_RANGE;
pub(super) const COLLAPSE_RANGE: i32 = libc::FALLOC_FL_COLLAPSE_RANGE;
pub(super) const INSERT_RANGE: i32 = libc::FALLOC_FL_INSERT_RANGE;

/// What a fallocate does about space before it changes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Room {
    /// Makes sure of room for every block it writes (or refuses, having
    /// changed nothing), then writes them.
    Make,
    /// Makes sure of it and stops there: the first stage of a call made in
    /// steps (`FileSystem::fallocate_by`), which holds the file system
    /// throughout, so that nothing takes the room between its steps.
    CheckOnly,
    /// A step of such a call: its room was made sure of for the whole
    /// range (`StorageManager::reserve_promised_blocks`).
    Made,
}

impl<S: StorageManager> Ns<'_, S> {
    fn bs(&self) -> u64 {
        self.s.block_size() as u64
    }

    /// Inode `ino`, which must be a regular file: EISDIR for a directory,
    /// EINVAL for anything else.
    pub(super) fn regular(&mut self, ino: Ino) -> Result<Inode> {
        let inode = self.s.vget(ino)?;
        if inode.attr.is_dir() {
            return Err(errno(libc::EISDIR, "is a directory"));
        }
        if !inode.attr.is_reg() {
            return Err(errno(libc::EINVAL, "not a regular file"));
        }
        Ok(inode)
    }

    /// Whether data block `lbn` of `ino` is stored (is not a hole).
    fn has_data(&mut self, ino: Ino, lbn: u64) -> Result<bool> {
        Ok(self.s.next_data(ino, lbn)? == Some(lbn))
    }

    pub(super) fn setattr(&mut self, ino: Ino, change: &SetAttr) -> Result<Inode> {
        let mut attr = self.s.vget(ino)?.attr;
        let now = self.s.now();
        if let Some(size) = change.size {
            if attr.is_dir() {
                return Err(errno(libc::EISDIR, "truncate of a directory"));
            }
            if !attr.is_reg() {
                return Err(errno(libc::EINVAL, "truncate of a special file"));
            }
            self.truncate(ino, &mut attr, size)?;
            attr.mtime = now;
            remove_privileges(&mut attr, change.who);
        }
        // A chown clears them even when the owner stays the same, as
        // Linux's chown_common() asks notify_change() to.
        if change.uid.is_some() || change.gid.is_some() || change.kill_privileges {
            chown_privileges(&mut attr, change.who);
        }
        if let Some(mode) = change.mode {
            attr.mode = (attr.mode & crate::format::inode::kind::MASK) | (mode & 0o7777);
        }
        if let Some(uid) = change.uid {
            attr.uid = uid;
        }
        if let Some(gid) = change.gid {
            attr.gid = gid;
        }
        let resolve = |t: TimeSet| match t {
            TimeSet::Now => now,
            TimeSet::At(t) => t,
        };
        if let Some(t) = change.atime {
            attr.atime = resolve(t);
        }
        if let Some(t) = change.mtime {
            attr.mtime = resolve(t);
        }
        if let Some(t) = change.btime {
            attr.btime = t;
        }
        if let Some(flags) = change.flags {
            attr.flags = flags;
        }
        attr.ctime = change.ctime.unwrap_or(now);
        self.s.update(ino, &attr)?;
        self.s.vget(ino)
    }

    /// Sets the size of `ino` to `size` in `attr` (the caller stores it):
    /// shrinking frees the blocks past the end, and never fails for want
    /// of space; growing zeroes what lay past the old end in its last block
    /// ([`Ns::zero_past_end`]) and leaves a hole.
    fn truncate(&mut self, ino: Ino, attr: &mut InodeAttr, size: u64) -> Result<()> {
        if size > self.s.max_file_size() {
            return Err(errno(libc::EFBIG, "size past the largest file"));
        }
        let bs = self.bs();
        if size < attr.size {
            self.s.free_blocks(ino, size.div_ceil(bs), u64::MAX)?;
            // Tidy, not needed ([`Ns::zero_past_end`]): a full disk may
            // have no room for it, and a truncate must still work there.
            // Only up to the old end: a write past it would make FFS grow a
            // fragment tail it is about to shrink.
            let tail = (size % bs) as usize;
            let old_end = (attr.size - size / bs * bs).min(bs) as usize;
            if tail != 0 && old_end > tail && self.has_data(ino, size / bs)? {
                let zeros = vec![0u8; old_end - tail];
                match self.s.write_block(ino, (size / bs) as Lbn, tail, &zeros) {
                    Err(e) if e.errno() == libc::ENOSPC => {}
                    other => other?,
                }
            }
        } else {
            self.zero_past_end(ino, attr.size, size)?;
        }
        attr.size = size;
        Ok(())
    }

    /// Zeroes the bytes of a file from its end `size` up to `upto` or the
    /// end of the block holding `size`, whichever comes first. Bytes past
    /// the end of a file are not kept zero: a truncate on a full disk frees
    /// the blocks past the new end and may find no room to zero the rest
    /// of the new last block (a new block, in a log). Freeing first and
    /// failing on the tail after used to leave a file with its old size and
    /// zeros where its data had been. So whatever makes a file longer —
    /// write, truncate, fallocate, copy_file_range — calls this first, and
    /// fails, having changed nothing, if even that finds no room.
    pub(super) fn zero_past_end(&mut self, ino: Ino, size: u64, upto: u64) -> Result<()> {
        let bs = self.bs();
        let stop = upto.min((size / bs + 1).saturating_mul(bs));
        if size.is_multiple_of(bs) || stop <= size || !self.has_data(ino, size / bs)? {
            return Ok(());
        }
        let zeros = vec![0u8; (stop - size) as usize];
        self.s.write_block(ino, (size / bs) as Lbn, (size % bs) as usize, &zeros)
    }

    pub(super) fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>> {
        let attr = self.s.vget(ino)?.attr;
        if !attr.is_symlink() {
            return Err(errno(libc::EINVAL, "not a symbolic link"));
        }
        let mut block = vec![0u8; self.bs() as usize];
        if attr.size > block.len() as u64 {
            return Err(crate::Error::corrupt_at(
                "symlink",
                crate::error::Location::Inode(ino),
                format!("size {} exceeds a block", attr.size),
            ));
        }
        self.s.read_block(ino, 0, &mut block)?;
        block.truncate(attr.size as usize);
        Ok(block)
    }

    pub(super) fn read(&mut self, ino: Ino, offset: u64, len: usize) -> Result<Vec<u8>> {
        match self.read_later(ino, offset, len, false)? {
            ReadStart::Done(data) => Ok(data),
            ReadStart::Pending(_) => Err(errno(libc::EIO, "a read left transfers undone unasked")),
        }
    }

    /// Reads up to `len` bytes at `offset`; with `later`, the storage
    /// manager may leave device transfers to the caller
    /// ([`StorageManager::read_blocks_later`]).
    pub(super) fn read_later(&mut self, ino: Ino, offset: u64, len: usize, later: bool) -> Result<ReadStart> {
        let size = self.regular(ino)?.attr.size;
        if offset >= size {
            return Ok(ReadStart::Done(Vec::new()));
        }
        let end = size.min(offset.saturating_add(len as u64));
        let bs = self.bs();
        // Whole blocks covering the range in one call, so the storage
        // manager can read neighbours together; then the range is cut out.
        let first = offset / bs;
        let blocks = end.div_ceil(bs) - first;
        let mut buf = vec![0u8; (blocks * bs) as usize];
        let within = (offset - first * bs) as usize;
        let range = within..within + (end - offset) as usize;
        if later {
            if let Some(fetches) = self.s.read_blocks_later(ino, first as Lbn, &mut buf)? {
                let asked = (offset, len);
                return Ok(ReadStart::Pending(PendingRead {
                    ino,
                    asked,
                    buf,
                    range,
                    fetches,
                    current: false,
                }));
            }
        } else {
            self.s.read_blocks(ino, first as Lbn, &mut buf)?;
        }
        Ok(ReadStart::Done(cut(buf, range)))
    }

    /// The blocks a write of `len` bytes at `offset` changes only in part
    /// (and so must read first) whose device transfers the storage manager
    /// left undone: none when they are cached, holes, or past the end.
    pub(super) fn write_edges_to_fetch(
        &mut self,
        ino: Ino,
        offset: u64,
        len: usize,
    ) -> Result<Vec<PendingRead>> {
        let bs = self.bs();
        let end = offset.saturating_add(len as u64);
        let first = offset / bs * bs;
        let mut edges = Vec::with_capacity(2);
        if len > 0 && (offset != first || end < first + bs) {
            edges.push(first);
        }
        let last = end / bs * bs;
        if len > 0 && end != last && last != first {
            edges.push(last);
        }
        let mut pending = Vec::new();
        for start in edges {
            // The part of the block the write covers.
            let (from, to) = (offset.max(start), end.min(start + bs));
            let lbn =
                Lbn::try_from(start / bs).map_err(|_| errno(libc::EFBIG, "write past the largest file"))?;
            if self.s.writes_part_unread(ino, lbn, (from - start) as usize, (to - from) as usize)? {
                continue;
            }
            if let ReadStart::Pending(read) = self.read_later(ino, start, bs as usize, true)? {
                pending.push(read);
            }
        }
        Ok(pending)
    }

    /// Writes what it can: a failure after some bytes were stored returns
    /// the short count, and the size covers only what was stored.
    pub(super) fn write(
        &mut self,
        ino: Ino,
        offset: u64,
        data: &[u8],
        mut copies: BlockCopies,
        who: Privilege,
    ) -> Result<usize> {
        let mut attr = self.regular(ino)?.attr;
        if data.is_empty() {
            return Ok(0);
        }
        let max = self.s.max_file_size();
        if offset >= max {
            return Err(errno(libc::EFBIG, "write past the largest file"));
        }
        let len = (data.len() as u64).min(max - offset) as usize;
        self.zero_past_end(ino, attr.size, offset)?;
        let bs = self.bs();
        let mut done = 0usize;
        let mut failure = None;
        while done < len {
            let at = offset + done as u64;
            let within = (at % bs) as usize;
            let n = (bs as usize - within).min(len - done);
            let lbn = at / bs;
            let stored = match copies.take(lbn, bs) {
                Some(block) if within == 0 && n == bs as usize => {
                    self.s.write_whole_block(ino, lbn as Lbn, block)
                }
                _ => self.s.write_block(ino, lbn as Lbn, within, &data[done..done + n]),
            };
            match stored {
                Ok(()) => done += n,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if done == 0 {
            if let Some(e) = failure {
                return Err(e);
            }
        }
        let now = self.s.now();
        attr.size = attr.size.max(offset + done as u64);
        attr.mtime = now;
        attr.ctime = now;
        remove_privileges(&mut attr, who);
        self.s.update(ino, &attr)?;
        Ok(done)
    }

    pub(super) fn fallocate(
        &mut self,
        ino: Ino,
        offset: u64,
        len: u64,
        mode: i32,
        who: Privilege,
        room: Room,
    ) -> Result<()> {
        let allocate = mode & !KEEP_SIZE == 0;
        let punch = mode == PUNCH_HOLE | KEEP_SIZE;
        let zero = mode & !KEEP_SIZE == ZERO_RANGE;
        if mode == COLLAPSE_RANGE || mode == INSERT_RANGE {
            return self.shift_range(ino, offset, len, mode, who);
        }
        if mode & (COLLAPSE_RANGE | INSERT_RANGE) != 0 {
            // As Linux: these two take no other flag.
            return Err(errno(libc::EINVAL, "collapse and insert combined with other flags"));
        }
        if !(allocate || punch || zero) {
            return Err(errno(libc::EOPNOTSUPP, "fallocate mode not supported"));
        }
        let mut attr = self.regular(ino)?.attr;
        if len == 0 {
            return Err(errno(libc::EINVAL, "fallocate of zero bytes"));
        }
        let end = offset.checked_add(len).ok_or(errno(libc::EFBIG, "range overflows"))?;
        if end > self.s.max_file_size() {
            return Err(errno(libc::EFBIG, "range past the largest file"));
        }
        // Room for every block the call writes is made sure of before
        // anything changes, so a refused call changes nothing. (A
        // ZERO_RANGE on a full disk punched the range and only then found
        // no room for its zero blocks: ENOSPC, with the range's data gone.)
        let edges = if punch || zero { self.punch_edges(ino, attr.size, offset, end)? } else { Vec::new() };
        let mut holes = if allocate || zero { self.holes(ino, offset, end)? } else { Vec::new() };
        if zero {
            let bs = self.bs();
            holes.push(offset.div_ceil(bs)..end / bs);
            holes = merged(holes);
        }
        // Counted, not listed block by block: a range of terabytes is
        // refused here for want of space, not by running out of memory.
        let hole_blocks: u64 = holes.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        let grows = !punch && mode & KEEP_SIZE == 0 && end > attr.size;
        let past_end = usize::from(grows && !attr.size.is_multiple_of(self.bs()));
        // Punching a hole only frees, but for its two partial end blocks,
        // which the storage manager let the operation dirty when it began
        // (on a full disk too, since it frees space): nothing to reserve.
        // A zeroed range's partial end blocks take new space only where
        // rewriting a block does.
        if !punch {
            let rewrites = if self.s.rewrites_take_space() { edges.len() } else { 0 };
            let blocks = (rewrites + past_end) as u64 + hole_blocks;
            match room {
                Room::Made => self.s.reserve_promised_blocks(blocks)?,
                Room::Make | Room::CheckOnly => self.s.reserve_blocks(blocks)?,
            }
        }
        if room == Room::CheckOnly {
            return Ok(());
        }
        if grows {
            self.zero_past_end(ino, attr.size, end)?;
        }
        if punch || zero {
            self.punch(ino, offset, end, &edges)?;
        }
        let zeros = vec![0u8; self.bs() as usize];
        for lbn in holes.into_iter().flatten() {
            self.s.write_block(ino, lbn as Lbn, 0, &zeros)?;
        }
        let now = self.s.now();
        if !punch && mode & KEEP_SIZE == 0 && end > attr.size {
            attr.size = end;
        }
        // Every mode changes both times, as ext4's and tmpfs's fallocate
        // do (file_modified()), growing the file or not: FUSE's inodes
        // carry S_NOCMTIME, so the kernel leaves them to fslab.
        attr.mtime = now;
        attr.ctime = now;
        // As Linux's file_modified() in fallocate(2): with FUSE's
        // HANDLE_KILLPRIV the kernel leaves this to the file system.
        remove_privileges(&mut attr, who);
        self.s.update(ino, &attr)
    }

    /// The runs of blocks of `offset..end` that hold no data: where a
    /// preallocation stores zero blocks, so the range can later be
    /// written without ENOSPC.
    fn holes(&mut self, ino: Ino, offset: u64, end: u64) -> Result<Vec<Range<u64>>> {
        let bs = self.bs();
        let (first, last) = (offset / bs, (end - 1) / bs);
        let mut holes = Vec::new();
        let mut lbn = first;
        while lbn <= last {
            match self.s.next_data(ino, lbn)? {
                Some(d) if d == lbn => lbn += 1,
                Some(d) => {
                    holes.push(lbn..d.min(last + 1));
                    lbn = d;
                }
                None => {
                    holes.push(lbn..last + 1);
                    break;
                }
            }
        }
        Ok(holes)
    }

    /// The byte ranges, each inside one block, that a punch of
    /// `offset..end` zeroes in place: the partial blocks at its ends,
    /// where they hold data inside the file (of `size` bytes).
    fn punch_edges(&mut self, ino: Ino, size: u64, offset: u64, end: u64) -> Result<Vec<(u64, u64)>> {
        let bs = self.bs();
        let (first_whole, end_whole) = (offset.div_ceil(bs), end / bs);
        let mut ranges = Vec::new();
        if first_whole > end_whole {
            // The range lies inside one block.
            ranges.push((offset, end));
        } else {
            if !offset.is_multiple_of(bs) {
                ranges.push((offset, first_whole * bs));
            }
            if !end.is_multiple_of(bs) {
                ranges.push((end_whole * bs, end));
            }
        }
        let mut edges = Vec::new();
        for (from, to) in ranges {
            let to = to.min(size.max(from));
            if to > from && self.has_data(ino, from / bs)? {
                edges.push((from, to));
            }
        }
        Ok(edges)
    }

    /// Makes `offset..end` read as zeros: whole blocks become holes, and
    /// the partial blocks `edges` ([`Ns::punch_edges`]) are zeroed.
    fn punch(&mut self, ino: Ino, offset: u64, end: u64, edges: &[(u64, u64)]) -> Result<()> {
        let bs = self.bs();
        let (first_whole, end_whole) = (offset.div_ceil(bs), end / bs);
        if first_whole < end_whole {
            self.s.free_blocks(ino, first_whole, end_whole - 1)?;
        }
        for &(from, to) in edges {
            let zeros = vec![0u8; (to - from) as usize];
            self.s.write_block(ino, (from / bs) as Lbn, (from % bs) as usize, &zeros)?;
        }
        Ok(())
    }

    pub(super) fn lseek(&mut self, ino: Ino, offset: i64, whence: i32) -> Result<u64> {
        let size = self.s.vget(ino)?.attr.size;
        if whence != libc::SEEK_DATA && whence != libc::SEEK_HOLE {
            return Err(errno(libc::EINVAL, "lseek supports only SEEK_DATA and SEEK_HOLE here"));
        }
        // As Linux's iomap_seek_data / iomap_seek_hole: a negative offset
        // lies outside the file, like one past its end.
        let offset = u64::try_from(offset).map_err(|_| errno(libc::ENXIO, "negative offset"))?;
        if offset >= size {
            return Err(errno(libc::ENXIO, "offset at or past the end of the file"));
        }
        let bs = self.bs();
        if whence == libc::SEEK_DATA {
            return match self.s.next_data(ino, offset / bs)? {
                Some(lbn) if lbn.saturating_mul(bs) < size => Ok(offset.max(lbn * bs)),
                _ => Err(errno(libc::ENXIO, "no data past the offset")),
            };
        }
        // SEEK_HOLE: the first block at or after the offset that next_data skips.
        let mut lbn = offset / bs;
        while lbn * bs < size {
            if !self.has_data(ino, lbn)? {
                return Ok(offset.max(lbn * bs));
            }
            lbn += 1;
        }
        Ok(size)
    }

    /// Copies block by block; a hole in the source stays a hole (or zeros,
    /// where the destination block is only partly covered).
    pub(super) fn copy_file_range(
        &mut self,
        from: Ino,
        from_offset: u64,
        to: Ino,
        to_offset: u64,
        len: u64,
        who: Privilege,
    ) -> Result<u64> {
        let src_size = self.regular(from)?.attr.size;
        let mut dst_attr = self.regular(to)?.attr;
        if copy_overlaps(from, from_offset, to, to_offset, len) {
            return Err(errno(libc::EINVAL, "overlapping ranges in one file"));
        }
        let len = len.min(src_size.saturating_sub(from_offset));
        if len == 0 {
            return Ok(0);
        }
        // As Linux's generic_write_check_limits(): a copy that would pass
        // the largest file is cut short there; only one that starts there
        // is refused.
        let max = self.s.max_file_size();
        if to_offset >= max {
            return Err(errno(libc::EFBIG, "copy past the largest file"));
        }
        let len = len.min(max - to_offset);
        self.zero_past_end(to, dst_attr.size, to_offset)?;
        let bs = self.bs();
        let mut block = vec![0u8; bs as usize];
        let mut cached: Option<u64> = None;
        let mut done = 0u64;
        let mut failure = None;
        while done < len {
            let (src_at, dst_at) = (from_offset + done, to_offset + done);
            let n = (bs - src_at % bs).min(bs - dst_at % bs).min(len - done);
            let (src_lbn, dst_lbn) = (src_at / bs, dst_at / bs);
            let step = (|| -> Result<()> {
                if self.has_data(from, src_lbn)? {
                    if cached != Some(src_lbn) {
                        self.s.read_block(from, src_lbn as Lbn, &mut block)?;
                        cached = Some(src_lbn);
                    }
                    let within = (src_at % bs) as usize;
                    self.s.write_block(
                        to,
                        dst_lbn as Lbn,
                        (dst_at % bs) as usize,
                        &block[within..within + n as usize],
                    )
                } else if n == bs {
                    self.s.free_blocks(to, dst_lbn, dst_lbn)
                } else if self.has_data(to, dst_lbn)? {
                    let zeros = vec![0u8; n as usize];
                    self.s.write_block(to, dst_lbn as Lbn, (dst_at % bs) as usize, &zeros)
                } else {
                    Ok(())
                }
            })();
            if let Err(e) = step {
                failure = Some(e);
                break;
            }
            done += n;
        }
        if done == 0 {
            if let Some(e) = failure {
                return Err(e);
            }
        }
        let now = self.s.now();
        dst_attr.size = dst_attr.size.max(to_offset + done);
        dst_attr.mtime = now;
        dst_attr.ctime = now;
        remove_privileges(&mut dst_attr, who);
        self.s.update(to, &dst_attr)?;
        Ok(done)
    }
}

/// Clears set-user-ID and set-group-ID as Linux does when a regular file
/// is written, truncated, or changed by fallocate(2) or copy_file_range(2)
/// (`file_remove_privs` → `setattr_should_drop_suidgid`): nothing for a
/// caller with `CAP_FSETID`; otherwise set-user-ID always, and
/// set-group-ID where group-execute is set or the caller is outside the
/// file's group. The FUSE adapter tells the kernel fslab does this
/// (`FUSE_HANDLE_KILLPRIV_V2`, with `FileSystem::drop_capability`), which
/// spares a `getxattr("security.capability")` round trip on every write
/// after a file's first.
pub(super) fn remove_privileges(attr: &mut InodeAttr, who: Privilege) {
    if who.fsetid || !attr.is_reg() {
        return;
    }
    attr.mode &= !libc::S_ISUID;
    if attr.mode & libc::S_IXGRP != 0 || !who.in_group {
        attr.mode &= !libc::S_ISGID;
    }
}

/// Clears set-user-ID and set-group-ID as Linux's `chown_common` does on
/// any change of owner or group of a non-directory, even to the same ids
/// and even by root: set-user-ID always; set-group-ID where group-execute
/// is set, or where the caller has neither `CAP_FSETID` nor membership of
/// the file's group (`setattr_should_drop_sgid`).
pub(super) fn chown_privileges(attr: &mut InodeAttr, who: Privilege) {
    if attr.is_dir() {
        return;
    }
    attr.mode &= !libc::S_ISUID;
    if attr.mode & libc::S_IXGRP != 0 || !(who.in_group || who.fsetid) {
        attr.mode &= !libc::S_ISGID;
    }
}

/// Whether a copy of `len` bytes from `from_offset` of `from` to
/// `to_offset` of `to` reads and writes the same bytes of one file.
pub(super) fn copy_overlaps(from: Ino, from_offset: u64, to: Ino, to_offset: u64, len: u64) -> bool {
    from == to && from_offset < to_offset.saturating_add(len) && to_offset < from_offset.saturating_add(len)
}

/// `buf` cut to `range`.
fn cut(mut buf: Vec<u8>, range: std::ops::Range<usize>) -> Vec<u8> {
    buf.truncate(range.end);
    buf.drain(..range.start);
    buf
}

/// How a read begun under the file system's lock went
/// ([`FileSystem::read_begin`](super::FileSystem::read_begin)).
pub enum ReadStart {
    /// The bytes read: the cache held them, or the device was read at once.
    Done(Vec<u8>),
    /// Device transfers are left to the caller, to run without the lock.
    Pending(PendingRead),
}

/// A read whose device transfers run without the file system's lock
/// (module `storage::fetch`): [`PendingRead::fetch`], then, under the lock
/// again, [`FileSystem::adopt_read`](super::FileSystem::adopt_read) to
/// cache what is worth caching.
pub struct PendingRead {
    ino: Ino,
    /// The offset and length the read asked for.
    asked: (u64, usize),
    /// Whole blocks: the cached ones and holes filled in, the rest to fetch.
    buf: Vec<u8>,
    /// The bytes asked for, within `buf`.
    range: std::ops::Range<usize>,
    fetches: Fetches,
    /// The transfers ran and read what the file held.
    current: bool,
}

impl PendingRead {
    /// Runs the device transfers, without the lock. Returns false when a
    /// write submitted since the read began may have changed what they
    /// read: the read must then be made again under the lock.
    pub fn fetch(&mut self) -> Result<bool> {
        self.current = self.fetches.run(&mut self.buf)?;
        Ok(self.current)
    }

    /// Offers the storage manager the blocks fetched, to cache.
    pub(super) fn adopt<S: StorageManager>(&self, storage: &mut S) {
        if self.current {
            storage.adopt_fetched(self.ino, &self.fetches, &self.buf);
        }
    }

    /// The read asked for: the inode, the offset and the length (to make
    /// it again under the lock when [`PendingRead::fetch`] says no).
    pub fn request(&self) -> (Ino, u64, usize) {
        (self.ino, self.asked.0, self.asked.1)
    }

    /// The bytes asked for (once [`PendingRead::fetch`] returned true).
    pub fn into_data(self) -> Vec<u8> {
        cut(self.buf, self.range)
    }
}

/// `runs` sorted, with those that overlap or touch joined.
fn merged(mut runs: Vec<Range<u64>>) -> Vec<Range<u64>> {
    runs.retain(|r| r.start < r.end);
    runs.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(runs.len());
    for r in runs {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}
