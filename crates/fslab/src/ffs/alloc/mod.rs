//! The FFS allocator over all cylinder groups: which group to try, in what
//! order, and the file-system totals (4.4BSD `ffs_alloc.c`). The choices of
//! *where* — `blkpref` and `dirpref` — are in `pref.rs`; the work inside one
//! group is `cg.rs`.
//!
//! Operations: [`Allocator::valloc`] / [`Allocator::vfree`] (inodes),
//! [`Allocator::alloc`] / [`Allocator::realloccg`] / [`Allocator::free`]
//! (blocks and fragments), [`Allocator::cluster_alloc`] (runs of blocks).
//! Nothing here does I/O: the storage manager writes the groups that
//! [`Allocator::take_changed`] names (setting their `time` first), the
//! superblock's totals from [`Allocator::totals`] and its policy from
//! [`Allocator::policy`] (`realloccg` may switch `optim`).

mod pref;

#[cfg(test)]
mod tests;

pub(crate) use pref::xorshift64_star;
pub use pref::{rotdelay_gap_frags, DirLimits, MAX_CONTIGDIRS};

use super::cg::CylinderGroup;
use super::geometry::Geometry;
use super::layout::{DirPref, Optim, Policy, Superblock, Totals};
use super::Frag;
use crate::error::{errno, Error};
use crate::format::{Ino, ROOT_INO};
use crate::Result;
use std::collections::BTreeSet;

/// An inode handed out by [`Allocator::valloc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InodeGrant {
    /// The inode number.
    pub ino: Ino,
    /// The first of `init_blocks` inode-table blocks (fragment address) that
    /// were never written and must be written as zeros before the inode's
    /// block is written (the inode tables are initialised lazily).
    pub init_addr: Frag,
    /// How many blocks from `init_addr` to zero; 0 for none.
    pub init_blocks: u32,
}

/// What [`Allocator::realloccg`] did with a growing fragment run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Realloc {
    /// It grew where it was: no data moves.
    Extended,
    /// It has a new home at this address. The caller copies the data there,
    /// points the file at it, and then frees the old fragments with
    /// [`Allocator::free`] (an integrity mode may delay that free).
    Moved(Frag),
}

/// Every cylinder group of a mounted FFS, with the totals over them.
///
/// Invariant: `totals` is the sum of the groups' counts; `changed` holds
/// every group modified since the last [`take_changed`](Self::take_changed).
#[derive(Debug, Clone)]
pub struct Allocator {
    /// Fragments of the data area a `file` journal's log holds.
    log_frags: u64,
    geo: Geometry,
    policy: Policy,
    groups: Vec<CylinderGroup>,
    totals: Totals,
    changed: BTreeSet<u32>,
    /// Per group, directories whose inodes were placed there one after
    /// another without a file between (FreeBSD's `fs_contigdirs`), for the
    /// new dirpref. In memory only, zero at mount, as FreeBSD keeps it: it
    /// is a hint about the last few allocations, not a fact about the
    /// image, so a stale or lost count costs only placement, never
    /// consistency — and keeping it on disk would make every inode
    /// allocation a change to a group for fsck and the integrity modes to
    /// order, and a field for fsck to check, for nothing a remount needs.
    contigdirs: Vec<u8>,
    /// The generator of a top-level directory's random starting group.
    rng: u64,
}

fn no_space() -> Error {
    errno(libc::ENOSPC, "file system full")
}

impl Allocator {
    /// The memory the decoded cylinder groups take (their bitmaps and
    /// summaries: a bit per inode, per fragment and per block).
    pub fn memory(&self) -> crate::memory::MemoryUse {
        let bytes: u64 = self.groups.iter().map(CylinderGroup::memory_bytes).sum();
        crate::memory::MemoryUse::new("cylinder groups", self.groups.len(), bytes)
    }

