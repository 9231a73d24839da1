//! Metadata integrity: what FFS writes synchronously, and in what order
//! (2000 paper §2: "a create writes the new inode before writing the
//! directory that references that inode"; §3.1 for the three rules that
//! soft updates later enforces without synchronous writes).
//!
//! In `sync` mode the namespace's hints drive the writes, each followed by
//! a barrier, in 4.4BSD's order:
//! 1. an entry added or changed (`EntryAdded`, `EntryChanged`): the inode
//!    it names first — for a directory or symbolic link, its blocks before
//!    its inode — then the directory block holding the entry, then the
//!    directory's inode if the directory grew in this operation;
//! 2. an entry removed (`EntryRemoved`): the directory block, before
//!    anything the entry named can be freed;
//! 3. a link count that rose (`LinkCount` above what the inode block
//!    holds): the inode, before the entry it counts is written;
//! 4. blocks freed: the inode (and indirect blocks) no longer pointing at
//!    them, before the space can be given to anyone else; for a block
//!    moved to grow (a tail), its new copy and then the inode, before its
//!    old fragments are freed;
//! 5. a new indirect block: written, empty, the moment it is allocated,
//!    before any pointer to it can reach the disk (4.4BSD `ffs_balloc`:
//!    "write synchronously so that indirect blocks never point at
//!    garbage"). Whatever later writes the inode or the indirect block
//!    above it — a link, an fsync, a write-back — then names a block that
//!    reads as an indirect block of this file with no pointers, never one
//!    an earlier file left there, whose trailer could match.
//!
//! Before any of these writes an inode that lies in an inode-table block
//! lazy initialisation has just zeroed, that block and the group recording
//! it as initialised are written (fsck reads no slot past the group's
//! mark); an fsync in `async` mode does the same.
//!
//! The orphan list (`orphans`) keeps its own order: an inode joining it is
//! written before the superblock head that names it, and one leaving is
//! skipped on disk before it is freed.
//!
//! Everything else — falling link counts, timestamps, bitmaps, file data —
//! is delayed, as in 4.4BSD: fsck puts those right after a crash. In
//! `async` mode nothing is ordered and nothing is synchronous but fsync
//! and sync.

use super::fs::{Ffs, Integrity};
use crate::cache::{device_addr, BlockKey, Placement};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;

impl Ffs {
    /// Whether this mount orders its metadata writes.
    pub(super) fn is_sync(&self) -> bool {
        self.options.integrity == Integrity::Sync
    }

    /// Writes the dirty buffers among `keys` and waits for them: one
    /// synchronous write (a write, then the device's barrier).
    fn write_now(&mut self, keys: &[BlockKey]) -> Result<()> {
        if keys.iter().any(|&k| device_addr(k).is_some_and(|a| self.fresh_inode_blocks.contains(&a))) {
            self.write_fresh_inode_blocks()?;
        }
        let dirty: Vec<BlockKey> = keys.iter().copied().filter(|&k| self.cache.is_dirty(k)).collect();
        if dirty.is_empty() {
            return Ok(());
        }
        let mut placements = self.placements_of(&dirty)?;
        self.write_placements(&mut placements)?;
        self.queue.wait_idle()?;
        self.dev.flush()?;
        self.stats.sync_writes += 1;
        for key in dirty {
            if let Some(addr) = device_addr(key) {
                self.fresh_inode_blocks.remove(&addr);
            }
        }
        Ok(())
    }

    /// Writes the inode-table blocks lazy initialisation zeroed (with the
    /// inodes stored in them since), a barrier, then the groups that count
    /// them as initialised, and a barrier: before an inode in such a block
    /// is named on disk, its group must say the block was initialised,
    /// since fsck reads no slot past that mark.
    fn write_fresh_inode_blocks(&mut self) -> Result<()> {
        if self.fresh_inode_blocks.is_empty() {
            return Ok(());
        }
        self.write_groups()?;
        self.dev.flush()?;
        Ok(())
    }

    /// Writes the dirty blocks of file `ino` (data, indirect, attributes).
    fn write_blocks_now(&mut self, ino: Ino) -> Result<()> {
        let keys = self.cache.dirty_keys_in(ino, Lbn::MIN..=Lbn::MAX);
        self.write_now(&keys)
    }

    /// Writes inode `ino` now; a directory's or symbolic link's blocks
    /// first (a new directory's `.` and `..`: rule 1).
    pub(super) fn write_inode_now(&mut self, ino: Ino) -> Result<()> {
        if !self.cached_inode(ino)?.attr.is_reg() {
            self.write_blocks_now(ino)?;
        }
        let key = self.store_inode(ino)?;
        self.write_now(&[key])
    }

