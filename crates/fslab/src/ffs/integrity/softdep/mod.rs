//! `softdep`: soft updates (McKusick and Ganger; 2000 paper §4), the
//! three rules of §3.1 kept per pointer, per entry and per link count, with
//! every metadata block written back as lazily as `async` writes it.
//!
//! Nothing is written in order at the moment a namespace operation runs.
//! Instead the mode remembers what each change waits for, and whenever a
//! block goes to the device — at a sync, at write-back, at any moment the
//! cache chooses — the copy written carries only the changes whose
//! dependencies are durable; the others are rolled back in the copy, the
//! buffer keeps them and stays dirty (`WriteAs::RolledBack`). A dependency
//! is satisfied by a write that a completed flush covers, never by a write
//! merely issued: fslab's crash model keeps only flushed writes.
//!
//! What rolls back, in fslab's terms (FreeBSD's structures in brackets):
//! * **a new directory entry** [diradd]: its inode number reads 0 until the
//!   inode it names is durable with its raised link count, its group's
//!   bitmap is durable with the inode allocated, every link count the same
//!   operation raised before it is durable (mkdir's parent, for `..`), and,
//!   for a directory or symbolic link, the inode is durable pointing at its
//!   blocks (mkdir's `.` and `..`: [mkdir] pair);
//! * **an inode's block map and size** [allocdirect, freefrag]: a slot
//!   that points at a block allocated since its last safe write whose
//!   contents or bitmap bit are not yet durable is written with the map and
//!   size it had then (rule 1: contents and bitmap before the pointer; rule
//!   4 of the anchors, "no pointer to stale data", for file data too). The
//!   map is rolled back as a whole, not pointer by pointer: what it costs
//!   is a later write, and the size can never cover a block or fragment the
//!   written map does not give the file;
//! * **an indirect block's pointers** [indirdep's safe copy]: the same, for
//!   a whole indirect block: the last safe copy goes instead;
//! * **a link count that fell** [dirrem]: an inode's on-disk count stays
//!   raised by every removal of an entry naming it that is not yet
//!   durable; an inode freed meanwhile is written as it was when its first
//!   such entry went (rule 2); the parent of a removed directory keeps the
//!   count for the child's `..` the same way.
//!
//! Frees wait too [freeblks, freefile]: a block or inode freed becomes
//! allocatable once the blocks that held its last pointer are durable
//! without it (`frees`): released by the tick, by a sync, or at once when
//! an allocation would fail. A removed file is not even touched before its
//! last name's removal is durable [dirrem] (`names_gone`): then its blocks
//! and inode are freed — the 2000 paper's "background deletes", which take
//! the indirect block's read out of the unlink (§8.1). No namespace
//! operation stores an inode in its block: an unlink or a rename dirties
//! its directory block alone.
//!
//! A rename [DIRCHG diradd, dirrem] adds or changes its new name as above
//! (a changed entry shows the name it replaced while it waits; a moved
//! directory's `..` is such a change, shown once the new parent's raised
//! count is durable, and the old parent's count stays raised until it is)
//! and, stricter than FreeBSD, keeps its old name on the disk until
//! the new one is durable: writes of the old name's 512-byte directory
//! chunk send the chunk as it was before the rename (`Guard`), so a crash
//! leaves the file one name or both, never neither (decision 0006, item
//! 4 revised). New entries keep out of a chunk so held
//! (`dir_chunk_held`), and a new entry of a name a held image still shows
//! waits for that image to go and for a durable write of its chunk
//! without the name (`Cond::ImageGone`), so that the disk never
//! shows one name twice. An image leaves out the other files' entries the
//! cache no longer holds (their removals may go first), and a rename of a
//! file whose earlier rename's image a new name waits on makes that
//! earlier new name durable first (decision 0006, item 15): kept whole,
//! images of one chunk waited for each other's renames for ever.
//!
//! What is simpler than FreeBSD's, and why:
//! * an exchange, or a rename over anything but a regular file (an empty
//!   directory, a symbolic link), is ordered as `sync` orders it (after a
//!   sync that settles everything before it): rarer still (decision 0006);
//! * fsync writes the file and the chain of its new names up to the root
//!   in rounds until none of it waits, as FreeBSD walks it; a chain that
//!   does not settle in a few rounds (a name a rename elsewhere holds
//!   back) gets a whole sync;
//! * the orphan list is written lazily, in no order, as `async` writes it:
//!   the walk at mount frees only inodes whose link count on the disk is
//!   0, and soft updates keep a count raised on the disk until every
//!   removal of a name is, so the walk never frees what a durable entry
//!   names. A crash may leave the list stopping early; what it no longer
//!   reaches is a leak. (Through FUSE every unlink of a file the kernel has
//!   looked up makes an orphan until the kernel forgets it: ordering the
//!   list made every such unlink wait for the disk.)

