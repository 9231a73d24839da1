//! What soft updates remember: the writes changes wait for, and per
//! block, entry and inode the dependencies a write must honour (FreeBSD's
//! inodedep, diradd, dirrem and friends, in fslab's terms; the module
//! above says what each rolls back).

use super::*;
/// A write some change waits for: 0 until the write that satisfies it is
/// issued, then that write's number. Satisfied once a flush covers it.
pub(super) type Written = Arc<AtomicU64>;

pub(super) fn new_written() -> Written {
    Arc::new(AtomicU64::new(0))
}

pub(super) fn is_durable(w: &Written, durable: Seq) -> bool {
    let seq = w.load(Ordering::Relaxed);
    seq != 0 && seq <= durable
}

/// One thing a change waits for.
#[derive(Debug, Clone)]
pub(super) enum Cond {
    /// A write (of an inode block, a directory block).
    Write(Written),
    /// A write of cylinder group `cg` issued after write `since`.
    Group { cg: u32, since: Seq },
    /// The same name in a rename's guard's image of another chunk (a name
    /// that may still be on the disk there): met once the guard is dropped,
    /// whatever ends it, and a write of that chunk without the entry
    /// (`cleared`, a removal of it in `State::removals`: block `key`, the
    /// entry naming `ino`) is durable. The guard's end alone is not
    /// enough: the write that first leaves the image out may also be the
    /// first to show the new entry, and a torn write of the block would
    /// keep the old chunk's sector beside the new one's: one name twice.
    ImageGone { guard: Weak<()>, key: BlockKey, ino: Ino, cleared: Written },
}

/// A block allocated since mount whose pointer must wait: for its contents
/// to be written, and for its group's bitmap with it allocated.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fresh {
    pub(super) cg: u32,
    pub(super) since: Seq,
    pub(super) written: Seq,
}

impl Fresh {
    /// Whether its contents and its group's bitmap are both durable.
    pub(super) fn durable(&self, groups: &[Seq], durable: Seq) -> bool {
        self.written > self.since
            && self.written <= durable
            && group_written_after(groups, self.cg, self.since, durable)
    }
}

/// Whether group `cg` was written after write `since`, durably.
pub(super) fn group_written_after(groups: &[Seq], cg: u32, since: Seq, durable: Seq) -> bool {
    groups.get(cg as usize).is_some_and(|&w| w > since && w <= durable)
}

/// A directory entry added and not yet safe to write.
#[derive(Debug, Clone)]
pub(super) struct Add {
    /// Offset of the entry in its block.
    pub(super) offset: usize,
    pub(super) ino: Ino,
    /// What the entry named before, with its type, when a rename changed
    /// an existing entry (FreeBSD's DIRCHG): what a write shows while the
    /// add waits. `None`: a new entry, shown free (inode 0).
    pub(super) previous: Option<(Ino, u8)>,
    /// For a rename's new name: set to the first write that shows it.
    pub(super) shown: Option<Written>,
    pub(super) waits: Vec<Cond>,
    /// An entry removed before any write showed it, kept while a rename's
    /// image of its chunk (`Guard`) may still hold it: rolled back
    /// wherever a copy shows it, never shown.
    pub(super) ghost: bool,
}

/// A rename's old name, removed from a directory chunk, and the rename's
/// new name: until the new name is durable, a write of the old name's
/// chunk shows the chunk as it was before the rename, so that a crash
/// leaves the file its old name, its new one or both, never neither (the
/// old entry's space may meanwhile hold a later entry, which that write
/// leaves out: it is newer than the image, and waits in turn).
#[derive(Debug)]
pub(super) struct Guard {
    /// The old name's chunk in its block.
    pub(super) chunk: usize,
    /// That chunk before the rename.
    pub(super) image: Arc<[u8]>,
    /// The new name's first write that shows it (see `Add::shown`).
    pub(super) shown: Written,
    /// The file renamed, and where its new name is.
    pub(super) moved: Ino,
    pub(super) new_dir: Ino,
    pub(super) new_offset: u64,
    /// Alive as long as the guard: what a new entry of a name its image
    /// holds waits on (`Cond::ImageGone`). Never read: dropping it is the
    /// signal.
    pub(super) _alive: Arc<()>,
}

/// A name a guard's image holds (`State::imaged_names`).
#[derive(Debug, Clone)]
pub(super) struct Imaged {
    /// The guard's token.
    pub(super) alive: Weak<()>,
    /// The image's block, chunk in it, and the entry's offset in the
    /// block.
    pub(super) key: BlockKey,
    pub(super) chunk: usize,
    pub(super) at: usize,
    /// The inode the image's entry names.
    pub(super) ino: Ino,
    /// The file the guard's rename moved.
    pub(super) moved: Ino,
}

