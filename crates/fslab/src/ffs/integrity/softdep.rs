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
//! A regular file's rename [DIRCHG diradd, dirrem] adds or changes its new
//! name as above (a changed entry shows the name it replaced while it
//! waits) and, stricter than FreeBSD, keeps its old name on the disk until
//! the new one is durable: writes of the old name's 512-byte directory
//! chunk send the chunk as it was before the rename (`Guard`), so a crash
//! leaves the file one name or both, never neither (decision 0006, item
//! 4 revised). New entries keep out of a chunk so held
//! (`dir_chunk_held`), and a new entry of a name a held image still shows
//! waits for that image to go (`Cond::GuardGone`), so that the disk never
//! shows one name twice.
//!
//! What is simpler than FreeBSD's, and why:
//! * a directory's rename, or an exchange, is ordered as `sync` orders it
//!   (after a sync that settles everything before it): it moves `..` and
//!   two parents' counts as well; it is rarer still (decision 0006);
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
use crate::ffs::frees::{FreeWhen, Freed};
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
    /// The end of a rename's guard whose image holds the same name (a
    /// name that may still be on the disk there): gone once the guard is
    /// dropped, whatever ends it.
    GuardGone(Weak<()>),
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
    /// What the entry named before, with its type, when a rename changed
    /// an existing entry (FreeBSD's DIRCHG): what a write shows while the
    /// add waits. `None`: a new entry, shown free (inode 0).
    previous: Option<(Ino, u8)>,
    /// For a rename's new name: set to the first write that shows it.
    shown: Option<Written>,
    waits: Vec<Cond>,
    /// An entry removed before any write showed it, kept while a rename's
    /// image of its chunk (`Guard`) may still hold it: rolled back
    /// wherever a copy shows it, never shown.
    ghost: bool,
}

/// A rename's old name, removed from a directory chunk, and the rename's
/// new name: until the new name is durable, a write of the old name's
/// chunk shows the chunk as it was before the rename, so that a crash
/// leaves the file its old name, its new one or both, never neither (the
/// old entry's space may meanwhile hold a later entry, which that write
/// leaves out: it is newer than the image, and waits in turn).
#[derive(Debug)]
struct Guard {
    /// The old name's chunk in its block.
    chunk: usize,
    /// That chunk before the rename.
    image: Arc<[u8]>,
    /// The new name's first write that shows it (see `Add::shown`).
    shown: Written,
    /// The file renamed, and where its new name is.
    moved: Ino,
    new_dir: Ino,
    new_offset: u64,
    /// Alive as long as the guard: what a new entry of a name its image
    /// holds waits on (`Cond::GuardGone`). Never read: dropping it is the
    /// signal.
    _alive: Arc<()>,
}

/// A name a guard's image holds (`State::imaged_names`).
#[derive(Debug, Clone)]
struct Imaged {
    /// The guard's token.
    alive: Weak<()>,
    /// The image's block and chunk in it.
    key: BlockKey,
    chunk: usize,
    /// The inode the image's entry names.
    ino: Ino,
}

/// The key of a name in a directory in `State::imaged_names`.
fn name_key(dir: Ino, name: &[u8]) -> (Ino, u64) {
    // FNV-1a: a collision only makes an entry wait longer.
    let hash =
        name.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (dir, hash)
}

/// The rename in the open transaction, if any.
#[derive(Debug, Default)]
enum Rename {
    #[default]
    Idle,
    /// Begun: its first hint decides how it is kept.
    Undecided,
    /// A regular file renamed: its names kept by rollbacks (`Guard`).
    Soft {
        moved: Ino,
        /// The new name's block, offset and first showing write.
        new: Option<(Ino, u64, Written)>,
    },
    /// Anything else (a directory, an exchange): settled by a sync, then
    /// ordered as `sync` orders it.
    Ordered,
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
    /// Removals waiting for a write of each directory block: the removed
    /// entry's offset in the block and inode.
    removals: HashMap<BlockKey, Vec<(usize, Ino, Written)>>,
    /// Old names of renames whose new names are not durable yet.
    guards: HashMap<BlockKey, Vec<Guard>>,
    /// The names each guard's image holds, by directory and name: a new
    /// entry of one of them, put in another chunk, must not be shown
    /// while the image may show the old one (two entries of one name).
    /// Entries of guards since dropped are cleared lazily.
    imaged_names: HashMap<(Ino, u64), Vec<Imaged>>,
    /// The rename in the open transaction.
    rename: Rename,
    /// Directory blocks as they were before the open rename changed them.
    before: HashMap<BlockKey, BlockData>,
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
            Cond::GuardGone(token) => token.strong_count() == 0,
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