use super::ordered::Ordered;
use super::{IntegrityMode, WriteContext};
use crate::cache::{BlockData, BlockKey, Seq, Ticket, WriteAs, DEVICE};
use crate::error::errno;
use crate::ffs::freed::{FreeWhen, Freed};
use crate::ffs::fs::Ffs;
use crate::format::blockno::is_indirect;
use crate::format::dirent::{dt, seal_chunk, DIRBLKSIZ, ENTRY_HEADER};
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::{Hint, TxKind};
use crate::Result;
use disk::AlignedBytes;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Rounds an fsync writes its chain in before it syncs everything.
const FSYNC_ROUNDS: usize = 8;

/// Rounds that make renames' new names durable at most: one per rename
/// in a chain of new names each waiting for an older image of its name
/// (MH's pack: name k was the old name of the message now k/2 or so,
/// a chain as long as log2 of the folder).
const SETTLE_ROUNDS: usize = 64;

mod names;
mod rollback;
mod state;

use state::*;

/// Soft updates.
pub(super) struct Softdep {
    state: Mutex<State>,
    /// Keep no order at all (`MountOptions::disorder`, for tests).
    disorder: bool,
}

impl Softdep {
    pub(super) fn new(disorder: bool) -> Softdep {
        Softdep { state: Mutex::new(State::default()), disorder }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl IntegrityMode<Ffs> for Softdep {
    fn tx_beginning(&self, _fs: &mut Ffs, kind: TxKind) -> Result<()> {
        let mut state = self.state();
        state.raised.clear();
        state.before.clear();
        state.old_name_gone = None;
        let renaming = matches!(kind, TxKind::Rename | TxKind::Exchange);
        state.rename = if renaming && !self.disorder { Rename::Undecided } else { Rename::Idle };
        Ok(())
    }

    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        let kind = fs.tx.kind();
        if matches!(kind, Some(TxKind::Rename | TxKind::Exchange)) && !self.disorder {
            let mut settle = false;
            if matches!(self.state().rename, Rename::Undecided) {
                // The first hint says what is renamed: in a rename the
                // moved node's link count rises first (4.4BSD's order);
                // an exchange (or anything else) is settled by a sync,
                // then ordered as `sync` orders it.
                let soft = match hint {
                    Hint::LinkCount { ino, nlink } => {
                        kind == Some(TxKind::Rename) && fs.stored_nlink(ino)?.is_none_or(|s| nlink > s)
                    }
                    Hint::EntryAdded { .. } | Hint::EntryChanged { .. } | Hint::EntryRemoved { .. } => false,
                    _ => return Ok(()),
                };
                let ino = if let Hint::LinkCount { ino, .. } = hint { ino } else { 0 };
                if soft {
                    self.settle_before_renaming(fs, ino)?;
                }
                self.state().rename =
                    if soft { Rename::Soft { moved: ino, new: None } } else { Rename::Ordered };
                settle = !soft;
            }
            let moved = match self.state().rename {
                Rename::Soft { moved, .. } => Some(moved),
                _ => None,
            };
            if let (Some(moved), Hint::EntryChanged { dir, old, .. }) = (moved, hint) {
                if dir != moved && !fs.cached_inode(old)?.attr.is_reg() {
                    // Over anything but a regular file (an empty
                    // directory, a symbolic link): settled as above. The
                    // entry already names the moved node in its block, and
                    // the sync writes that block with everything else:
                    // the counts this rename raised go first (rule 1).
                    self.state().rename = Rename::Ordered;
                    let raised = self.state().raised.clone();
                    let mut keys = Vec::new();
                    for ino in raised {
                        keys.push(fs.store_inode(ino)?);
                    }
                    keys.sort_unstable();
                    keys.dedup();
                    fs.write_durable(&keys)?;
                    settle = true;
                }
            }
            if matches!(self.state().rename, Rename::Soft { .. }) {
                return self.soft_rename_hint(fs, hint);
            }
            // Link counts that fall wait for the entries' removal, as
            // anywhere else. An entry no write showed yet is simply gone
            // (before the sync: a rename's new name retargeted now can no
            // longer be shown, and the rename waiting for it would never
            // settle). The rest is ordered as `sync` orders it.
            let gone = match hint {
                Hint::EntryRemoved { dir, offset, ino: old }
                | Hint::EntryChanged { dir, offset, old, .. } => {
                    self.entry_removed(fs, dir, offset, old, false)?
                }
                _ => None,
            };
            if let Some(unshown) = gone {
                self.state().unshown_gone(&unshown, None);
            }
            if settle {
                fs.sync_all()?;
            }
            return Ordered.on_hint(fs, hint);
        }
        match hint {
            Hint::EntryAdded { dir, offset, ino } => self.entry_added(fs, dir, offset, ino),
            // Only a rename changes an entry (above).
            Hint::EntryChanged { .. } => Ordered.on_hint(fs, hint),
            Hint::EntryRemoved { dir, offset, ino } => {
                if let Some(unshown) = self.entry_removed(fs, dir, offset, ino, true)? {
                    self.state().unshown_gone(&unshown, None);
                }
                Ok(())
            }
            Hint::LinkCount { ino, nlink } => {
                if fs.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    self.state().raised.push(ino);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn dir_block_changing(&self, fs: &mut Ffs, key: BlockKey) {
        let mut state = self.state();
        if matches!(state.rename, Rename::Undecided | Rename::Soft { .. }) && !state.before.contains_key(&key)
        {
            if let Some(data) = fs.cache.share(key) {
                state.before.insert(key, data);
            }
        }
    }

    fn inode_allocated(&self, fs: &mut Ffs, ino: Ino) {
        let cg = fs.sb.geometry.ino_group(ino);
        let since = fs.queue.issued();
        self.state().inodes.entry(ino).or_default().allocated = Some((cg, since));
    }

    fn block_allocated(&self, fs: &mut Ffs, addr: Daddr) {
        let cg = fs.sb.geometry.group_of(addr.get());
        let since = fs.queue.issued();
        self.state().fresh.insert(addr.get(), Fresh { cg, since, written: 0 });
    }

    /// No pointer will wait for it: nothing in memory names it, and the
    /// entry would otherwise stay until remount (it is never written),
    /// counted as waiting.
    fn unwritten_block_dropped(&self, _fs: &mut Ffs, addr: Daddr) {
        self.state().fresh.remove(&addr.get());
    }

    fn inode_storing(&self, ino: Ino, addr: Daddr, at: usize, old: &[u8]) {
        let mut state = self.state();
        let deps = state.inodes.entry(ino).or_default();
        let first = deps.slot.is_none();
        deps.slot = Some((addr.get(), at));
        deps.unstored = false;
        if deps.safe_map.is_none() {
            // The slot's bytes are this inode's last safe version, unless
            // they are a slot not in use (this inode is new).
            let before = Inode::decode(old).ok().filter(|i| i.ino == ino && i.attr.mode != 0);
            deps.safe_map = Some(before.map(|i| Map::of(&i)).unwrap_or_default());
            if before.is_none() {
                let mut prior = Box::new([0u8; INODE_SIZE]);
                if let Some(bytes) = old.get(..INODE_SIZE) {
                    prior.copy_from_slice(bytes);
                }
                deps.prior = Some(prior);
            }
        }
        if first {
            state.blocks.entry(addr.get()).or_default().push(ino);
        }
    }

    fn indirect_changing(&self, fs: &mut Ffs, key: BlockKey) {
        let mut state = self.state();
        state.indirect.entry(key).or_insert_with(|| fs.cache.share(key).unwrap_or_else(|| fs.cache.zeroed()));
    }

    /// A directory block freed with removals of entries that wait for a
    /// write of it: it is written now, as it is (its space is not given
    /// out again before its free, which waits for the directory's inode to
    /// be durable without it). Waiting instead for that inode, durable
    /// without the pointer or free, made a cycle when the directory was
    /// removed too: its slot is freed on the disk only once its children's
    /// are (their `..` counts it), and theirs only once their names are
    /// gone — from this very block. A block not in the cache to write has
    /// its removals wait for the inode.
    fn block_released(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn) -> Result<()> {
        let key = (ino, lbn);
        // An old name a rename holds back goes with its block (a directory
        // shrinks when its last block empties): the new names are made
        // durable first — the open rename's too, if its old name was there.
        let mut held: Vec<(Ino, Ino, u64, Written)> = self
            .state()
            .guards
            .get(&key)
            .map(|g| g.iter().map(|g| (g.moved, g.new_dir, g.new_offset, g.shown.clone())).collect())
            .unwrap_or_default();
        {
            let state = self.state();
            if let Rename::Soft { moved, new: Some((dir, offset, shown)) } = &state.rename {
                if state.before.contains_key(&key) {
                    held.push((*moved, *dir, *offset, shown.clone()));
                }
            }
        }
        // A new name the operation releasing the block has just removed
        // (the last name of an emptied directory's tail, say) can never be
        // shown, and need not be: its removal's hint follows and ends the
        // rename's wait (`unshown_gone`). Waiting for it made the unlink
        // fail with EIO.
        let bs = fs.block_size() as u64;
        held.retain(|&(moved, dir, offset, _)| {
            fs.cache.share((dir, (offset / bs) as Lbn)).is_none_or(|block| {
                let at = (offset % bs) as usize;
                block
                    .get(at..at + 4)
                    .is_none_or(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])) == moved)
            })
        });
        self.settle_new_names(fs, &held)?;
        self.state().guards.remove(&key);
        let waits = self.state().removals.contains_key(&key);
        if waits && !self.disorder && fs.cache.is_dirty(key) {
            let mut placements = fs.placements_of(&[key])?;
            fs.write_placements(&mut placements)?;
        }
        let waiting = {
            let mut state = self.state();
            // The block is released inside the operation that emptied it,
            // before its hints: the add of the entry it removed now (a
            // rename's new name, say) stays for the hint to take
            // (`take_unshown`), so that what waits for it learns where the
            // name went. Ghosts go with the block.
            if let Some(adds) = state.adds.get_mut(&key) {
                adds.retain(|a| !a.ghost);
                if adds.is_empty() {
                    state.adds.remove(&key);
                }
            }
            state.removals.remove(&key)
        };
        let Some(waiting) = waiting else { return Ok(()) };
        self.track(fs, ino)?;
        let mut state = self.state();
        let deps = state.inodes.entry(ino).or_default();
        deps.waiters.extend(waiting.into_iter().map(|(_, _, w)| (w, Shows::Dropped)));
        Ok(())
    }

    fn indirect_allocated(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn, _addr: Daddr) -> Result<()> {
        let zero = fs.cache.zeroed();
        self.state().indirect.insert((ino, lbn), zero.clone());
        fs.cache.insert((ino, lbn), zero, true);
        Ok(())
    }

    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        let mut state = self.state();
        state.raised.clear();
        state.before.clear();
        state.old_name_gone = None;
        state.rename = Rename::Idle;
        drop(state);
        Ok(std::mem::take(&mut fs.tx_ticket))
    }

