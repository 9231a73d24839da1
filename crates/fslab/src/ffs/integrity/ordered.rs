//! `sync`: 4.4BSD FFS's ordered synchronous metadata writes (2000 paper
//! §2: "a create writes the new inode before writing the directory that
//! references that inode").
//!
//! The namespace's hints drive ordered writes (each issued only once all
//! before it are durable), in 4.4BSD's order:
//! 1. an entry added or changed (`EntryAdded`, `EntryChanged`): the inode
//!    it names first — for a directory or symbolic link, its blocks before
//!    its inode — then the directory block holding the entry, then the
//!    directory's inode if the directory grew in this operation;
//! 2. an entry removed (`EntryRemoved`): the directory block, before
//!    anything the entry named can be freed;
//! 3. a link count that rose (`LinkCount` above what the inode block
//!    holds): the inode, before the entry it counts is written;
//! 4. blocks freed: the inode (and indirect blocks) no longer pointing at
//!    them, durable before the space can be given to anyone else; for a
//!    block moved to grow (a tail), its new copy and then the inode, before
//!    its old fragments are freed; for blocks `realloc` moved before they
//!    were ever written, no write at all: a run of direct blocks moves only
//!    if the inode on the disk cannot name it, and its old places are
//!    freed at once; a run in an indirect block frees its old places once
//!    the indirect block naming the new ones is durable (a deferred free,
//!    `frees`);
//! 5. a new indirect block: written, empty, and durable the moment it is
//!    allocated, before any pointer to it can reach the disk (4.4BSD
//!    `ffs_balloc`: "write synchronously so that indirect blocks never
//!    point at garbage"). Whatever later writes the inode or the indirect
//!    block above it — a link, an fsync, a write-back — then names a block
//!    that reads as an indirect block of this file with no pointers, never
//!    one an earlier file left there, whose trailer could match.
//!
//! 6. an extended-attribute block written: durable before the operation
//!    returns, for the same reason as rule 5 (the inode may be written by
//!    anything after, and the block may have been another file's).
//!
//! Rules 4, 5 and 6 end in a barrier, because what they protect against is
//! an unordered write (new data in freed space, a delayed write of a
//! pointer). The writes of rules 1–3 are ordered only against one another,
//! so the last of an operation needs no barrier of its own: the
//! transaction's ticket waits for it — outside the file system's lock when
//! the caller can, so that operations finishing together share one flush
//! — and the next ordered write's barrier covers it anyway.
//!
//! The orphan list keeps the same discipline: an inode joining is written
//! with its `next_orphan` before the superblock head that names it; one
//! leaving is skipped on disk (its predecessor or the head rewritten)
//! before it is freed.
//!
//! Everything else — falling link counts, timestamps, bitmaps, file data —
//! is delayed, as in 4.4BSD: fsck puts those right after a crash.

use super::IntegrityMode;
use crate::cache::{Placement, Ticket};
use crate::ffs::freed::{FreeWhen, Freed};
use crate::ffs::fs::Ffs;
use crate::format::blockno::XATTR_LBN;
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;

/// 4.4BSD's synchronous, ordered metadata writes.
pub(super) struct Ordered;

impl IntegrityMode<Ffs> for Ordered {
    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        match hint {
            Hint::EntryAdded { dir, offset, ino } | Hint::EntryChanged { dir, offset, ino, .. } => {
                fs.write_inode_ordered(ino)?;
                fs.write_entry_ordered(dir, offset)
            }
            Hint::EntryRemoved { dir, offset, .. } => fs.write_entry_ordered(dir, offset),
            Hint::LinkCount { ino, nlink } => {
                if fs.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    fs.write_inode_ordered(ino)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn indirect_allocated(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        let zero = fs.cache.zeroed();
        fs.cache.insert((ino, lbn), zero, true);
        let mut placements = [Placement { key: (ino, lbn), addr, bytes: fs.block_size() }];
        fs.write_placements_now(&mut placements)?;
        fs.queue.flush()?;
        fs.stats.sync_writes += 1;
        Ok(())
    }

    fn blocks_freed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        let indirect = fs.cache.dirty_keys_in(ino, Lbn::MIN..=-2);
        fs.write_ordered(&indirect)?;
        let key = fs.store_inode(ino)?;
        fs.write_durable(&[key])
    }

    fn block_moving(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn) -> Result<()> {
        // Pinned: the write in progress copies into this buffer next, and
        // a clean one could be evicted meanwhile (storing the inode loads
        // its block), leaving the write a zeroed buffer in place of the
        // block's contents.
        fs.with_pinned(Some((ino, lbn)), |fs| {
            fs.write_ordered(&[(ino, lbn)])?;
            let key = fs.store_inode(ino)?;
            fs.write_durable(&[key])
        })
    }

    /// Only a run no pointer on the disk may name: the old places are
    /// freed without a write, and an inode stored with the new pointers
    /// in the middle of the write would carry a size the file never had
    /// when the operation began or ended. So a run of direct blocks moves
    /// only if the inode as last stored names none of them (a tail moved
    /// before, an fsync or a link stores it; then the run stays where it
    /// is); a run whose pointers are in an indirect block always may.
    fn realloc_may_move(&self, fs: &mut Ffs, ino: Ino, map: Option<Lbn>, old: &[Daddr]) -> Result<bool> {
        if map.is_some() {
            return Ok(true);
        }
        Ok(fs.stored_inode(ino)?.is_none_or(|stored| !stored.direct.iter().any(|d| old.contains(d))))
    }

    /// A direct block's old place at once: nothing on the disk names it
    /// (`realloc_may_move`). An indirect block's once the indirect block
    /// naming the new place is durable: a write-back may have taken the
    /// old pointers to the disk (4.4BSD's `ffs_reallocblks`: "for strict
    /// correctness, the writes should be synchronous since the old block
    /// values may have been written to disk"; a deferred free, `frees`,
    /// gives that without a synchronous write per move).
    fn realloc_free_when(&self, _fs: &mut Ffs, ino: Ino, map: Option<Lbn>, _what: Freed) -> Result<FreeWhen> {
        Ok(match map {
            None => FreeWhen::Now,
            Some(meta) => FreeWhen::Durable(vec![(ino, meta)]),
        })
    }

    fn orphan_link_changed(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        fs.write_inode_ordered(ino)
    }

    fn orphan_head_changed(&self, fs: &mut Ffs) -> Result<()> {
        fs.store_superblock();
        let key = fs.superblock_key();
        fs.write_ordered(&[key])
    }

    /// Rule 6: an attribute block the transaction wrote is durable before
    /// the operation returns, so whatever writes the inode later (a link,
    /// an fsync, a write-back) names a block that holds this file's
    /// attributes, never what a file that freed the block left there.
    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        let xattrs: Vec<_> =
            fs.tx.dirtied_blocks().iter().copied().filter(|&(_, lbn)| lbn == XATTR_LBN).collect();
        if !xattrs.is_empty() {
            fs.write_durable(&xattrs)?;
        }
        Ok(std::mem::take(&mut fs.tx_ticket))
    }

    /// The file's blocks, a barrier, then its inode; its name was made
    /// durable when it was made.
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        fs.write_file_waited(ino)?;
        fs.queue.flush()?;
        let key = fs.store_inode(ino)?;
        fs.write_ordered(&[key])?;
        Ok(std::mem::take(&mut fs.tx_ticket).join(fs.queue.ticket_for_all()))
    }
}
