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
//! without it (`frees`): released by the tick ("background deletes"), by a
//! sync, or at once when an allocation would fail.
//!
//! What is simpler than FreeBSD's, and why:
//! * a rename is ordered as `sync` orders it (after a sync that settles
//!   everything before it): it changes an existing name, where a rolled-back
//!   copy would have to restore a removed entry into space a later entry
//!   may have taken; it is rare next to create and remove (decision 0006);
//! * fsync syncs the whole file system, in rounds, until nothing is dirty:
//!   the chain of a file's names up to the root is then durable with it;
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
use crate::ffs::frees::{FreeWhen, Freed};
use crate::ffs::fs::Ffs;
use crate::format::blockno::is_indirect;
use crate::format::dirent::{seal_chunk, DIRBLKSIZ};
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{Daddr, Ino, Lbn};
use crate::storage::{Hint, TxKind};
use crate::Result;
use disk::AlignedBytes;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A write some change waits for: 0 until the write that satisfies it is
/// issued, then that write's number. Satisfied once a flush covers it.
type Written = Arc<AtomicU64>;

fn new_written() -> Written {
    Arc::new(AtomicU64::new(0))
}

fn is_durable(w: &Written, durable: Seq) -> bool {
    let seq = w.load(Ordering::Relaxed);
    seq != 0 && seq <= durable
}

/// One thing a change waits for.
#[derive(Debug, Clone)]
enum Cond {
    /// A write (of an inode block, a directory block).
    Write(Written),
    /// A write of cylinder group `cg` issued after write `since`.
    Group { cg: u32, since: Seq },
}

/// A block allocated since mount whose pointer must wait: for its contents
/// to be written, and for its group's bitmap with it allocated.
#[derive(Debug, Clone, Copy)]
struct Fresh {
    cg: u32,
    since: Seq,
    written: Seq,
}

impl Fresh {
    /// Whether its contents and its group's bitmap are both durable.
    fn durable(&self, groups: &[Seq], durable: Seq) -> bool {
        self.written > self.since
            && self.written <= durable
            && group_written_after(groups, self.cg, self.since, durable)
    }
}

/// Whether group `cg` was written after write `since`, durably.
fn group_written_after(groups: &[Seq], cg: u32, since: Seq, durable: Seq) -> bool {
    groups.get(cg as usize).is_some_and(|&w| w > since && w <= durable)
}

/// A directory entry added and not yet safe to write.
#[derive(Debug, Clone)]
struct Add {
    /// Offset of the entry in its block.
    offset: usize,
    ino: Ino,
    waits: Vec<Cond>,
}

/// The map part of an inode: what rolls back as a whole.
#[derive(Debug, Clone, Copy, Default)]
struct Map {
    size: u64,
    blocks: u64,
    direct: [Daddr; crate::format::blockno::NDADDR],
    indirect: [Daddr; crate::format::blockno::NIADDR],
    xattr: Daddr,
}

impl Map {
    fn of(inode: &Inode) -> Map {
        Map {
            size: inode.attr.size,
            blocks: inode.blocks,
            direct: inode.direct,
            indirect: inode.indirect,
            xattr: inode.xattr,
        }
    }

    fn put(&self, inode: &mut Inode) {
        inode.attr.size = self.size;
        inode.blocks = self.blocks;
        inode.direct = self.direct;
        inode.indirect = self.indirect;
        inode.xattr = self.xattr;
    }

    fn pointers(&self) -> impl Iterator<Item = Daddr> + '_ {
        self.direct.iter().chain(self.indirect.iter()).chain(std::iter::once(&self.xattr)).copied()
    }
}

/// What a write of an inode's slot must show to satisfy a waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shows {
    /// The inode, initialised, with its link count (a new entry).
    Inode,
    /// The inode with its map unrolled (a new entry naming a directory or
    /// symbolic link, whose blocks must be reachable).
    Whole,
    /// The slot free (a removed directory, whose `..` names its parent
    /// until then).
    Freed,
    /// A map without a block it dropped, or the slot free: either way the
    /// entries in that block are out of reach (a directory block freed).
    Dropped,
}

