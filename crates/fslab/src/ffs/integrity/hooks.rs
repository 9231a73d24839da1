//! FFS's side of the integrity modes' interface: the mode a mount is
//! given, the points where `Ffs` calls it, and the write primitives the
//! modes share. Here rather than beside the interface (`mod.rs`) because
//! these name the file system, and the interface must not: `fs.rs` holds
//! an `IntegrityMode<Ffs>`, and an interface that named `Ffs` back would
//! tie the two files into one.

use super::{delayed, journal, ordered, softdep, IntegrityMode};
use crate::cache::{device_addr, BlockKey, Ticket};
use crate::ffs::fs::Ffs;
use crate::ffs::options::{Integrity, JournalData, MountOptions};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::Hint;
use crate::Result;
use std::sync::Arc;

impl Ffs {
    /// The mode that implements `options.integrity`, with its
    /// `journal_batch` and (for tests) `disorder`.
    pub(in crate::ffs) fn mode_for(options: &MountOptions) -> Arc<dyn IntegrityMode<Ffs>> {
        let (batch, disorder) = (options.journal_batch, options.disorder);
        let ordered = options.journal_data == JournalData::Ordered;
        match options.integrity {
            Integrity::Sync => Arc::new(ordered::Ordered),
            Integrity::Async => Arc::new(delayed::Delayed),
            Integrity::Softdep => Arc::new(softdep::Softdep::new(disorder)),
            Integrity::Journal => Arc::new(journal::Journal::new(false, batch, disorder, ordered)),
            Integrity::JournalSync => Arc::new(journal::Journal::new(true, batch, disorder, ordered)),
        }
    }

    /// The mount's integrity mode, to call while `self` is borrowed.
    pub(in crate::ffs) fn mode(&self) -> Arc<dyn IntegrityMode<Ffs>> {
        Arc::clone(&self.mode)
    }

    /// Acts on a hint of the open transaction.
    pub(in crate::ffs) fn on_hint(&mut self, hint: Hint) -> Result<()> {
        self.tx.hint(hint);
        match hint {
            Hint::EntryAdded { ino, .. } | Hint::EntryRemoved { ino, .. } | Hint::LinkCount { ino, .. } => {
                self.leak_scan_touch(ino)
            }
            Hint::EntryChanged { old, ino, .. } => {
                self.leak_scan_touch(old);
                self.leak_scan_touch(ino);
            }
            _ => {}
        }
        match hint {
            Hint::Orphaned { ino } => return self.join_orphans(ino),
            Hint::Reclaimed { ino } => return self.leave_orphans(ino),
            _ => {}
        }
        self.mode().on_hint(self, hint)
    }

    /// See [`IntegrityMode::indirect_allocated`].
    pub(in crate::ffs) fn write_new_indirect(&mut self, ino: Ino, lbn: Lbn, addr: Daddr) -> Result<()> {
        self.mode().indirect_allocated(self, ino, lbn, addr)
    }

    /// See [`IntegrityMode::blocks_freed`].
    pub(in crate::ffs) fn after_free(&mut self, ino: Ino) -> Result<()> {
        self.mode().blocks_freed(self, ino)
    }

    /// See [`IntegrityMode::block_relocated`].
    pub(in crate::ffs) fn after_relocating(&mut self, ino: Ino, from: Lbn, to: Lbn) {
        self.mode().block_relocated(self, ino, from, to)
    }

    /// See [`IntegrityMode::block_moving`].
    pub(in crate::ffs) fn before_freeing_moved(&mut self, ino: Ino, lbn: Lbn) -> Result<()> {
        self.mode().block_moving(self, ino, lbn)
    }

    /// Starts an fsync of `ino` as the mode does it.
    pub(in crate::ffs) fn fsync_file(&mut self, ino: Ino) -> Result<Ticket> {
        self.mode().fsync(self, ino)
    }

