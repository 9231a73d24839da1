//! Read-only access for tools that check an image without mounting it
//! (`fslab fsck`), plus the one repair fsck cannot make through the
//! namespace: setting a segment's live-byte count.
//!
//! * [`superblock_copies`] — every superblock copy where the file system puts
//!   them, each with its validation result (mount keeps only the good ones).
//! * [`superblock_segments`] — where mkfs puts the copies for a segment count.
//! * [`Lfs::repair_set_live_bytes`] — overwrite one segment usage entry's live
//!   bytes; the next checkpoint writes it.
//! * [`Lfs::repair_set_summary_counts`], [`Lfs::repair_rewrite_inode`],
//!   [`Lfs::repair_rebuild_free_list`], [`Lfs::repair_leave_segment`],
//!   [`Lfs::repair_clear_inode`], [`Lfs::repair_set_blocks`],
//!   [`Lfs::repair_clear_pointer`], [`Lfs::repair_rewrite_block`] — the other
//!   repairs below the namespace, each made in memory right after mount and
//!   written by the segment writer and the unmount's checkpoint.

use super::layout::{Superblock, MAX_SUPERBLOCKS, SEGUSE_CLEAN, SUPERBLOCK_BYTES};
use super::Lfs;
use crate::error::{errno, Error, Location};
use crate::format::inode::Inode;
use crate::format::{Ino, Lbn, IFILE_INO};
use crate::Result;
use disk::BlockDevice;

/// One place a superblock copy should be, and what was found there.
#[derive(Debug)]
pub struct SuperblockCopy {
    /// Byte offset on the device.
    pub offset: u64,
    /// The decoded copy, or why it is unusable.
    pub result: Result<Superblock>,
}

/// The segments whose first block holds a superblock copy on a file system
/// of `nsegments` segments: `0, N/3, 2N/3, N−1`, duplicates dropped (the
/// rule mkfs follows, `docs/FORMAT.md` "Superblock").
pub fn superblock_segments(nsegments: u64) -> Vec<u64> {
    let mut segs = Vec::with_capacity(MAX_SUPERBLOCKS);
    for s in [0, nsegments / 3, 2 * nsegments / 3, nsegments.saturating_sub(1)] {
        if !segs.contains(&s) {
            segs.push(s);
        }
    }
    segs
}

fn read_copy(dev: &dyn BlockDevice, offset: u64) -> Result<Superblock> {
    if offset.checked_add(SUPERBLOCK_BYTES as u64).is_none_or(|end| end > dev.size()) {
        return Err(Error::corrupt_at("superblock", Location::Byte(offset), "past the end of the device"));
    }
    let mut buf = vec![0u8; SUPERBLOCK_BYTES];
    dev.read_at(offset, &mut buf)?;
    Superblock::decode(&buf, offset)
}

/// Every place a superblock copy should be, with what is there. The first
/// entry is always offset 0. When copy 0 is valid, the others are the ones it
/// lists; otherwise they are looked for where each possible segment size
/// (64 KiB … 1 GiB) would have put them, and only places holding the
/// superblock magic are returned (the others are just data).
pub fn superblock_copies(dev: &dyn BlockDevice) -> Vec<SuperblockCopy> {
    let mut copies = vec![SuperblockCopy { offset: 0, result: read_copy(dev, 0) }];
    let listed: Option<Vec<u64>> = match &copies[0].result {
        Ok(sb) => Some((1..sb.ncopies as usize).map(|i| sb.copy_offset(i)).collect()),
        Err(_) => None,
    };
    match listed {
        Some(offsets) => {
            for offset in offsets {
                copies.push(SuperblockCopy { offset, result: read_copy(dev, offset) });
            }
        }
        None => {
            let mut seen = vec![0u64];
            for shift in 16..=30u32 {
                let ss = 1u64 << shift;
                let n = dev.size() / ss;
                if n < 8 {
                    continue;
                }
                for seg in superblock_segments(n).into_iter().skip(1) {
                    let offset = seg * ss;
                    if seen.contains(&offset) {
                        continue;
                    }
                    seen.push(offset);
                    let mut head = [0u8; 8];
                    let has_magic = dev.read_at(offset, &mut head).is_ok() && Superblock::has_magic(&head);
                    if has_magic {
                        copies.push(SuperblockCopy { offset, result: read_copy(dev, offset) });
                    }
                }
            }
        }
    }
    copies
}