/// What the mode tracks of one inode.
#[derive(Debug, Default)]
struct InodeDeps {
    /// Where its slot is: the inode block's address and the slot's offset.
    slot: Option<(u64, usize)>,
    /// The map its slot last held when it was safe to write: present while
    /// the stored slot may point at blocks not yet durable.
    safe_map: Option<Map>,
    /// The inode as it was when the first entry naming it went, while some
    /// removal is not durable (written in place of a freed slot).
    live: Option<Inode>,
    /// Removals of entries naming it, not yet durable.
    removals: Vec<Written>,
    /// What waits for a write of the slot, and what that write must show.
    waiters: Vec<(Written, Shows)>,
    /// When the inode was allocated: its group must be written after.
    allocated: Option<(u32, Seq)>,
    /// The slot as it was before this inode was first stored there, while
    /// no safe version of the inode has been: what a directory or symbolic
    /// link whose blocks are not durable is written as (an empty map would
    /// be damage, where a slot not yet in use is only a leak).
    prior: Option<Box<[u8; INODE_SIZE]>>,
}

/// Everything the mode tracks, behind one lock (the file system's own lock
/// is held around every call; this one is for the write hooks).
#[derive(Debug, Default)]
struct State {
    fresh: HashMap<u64, Fresh>,
    /// Last write of each cylinder group.
    groups: Vec<Seq>,
    inodes: HashMap<Ino, InodeDeps>,
    /// Inodes tracked in each inode block.
    blocks: HashMap<u64, Vec<Ino>>,
    /// Last safe copy of each indirect block changed since.
    indirect: HashMap<BlockKey, BlockData>,
    /// New entries of each directory block.
    adds: HashMap<BlockKey, Vec<Add>>,
    /// Removals waiting for a write of each directory block.
    removals: HashMap<BlockKey, Vec<Written>>,
    /// What the write of each block now starting satisfies.
    starting: HashMap<BlockKey, Vec<Written>>,
    /// Inodes whose link count rose in the open transaction.
    raised: Vec<Ino>,
}

impl State {
    fn cond_met(&self, cond: &Cond, durable: Seq) -> bool {
        match cond {
            Cond::Write(w) => is_durable(w, durable),
            Cond::Group { cg, since } => self.group_written_after(*cg, *since, durable),
        }
    }

    fn group_written_after(&self, cg: u32, since: Seq, durable: Seq) -> bool {
        group_written_after(&self.groups, cg, since, durable)
    }

    /// Whether `addr` may be pointed at on disk now.
    fn pointee_safe(&self, addr: Daddr, durable: Seq) -> bool {
        addr.is_none() || self.fresh.get(&addr.get()).is_none_or(|f| f.durable(&self.groups, durable))
    }

    fn removals_pending(&mut self, ino: Ino, durable: Seq) -> usize {
        let Some(deps) = self.inodes.get_mut(&ino) else { return 0 };
        deps.removals.retain(|w| !is_durable(w, durable));
        if deps.removals.is_empty() {
            deps.live = None;
        }
        deps.removals.len()
    }