/// The key of a name in a directory in `State::imaged_names`.
pub(super) fn name_key(dir: Ino, name: &[u8]) -> (Ino, u64) {
    // FNV-1a: a collision only makes an entry wait longer.
    let hash =
        name.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (dir, hash)
}

/// The rename in the open transaction, if any.
#[derive(Debug, Default)]
pub(super) enum Rename {
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
pub(super) struct Map {
    pub(super) size: u64,
    pub(super) blocks: u64,
    pub(super) direct: [Daddr; crate::format::blockno::NDADDR],
    pub(super) indirect: [Daddr; crate::format::blockno::NIADDR],
    pub(super) xattr: Daddr,
}

impl Map {
    pub(super) fn of(inode: &Inode) -> Map {
        Map {
            size: inode.attr.size,
            blocks: inode.blocks,
            direct: inode.direct,
            indirect: inode.indirect,
            xattr: inode.xattr,
        }
    }

    pub(super) fn put(&self, inode: &mut Inode) {
        inode.attr.size = self.size;
        inode.blocks = self.blocks;
        inode.direct = self.direct;
        inode.indirect = self.indirect;
        inode.xattr = self.xattr;
    }

    pub(super) fn pointers(&self) -> impl Iterator<Item = Daddr> + '_ {
        self.direct.iter().chain(self.indirect.iter()).chain(std::iter::once(&self.xattr)).copied()
    }
}

/// What a write of an inode's slot must show to satisfy a waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shows {
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
pub(super) struct InodeDeps {
    /// Where its slot is: the inode block's address and the slot's offset.
    pub(super) slot: Option<(u64, usize)>,
    /// The map its slot last held when it was safe to write: present while
    /// the stored slot may point at blocks not yet durable.
    pub(super) safe_map: Option<Map>,
    /// The inode as it was when the first entry naming it went, while some
    /// removal is not durable (written in place of a freed slot).
    pub(super) live: Option<Inode>,
    /// Removals of entries naming it, not yet durable.
    pub(super) removals: Vec<Written>,
    /// What waits for a write of the slot, and what that write must show.
    pub(super) waiters: Vec<(Written, Shows)>,
    /// Changed in memory for a waiter (a link count raised) and not stored
    /// since: a write of its block shows an older slot, which satisfies
    /// no waiter (it would count a new name before the count that counts
    /// it).
    pub(super) unstored: bool,
    /// When the inode was allocated: its group must be written after.
    pub(super) allocated: Option<(u32, Seq)>,
    /// The slot as it was before this inode was first stored there, while
    /// no safe version of the inode has been: what a directory or symbolic
    /// link whose blocks are not durable is written as (an empty map would
    /// be damage, where a slot not yet in use is only a leak).
    pub(super) prior: Option<Box<[u8; INODE_SIZE]>>,
}

/// Everything the mode tracks, behind one lock (the file system's own lock
/// is held exclusively around every call that changes anything; this one
/// is for the write hooks).
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) fresh: HashMap<u64, Fresh>,
    /// Last write of each cylinder group.
    pub(super) groups: Vec<Seq>,
    pub(super) inodes: HashMap<Ino, InodeDeps>,
    /// Inodes tracked in each inode block.
    pub(super) blocks: HashMap<u64, Vec<Ino>>,
    /// Last safe copy of each indirect block changed since.
    pub(super) indirect: HashMap<BlockKey, BlockData>,
    /// New entries of each directory block.
    pub(super) adds: HashMap<BlockKey, Vec<Add>>,
    /// Removals waiting for a write of each directory block: the removed
    /// entry's offset in the block and inode.
    pub(super) removals: HashMap<BlockKey, Vec<(usize, Ino, Written)>>,
    /// Old names of renames whose new names are not durable yet.
    pub(super) guards: HashMap<BlockKey, Vec<Guard>>,
    /// The names each guard's image holds, by directory and name: a new
    /// entry of one of them, put in another chunk, must not be shown
    /// while the image may show the old one (two entries of one name).
    /// Entries of guards since dropped are cleared lazily.
    pub(super) imaged_names: HashMap<(Ino, u64), Vec<Imaged>>,
    /// What new entries wait on for images to go (`Cond::ImageGone`), by
    /// the files whose renames' guards keep those images on the disk: the
    /// file each image's rename moved, and the file the image's entry
    /// names (its own rename's guard keeps that entry, `kept_entry`). A
    /// rename of such a file again settles its guards first
    /// (`Softdep::settle_before_renaming`). Conditions met are cleared
    /// lazily.
    pub(super) awaited: HashMap<Ino, Vec<Cond>>,
    /// The rename in the open transaction.
    pub(super) rename: Rename,
    /// Directory blocks as they were before the open rename changed them.
    pub(super) before: HashMap<BlockKey, BlockData>,
    /// What the write of each block now starting satisfies.
    pub(super) starting: HashMap<BlockKey, Vec<Written>>,
    /// Inodes whose link count rose in the open transaction.
    pub(super) raised: Vec<Ino>,
    /// The open rename's removal of its old name, once the disk showed
    /// that name: what a moved directory's `..` waits for.
    pub(super) old_name_gone: Option<Written>,
}