    /// Takes the add of the entry naming `ino` at `at` of block `key`, if
    /// no write has shown it yet; a guard's image of its chunk may still
    /// hold it, so a ghost of it stays while one may.
    fn take_unshown(&mut self, key: BlockKey, at: usize, ino: Ino) -> Option<Add> {
        let adds = self.adds.get_mut(&key)?;
        let i = adds.iter().position(|a| a.offset == at && a.ino == ino && !a.ghost)?;
        let add = adds.remove(i);
        // An image of the chunk holds it if a guard's does, or if the open
        // rename's view of the block from before it (its guards' images to
        // come) does.
        let imaged = self.before.contains_key(&key)
            || self.guards.get(&key).is_some_and(|g| g.iter().any(|g| g.chunk == at / DIRBLKSIZ));
        if imaged {
            let ghost = Add { shown: None, waits: Vec::new(), ghost: true, ..add.clone() };
            self.adds.entry(key).or_default().push(ghost);
        }
        Some(add)
    }

    /// An add no write showed is gone (its entry removed or replaced):
    /// the renames waiting for it, if it was a rename's new name, wait
    /// for `moved_to` instead (the name was renamed again), or for
    /// nothing (the name was removed: the file has none to keep).
    fn unshown_gone(&mut self, add: &Add, moved_to: Option<&(Ino, u64, Written)>) {
        let Some(shown) = &add.shown else { return };
        let mut retargeted: Vec<Weak<()>> = Vec::new();
        for guards in self.guards.values_mut() {
            guards.retain_mut(|g| {
                if !Arc::ptr_eq(&g.shown, shown) {
                    return true;
                }
                match moved_to {
                    Some((dir, offset, next)) => {
                        g.shown = next.clone();
                        g.new_dir = *dir;
                        g.new_offset = *offset;
                        retargeted.push(Arc::downgrade(&g._alive));
                        true
                    }
                    None => false,
                }
            });
        }
        self.guards.retain(|_, g| !g.is_empty());
        // A name renamed back to one its guard's image holds (foo -> bar ->
        // foo): the new entry may not wait for the guard that now waits
        // for it. Its `dir_chunk_keeping` chunk made the two one sector's
        // change; a new entry the chunk had no room for is shown without
        // that wait (a crash may then leave the name twice, which fsck
        // repairs), rather than never.
        if let (Some((_, _, next)), false) = (moved_to, retargeted.is_empty()) {
            for adds in self.adds.values_mut() {
                for a in adds.iter_mut().filter(|a| a.shown.as_ref().is_some_and(|w| Arc::ptr_eq(w, next))) {
                    a.waits.retain(
                        |c| !matches!(c, Cond::GuardGone(t) if retargeted.iter().any(|r| r.ptr_eq(t))),
                    );
                }
            }
        }
    }

