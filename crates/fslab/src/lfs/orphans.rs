//! The LFS orphan list: inodes with no name that are still open, chained
//! through their `next_orphan` field and headed in the checkpoint
//! (`docs/FORMAT.md`, "Inode" and "Superblock"). The chain is metadata like
//! any other: a changed `next_orphan` dirties its inode, which goes to the
//! log with the directory operation that changed it (§4.3 of the 1993
//! paper), and the head reaches the disk with the next checkpoint. A crash
//! between checkpoints leaves the checkpoint's head stale; roll-forward
//! therefore notes every inode it installs with no links, and mount frees
//! those together with the checkpoint's list (`docs/design/namespace.md`, "Orphans").

use super::Lfs;
use crate::format::Ino;
use crate::storage::orphans::{reclaim, walk, OrphanReport};
use crate::Result;
use std::collections::BTreeSet;

/// The list in memory, head first; the inodes' `next_orphan` fields agree
/// with it in the inode cache.
#[derive(Debug, Default)]
pub(super) struct OrphanList {
    chain: Vec<Ino>,
    /// Inodes roll-forward installed with no links: orphans the stale head
    /// of the checkpoint may not name.
    recovered: BTreeSet<Ino>,
    /// What mount did with the list.
    pub(super) report: OrphanReport,
}

impl OrphanList {
    /// The head to record in a checkpoint.
    pub(super) fn head(&self) -> Ino {
        self.chain.first().copied().unwrap_or(0)
    }

    /// Notes an inode roll-forward installed with no links.
    pub(super) fn note_recovered(&mut self, ino: Ino) {
        self.recovered.insert(ino);
    }
}

impl Lfs {
    /// What mount did with the orphan list.
    pub fn orphan_report(&self) -> &OrphanReport {
        &self.orphans.report
    }

    /// The orphan list as it stands (head first).
    pub fn orphan_list(&self) -> &[Ino] {
        &self.orphans.chain
    }

    /// Reads the checkpoint's orphan list (before roll-forward changes any
    /// inode on it): the inodes on it, and why the walk stopped, if it did.
    pub(super) fn read_orphan_list(&mut self) -> (Vec<Ino>, Option<String>) {
        walk(self.sb.checkpoint.orphan_head, |ino| {
            // Straight from its block, not through the inode cache: the
            // walk runs before roll-forward installs newer copies.
            let entry = self.imap_entry(ino)?;
            let daddr = entry.map(|e| e.daddr).filter(|d| d.is_some());
            let daddr = daddr.ok_or_else(|| crate::error::errno(libc::ENOENT, "inode is not allocated"))?;
            let inode = self.find_inode_in_block(daddr, ino)?;
            Ok((inode.attr.nlink, inode.next_orphan))
        })
    }

    /// After roll-forward: frees every orphan — those on the checkpoint's
    /// list and those roll-forward installed — that is still allocated
    /// with no links. Returns whether anything changed.
    pub(super) fn reclaim_orphans(&mut self, listed: Vec<Ino>, damage: Option<String>) -> Result<bool> {
        let recovered = std::mem::take(&mut self.orphans.recovered);
        let mut chain = Vec::new();
        for ino in listed.into_iter().chain(recovered) {
            let allocated = self.imap_entry(ino)?.is_some_and(|e| e.daddr.is_some());
            if allocated && !chain.contains(&ino) && self.cached_inode(ino)?.attr.nlink == 0 {
                chain.push(ino);
            }
        }
        let changed = !chain.is_empty() || self.sb.checkpoint.orphan_head != 0;
        // The list as found, chained again: should the reclaim below fail
        // partway, a checkpoint still names a correct list.
        for (i, &ino) in chain.iter().enumerate() {
            let next = chain.get(i + 1).copied().unwrap_or(0);
            if self.cached_inode(ino)?.next_orphan != next {
                self.cached_inode(ino)?.next_orphan = next;
                self.mark_inode_dirty(ino)?;
            }
        }
        self.orphans.chain = chain.clone();
        self.orphans.report.damage = damage;
        for ino in chain {
            reclaim(self, ino)?;
            self.orphans.report.reclaimed += 1;
        }
        Ok(changed)
    }

    /// `ino` lost its last name while open: it goes to the head of the list.
    pub(super) fn join_orphans(&mut self, ino: Ino) -> Result<()> {
        if self.orphans.chain.contains(&ino) {
            return Ok(());
        }
        let head = self.orphans.head();
        self.cached_inode(ino)?.next_orphan = head;
        self.mark_inode_dirty(ino)?;
        self.note_dirop(ino);
        self.orphans.chain.insert(0, ino);
        Ok(())
    }

    /// `ino` is being freed: its predecessor (or the head) skips it.
    pub(super) fn leave_orphans(&mut self, ino: Ino) -> Result<()> {
        let Some(at) = self.orphans.chain.iter().position(|&o| o == ino) else {
            return Ok(());
        };
        let next = self.orphans.chain.get(at + 1).copied().unwrap_or(0);
        if at > 0 {
            let before = self.orphans.chain[at - 1];
            self.cached_inode(before)?.next_orphan = next;
            self.mark_inode_dirty(before)?;
            self.note_dirop(before);
        }
        self.cached_inode(ino)?.next_orphan = 0;
        self.orphans.chain.remove(at);
        Ok(())
    }
}