impl State {
    pub(super) fn cond_met(&self, cond: &Cond, durable: Seq) -> bool {
        match cond {
            Cond::Write(w) => is_durable(w, durable),
            Cond::Group { cg, since } => self.group_written_after(*cg, *since, durable),
            Cond::ImageGone { guard, cleared, .. } => {
                guard.strong_count() == 0 && is_durable(cleared, durable)
            }
        }
    }

    /// Forgets what `awaited` holds that is met.
    pub(super) fn prune_awaited(&mut self, durable: Seq) {
        let mut awaited = std::mem::take(&mut self.awaited);
        awaited.retain(|_, conds| {
            conds.retain(|c| !self.cond_met(c, durable));
            !conds.is_empty()
        });
        self.awaited = awaited;
    }

    pub(super) fn group_written_after(&self, cg: u32, since: Seq, durable: Seq) -> bool {
        group_written_after(&self.groups, cg, since, durable)
    }

    /// Whether `addr` may be pointed at on disk now.
    pub(super) fn pointee_safe(&self, addr: Daddr, durable: Seq) -> bool {
        addr.is_none() || self.fresh.get(&addr.get()).is_none_or(|f| f.durable(&self.groups, durable))
    }

    pub(super) fn removals_pending(&mut self, ino: Ino, durable: Seq) -> usize {
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
    pub(super) fn take_unshown(&mut self, key: BlockKey, at: usize, ino: Ino) -> Option<Add> {
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
    pub(super) fn unshown_gone(&mut self, add: &Add, moved_to: Option<&(Ino, u64, Written)>) {
        let Some(shown) = &add.shown else { return };
        let mut retargeted: Vec<Weak<()>> = Vec::new();
        let mut moved: Vec<Ino> = Vec::new();
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
                        moved.push(g.moved);
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
        // repairs), rather than never. The same holds for another image of
        // the name naming the file (an older rename's, whose new name was
        // written but not yet durable: foo -> bar -> foo -> baz -> foo):
        // clearing it waits for a write of its chunk without the entry,
        // which the guard keeps there as its old name.
        if let (Some((_, _, next)), false) = (moved_to, retargeted.is_empty()) {
            for adds in self.adds.values_mut() {
                for a in adds.iter_mut().filter(|a| a.shown.as_ref().is_some_and(|w| Arc::ptr_eq(w, next))) {
                    a.waits.retain(|c| {
                        !matches!(c, Cond::ImageGone { guard, ino, .. }
                            if retargeted.iter().any(|r| r.ptr_eq(guard)) || moved.contains(ino))
                    });
                }
            }
        }
    }

    /// The renames of `moved` whose new names are not durable yet, if a new
    /// entry waits for one of their guards' images to go (each: the moved
    /// inode, the new name's directory and offset, its first showing
    /// write); none otherwise.
    pub(super) fn awaited_renames_of(&mut self, moved: Ino, durable: Seq) -> Vec<(Ino, Ino, u64, Written)> {
        self.prune_awaited(durable);
        if !self.awaited.contains_key(&moved) {
            return Vec::new();
        }
        self.guards
            .values()
            .flatten()
            .filter(|g| g.moved == moved)
            .map(|g| (g.moved, g.new_dir, g.new_offset, g.shown.clone()))
            .collect()
    }

    /// The chunk (block, chunk in it) a guard's image of which still holds
    /// an entry of this name key naming `ino`, if any.
    pub(super) fn keeping(&mut self, name: (Ino, u64), ino: Ino) -> Option<(BlockKey, usize)> {
        let imaged = self.imaged_names.get_mut(&name)?;
        imaged.retain(|i| i.alive.strong_count() > 0);
        imaged.iter().find(|i| i.ino == ino).map(|i| (i.key, i.chunk))
    }

    /// The slot to write for `inode` (as stored): the inode (or the slot's
    /// prior bytes, when the inode may not appear yet), and whether its
    /// map went unrolled.
    pub(super) fn slot_to_write(
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