    /// The file's blocks and inode, and the chain of its new names up to
    /// the root (FreeBSD's `softdep_fsync`; for a directory, also the
    /// inodes its new entries name), in rounds — each a write of what the
    /// chain still has dirty, the groups, and a barrier — until none of it
    /// waits. A chain that does not settle in a few rounds (a name held
    /// back by a rename elsewhere) gets a whole sync instead.
    fn fsync(&self, fs: &mut Ffs, ino: Ino) -> Result<Ticket> {
        if self.disorder {
            fs.sync_all()?;
            return Ok(fs.queue.ticket_for_all());
        }
        for _ in 0..FSYNC_ROUNDS {
            let (keys, waiting) = self.fsync_chain(fs, ino)?;
            if keys.is_empty() {
                if !waiting {
                    return Ok(fs.queue.ticket_for_all());
                }
                break;
            }
            fs.write_dirty_among(&keys)?;
            fs.write_groups()?;
            fs.queue.flush()?;
            self.prune(fs.queue.durable());
        }
        fs.sync_all()?;
        Ok(fs.queue.ticket_for_all())
    }

    /// A chunk a rename's guard holds: an entry placed there could not be
    /// shown before that rename's new name is durable, and the new names
    /// of a run of renames (MH's `folder -pack`) would chain, each waiting
    /// for the one before.
    fn dir_chunk_held(&self, key: BlockKey, chunk: usize) -> bool {
        self.state().guards.get(&key).is_some_and(|g| g.iter().any(|g| g.chunk == chunk))
    }