    /// The allocator over `groups`, which must be the superblock's groups in
    /// order (as decoded, so each is consistent). The totals are summed
    /// from the groups, not taken from the superblock, whose copy may be
    /// older than the groups after a crash.
    pub fn new(sb: &Superblock, groups: Vec<CylinderGroup>) -> Result<Allocator> {
        let geo = sb.geometry;
        if groups.len() != geo.ncg as usize {
            return Err(Error::corrupt(
                "FFS superblock",
                0u64,
                format!("{} groups given for {}", groups.len(), geo.ncg),
            ));
        }
        let mut totals = Totals::default();
        for (i, g) in groups.iter().enumerate() {
            if g.index != i as u32 || g.frags() != geo.group_frags(g.index) {
                return Err(Error::corrupt(
                    "cylinder group",
                    geo.cg_addr(i as u32),
                    "out of order or misshapen",
                ));
            }
            totals.add(&g.counts(), 1);
        }
        // A `file` journal's log holds data-area fragments for good: like
        // the groups' metadata, it is no space a file could have.
        let log_frags = match sb.journal.kind {
            crate::ffs::layout::JournalKind::File => sb.journal.bytes.div_ceil(u64::from(geo.frag_size)),
            _ => 0,
        };
        Ok(Allocator {
            geo,
            policy: sb.policy,
            groups,
            totals,
            changed: BTreeSet::new(),
            log_frags,
            contigdirs: vec![0; geo.ncg as usize],
            // Never zero, which would stay zero.
            rng: sb.fs_id | 1,
        })
    }

    /// The file system's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The allocation parameters (with `optim` as `realloccg` left it).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Counts over all groups.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Every group, in order.
    pub fn groups(&self) -> &[CylinderGroup] {
        &self.groups
    }

