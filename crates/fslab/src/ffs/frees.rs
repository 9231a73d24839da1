//! Deferred frees (DESIGN.md, "Integrity modes"): a block or inode a
//! transaction frees becomes allocatable only once the change that dropped
//! the last pointer to it is durable, when the integrity mode says so. The 2000 paper's second rule ("never
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
//! * an allocation — a count of space, the allocator's search for a run,
//!   an inode — would fail for want of space: then the blocks are written
//!   (with what their rolled-back changes wait for, in rounds), a barrier
//!   follows each round, and what is durable is released
//!   ([`Ffs::with_frees_released`]) before the allocation tries again.
//!
//! `statfs` counts pending frees as free, since the next allocation that
//! needs them gets them, and a block whose fragments are all free or
//! pending as a whole free block. A freed inode is gone at once for
//! lookups, whenever its bit clears.

use super::freed::{FreeWhen, Freed, PendingFree};
use super::fs::Ffs;
use crate::cache::BlockKey;
use crate::format::Ino;
use crate::Result;

impl Ffs {
    /// Frees `what`, whose last pointer was in `ino` (the file whose
    /// blocks these were, or the inode itself), now or once the mode's
    /// blocks are durable.
    pub(super) fn free_or_defer(&mut self, ino: Ino, what: Freed) -> Result<()> {
        self.leak_scan_freeing(what);
        let when = self.mode().free_when(self, ino, what)?;
        self.free_when_told(what, when)
    }

    /// Frees `what`, fragments `realloc` moved a block of `ino` away from
    /// (its pointer in `map`: an indirect block, or the inode for `None`),
    /// when the mode says such a free may take effect
    /// (`IntegrityMode::realloc_free_when`).
    pub(super) fn free_reallocated(
        &mut self,
        ino: Ino,
        map: Option<crate::format::Lbn>,
        what: Freed,
    ) -> Result<()> {
        self.leak_scan_freeing(what);
        let when = self.mode().realloc_free_when(self, ino, map, what)?;
        self.free_when_told(what, when)
    }

    fn free_when_told(&mut self, what: Freed, when: FreeWhen) -> Result<()> {
        match when {
            FreeWhen::Now => self.free_now(what),
            when => {
                if matches!(when, FreeWhen::Committed(_)) {
                    // Its group goes into the transaction, showing the free.
                    let geo = self.sb.geometry;
                    let cg = match what {
                        Freed::Frags { start, .. } => geo.group_of(start),
                        Freed::Inode { ino, .. } | Freed::File { ino, .. } => geo.ino_group(ino),
                    };
                    self.alloc.touch(cg);
                }
                self.defer_free(PendingFree { what, when });
                Ok(())
            }
        }
    }

    /// The blocks whose durable contents release a free whose last pointer
    /// was in `ino`: its dirty indirect blocks and its inode's block, with
    /// the inode stored in it now (a mode that defers frees answers
    /// `FreeWhen::Durable` with these).
    pub(super) fn blocks_without_pointers(&mut self, ino: Ino) -> Result<Vec<BlockKey>> {
        let mut after = self.cache.dirty_keys_in(ino, crate::format::Lbn::MIN..=-2);
        self.mark_inode_dirty(ino)?;
        after.push(self.store_inode(ino)?);
        Ok(after)
    }

    fn free_now(&mut self, what: Freed) -> Result<()> {
        match what {
            Freed::Frags { start, count } => self.alloc.free(start, count),
            Freed::Inode { ino, is_dir } => self.alloc.vfree(ino, is_dir),
            Freed::File { ino, .. } => self.free_file_now(ino),
        }
    }

    /// Whether file `ino`, its last name removed, must wait for that
    /// removal to be durable before anything of it is freed.
    pub(super) fn frees_when_names_gone(&self, ino: Ino, is_dir: bool) -> bool {
        !is_dir && !self.mode().names_gone(ino, self.queue.durable())
    }

    /// Frees file `ino` (no name left, not a directory) once its last
    /// name's removal is durable, as `FreeWhen::NamesGone` says. Its data
    /// blocks leave the cache now (nothing will read them, and a dirty one
    /// need not be written).
    pub(super) fn free_file_later(&mut self, ino: Ino) -> Result<()> {
        self.size_before.remove(&ino);
        self.clusters.forget(ino);
        for key in self.cache.keys_in(ino, 0..=crate::format::Lbn::MAX) {
            self.cache.remove(key);
        }
        let frags = self.cached_inode(ino)?.blocks * 512 / self.frag_size();
        let what = Freed::File { ino, frags };
        self.leak_scan_freeing(what);
        self.defer_free(PendingFree { what, when: FreeWhen::NamesGone });
        Ok(())
    }