    /// The slot to write for `inode` (as stored): the inode (or the slot's
    /// prior bytes, when the inode may not appear yet), and whether its
    /// map went unrolled.
    fn slot_to_write(
        &mut self,
        inode: Inode,
        durable: Seq,
    ) -> (std::result::Result<Inode, [u8; INODE_SIZE]>, bool) {
        let ino = inode.ino;
        let pending = self.removals_pending(ino, durable);
        let mut out = inode;
        let mut whole = true;
        if pending > 0 {
            let live = self.inodes.get(&ino).and_then(|d| d.live);
            match live {
                Some(live) if inode.attr.mode == 0 => {
                    out = live;
                    whole = false;
                }
                _ => out.attr.nlink = out.attr.nlink.saturating_add(pending as u32),
            }
        }
        let safe = Map::of(&out).pointers().all(|a| self.pointee_safe(a, durable));
        // A new inode's slot shows nothing until its group's bitmap says it
        // is in use (FreeBSD writes such a slot as zeros).
        let allocated = self.inodes.get(&ino).and_then(|d| d.allocated);
        let unmarked = allocated.is_some_and(|(cg, since)| !self.group_written_after(cg, since, durable));
        let deps = self.inodes.entry(ino).or_default();
        if unmarked {
            if let Some(prior) = &deps.prior {
                return (Err(**prior), false);
            }
        }
        if safe {
            if whole {
                deps.safe_map = None;
                deps.prior = None;
            }
        } else {
            if let (Some(prior), false) = (&deps.prior, out.attr.is_reg()) {
                return (Err(**prior), false);
            }
            deps.safe_map.unwrap_or_default().put(&mut out);
            whole = false;
        }
        (Ok(out), whole)
    }
}

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

    /// Starts tracking `ino`'s slot (stores it, so the block carries it).
    fn track(&self, fs: &mut Ffs, ino: Ino) -> Result<()> {
        fs.mark_inode_dirty(ino)?;
        fs.store_inode(ino)?;
        Ok(())
    }

    /// A waiter for the next write of `ino`'s slot.
    fn wait_for_inode(&self, fs: &mut Ffs, ino: Ino, shows: Shows) -> Result<Written> {
        self.track(fs, ino)?;
        let w = new_written();
        self.state().inodes.entry(ino).or_default().waiters.push((w.clone(), shows));
        Ok(w)
    }

    fn entry_added(&self, fs: &mut Ffs, dir: Ino, offset: u64, ino: Ino) -> Result<()> {
        let named = *fs.cached_inode(ino)?;
        let shows = if named.attr.is_reg() { Shows::Inode } else { Shows::Whole };
        let mut waits = vec![Cond::Write(self.wait_for_inode(fs, ino, shows)?)];
        let raised: Vec<Ino> = self.state().raised.clone();
        for other in raised.into_iter().filter(|&r| r != ino) {
            waits.push(Cond::Write(self.wait_for_inode(fs, other, Shows::Inode)?));
        }
        let mut state = self.state();
        if let Some(&(cg, since)) = state.inodes.get(&ino).and_then(|d| d.allocated.as_ref()) {
            waits.push(Cond::Group { cg, since });
        }
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        state.adds.entry(key).or_default().push(Add { offset: (offset % bs) as usize, ino, waits });
        Ok(())
    }

    /// The entry at `offset` of `dir` naming `ino` is gone; `destroyed`
    /// when `ino` goes with it (rmdir, unlink: not a rename's move).
    fn entry_removed(&self, fs: &mut Ffs, dir: Ino, offset: u64, ino: Ino, destroyed: bool) -> Result<()> {
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let at = (offset % bs) as usize;
        {
            let mut state = self.state();
            if let Some(adds) = state.adds.get_mut(&key) {
                if let Some(i) = adds.iter().position(|a| a.offset == at && a.ino == ino) {
                    // The entry never reached the disk: nothing to wait for.
                    adds.remove(i);
                    return Ok(());
                }
            }
        }
        let live = *fs.cached_inode(ino)?;
        self.track(fs, ino)?;
        let w = new_written();
        // The removal dirtied the block, unless the directory shrank and
        // freed it: then the entry is gone once the directory's inode is
        // durable without the block (or free).
        let dropped = !fs.cache.is_dirty(key);
        if dropped {
            self.track(fs, dir)?;
        }
        let mut state = self.state();
        if dropped {
            state.inodes.entry(dir).or_default().waiters.push((w.clone(), Shows::Dropped));
        } else {
            state.removals.entry(key).or_default().push(w.clone());
        }
        let deps = state.inodes.entry(ino).or_default();
        if deps.removals.is_empty() {
            deps.live = Some(live);
        }
        deps.removals.push(w);
        drop(state);
        if live.attr.is_dir() && destroyed {
            // The child's `..` names the parent until the child's slot is
            // free on disk (FreeBSD's rmdir dirrem on the child's inowait).
            let freed = self.wait_for_inode(fs, ino, Shows::Freed)?;
            let parent = *fs.cached_inode(dir)?;
            self.track(fs, dir)?;
            let mut state = self.state();
            let deps = state.inodes.entry(dir).or_default();
            if deps.removals.is_empty() {
                deps.live = Some(parent);
            }
            deps.removals.push(freed);
        }
        Ok(())
    }

    fn rolled_back_inode_block(
        &self,
        key: BlockKey,
        addr: Daddr,
        data: &BlockData,
        durable: Seq,
    ) -> Option<BlockData> {
        let mut state = self.state();
        let inos = state.blocks.get(&addr.get())?.clone();
        let mut copy: Option<AlignedBytes> = None;
        for ino in inos {
            let Some(&(_, at)) = state.inodes.get(&ino).and_then(|d| d.slot.as_ref()) else { continue };
            let Some(bytes) = data.get(at..at + INODE_SIZE) else { continue };
            let Ok(stored) = Inode::decode(bytes) else { continue };
            if stored.ino != ino && stored.ino != 0 {
                continue;
            }
            let stored = Inode { ino, ..stored };
            let (out, whole) = state.slot_to_write(stored, durable);
            let shown = out.is_ok();
            let deps = state.inodes.entry(ino).or_default();
            let mut satisfied = Vec::new();
            let freed = match &out {
                Ok(inode) => inode.attr.mode == 0,
                Err(prior) => Inode::decode(prior).map_or(true, |i| i.attr.mode == 0),
            };
            deps.waiters.retain(|(w, need)| {
                let met = match need {
                    Shows::Inode => shown && !freed,
                    Shows::Whole => shown && !freed && whole,
                    Shows::Freed => freed,
                    Shows::Dropped => freed || (shown && whole),
                };
                if met {
                    satisfied.push(w.clone());
                    false
                } else {
                    true
                }
            });
            state.starting.entry(key).or_default().extend(satisfied);
            match out {
                Ok(out) if out == stored => {}
                Ok(out) => {
                    let copy = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
                    if out.encode(&mut copy[at..at + INODE_SIZE]).is_err() {
                        continue;
                    }
                }
                Err(prior) => {
                    let copy = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
                    copy[at..at + INODE_SIZE].copy_from_slice(&prior);
                }
            }
        }
        copy.map(Arc::new)
    }

    fn rolled_back_dir_block(&self, key: BlockKey, data: &BlockData, durable: Seq) -> Option<BlockData> {
        let mut state = self.state();
        if let Some(removals) = state.removals.remove(&key) {
            state.starting.entry(key).or_default().extend(removals);
        }
        let adds = state.adds.remove(&key)?;
        let (met, waiting): (Vec<Add>, Vec<Add>) =
            adds.into_iter().partition(|a| a.waits.iter().all(|c| state.cond_met(c, durable)));
        drop(met);
        if waiting.is_empty() {
            return None;
        }
        let mut copy = AlignedBytes::copy_of(data);
        for add in &waiting {
            let at = add.offset;
            if at + 4 > copy.len()
                || u64::from(u32::from_le_bytes([copy[at], copy[at + 1], copy[at + 2], copy[at + 3]]))
                    != add.ino
            {
                continue;
            }
            copy[at..at + 4].fill(0);
            let chunk = at / DIRBLKSIZ * DIRBLKSIZ;
            seal_chunk(&mut copy[chunk..chunk + DIRBLKSIZ]);
        }
        state.adds.insert(key, waiting);
        Some(Arc::new(copy))
    }

    fn rolled_back_indirect(&self, key: BlockKey, data: &BlockData, ctx: &WriteContext) -> Option<BlockData> {
        let mut state = self.state();
        let safe = state.indirect.get(&key)?.clone();
        let count = ctx.tree.pointers_in(data.len()) as usize;
        let all_safe = (0..count).all(|i| {
            let at = ctx.tree.pointer_offset(i);
            let raw = u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            state.pointee_safe(Daddr::from_pointer(raw), ctx.durable)
        });
        if all_safe {
            state.indirect.remove(&key);
            return None;
        }
        Some(safe)
    }
}