    /// The chunk (block, chunk in it) a guard's image of which still holds
    /// an entry of this name key naming `ino`, if any.
    fn keeping(&mut self, name: (Ino, u64), ino: Ino) -> Option<(BlockKey, usize)> {
        let imaged = self.imaged_names.get_mut(&name)?;
        imaged.retain(|i| i.alive.strong_count() > 0);
        imaged.iter().find(|i| i.ino == ino).map(|i| (i.key, i.chunk))
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

    /// A waiter for the next write of `ino`'s slot. The inode is not
    /// stored in its block now but at the next sync, fsync or crowded
    /// write-back, as any changed inode is: stored at every name added, it
    /// dirtied an inode-table block per rename, and write-back went round
    /// every few hundred renames (MH's pack, a rename per file in name
    /// order, spread over a thousand blocks). What waits for it waits a
    /// little longer; nothing it orders changes.
    fn wait_for_inode(&self, fs: &mut Ffs, ino: Ino, shows: Shows) -> Result<Written> {
        fs.mark_inode_dirty(ino)?;
        let w = new_written();
        self.state().inodes.entry(ino).or_default().waiters.push((w.clone(), shows));
        Ok(w)
    }

    fn entry_added(&self, fs: &mut Ffs, dir: Ino, offset: u64, ino: Ino) -> Result<()> {
        self.add_entry(fs, dir, offset, ino, None, None)
    }

    /// The entry at `offset` of `dir` names `ino` now: it waits for the
    /// inode (and what the same operation raised) to be durable; until
    /// then a write shows `previous` there (a rename over an existing
    /// name), or the slot free. A rename's new name has `shown`.
    fn add_entry(
        &self,
        fs: &mut Ffs,
        dir: Ino,
        offset: u64,
        ino: Ino,
        previous: Option<(Ino, u8)>,
        shown: Option<Written>,
    ) -> Result<()> {
        let named = *fs.cached_inode(ino)?;
        let shows = if named.attr.is_reg() { Shows::Inode } else { Shows::Whole };
        let mut waits = vec![Cond::Write(self.wait_for_inode(fs, ino, shows)?)];
        let raised: Vec<Ino> = self.state().raised.clone();
        for other in raised.into_iter().filter(|&r| r != ino) {
            waits.push(Cond::Write(self.wait_for_inode(fs, other, Shows::Inode)?));
        }
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        // The entry's name, read back only while some rename's image may
        // hold one (a create's path otherwise).
        let imaging = !self.state().imaged_names.is_empty();
        let name = fs.cache.share(key).filter(|_| imaging).and_then(|block| {
            let within = (offset % bs) as usize;
            let chunk = within - within % DIRBLKSIZ;
            let bytes = block.get(chunk..chunk + DIRBLKSIZ)?;
            let chunk_offset = offset - (within % DIRBLKSIZ) as u64;
            let entry = crate::format::dirent::entry_in_chunk(bytes, dir, chunk_offset, within % DIRBLKSIZ)
                .ok()??;
            Some(name_key(dir, entry.name))
        });
        let mut state = self.state();
        if let Some(&(cg, since)) = state.inodes.get(&ino).and_then(|d| d.allocated.as_ref()) {
            waits.push(Cond::Group { cg, since });
        }
        // The same name, still in a rename's image of another chunk: shown
        // only once that image is gone (the disk never names two).
        // In the image's own chunk the one sector's write replaces the one
        // entry by the other (`rolled_back_dir_block`): no wait for it.
        let chunk = (key, (offset % bs) as usize / DIRBLKSIZ);
        if let Some(imaged) = name.and_then(|n| state.imaged_names.get_mut(&n)) {
            imaged.retain(|i| i.alive.strong_count() > 0);
            let elsewhere = imaged.iter().filter(|i| (i.key, i.chunk) != chunk);
            waits.extend(elsewhere.map(|i| Cond::GuardGone(i.alive.clone())));
        }
        let add = Add { offset: (offset % bs) as usize, ino, previous, shown, waits, ghost: false };
        state.adds.entry(key).or_default().push(add);
        Ok(())
    }

    /// The entry at `offset` of `dir` naming `ino` is gone; `destroyed`
    /// when `ino` goes with it (rmdir, unlink: not a rename's move).
    /// Returns the entry's add if no write had shown it yet (then there is
    /// nothing to wait for).
    fn entry_removed(
        &self,
        fs: &mut Ffs,
        dir: Ino,
        offset: u64,
        ino: Ino,
        destroyed: bool,
    ) -> Result<Option<Add>> {
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let at = (offset % bs) as usize;
        {
            let mut state = self.state();
            if let Some(unshown) = state.take_unshown(key, at, ino) {
                // The entry never reached the disk: nothing to wait for.
                return Ok(Some(unshown));
            }
        }
        let live = *fs.cached_inode(ino)?;
        // Not stored in its block now: the slot's next write shows the
        // count raised by this removal until it is durable (`slot_to_write`),
        // and a file freed meanwhile keeps its slot until then
        // (`names_gone`), so the unlink dirties no inode block. FreeBSD's
        // dirrem likewise leaves the inode alone until the directory block
        // is written. A slot stored before this removal shows a count one
        // higher still: too high is a leak, never damage.
        fs.mark_inode_dirty(ino)?;
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
            state.removals.entry(key).or_default().push((at, ino, w.clone()));
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
        Ok(None)
    }

    /// A rename's hint, once the rename is known to be a regular file's
    /// (see `Rename::Soft`).
    fn soft_rename_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        match hint {
            Hint::LinkCount { ino, nlink } => {
                if fs.stored_nlink(ino)?.is_none_or(|stored| nlink > stored) {
                    self.state().raised.push(ino);
                }
                Ok(())
            }
            Hint::EntryAdded { dir, offset, ino } => {
                let shown = new_written();
                self.add_entry(fs, dir, offset, ino, None, Some(shown.clone()))?;
                self.new_name(dir, offset, shown);
                self.settle_guards_hiding(fs, dir, offset)
            }
            Hint::EntryChanged { dir, offset, old, ino } => {
                let bs = fs.block_size() as u64;
                let (key, at) = ((dir, (offset / bs) as Lbn), (offset % bs) as usize);
                // What the disk has there: what the replaced entry's add
                // would have shown, if no write showed it yet; otherwise
                // the replaced entry, whose count falls once a write shows
                // the change.
                let before_type = self.state().before.get(&key).and_then(|b| b.get(at + 6).copied());
                let previous = match self.entry_removed(fs, dir, offset, old, true)? {
                    Some(unshown) => {
                        self.state().unshown_gone(&unshown, None);
                        unshown.previous
                    }
                    None => Some((old, before_type.unwrap_or(dt::UNKNOWN))),
                };
                let shown = new_written();
                self.add_entry(fs, dir, offset, ino, previous, Some(shown.clone()))?;
                self.new_name(dir, offset, shown);
                self.settle_guards_hiding(fs, dir, offset)
            }
            Hint::EntryRemoved { dir, offset, ino } => {
                let bs = fs.block_size() as u64;
                let key = (dir, (offset / bs) as Lbn);
                let (moved, new) = match &self.state().rename {
                    Rename::Soft { moved, new: Some(new) } => (*moved, new.clone()),
                    _ => return Err(errno(libc::EIO, "soft updates: a rename removed its old name first")),
                };
                match self.entry_removed(fs, dir, offset, ino, false)? {
                    // The old name never reached the disk: what did (an
                    // older name, if any) now waits for the new one.
                    Some(unshown) => {
                        self.state().unshown_gone(&unshown, Some(&new));
                        Ok(())
                    }
                    None => self.guard_old_name(fs, key, (offset % bs) as usize, moved, new),
                }
            }
            _ => Ok(()),
        }
    }