    /// Frees file `ino` and all it holds now. Not a transaction of its own:
    /// it runs in a sync's rounds, the tick, or inside the operation short
    /// of space, and a commit's write-back after each file went round the
    /// cache once per file (the MH folder's remove wrote 12,297 times
    /// instead of 573).
    fn free_file_now(&mut self, ino: Ino) -> Result<()> {
        use crate::storage::StorageManager;
        self.free_blocks(ino, 0, u64::MAX)?;
        self.free_xattr(ino)?;
        self.vfree(ino)
    }

    /// Adds a free to those waiting.
    pub(super) fn defer_free(&mut self, p: PendingFree) {
        if let Freed::Inode { ino, .. } | Freed::File { ino, .. } = p.what {
            self.pending_inodes.insert(ino);
        }
        self.pending_frees.push(p);
    }

    /// Whether inode `ino` was freed and waits to become allocatable.
    pub(super) fn is_free_pending(&self, ino: Ino) -> bool {
        self.pending_inodes.contains(&ino)
    }

    /// The runs of fragments freed and not yet allocatable, as (start,
    /// count).
    pub(super) fn pending_free_runs(&self) -> Vec<(u64, u32)> {
        let run = |p: &PendingFree| match p.what {
            Freed::Frags { start, count } => Some((start, count)),
            Freed::Inode { .. } | Freed::File { .. } => None,
        };
        self.pending_frees.iter().filter_map(run).collect()
    }

    /// Fragments freed but not yet allocatable (a file's waiting to be
    /// freed included).
    pub(super) fn pending_free_frags(&self) -> u64 {
        let frags = |p: &PendingFree| match p.what {
            Freed::Frags { count, .. } => u64::from(count),
            Freed::File { frags, .. } => frags,
            Freed::Inode { .. } => 0,
        };
        self.pending_frees.iter().map(frags).sum()
    }

    /// Blocks that will be wholly free once the pending frees are released:
    /// fragments pending, with the free ones beside them, that fill a block
    /// (what `statfs` counts as whole free blocks). A file waiting to be
    /// freed counts by its inode's direct pointers, and the rest of what
    /// it holds as whole blocks (indirect blocks and the data past the
    /// direct ones are whole blocks; where they lie is not read until the
    /// file is freed).
    pub(super) fn pending_whole_blocks(&self) -> u64 {
        let geo = self.sb.geometry;
        let fpb = geo.frags_per_block;
        let mut pending: std::collections::HashMap<(u32, u32), u32> = Default::default();
        let mut count_run = |start: u64, count: u64| {
            for f in start..start + count {
                let cg = geo.group_of(f);
                *pending.entry((cg, geo.within_group(f) / fpb)).or_default() += 1;
            }
        };
        let mut files = 0;
        for p in &self.pending_frees {
            match p.what {
                Freed::Frags { start, count } => count_run(start, u64::from(count)),
                Freed::File { ino, frags } => {
                    let mut rest = frags;
                    if let Some(inode) = self.inodes.get(ino) {
                        let direct: Vec<(crate::format::Lbn, crate::format::Daddr)> = (0..)
                            .zip(inode.direct.iter().copied())
                            .filter(|(_, addr)| addr.is_some())
                            .collect();
                        for &(lbn, addr) in &direct {
                            let count = self.frags_at(inode, lbn, &direct).min(rest);
                            count_run(addr.get(), count);
                            rest -= count;
                        }
                    }
                    files += rest / u64::from(fpb);
                }
                Freed::Inode { .. } => {}
            }
        }
        let groups = self.alloc.groups();
        let whole = |&((cg, block), count): &((u32, u32), u32)| {
            let Some(group) = groups.get(cg as usize) else { return false };
            let free = (block * fpb..(block + 1) * fpb).filter(|&f| group.is_frag_free(f)).count() as u32;
            free + count == fpb
        };
        pending.into_iter().filter(whole).count() as u64 + files
    }

    /// Frees and inodes waiting for their pointers' removal to be durable:
    /// (fragments, inodes).
    pub fn pending_frees(&self) -> (u64, u64) {
        let inodes = self
            .pending_frees
            .iter()
            .filter(|p| matches!(p.what, Freed::Inode { .. } | Freed::File { .. }))
            .count();
        (self.pending_free_frags(), inodes as u64)
    }

    /// Whether free space or free inodes, not counting pending frees, are
    /// down to an eighth of the file system's: short enough that one
    /// operation might need what is pending.
    pub(super) fn space_is_short(&self) -> bool {
        let totals = self.alloc.totals();
        let free_frags = totals.free_blocks * self.frags_per_block() + totals.free_frags;
        let inodes = self.sb.geometry.ninodes();
        free_frags < self.alloc.data_frags() / 8 || totals.free_inodes < inodes / 8
    }