impl IntegrityMode for Softdep {
    fn tx_beginning(&self, fs: &mut Ffs, kind: TxKind) -> Result<()> {
        self.state().raised.clear();
        if kind == TxKind::Rename && !self.disorder {
            // Settled first, so the rename's ordered writes name only
            // durable inodes and blocks.
            fs.sync_all()?;
        }
        Ok(())
    }

    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        if fs.tx.kind() == Some(TxKind::Rename) && !self.disorder {
            // Link counts that fall wait for the entries' removal, as
            // anywhere else; the rest is ordered as `sync` orders it.
            match hint {
                Hint::EntryRemoved { dir, offset, ino } => self.entry_removed(fs, dir, offset, ino, false)?,
                Hint::EntryChanged { dir, offset, old, .. } => {
                    self.entry_removed(fs, dir, offset, old, false)?
                }
                _ => {}
            }
            return Ordered.on_hint(fs, hint);
        }
        match hint {
            Hint::EntryAdded { dir, offset, ino } => self.entry_added(fs, dir, offset, ino),
            // Only a rename changes an entry (above).
            Hint::EntryChanged { .. } => Ordered.on_hint(fs, hint),
            Hint::EntryRemoved { dir, offset, ino } => self.entry_removed(fs, dir, offset, ino, true),
            Hint::LinkCount { ino, nlink } => {
                if fs.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    self.state().raised.push(ino);
                }
                Ok(())
            }
            _ => Ok(()),
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