impl Lfs {
    /// fsck's repair of the segment usage table: sets segment `seg`'s live
    /// bytes to `bytes`, as counted by walking every live inode and block.
    /// Later writes adjust it as usual; the next checkpoint makes it durable.
    /// Call right after mount, before anything is written, so that the
    /// count describes the state it was computed from.
    ///
    /// A segment whose table said nothing was live was made clean by the
    /// mount (`reclaim_empty_segments`), and a log head may have chosen it
    /// to go on in: with live bytes it gets back its entry as the
    /// checkpoint had it, dirty, and the heads choose another, so that the
    /// repair's own writes cannot land on what is live.
    pub fn repair_set_live_bytes(&mut self, seg: u64, bytes: u32) -> Result<()> {
        let before = self.mount.reclaimed.iter().find(|(s, _)| *s == seg).map(|(_, entry)| *entry);
        let reclaimed = self
            .ifile
            .tables
            .update_segment(seg, |s| {
                let reclaimed = bytes > 0 && s.flags & SEGUSE_CLEAN != 0;
                if let (true, Some(before)) = (reclaimed, before) {
                    *s = before;
                }
                s.live_bytes = bytes;
                reclaimed && before.is_some()
            })
            .ok_or_else(|| {
                Error::corrupt_at("segment usage table", Location::Segment(seg), "no such segment")
            })?;
        if reclaimed {
            self.choose_next_segments_again(|h| h.next_segment == seg);
        }
        Ok(())
    }

    /// fsck's repair of a segment's counts of summaries and inode blocks
    /// (bookkeeping the cleaner reads): sets them to what a walk of the
    /// segment's log found, where a summary that cannot be read ended the
    /// walk early. Call right after mount, as
    /// [`repair_set_live_bytes`](Self::repair_set_live_bytes).
    pub fn repair_set_summary_counts(&mut self, seg: u64, nsums: u32, ninos: u32) -> Result<()> {
        self.ifile
            .tables
            .update_segment(seg, |s| {
                s.nsums = nsums;
                s.ninos = ninos;
            })
            .ok_or_else(|| {
                Error::corrupt_at("segment usage table", Location::Segment(seg), "no such segment")
            })
    }

    /// fsck's repair of an inode the log does not confirm where it is — its
    /// slot fails only its checksum, or the summary of its partial segment
    /// is lost: takes the slot as it is into the inode cache, marked to be
    /// written, so the next segment write stores it sealed in a partial
    /// segment whose summary names it. The checker has checked its fields
    /// as any inode's.
    pub fn repair_rewrite_inode(&mut self, ino: Ino) -> Result<()> {
        use crate::format::inode::INODE_SIZE;
        if ino == IFILE_INO {
            // Written at every checkpoint, the repair's unmount's too.
            return Ok(());
        }
        let entry = self.imap_entry(ino)?.ok_or_else(|| errno(libc::ENOENT, "no such inode number"))?;
        if entry.daddr.is_none() {
            return Err(errno(libc::ENOENT, "inode is not allocated"));
        }
        let mut block = vec![0u8; self.block_size];
        self.read_addr(entry.daddr, &mut block)?;
        let inode = block
            .chunks_exact(INODE_SIZE)
            .filter_map(Inode::decode_unsealed)
            .find(|i| i.ino == ino)
            .ok_or_else(|| Error::corrupt("inode block", entry.daddr, format!("inode {ino} is not in it")))?;
        self.inodes.remove(ino);
        self.inodes.insert(inode, true);
        self.mark_inode_dirty(ino)
    }