    /// Records the open rename's new name.
    fn new_name(&self, dir: Ino, offset: u64, shown: Written) {
        if let Rename::Soft { new, .. } = &mut self.state().rename {
            *new = Some((dir, offset, shown));
        }
    }

    /// The old name at `at` of block `key` is gone in memory: until the
    /// new name is durable, writes of its chunk show it as it was before
    /// the rename.
    fn guard_old_name(
        &self,
        fs: &mut Ffs,
        key: BlockKey,
        at: usize,
        moved: Ino,
        (new_dir, new_offset, shown): (Ino, u64, Written),
    ) -> Result<()> {
        let chunk = at / DIRBLKSIZ;
        let mut state = self.state();
        if is_durable(&shown, fs.queue.durable()) {
            // Made durable already (its old name's block was freed).
            return Ok(());
        }
        let image: Option<Arc<[u8]>> = state
            .before
            .get(&key)
            .and_then(|b| b.get(chunk * DIRBLKSIZ..(chunk + 1) * DIRBLKSIZ))
            .map(Arc::from);
        let Some(image) = image else {
            // No image of the chunk from before the rename: the new name
            // is made durable now instead.
            drop(state);
            return self.settle_new_names(fs, &[(moved, new_dir, new_offset, shown)]);
        };
        let token = Arc::new(());
        let chunk_offset = key.1 as u64 * fs.block_size() as u64 + (chunk * DIRBLKSIZ) as u64;
        if let Ok(entries) = crate::format::dirent::parse_chunk(&image, key.0, chunk_offset) {
            for e in entries.iter().filter(|e| e.ino != 0) {
                let imaged = Imaged { alive: Arc::downgrade(&token), key, chunk, ino: e.ino };
                state.imaged_names.entry(name_key(key.0, e.name)).or_default().push(imaged);
            }
        }
        let guard = Guard { chunk, image, shown, moved, new_dir, new_offset, _alive: token };
        state.guards.entry(key).or_default().push(guard);
        Ok(())
    }