    /// Checks the invariant written on the type (`totals` is the sum of the
    /// groups' counts) and those of every group changed since the last
    /// [`take_changed`](Self::take_changed); says which one fails.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut sum = Totals::default();
        for g in &self.groups {
            sum.add(&g.counts(), 1);
        }
        if sum != self.totals {
            return Err(format!("totals {:?} are not the groups' sum {sum:?}", self.totals));
        }
        for &i in &self.changed {
            let g = self.groups.get(i as usize).ok_or_else(|| format!("changed group {i} does not exist"))?;
            g.check().map_err(|e| format!("cylinder group {i}: {e}"))?;
        }
        Ok(())
    }

    /// The groups changed since the last call, in order; the set is emptied.
    pub fn take_changed(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.changed).into_iter().collect()
    }

    /// Marks group `cg` changed: what it holds on the disk is to be
    /// written again (a journal's group with a free deferred in it).
    pub fn touch(&mut self, cg: u32) {
        if cg < self.geo.ncg {
            self.changed.insert(cg);
        }
    }

    /// Fragments of the data area: everything but the groups' metadata
    /// (4.4BSD `fs_dsize`).
    pub fn data_frags(&self) -> u64 {
        self.geo.total_frags - self.geo.ncg as u64 * self.geo.data_offset() as u64 - self.log_frags
    }

    /// Free fragments beyond a reserve of `percent` of the data area
    /// (4.4BSD `freespace`); negative when the reserve is in use.
    pub fn free_space(&self, percent: u32) -> i64 {
        let free = self.totals.free_blocks * self.geo.frags_per_block as u64 + self.totals.free_frags;
        free as i64 - (self.data_frags() * percent as u64 / 100) as i64
    }

    /// Runs `op` on group `cg`; if it did something (`Some`), the group is
    /// marked changed and the totals follow its counts.
    fn with_group<T>(&mut self, cg: u32, op: impl FnOnce(&mut CylinderGroup) -> Option<T>) -> Option<T> {
        let group = &mut self.groups[cg as usize];
        let before = group.counts();
        let result = op(group)?;
        self.totals.add(&before, -1);
        self.totals.add(&group.counts(), 1);
        self.changed.insert(cg);
        Some(result)
    }

    /// Runs `op`, which may refuse with a reason, on group `cg`; as
    /// [`with_group`](Self::with_group) when it succeeds.
    fn try_in_group(
        &mut self,
        cg: u32,
        op: impl FnOnce(&mut CylinderGroup) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        let mut why = String::new();
        self.with_group(cg, |g| op(g).map_err(|e| why = e).ok()).ok_or(why)
    }

    /// Tries `op` on groups in 4.4BSD's order (`ffs_hashalloc`, after the
    /// 1984 FFS paper's quadratic hash):
    /// 1. group `icg`, with the preference `pref` (a position in it);
    /// 2. quadratic rehash: `icg + 1`, `icg + 3`, `icg + 7`, … (mod ncg),
    ///    without a preference — quickly away from a full neighbourhood;
    /// 3. every group from `icg + 2` on, one by one (0 was tried first and
    ///    1 by the rehash).
    ///
    /// Returns the group that answered and its answer.
    fn hashalloc<T>(
        &mut self,
        icg: u32,
        pref: Option<u32>,
        mut op: impl FnMut(&mut CylinderGroup, Option<u32>) -> Option<T>,
    ) -> Option<(u32, T)> {
        let ncg = self.geo.ncg;
        if let Some(r) = self.with_group(icg, |g| op(g, pref)) {
            return Some((icg, r));
        }
        let mut cg = icg;
        let mut step = 1;
        while step < ncg {
            cg = (cg + step) % ncg;
            if let Some(r) = self.with_group(cg, |g| op(g, None)) {
                return Some((cg, r));
            }
            step *= 2;
        }
        let mut cg = (icg + 2) % ncg;
        for _ in 2..ncg {
            if let Some(r) = self.with_group(cg, |g| op(g, None)) {
                return Some((cg, r));
            }
            cg = (cg + 1) % ncg;
        }
        None
    }

    /// The group to start from for `pref`, and the preference as a
    /// position in that group (none when `pref` is 0 or out of range).
    fn start_group(&self, ino: Ino, pref: Frag) -> (u32, Option<u32>) {
        if pref == 0 || pref >= self.geo.total_frags {
            let cg = self.geo.ino_group(ino).min(self.geo.ncg - 1);
            return (cg, None);
        }
        (self.geo.group_of(pref), Some(self.geo.within_group(pref)))
    }

    /// Allocates `nfrags` fragments (1 up to a whole block, inside one
    /// block) for a file whose inode is `ino`, near `pref` (from
    /// [`blkpref`](Self::blkpref); 0 for none) — 4.4BSD `ffs_alloc`:
    /// 1. refused (ENOSPC) when a whole block is asked for and none is
    ///    free, or when the request would dig into the `minfree` reserve
    ///    and `use_reserve` is false (only root may use it);
    /// 2. the group holding `pref`, else the inode's group, then the others
    ///    in [`hashalloc`](Self::hashalloc) order.
    pub fn alloc(&mut self, ino: Ino, pref: Frag, nfrags: u32, use_reserve: bool) -> Result<Frag> {
        let frag = self.geo.frags_per_block;
        if nfrags == 0 || nfrags > frag {
            return Err(errno(libc::EINVAL, "allocation is not 1 to a block of fragments"));
        }
        if nfrags == frag && self.totals.free_blocks == 0 {
            return Err(no_space());
        }
        if !use_reserve && self.free_space(self.policy.minfree) - (nfrags as i64) < 0 {
            return Err(no_space());
        }
        let (cg, pref) = self.start_group(ino, pref);
        let (cg, at) = self.hashalloc(cg, pref, |g, p| g.alloc_frags(p, nfrags)).ok_or_else(no_space)?;
        Ok(self.geo.group_base(cg) + at as Frag)
    }

    /// Grows the last fragments of a file from `old_frags` to `new_frags`
    /// (4.4BSD `ffs_realloccg`):
    /// 1. in place, if the fragments after them in their block are free
    ///    (`fragextend`);
    /// 2. else a new run near `pref`: of exactly `new_frags` when
    ///    optimising for space, of a whole block (the unused tail freed at
    ///    once) when optimising for time, so that the next growth is in
    ///    place. `optim` switches to space when free fragments exceed
    ///    `minfree − 2`% of the data area, and back to time when they fall
    ///    under half of `minfree` (and `minfree` > 5%).
    ///
    /// On `Moved`, the old fragments are still allocated: the caller frees
    /// them after the copy. ENOSPC and the reserve as for [`alloc`](Self::alloc).
    pub fn realloccg(
        &mut self,
        old: Frag,
        old_frags: u32,
        new_frags: u32,
        pref: Frag,
        use_reserve: bool,
    ) -> Result<Realloc> {
        let frag = self.geo.frags_per_block;
        if old_frags == 0 || new_frags <= old_frags || new_frags > frag {
            return Err(errno(libc::EINVAL, "fragment growth is not to a larger run within a block"));
        }
        if old == 0 || old + old_frags as Frag > self.geo.total_frags {
            return Err(Error::corrupt("block pointer", old, "outside the file system"));
        }
        let (cg, at) = (self.geo.group_of(old), self.geo.within_group(old));
        if !self.groups[cg as usize].is_run_in_use(at, old_frags) {
            return Err(Error::corrupt(
                "block pointer",
                old,
                format!("{old_frags} fragments here are not in use"),
            ));
        }
        if !use_reserve && self.free_space(self.policy.minfree) - ((new_frags - old_frags) as i64) < 0 {
            return Err(no_space());
        }
        if self.with_group(cg, |g| g.fragextend(at, old_frags, new_frags).then_some(())).is_some() {
            return Ok(Realloc::Extended);
        }
        let request = self.realloc_request(new_frags);
        let pref = (pref != 0 && pref < self.geo.total_frags && self.geo.group_of(pref) == cg)
            .then(|| self.geo.within_group(pref));
        let (got_cg, rel) =
            self.hashalloc(cg, pref, |g, p| g.alloc_frags(p, request)).ok_or_else(no_space)?;
        let new = self.geo.group_base(got_cg) + rel as Frag;
        if request > new_frags {
            self.free(new + new_frags as Frag, request - new_frags)?;
        }
        Ok(Realloc::Moved(new))
    }

    /// How many fragments `realloccg` asks for when it must move a run
    /// growing to `new_frags`, switching `optim` as 4.4BSD does.
    fn realloc_request(&mut self, new_frags: u32) -> u32 {
        let minfree = self.policy.minfree as u64;
        let dsize = self.data_frags();
        let nffree = self.totals.free_frags;
        match self.policy.optim {
            Optim::Space => {
                if minfree > 5 && nffree <= dsize * minfree / 200 {
                    self.policy.optim = Optim::Time;
                }
                new_frags
            }
            Optim::Time => {
                if nffree >= dsize * minfree.saturating_sub(2) / 100 {
                    self.policy.optim = Optim::Space;
                }
                self.geo.frags_per_block
            }
        }
    }

    /// Frees `nfrags` fragments at `start` (a whole block, or fragments
    /// inside one block) — 4.4BSD `ffs_blkfree`. Freeing anything outside
    /// the data area or not in use is refused as corruption (the pointer
    /// that named it is wrong) and changes nothing.
    pub fn free(&mut self, start: Frag, nfrags: u32) -> Result<()> {
        let end = start.checked_add(nfrags as Frag).unwrap_or(Frag::MAX);
        if start == 0 || end > self.geo.total_frags {
            return Err(Error::corrupt("block pointer", start, "outside the file system"));
        }
        let cg = self.geo.group_of(start);
        let at = self.geo.within_group(start);
        self.try_in_group(cg, |g| g.free(at, nfrags))
            .map_err(|why| Error::corrupt("block pointer", start, why))
    }

    /// Allocates `len` contiguous whole blocks near `pref`, for the file of
    /// inode `ino`, trying groups in [`hashalloc`](Self::hashalloc) order
    /// (4.4BSD `ffs_reallocblks` calling `ffs_clusteralloc`). Returns the
    /// first fragment, or `None` when no group has such a run; an
    /// optimisation, so a caller that gets `None` keeps the blocks it has.
    pub fn cluster_alloc(&mut self, ino: Ino, pref: Frag, len: u32) -> Option<Frag> {
        if len == 0 || len > self.geo.maxcontig {
            return None;
        }
        let (cg, pref) = self.start_group(ino, pref);
        let (cg, at) = self.hashalloc(cg, pref, |g, p| g.cluster_alloc(p, len))?;
        Some(self.geo.group_base(cg) + at as Frag)
    }

    /// Allocates an inode for a new file in directory `parent` (4.4BSD
    /// `ffs_valloc`):
    /// 1. the first directory of a new file system is the root and takes
    ///    inode 2 (as `newfs` makes it); any other directory goes to the
    ///    group [`dirpref`](Self::dirpref) picks, preferring its first
    ///    inode; any other file prefers its parent's inode number, i.e. the
    ///    parent's group (1984 FFS paper §4); the preferred group's count
    ///    of directories made one after another goes up for a directory
    ///    and down for a file (FreeBSD `ffs_valloc`);
    /// 2. in that group, the preferred slot, else the next free one after
    ///    the group's inode rotor;
    /// 3. then other groups in [`hashalloc`](Self::hashalloc) order.
    ///
    /// ENOSPC when no inode is free.
    pub fn valloc(&mut self, parent: Ino, is_dir: bool) -> Result<InodeGrant> {
        if self.totals.free_inodes == 0 {
            return Err(errno(libc::ENOSPC, "no free inodes"));
        }
        let ipg = self.geo.ipg as Ino;
        let root_missing = self.groups.first().is_some_and(|g| !g.is_inode_used(ROOT_INO as u32));
        let mut ipref = match (is_dir, root_missing) {
            (true, true) => ROOT_INO,
            (true, false) => {
                // Drawn only where the policy looks at it, so the old
                // policy's placements are what they always were.
                let start = match self.policy.dirpref {
                    DirPref::New if parent == ROOT_INO => self.random_group(),
                    _ => 0,
                };
                self.dirpref(parent, start) as Ino * ipg
            }
            (false, _) => parent,
        };
        if ipref >= self.geo.ninodes() {
            ipref = 0;
        }
        let cg = self.geo.ino_group(ipref);
        self.count_contiguous_dir(cg, is_dir);
        let pref = (ipref != 0).then(|| self.geo.ino_slot(ipref));
        let (cg, got) = self
            .hashalloc(cg, pref, |g, p| g.alloc_inode(p, is_dir))
            .ok_or_else(|| errno(libc::ENOSPC, "no free inodes"))?;
        let frag = self.geo.frags_per_block;
        let table = self.geo.group_base(cg) + self.geo.inode_table_offset() as Frag;
        Ok(InodeGrant {
            ino: cg as Ino * ipg + got.slot as Ino,
            init_addr: table + (got.uninitialised_blocks.start * frag) as Frag,
            init_blocks: got.uninitialised_blocks.len() as u32,
        })
    }

    /// Frees inode `ino` (4.4BSD `ffs_vfree`); `is_dir` says whether it was
    /// a directory. Freeing an inode not in use is refused as corruption.
    pub fn vfree(&mut self, ino: Ino, is_dir: bool) -> Result<()> {
        if ino >= self.geo.ninodes() {
            return Err(Error::corrupt("inode bitmap", 0u64, format!("inode {ino} is past the last inode")));
        }
        let cg = self.geo.ino_group(ino);
        let slot = self.geo.ino_slot(ino);
        self.try_in_group(cg, |g| g.free_inode(slot, is_dir)).map_err(|why| {
            Error::corrupt("inode bitmap", self.geo.cg_addr(cg), format!("freeing inode {ino}: {why}"))
        })
    }
}
