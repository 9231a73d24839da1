//! The FFS orphan list: inodes with no name that are still open, chained
//! through their `next_orphan` field from the superblock's head
//! (`docs/FORMAT.md`, "Orphan list"). Each change is told to the
//! integrity mode, in the order that keeps the list valid after any crash
//! if the mode writes in that order (2000 paper §3.1's rule: never point at
//! something before it is initialised): an inode joining has its
//! `next_orphan` set before the superblock head names it; an inode leaving
//! is skipped — its predecessor or the head changed — before it is freed.

use super::fs::Ffs;
use crate::format::Ino;
use crate::storage::orphans::{reclaim, walk, OrphanReport};
use crate::Result;

impl Ffs {
    /// What mount did with the orphan list.
    pub fn orphan_report(&self) -> &OrphanReport {
        &self.orphan_report
    }

    /// The orphan list as it stands (head first).
    pub fn orphan_list(&self) -> &[Ino] {
        &self.orphans
    }

    /// At mount: frees every orphan on the superblock's list. A damaged
    /// list stops the walk; what it names past that point is left for
    /// fsck, and the head is cleared.
    pub(super) fn reclaim_orphans(&mut self) -> Result<()> {
        let (chain, damage) = walk(self.sb.orphan_head, |ino| {
            let inode = self.cached_inode(ino)?;
            Ok((inode.attr.nlink, inode.next_orphan))
        });
        if let (Some(&last), Some(_)) = (chain.last(), &damage) {
            // Ends the list where the walk stopped, so that leaving it
            // never follows the damaged link.
            self.cached_inode(last)?.next_orphan = 0;
        }
        self.orphans = chain.clone();
        self.orphan_report.damage = damage;
        for ino in chain {
            reclaim(self, ino)?;
            self.orphan_report.reclaimed += 1;
        }
        if self.sb.orphan_head != 0 {
            self.sb.orphan_head = 0;
            self.write_superblock()?;
            self.queue.flush()?;
        }
        Ok(())
    }

    /// `ino` lost its last name while open: it goes to the head of the list.
    pub(super) fn join_orphans(&mut self, ino: Ino) -> Result<()> {
        if self.orphans.contains(&ino) {
            return Ok(());
        }
        self.cached_inode(ino)?.next_orphan = self.sb.orphan_head;
        self.mark_inode_dirty(ino)?;
        self.orphans.insert(0, ino);
        self.mode().orphan_link_changed(self, ino)?;
        self.set_orphan_head(ino)
    }

    /// `ino` is being freed: its predecessor (or the head) skips it first.
    pub(super) fn leave_orphans(&mut self, ino: Ino) -> Result<()> {
        let Some(at) = self.orphans.iter().position(|&o| o == ino) else {
            return Ok(());
        };
        let next = self.orphans.get(at + 1).copied().unwrap_or(0);
        self.orphans.remove(at);
        self.cached_inode(ino)?.next_orphan = 0;
        self.mark_inode_dirty(ino)?;
        if at == 0 {
            return self.set_orphan_head(next);
        }
        let before = self.orphans[at - 1];
        self.cached_inode(before)?.next_orphan = next;
        self.mark_inode_dirty(before)?;
        self.mode().orphan_link_changed(self, before)
    }

    /// Points the list's head at `ino`.
    fn set_orphan_head(&mut self, ino: Ino) -> Result<()> {
        self.sb.orphan_head = ino;
        self.mode().orphan_head_changed(self)
    }
}