    /// A rename's new name at `offset` of `dir` lies in a chunk an older
    /// rename holds back: no write would show it until that rename's own
    /// new name is durable. New entries keep out of held chunks
    /// (`dir_chunk_held`), but a rename back to a name the disk still
    /// shows for the same file goes there (`dir_chunk_keeping`), and so
    /// does a change in place or an entry on a full disk. Two renames
    /// each in the other's held chunk would wait for each other for ever,
    /// so the older renames' new names are made durable now (this one's
    /// add is recorded first, so those writes do not show it).
    fn settle_guards_hiding(&self, fs: &mut Ffs, dir: Ino, offset: u64) -> Result<()> {
        let bs = fs.block_size() as u64;
        let key = (dir, (offset / bs) as Lbn);
        let chunk = (offset % bs) as usize / DIRBLKSIZ;
        let durable = fs.queue.durable();
        let hiding: Vec<(Ino, Ino, u64, Written)> = self
            .state()
            .guards
            .get(&key)
            .map(|g| {
                g.iter()
                    .filter(|g| g.chunk == chunk && !is_durable(&g.shown, durable))
                    .map(|g| (g.moved, g.new_dir, g.new_offset, g.shown.clone()))
                    .collect()
            })
            .unwrap_or_default();
        self.settle_new_names(fs, &hiding)
    }