    /// fsck's repair of an inode that cannot be found where the inode map
    /// says: frees its number (the version bumped, so the blocks of the
    /// file it was are dead to the cleaner). Its blocks stay counted live
    /// until the next check lowers the counts; the entries naming it are
    /// removed then, as entries naming a free inode. The free list is
    /// threaded again, lowest number first.
    pub fn repair_clear_inode(&mut self, ino: Ino) -> Result<()> {
        let entry = self.imap_entry(ino)?.ok_or_else(|| errno(libc::ENOENT, "no such inode number"))?;
        if entry.daddr.is_none() || ino == IFILE_INO {
            return Err(errno(libc::ENOENT, "inode is not allocated"));
        }
        for key in self.cache.keys_in(ino, Lbn::MIN..=Lbn::MAX) {
            self.cache.remove(key);
        }
        self.inodes.remove(ino);
        self.ifile.tables.free_inode(ino)?;
        // Lowest first, as mkfs leaves it: a root cleared here is made
        // again (`create_root`) only under its own number.
        self.rebuild_free_list()
    }

    /// fsck's repair of a block pointer the log cannot back (off the file
    /// system, into a block the log gave to something else, or to an
    /// indirect block that is not this file's): block `lbn` of `ino`
    /// becomes a hole, and so does everything an indirect block there
    /// reached. The blocks it held stay counted, in the inode and in their
    /// segments, until the next check lowers the counts: a count too high
    /// only keeps a segment from being cleaned.
    pub fn repair_clear_pointer(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        self.cached_inode(ino)?;
        self.cache.remove((ino, lbn));
        crate::bmap::set_pointer(self, ino, lbn, crate::format::Daddr::NONE)
    }

    /// fsck's repair of a block the log no longer confirms (the summary of
    /// its partial segment is lost) though the file points at it: block
    /// `lbn` of `ino` is read as it is and written again at the log's head
    /// with the indirect blocks above it, in a partial segment whose
    /// summary names it; its old place is counted dead (no-overwrite,
    /// 1993 paper §2.1: the copy on disk is never written over).
    pub fn repair_rewrite_block(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        if ino == IFILE_INO {
            // The ifile's blocks are written from its tables at the next
            // checkpoint, which counts the old places dead; its indirect
            // blocks with them, so one of those is rewritten by rewriting
            // every block.
            if lbn >= 0 {
                return self.ifile.tables.mark_dirty(lbn as u64);
            }
            for lbn in 0..self.ifile.tables.nblocks() {
                self.ifile.tables.mark_dirty(lbn)?;
            }
            return Ok(());
        }
        self.cached_inode(ino)?;
        let addr = self.pointer(ino, lbn)?;
        if addr.is_none() {
            return Err(errno(libc::ENOENT, "the block is a hole"));
        }
        crate::bmap::BlockTree::relocate(self, ino, lbn, lbn, addr).map(drop)
    }

    /// fsck's repair of the free-inode list: threads every free inode
    /// number onto it again, lowest first (after an inode map block was
    /// rebuilt, whose entries name no next free number).
    pub fn repair_rebuild_free_list(&mut self) -> Result<()> {
        self.rebuild_free_list()
    }

    /// fsck's repair of a summary lost in the segment a log head writes
    /// in: the head moves on to a clean segment before anything is
    /// written. Partial segments written after the break in that
    /// segment's chain of summaries would be found by no walk of it (a
    /// checker's, a cleaner's), so what the repair writes again must go
    /// elsewhere; and nothing is written in place, so a crash during the
    /// repair leaves the image as it was or as the repair's checkpoint
    /// says. A segment no head writes in needs nothing.
    pub fn repair_leave_segment(&mut self, seg: u64) -> Result<()> {
        if self.writer.log.head().segment == seg {
            return self.advance_segment();
        }
        match self.writer.log.cold() {
            Some(cold) if cold.segment == seg => self.close_cold_head(cold),
            _ => Ok(()),
        }
    }

    /// fsck's repair of an inode's count of space held: sets `ino`'s
    /// `blocks` (512-byte units) to `units`, what its tree reaches, and
    /// marks it to be written. The count is bookkeeping (`stat`'s
    /// `st_blocks`): no block changes hands.
    pub fn repair_set_blocks(&mut self, ino: Ino, units: u64) -> Result<()> {
        self.cached_inode(ino)?;
        self.inode_of(ino)?.blocks = units;
        self.mark_inode_dirty(ino)
    }
}