    fn dir_chunk_keeping(&self, dir: Ino, name: &[u8], ino: Ino) -> Option<(BlockKey, usize)> {
        self.state().keeping(name_key(dir, name), ino)
    }

    fn names_gone(&self, ino: Ino, durable: Seq) -> bool {
        self.disorder || self.state().removals_pending(ino, durable) == 0
    }

    fn free_when(&self, fs: &mut Ffs, ino: Ino, _what: Freed) -> Result<FreeWhen> {
        if self.disorder {
            return Ok(FreeWhen::Now);
        }
        Ok(FreeWhen::Durable(fs.blocks_without_pointers(ino)?))
    }

    fn groups_written(&self, cgs: &[u32], seq: Seq) {
        let mut state = self.state();
        for &cg in cgs {
            let cg = cg as usize;
            if state.groups.len() <= cg {
                state.groups.resize(cg + 1, 0);
            }
            state.groups[cg] = seq;
        }
    }

    fn write_starting(
        &self,
        key: BlockKey,
        addr: Daddr,
        data: &BlockData,
        ctx: &WriteContext,
    ) -> Result<WriteAs> {
        if self.disorder {
            return Ok(WriteAs::Cached);
        }
        let copy = if key.0 == DEVICE {
            self.rolled_back_inode_block(key, addr, data, ctx.durable)
        } else if is_indirect(key.1) {
            self.rolled_back_indirect(key, data, ctx)
        } else {
            self.rolled_back_dir_block(key, data, ctx.durable)
        };
        Ok(copy.map_or(WriteAs::Cached, WriteAs::RolledBack))
    }