    /// What an fsync of `ino` still has to write (dirty blocks), and
    /// whether anything of its chain waits at all: `ino`'s blocks, the
    /// inodes of `ino` and of every directory on the way up through names
    /// not yet shown, those names' directory blocks, and for a directory
    /// the inodes its own new entries name.
    fn fsync_chain(&self, fs: &mut Ffs, ino: Ino) -> Result<(Vec<BlockKey>, bool)> {
        let all = Lbn::MIN..=Lbn::MAX;
        let mut keys: Vec<BlockKey> = fs.cache.dirty_keys_in(ino, all.clone());
        let mut chain = vec![ino];
        let mut named: Vec<Ino> = Vec::new();
        let mut waiting = false;
        {
            let state = self.state();
            let mut i = 0;
            while i < chain.len() {
                let member = chain[i];
                i += 1;
                for (key, adds) in &state.adds {
                    if adds.iter().any(|a| !a.ghost && a.ino == member) {
                        waiting = true;
                        keys.push(*key);
                        if !chain.contains(&key.0) {
                            chain.push(key.0);
                        }
                    }
                }
            }
            for (key, adds) in &state.adds {
                if key.0 == ino {
                    waiting |= adds.iter().any(|a| !a.ghost);
                    named.extend(adds.iter().filter(|a| !a.ghost).map(|a| a.ino));
                }
            }
            waiting |= state.removals.keys().any(|k| k.0 == ino);
        }
        for &member in chain.iter().chain(named.iter()) {
            let key = fs.store_inode(member)?;
            keys.push(key);
            if member != ino && !fs.cached_inode(member)?.attr.is_reg() {
                keys.extend(fs.cache.dirty_keys_in(member, all.clone()));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|&k| fs.cache.is_dirty(k));
        waiting |= !keys.is_empty();
        Ok((keys, waiting))
    }

    /// Makes renames' new names durable now (each: the moved inode, the
    /// new name's directory and offset, and its first showing write), in
    /// `sync`'s order and a few barriers whatever their number: the groups
    /// (a new inode's bitmap), the moved inodes with their raised counts,
    /// then the new names' blocks, and a barrier; in rounds, since a new
    /// name may wait for another rename's image of the same name to go.
    /// Every rename held anywhere goes with them: barriers are paid for
    /// anyway, and a directory emptied from its end after a run of renames
    /// (MH's remove after its pack) released one held block after another,
    /// a thousand renames settled a barrier pair each.
    fn settle_new_names(&self, fs: &mut Ffs, names: &[(Ino, Ino, u64, Written)]) -> Result<()> {
        let mut waiting: Vec<Written> = names.iter().map(|n| n.3.clone()).collect();
        for _ in 0..SETTLE_ROUNDS {
            let durable = fs.queue.durable();
            waiting.retain(|w| !is_durable(w, durable));
            if waiting.is_empty() {
                return Ok(());
            }
            let mut all: Vec<(Ino, Ino, u64)> = names.iter().map(|n| (n.0, n.1, n.2)).collect();
            all.extend(self.state().guards.values().flatten().map(|g| (g.moved, g.new_dir, g.new_offset)));
            self.settle_round(fs, &all)?;
        }
        Err(errno(libc::EIO, "soft updates: a rename's new name did not become durable"))
    }

    /// One round of `settle_new_names`.
    fn settle_round(&self, fs: &mut Ffs, names: &[(Ino, Ino, u64)]) -> Result<()> {
        fs.write_groups()?;
        // A moved directory's or symbolic link's blocks before its inode,
        // the inodes before the names.
        let mut blocks = Vec::new();
        for &(moved, _, _) in names {
            if !fs.cached_inode(moved)?.attr.is_reg() {
                blocks.extend(fs.dirty_blocks_of(moved));
            }
        }
        fs.write_ordered(&blocks)?;
        let mut inodes = Vec::new();
        for &(moved, _, _) in names {
            inodes.push(fs.store_inode(moved)?);
        }
        fs.write_ordered(&inodes)?;
        // A directory that grew in this transaction: its new blocks, then
        // its inode, so the name is reachable.
        let bs = fs.block_size() as u64;
        let (mut entries, mut grown) = (Vec::new(), Vec::new());
        for &(_, dir, offset) in names {
            if fs.grew_in_tx(dir) {
                entries.extend(fs.dirty_blocks_of(dir));
                grown.push(dir);
            } else {
                entries.push((dir, (offset / bs) as Lbn));
            }
        }
        entries.sort_unstable();
        entries.dedup();
        fs.write_ordered(&entries)?;
        let mut dir_inodes = Vec::new();
        for dir in grown {
            dir_inodes.push(fs.store_inode(dir)?);
        }
        fs.write_ordered(&dir_inodes)?;
        fs.queue.flush()?;
        self.prune(fs.queue.durable());
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

    /// The copy of directory block `key` to write: each chunk held back by
    /// a rename (`Guard`) as it was before it, and each entry whose add
    /// waits shown as before it (free, or the name it replaced). What the
    /// copy shows is what the write satisfies: adds shown, removals in
    /// chunks written as they are now.
    fn rolled_back_dir_block(&self, key: BlockKey, data: &BlockData, durable: Seq) -> Option<BlockData> {
        let mut guard = self.state();
        let state = &mut *guard;
        if !state.adds.contains_key(&key)
            && !state.guards.contains_key(&key)
            && !state.removals.contains_key(&key)
        {
            return None;
        }
        let bs = data.len() as u64;
        let mut adds = state.adds.remove(&key).unwrap_or_default();
        let met = |state: &State, a: &Add| !a.ghost && a.waits.iter().all(|c| state.cond_met(c, durable));
        // The chunks a rename holds back: in each, the oldest rename whose
        // new name is not durable, unless its new name is in the same
        // chunk and may be shown now (one sector: both names change in
        // the one write). Its image is the chunk before it.
        let mut imaged: HashMap<usize, Arc<[u8]>> = HashMap::new();
        if let Some(guards) = state.guards.get_mut(&key) {
            guards.retain(|g| !is_durable(&g.shown, durable));
        }
        let guards = state.guards.remove(&key).unwrap_or_default();
        for g in &guards {
            if imaged.contains_key(&g.chunk) {
                continue;
            }
            let same_chunk = (g.new_dir, g.new_offset / bs) == (key.0, key.1 as u64)
                && (g.new_offset % bs) as usize / DIRBLKSIZ == g.chunk;
            let passes = same_chunk
                && adds
                    .iter()
                    .any(|a| a.shown.as_ref().is_some_and(|w| Arc::ptr_eq(w, &g.shown)) && met(state, a));
            if !passes {
                imaged.insert(g.chunk, g.image.clone());
            }
        }
        let mut copy: Option<AlignedBytes> = None;
        for (&chunk, image) in &imaged {
            let at = chunk * DIRBLKSIZ;
            if at + DIRBLKSIZ <= data.len() {
                copy.get_or_insert_with(|| AlignedBytes::copy_of(data))[at..at + DIRBLKSIZ]
                    .copy_from_slice(image);
            }
        }
        // Entries whose adds wait (and ghosts) are shown as before them,
        // wherever the copy holds them.
        let mut restored: Vec<(usize, Ino)> = Vec::new();
        let mut resealed: HashSet<usize> = HashSet::new();
        for add in &adds {
            if met(state, add) {
                continue;
            }
            let at = add.offset;
            let view: &[u8] = copy.as_deref().unwrap_or(data);
            if at + ENTRY_HEADER > view.len()
                || u64::from(u32::from_le_bytes([view[at], view[at + 1], view[at + 2], view[at + 3]]))
                    != add.ino
            {
                continue;
            }
            let c = copy.get_or_insert_with(|| AlignedBytes::copy_of(data));
            let (ino, dtype) = add.previous.unwrap_or((0, dt::UNKNOWN));
            c[at..at + 4].copy_from_slice(&(ino as u32).to_le_bytes());
            if add.previous.is_some() {
                c[at + 6] = dtype;
                restored.push((at, ino));
            }
            resealed.insert(at / DIRBLKSIZ);
        }
        if let Some(c) = copy.as_mut() {
            for chunk in resealed {
                let at = chunk * DIRBLKSIZ;
                seal_chunk(&mut c[at..at + DIRBLKSIZ]);
            }
        }
        let view: &[u8] = copy.as_deref().unwrap_or(data);
        let shows = |a: &Add| {
            let at = a.offset;
            at + 4 <= view.len()
                && u64::from(u32::from_le_bytes([view[at], view[at + 1], view[at + 2], view[at + 3]]))
                    == a.ino
        };
        // Adds met and shown are done; the rest wait on. Ghosts stay while
        // a guard may image their chunk.
        let mut satisfied = Vec::new();
        adds.retain(|a| {
            if a.ghost {
                return guards.iter().any(|g| g.chunk == a.offset / DIRBLKSIZ);
            }
            if met(state, a) && shows(a) {
                satisfied.extend(a.shown.clone());
                return false;
            }
            true
        });
        // A removal is written with its chunk as it is now, unless the
        // entry it removed is restored there (a change rolled back).
        let removals = state.removals.remove(&key).unwrap_or_default();
        let (done, held): (Vec<_>, Vec<_>) = removals.into_iter().partition(|(at, ino, _)| {
            !imaged.contains_key(&(at / DIRBLKSIZ)) && !restored.contains(&(*at, *ino))
        });
        satisfied.extend(done.into_iter().map(|(_, _, w)| w));
        if !held.is_empty() {
            state.removals.insert(key, held);
        }
        if !adds.is_empty() {
            state.adds.insert(key, adds);
        }
        if !guards.is_empty() {
            state.guards.insert(key, guards);
        }
        if !satisfied.is_empty() {
            state.starting.entry(key).or_default().extend(satisfied);
        }
        copy.map(Arc::new)
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
    fn tx_beginning(&self, _fs: &mut Ffs, kind: TxKind) -> Result<()> {
        let mut state = self.state();
        state.raised.clear();
        state.before.clear();
        state.rename =
            if kind == TxKind::Rename && !self.disorder { Rename::Undecided } else { Rename::Idle };
        Ok(())
    }

    fn on_hint(&self, fs: &mut Ffs, hint: Hint) -> Result<()> {
        if fs.tx.kind() == Some(TxKind::Rename) && !self.disorder {
            let mut settle = false;
            if matches!(self.state().rename, Rename::Undecided) {
                // The first hint says what is renamed: a regular file's
                // link count rises first (4.4BSD's order); anything else
                // (a directory, an exchange) is settled by a sync, then
                // ordered as `sync` orders it.
                let soft = match hint {
                    Hint::LinkCount { ino, nlink } => {
                        fs.cached_inode(ino)?.attr.is_reg() && fs.stored_nlink(ino)?.is_none_or(|s| nlink > s)
                    }
                    Hint::EntryAdded { .. } | Hint::EntryChanged { .. } | Hint::EntryRemoved { .. } => false,
                    _ => return Ok(()),
                };
                let ino = if let Hint::LinkCount { ino, .. } = hint { ino } else { 0 };
                self.state().rename =
                    if soft { Rename::Soft { moved: ino, new: None } } else { Rename::Ordered };
                settle = !soft;
            }
            let soft = matches!(self.state().rename, Rename::Soft { .. });
            if let (true, Hint::EntryChanged { old, .. }) = (soft, hint) {
                if !fs.cached_inode(old)?.attr.is_reg() {
                    // Over another kind of file: settled as above.
                    self.state().rename = Rename::Ordered;
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
            let mut placements = fs.placements_of(&keys)?;
            fs.write_placements(&mut placements)?;
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
        let tracked: HashSet<Ino> = state.inodes.keys().copied().collect();
        state.blocks.retain(|_, inos| {
            inos.retain(|i| tracked.contains(i));
            !inos.is_empty()
        });
    }
}