    /// Writes the dirty buffers among `keys` once everything issued before
    /// is durable (a barrier first, if anything is not), and returns
    /// without waiting for them: an ordered write. Their durability joins
    /// the open transaction's ticket.
    pub(in crate::ffs) fn write_ordered(&mut self, keys: &[BlockKey]) -> Result<()> {
        if keys.iter().any(|&k| device_addr(k).is_some_and(|a| self.fresh_inode_blocks.contains(&a))) {
            self.write_fresh_inode_blocks()?;
        }
        let dirty: Vec<BlockKey> = keys.iter().copied().filter(|&k| self.cache.is_dirty(k)).collect();
        if dirty.is_empty() {
            return Ok(());
        }
        self.queue.flush()?;
        let mut placements = self.placements_of(&dirty)?;
        let last = self.write_placements_now(&mut placements)?;
        self.stats.sync_writes += 1;
        self.tx_ticket = std::mem::take(&mut self.tx_ticket).join(self.queue.ticket(last));
        for key in dirty {
            if let Some(addr) = device_addr(key) {
                self.fresh_inode_blocks.remove(&addr);
            }
        }
        Ok(())
    }

    /// An ordered write of `keys` followed by a barrier: durable when this
    /// returns, before anything written after it.
    pub(in crate::ffs) fn write_durable(&mut self, keys: &[BlockKey]) -> Result<()> {
        self.write_ordered(keys)?;
        self.queue.flush()
    }

    /// Writes the inode-table blocks lazy initialisation zeroed (with the
    /// inodes stored in them since), a barrier, then the groups that count
    /// them as initialised, and a barrier: before an inode in such a block
    /// is named on disk, its group must say the block was initialised,
    /// since fsck reads no slot past that mark.
    pub(in crate::ffs) fn write_fresh_inode_blocks(&mut self) -> Result<()> {
        if self.fresh_inode_blocks.is_empty() {
            return Ok(());
        }
        self.write_groups()?;
        self.queue.flush()
    }

    /// The dirty blocks of file `ino` (data, indirect, attributes).
    pub(in crate::ffs) fn dirty_blocks_of(&self, ino: Ino) -> Vec<BlockKey> {
        self.cache.dirty_keys_in(ino, Lbn::MIN..=Lbn::MAX)
    }

    /// An ordered write of inode `ino`; a directory's or symbolic link's
    /// blocks first (a new directory's `.` and `..`: rule 1).
    pub(in crate::ffs) fn write_inode_ordered(&mut self, ino: Ino) -> Result<()> {
        if !self.cached_inode(ino)?.attr.is_reg() {
            let blocks = self.dirty_blocks_of(ino);
            self.write_ordered(&blocks)?;
        }
        let key = self.store_inode(ino)?;
        self.write_ordered(&[key])
    }

    /// An ordered write of the directory block holding the entry at
    /// `offset` of `dir`; if the directory grew in this transaction, every
    /// new block of it and then its inode, so the entry is reachable.
    pub(in crate::ffs) fn write_entry_ordered(&mut self, dir: Ino, offset: u64) -> Result<()> {
        if self.grew_in_tx(dir) {
            let blocks = self.dirty_blocks_of(dir);
            self.write_ordered(&blocks)?;
            let key = self.store_inode(dir)?;
            return self.write_ordered(&[key]);
        }
        let lbn = (offset / self.block_size() as u64) as Lbn;
        self.write_ordered(&[(dir, lbn)])
    }

    /// Whether directory `dir` grew in the open transaction.
    pub(in crate::ffs) fn grew_in_tx(&self, dir: Ino) -> bool {
        self.tx.hints().iter().any(|h| matches!(h, Hint::BlocksAllocated { ino, .. } if *ino == dir))
    }

    /// Whether `ino` is a directory or symbolic link (whose blocks are
    /// namespace metadata), or the device's own blocks.
    pub(in crate::ffs) fn is_namespace_file(&mut self, ino: Ino) -> bool {
        ino == crate::cache::DEVICE || self.cached_inode(ino).is_ok_and(|i| !i.attr.is_reg())
    }
}