    /// Releases every pending free whose blocks are durable now; returns
    /// how many.
    pub(super) fn release_durable_frees(&mut self) -> Result<usize> {
        if self.pending_frees.is_empty() {
            return Ok(0);
        }
        let durable = self.queue.durable();
        let mode = self.mode();
        let committed = mode.committed_before(durable);
        let cache = &self.cache;
        let ready = |p: &PendingFree| match &p.when {
            FreeWhen::Now => true,
            FreeWhen::Durable(after) => {
                after.iter().all(|&k| cache.durable_after(k).is_some_and(|seq| seq <= durable))
            }
            FreeWhen::NamesGone => match p.what {
                Freed::File { ino, .. } | Freed::Inode { ino, .. } => mode.names_gone(ino, durable),
                Freed::Frags { .. } => true,
            },
            FreeWhen::Committed(seq) => *seq < committed,
        };
        let (ready, waiting): (Vec<PendingFree>, Vec<PendingFree>) =
            std::mem::take(&mut self.pending_frees).into_iter().partition(ready);
        self.pending_frees = waiting;
        for p in &ready {
            if let Freed::Inode { ino, .. } | Freed::File { ino, .. } = p.what {
                self.pending_inodes.remove(&ino);
            }
        }
        let released = ready.len();
        for p in ready {
            // A file's names are gone from the disk: now its blocks and
            // inode are freed, each free waiting, like any other, for the
            // pointer's removal to be durable.
            self.free_now(p.what)?;
        }
        Ok(released)
    }

    /// Whether an inode's free waits for its names' removal to be durable
    /// (`FreeWhen::NamesGone`): its slot still to be cleared.
    pub(super) fn has_inodes_to_clear(&self) -> bool {
        self.pending_frees.iter().any(|p| p.when == FreeWhen::NamesGone)
    }

    /// Runs `attempt`; if it fails for want of space while frees are
    /// pending, releases them (`release_all_frees`) and runs it once more.
    /// Every allocation goes through here: a count that says there is room
    /// (pending frees counted) is not a run of fragments the allocator can
    /// give, until they are released.
    pub(super) fn with_frees_released<T>(
        &mut self,
        mut attempt: impl FnMut(&mut Ffs) -> Result<T>,
    ) -> Result<T> {
        match attempt(self) {
            Err(e) if e.errno() == libc::ENOSPC && self.release_all_frees()? => attempt(self),
            done => done,
        }
    }

    /// Writes every block pending frees wait for, a barrier, and releases
    /// what is durable: what an allocation short of space does before it
    /// fails. A mode that rolls changes back may have written those blocks
    /// without the change a free waits for; so, in rounds, what such a
    /// change depends on goes too — file data, indirect blocks, inode
    /// blocks and the groups, and directory blocks unless a namespace
    /// operation is half done (its entries may not have their hints yet).
    /// Returns whether anything was released.
    pub(super) fn release_all_frees(&mut self) -> Result<bool> {
        let mut released = 0;
        for _ in 0..super::fs::SYNC_ROUNDS {
            self.mode().force_commits(self)?;
            // A change a free waits for may wait for an inode changed in
            // memory only (soft updates store one at the next write-back).
            self.store_dirty_inodes()?;
            released += self.release_durable_frees()?;
            if self.pending_frees.is_empty() {
                break;
            }
            let mut keys: Vec<BlockKey> = self
                .pending_frees
                .iter()
                .flat_map(|p| match &p.when {
                    FreeWhen::Durable(after) => after.clone(),
                    _ => Vec::new(),
                })
                .collect();
            let halfway = self.tx.in_namespace_op();
            let all = crate::format::Lbn::MIN..=crate::format::Lbn::MAX;
            for ino in self.cache.dirty_inodes() {
                if ino != crate::cache::DEVICE && !(halfway && self.is_namespace_file(ino)) {
                    keys.extend(self.cache.dirty_keys_in(ino, all.clone()));
                }
            }
            // And the inode blocks: a change a free waits for may wait in
            // turn for an inode to be durable (soft updates: a rename's
            // new name for the renamed inode, before the name it replaced
            // is gone and that file's blocks may go).
            keys.extend(self.cache.dirty_keys_in(crate::cache::DEVICE, all));
            keys.sort_unstable();
            keys.dedup();
            keys.retain(|&k| self.cache.is_dirty(k));
            if keys.is_empty() {
                break;
            }
            self.write_dirty_among(&keys)?;
            self.write_groups()?;
            self.queue.flush()?;
            self.mode().prune(self.queue.durable());
        }
        Ok(released > 0)
    }
}
