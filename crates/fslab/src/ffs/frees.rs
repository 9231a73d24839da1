//! Deferred frees (ARCHITECTURE.md, "Integrity modes and the write path
//! under them"): a block or inode a transaction frees becomes allocatable
//! only once the change that dropped the last pointer to it is durable,
//! when the integrity mode says so. The 2000 paper's second rule ("never
//! reuse a resource before nullifying all previous pointers to it", §3.1)
//! is kept this way by soft updates (its freeblks and freefile work, run
//! once the inode or directory block without the pointer is on disk) and by
//! a journal (nothing freed in a transaction is reused before the
//! transaction commits).
//!
//! The mode answers [`FreeWhen`] for each free: `sync` orders a durable
//! write of the nullified pointer before the space can be reused and `async`
//! promises nothing, so both free at once, as 4.4BSD did. A deferred free
//! stays allocated in the bitmaps (after a crash it is a leak fsck frees,
//! never a block in two files) and waits, with the blocks whose durable
//! contents release it, until:
//! * a sync, fsync or tick finds those blocks durable
//!   ([`Ffs::release_durable_frees`]);
//! * an allocation would fail for want of space: then the blocks are
//!   written, a barrier follows, and everything pending is released
//!   ([`Ffs::release_all_frees`]) before the allocation tries again.
//!
//! `statfs` counts pending frees as free, since the next allocation that
//! needs them gets them.

use super::fs::Ffs;
use super::Frag;
use crate::cache::BlockKey;
use crate::format::Ino;
use crate::Result;

/// What a free gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freed {
    /// `count` fragments from `start`.
    Frags { start: Frag, count: u32 },
    /// Inode `ino`, a directory or not.
    Inode { ino: Ino, is_dir: bool },
}

/// When a free may take effect, as the integrity mode says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FreeWhen {
    /// At once.
    Now,
    /// Once the current contents of these blocks — the blocks that held
    /// the last pointer, without it now — are durable. (The modes that
    /// answer this are soft updates and the journal; `sync` and `async`
    /// free at once, so outside tests nothing defers yet.)
    #[cfg_attr(not(test), allow(dead_code))]
    Durable(Vec<BlockKey>),
}

/// A free waiting for its blocks to be durable.
#[derive(Debug, Clone)]
pub(super) struct PendingFree {
    what: Freed,
    after: Vec<BlockKey>,
}

impl Ffs {
    /// Frees `what`, whose last pointer was in `ino` (the file whose
    /// blocks these were, or the inode itself), now or once the mode's
    /// blocks are durable.
    pub(super) fn free_or_defer(&mut self, ino: Ino, what: Freed) -> Result<()> {
        match self.mode().free_when(self, ino, what)? {
            FreeWhen::Now => self.free_now(what),
            FreeWhen::Durable(after) => {
                self.pending_frees.push(PendingFree { what, after });
                Ok(())
            }
        }
    }

    fn free_now(&mut self, what: Freed) -> Result<()> {
        match what {
            Freed::Frags { start, count } => self.alloc.free(start, count),
            Freed::Inode { ino, is_dir } => self.alloc.vfree(ino, is_dir),
        }
    }

    /// Fragments freed but not yet allocatable.
    pub(super) fn pending_free_frags(&self) -> u64 {
        let frags = |p: &PendingFree| match p.what {
            Freed::Frags { count, .. } => u64::from(count),
            Freed::Inode { .. } => 0,
        };
        self.pending_frees.iter().map(frags).sum()
    }

    /// Frees and inodes waiting for their pointers' removal to be durable:
    /// (fragments, inodes).
    pub fn pending_frees(&self) -> (u64, u64) {
        let inodes = self.pending_frees.iter().filter(|p| matches!(p.what, Freed::Inode { .. })).count();
        (self.pending_free_frags(), inodes as u64)
    }

    /// Releases every pending free whose blocks are durable now; returns
    /// how many.
    pub(super) fn release_durable_frees(&mut self) -> Result<usize> {
        if self.pending_frees.is_empty() {
            return Ok(0);
        }
        let durable = self.queue.durable();
        let cache = &self.cache;
        let (ready, waiting): (Vec<PendingFree>, Vec<PendingFree>) = std::mem::take(&mut self.pending_frees)
            .into_iter()
            .partition(|p| p.after.iter().all(|&k| cache.durable_after(k).is_some_and(|seq| seq <= durable)));
        self.pending_frees = waiting;
        let released = ready.len();
        for p in ready {
            self.free_now(p.what)?;
        }
        Ok(released)
    }

    /// Writes every block pending frees wait for, a barrier, and releases
    /// them all: what an allocation short of space does before it fails.
    /// Returns whether anything was released.
    pub(super) fn release_all_frees(&mut self) -> Result<bool> {
        if self.pending_frees.is_empty() {
            return Ok(false);
        }
        let mut keys: Vec<BlockKey> =
            self.pending_frees.iter().flat_map(|p| p.after.iter().copied()).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|&k| self.cache.is_dirty(k));
        let mut placements = self.placements_of(&keys)?;
        self.write_placements(&mut placements)?;
        self.queue.flush()?;
        Ok(self.release_durable_frees()? > 0)
    }
}