    /// Writes the directory block holding the entry at `offset` of `dir`;
    /// if the directory grew in this transaction, every new block of it and
    /// then its inode, so the entry is reachable.
    fn write_entry_now(&mut self, dir: Ino, offset: u64) -> Result<()> {
        let grew =
            self.tx.hints().iter().any(|h| matches!(h, Hint::BlocksAllocated { ino, .. } if *ino == dir));
        if grew {
            self.write_blocks_now(dir)?;
            let key = self.store_inode(dir)?;
            return self.write_now(&[key]);
        }
        let lbn = (offset / self.block_size() as u64) as Lbn;
        self.write_now(&[(dir, lbn)])
    }

    /// Acts on a hint of the open transaction (see the module comment).
    pub(super) fn on_hint(&mut self, hint: Hint) -> Result<()> {
        self.tx.hint(hint);
        match hint {
            Hint::Orphaned { ino } => return self.join_orphans(ino),
            Hint::Reclaimed { ino } => return self.leave_orphans(ino),
            _ => {}
        }
        if !self.is_sync() {
            return Ok(());
        }
        match hint {
            Hint::EntryAdded { dir, offset, ino } | Hint::EntryChanged { dir, offset, ino, .. } => {
                self.write_inode_now(ino)?;
                self.write_entry_now(dir, offset)
            }
            Hint::EntryRemoved { dir, offset, .. } => self.write_entry_now(dir, offset),
            Hint::LinkCount { ino, nlink } => {
                if self.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    self.write_inode_now(ino)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Indirect block `lbn` of `ino` was just given `addr`: in sync mode
    /// it goes to the disk empty now, behind a barrier, before the pointer
    /// to it is set (rule 5). Its buffer stays cached for the pointers the
    /// caller puts in it.
    pub(super) fn write_new_indirect(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        if !self.is_sync() {
            return Ok(());
        }
        let zero = self.cache.zeroed();
        self.cache.insert((ino, lbn), zero, true);
        let mut placements = [Placement { key: (ino, lbn), addr, bytes: self.block_size() }];
        self.write_placements(&mut placements)?;
        self.queue.wait_idle()?;
        self.dev.flush()?;
        self.stats.sync_writes += 1;
        Ok(())
    }

    /// After blocks of `ino` were freed: in sync mode the inode and its
    /// indirect blocks, which no longer point at them, reach the disk before
    /// the space can be allocated again (rule 4).
    pub(super) fn after_free(&mut self, ino: Ino) -> Result<()> {
        if !self.is_sync() {
            return Ok(());
        }
        let indirect = self.cache.dirty_keys_in(ino, Lbn::MIN..=-2);
        self.write_now(&indirect)?;
        let key = self.store_inode(ino)?;
        self.write_now(&[key])
    }

    /// Before the fragments a moved block left are freed (`ffs_realloccg`):
    /// in sync mode its copy at the new place, then the inode pointing
    /// there, reach the disk, so the old fragments are never handed out
    /// while the inode on disk still names them (rule 4, for a move).
    pub(super) fn before_freeing_moved(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        if !self.is_sync() {
            return Ok(());
        }
        self.write_now(&[(ino, lbn)])?;
        // Dirty again at once: the write in progress copies into this
        // buffer next, and a clean one may be evicted meanwhile (storing
        // the inode loads its block), leaving the write a zeroed buffer in
        // place of the block's contents. The cost is one more write of it.
        self.cache.mark_dirty((ino, lbn));
        let key = self.store_inode(ino)?;
        self.write_now(&[key])
    }

    /// fsync: the file's blocks, then (behind a barrier) its inode. In async
    /// mode every directory block and inode goes too, so that the file's
    /// name is as durable as its contents (sync mode wrote the name when it
    /// was made).
    pub(super) fn fsync_file(&mut self, ino: Ino) -> Result<()> {
        self.write_dirty(Some(&[ino]), false)?;
        self.queue.wait_idle()?;
        self.dev.flush()?;
        if self.is_sync() {
            let key = self.store_inode(ino)?;
            return self.write_now(&[key]);
        }
        self.store_dirty_inodes()?;
        self.write_fresh_inode_blocks()?;
        let dirs: Vec<Ino> =
            self.cache.dirty_inodes().into_iter().filter(|&i| self.is_namespace_file(i)).collect();
        self.write_dirty(Some(&dirs), true)?;
        self.queue.wait_idle()?;
        self.dev.flush()?;
        Ok(())
    }

    /// Whether `ino` is a directory or symbolic link (whose blocks are
    /// namespace metadata), or the device's own blocks.
    fn is_namespace_file(&mut self, ino: Ino) -> bool {
        ino == crate::cache::DEVICE || self.cached_inode(ino).is_ok_and(|i| !i.attr.is_reg())
    }
}