    fn write_done(&self, key: BlockKey, addr: Daddr, seq: Seq) {
        let mut state = self.state();
        if let Some(f) = state.fresh.get_mut(&addr.get()) {
            if f.written <= f.since {
                f.written = seq;
            }
        }
        if let Some(met) = state.starting.remove(&key) {
            for w in met {
                w.store(seq, Ordering::Relaxed);
            }
        }
    }

    fn waiting(&self) -> usize {
        let state = self.state();
        state.fresh.len()
            + state.inodes.values().map(|d| 1 + d.removals.len() + d.waiters.len()).sum::<usize>()
            + state.indirect.len()
            + state.adds.values().map(Vec::len).sum::<usize>()
            + state.removals.values().map(Vec::len).sum::<usize>()
            + state.guards.values().map(Vec::len).sum::<usize>()
    }

    fn prune(&self, durable: Seq) {
        let mut guard = self.state();
        let state = &mut *guard;
        let groups = &state.groups;
        state.fresh.retain(|_, f| !f.durable(groups, durable));
        state.inodes.retain(|_, d| {
            d.removals.retain(|w| !is_durable(w, durable));
            if d.removals.is_empty() {
                d.live = None;
            }
            if d.allocated.is_some_and(|(cg, since)| group_written_after(groups, cg, since, durable)) {
                d.allocated = None;
            }
            d.safe_map.is_some() || !d.removals.is_empty() || !d.waiters.is_empty() || d.allocated.is_some()
        });
        for guards in state.guards.values_mut() {
            guards.retain(|g| !is_durable(&g.shown, durable));
        }
        state.guards.retain(|_, g| !g.is_empty());
        state.imaged_names.retain(|_, tokens| {
            tokens.retain(|i| i.alive.strong_count() > 0);
            !tokens.is_empty()
        });
        state.prune_awaited(durable);
        let tracked: HashSet<Ino> = state.inodes.keys().copied().collect();
        state.blocks.retain(|_, inos| {
            inos.retain(|i| tracked.contains(i));
            !inos.is_empty()
        });
    }
}