    fn inode_storing(&self, ino: Ino, addr: Daddr, at: usize, old: &[u8]) {
        let mut state = self.state();
        let deps = state.inodes.entry(ino).or_default();
        let first = deps.slot.is_none();
        deps.slot = Some((addr.get(), at));
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
        let waits = self.state().removals.contains_key(&key);
        if waits && !self.disorder && fs.cache.is_dirty(key) {
            let mut placements = fs.placements_of(&[key])?;
            fs.write_placements(&mut placements)?;
        }
        let waiting = {
            let mut state = self.state();
            state.adds.remove(&key);
            state.removals.remove(&key)
        };
        let Some(waiting) = waiting else { return Ok(()) };
        self.track(fs, ino)?;
        let mut state = self.state();
        let deps = state.inodes.entry(ino).or_default();
        deps.waiters.extend(waiting.into_iter().map(|w| (w, Shows::Dropped)));
        Ok(())
    }

    fn indirect_allocated(&self, fs: &mut Ffs, ino: Ino, lbn: Lbn, _addr: Daddr) -> Result<()> {
        let zero = fs.cache.zeroed();
        self.state().indirect.insert((ino, lbn), zero.clone());
        fs.cache.insert((ino, lbn), zero, true);
        Ok(())
    }

    fn commit(&self, fs: &mut Ffs) -> Result<Ticket> {
        self.state().raised.clear();
        Ok(std::mem::take(&mut fs.tx_ticket))
    }

    /// Everything, in rounds until nothing is dirty: the file, its inode
    /// and every name on the way to it are then durable.
    fn fsync(&self, fs: &mut Ffs, _ino: Ino) -> Result<Ticket> {
        fs.sync_all()?;
        Ok(fs.queue.ticket_for_all())
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
        let tracked: HashSet<Ino> = state.inodes.keys().copied().collect();
        state.blocks.retain(|_, inos| {
            inos.retain(|i| tracked.contains(i));
            !inos.is_empty()
        });
    }
}
