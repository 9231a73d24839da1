//! One cylinder group in memory: its counts, rotors and bitmaps, and the
//! allocation operations inside it (4.4BSD `ffs_alloccg`, `ffs_alloccgblk`,
//! `ffs_fragextend`, `ffs_clusteralloc`, `ffs_nodealloccg`, `ffs_blkfree`,
//! `ffs_freefile`, with `ffs_mapsearch`, `ffs_fragacct` and
//! `ffs_clusteracct` as helpers). Which group to use is the policies' choice
//! (`alloc`); this file only answers inside one group.
//!
//! Fragment numbers here are relative to the group's first fragment; inode
//! slots relative to its first inode. Nothing here does I/O: the encoded
//! form is in `layout.rs`.

use super::bitmap::Bitmap;
use super::geometry::Geometry;
use crate::format::TimeNs;
use std::ops::Range;

/// The most fragments a block has, and so the length of `frsum`.
pub const MAX_FRAGS_PER_BLOCK: usize = 8;

/// Free and used counts of a group (4.4BSD's `struct csum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupCounts {
    /// Directories whose inodes are in the group.
    pub directories: u32,
    /// Whole free blocks.
    pub free_blocks: u32,
    /// Free inodes.
    pub free_inodes: u32,
    /// Free fragments in blocks that are not wholly free.
    pub free_frags: u32,
}

/// What the bitmaps say the summaries should be (see [`CylinderGroup::recount`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recount {
    /// Counts (directories copied: no bitmap records them).
    pub counts: GroupCounts,
    /// Free runs by length.
    pub frsum: [u32; MAX_FRAGS_PER_BLOCK],
    /// Free clusters by length.
    pub cluster_sum: Vec<u32>,
}

/// Runs of free whole blocks of a group, in blocks (see
/// [`CylinderGroup::free_runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreeRuns {
    /// The longest run, uncapped (0 when no block is wholly free).
    pub longest: u32,
    /// Free blocks that lie in runs of maxcontig blocks or more: where a
    /// whole cluster can still be written.
    pub blocks_in_full_clusters: u32,
}

/// An inode taken by [`CylinderGroup::alloc_inode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InodeSlot {
    /// The slot within the group.
    pub slot: u32,
    /// Blocks of the group's inode table (indices from its start) that were
    /// never initialised and must be written as zeros before the inode is.
    pub uninitialised_blocks: Range<u32>,
}

/// A decoded cylinder group.
///
/// Invariants (checked when decoded, kept by every operation):
/// * `counts.free_blocks`, `counts.free_frags`, `counts.free_inodes`,
///   `frsum` and `cluster_sum` are what [`recount`](Self::recount) computes
///   from the bitmaps;
/// * `clusters_free` has a bit set exactly where all of a block's fragments
///   are free;
/// * the group's metadata (superblock copy, this area, the inode table) and
///   every fragment past `frags` are never free; in group 0 inodes 0 and 1
///   are in use; no inode at or past `initialised_inodes` is in use.
///
/// `frsum[n]` (1 ≤ n < fragments per block) counts maximal free runs of
/// exactly `n` fragments inside blocks that are not wholly free; a run never
/// crosses a block boundary. `cluster_sum[n]` (1 ≤ n ≤ maxcontig) counts
/// maximal runs of free whole blocks of length `n`, runs of `maxcontig` or
/// more counted at `maxcontig` (4.4BSD's `cg_clustersum`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CylinderGroup {
    /// Which group this is.
    pub index: u32,
    /// When it was last changed (ns since the epoch).
    pub time: TimeNs,
    pub(super) frags: u32,
    pub(super) frags_per_block: u32,
    pub(super) data_offset: u32,
    pub(super) maxcontig: u32,
    pub(super) inodes_per_block: u32,
    pub(super) counts: GroupCounts,
    /// Where the last block search ended (4.4BSD `cg_rotor`).
    pub(super) rotor: u32,
    /// Where the last fragment search ended (`cg_frotor`).
    pub(super) frotor: u32,
    /// The last inode found by search (`cg_irotor`).
    pub(super) irotor: u32,
    pub(super) frsum: [u32; MAX_FRAGS_PER_BLOCK],
    /// Inode slots below this have been written at least once (a multiple
    /// of the inodes per block; FreeBSD's `cg_initediblk`).
    pub(super) initialised_inodes: u32,
    pub(super) inodes_used: Bitmap,
    pub(super) frags_free: Bitmap,
    /// Index 0 unused; `1..=maxcontig`.
    pub(super) cluster_sum: Vec<u32>,
    pub(super) clusters_free: Bitmap,
}

/// Maximal runs of set bits in a block's `map` of `frag` bits, as (start, length).
fn runs(map: u8, frag: u32) -> impl Iterator<Item = (u32, u32)> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < frag && map & (1 << i) == 0 {
            i += 1;
        }
        if i >= frag {
            return None;
        }
        let start = i;
        while i < frag && map & (1 << i) != 0 {
            i += 1;
        }
        Some((start, i - start))
    })
}

impl CylinderGroup {
    /// Group `index` of a new file system: everything after the group's
    /// metadata free, and in group 0 inodes 0 and 1 taken (0 is never an
    /// inode; 1 is reserved, LFS's ifile), so the root is inode 2.
    pub fn new_empty(geo: &Geometry, index: u32, time: TimeNs) -> CylinderGroup {
        let frags = geo.group_frags(index);
        let mut cg = CylinderGroup {
            index,
            time,
            frags,
            frags_per_block: geo.frags_per_block,
            data_offset: geo.data_offset(),
            maxcontig: geo.maxcontig,
            inodes_per_block: geo.inodes_per_block(),
            counts: GroupCounts::default(),
            rotor: 0,
            frotor: 0,
            irotor: 0,
            frsum: [0; MAX_FRAGS_PER_BLOCK],
            initialised_inodes: 0,
            inodes_used: Bitmap::new(geo.ipg),
            frags_free: Bitmap::new(geo.fpg),
            cluster_sum: vec![0; geo.maxcontig as usize + 1],
            clusters_free: Bitmap::new(geo.blocks_per_group()),
        };
        for f in geo.data_offset()..frags {
            cg.frags_free.set(f);
        }
        for b in geo.data_offset() / geo.frags_per_block..frags / geo.frags_per_block {
            cg.clusters_free.set(b);
        }
        if index == 0 {
            cg.inodes_used.set(0);
            cg.inodes_used.set(1);
        }
        let r = cg.recount();
        cg.counts = r.counts;
        cg.frsum = r.frsum;
        cg.cluster_sum = r.cluster_sum;
        cg
    }

    /// Group `index` as fsck rebuilds it (1993 paper Table 2, phase V):
    /// the inode and fragment bitmaps it worked out from the inodes, the
    /// directories it counted and the initialised-inode mark it needs; the
    /// cluster bitmap and every count and summary follow from those. The
    /// rotors are `rotors` (block, fragment, inode) where they lie inside
    /// the group, else 0. Says why when the result would break an
    /// invariant of the type (a bitmap of the wrong length, metadata free,
    /// an inode in use past the mark).
    #[allow(clippy::too_many_arguments)]
    pub fn rebuilt(
        geo: &Geometry,
        index: u32,
        time: TimeNs,
        inodes_used: Bitmap,
        frags_free: Bitmap,
        directories: u32,
        initialised_inodes: u32,
        rotors: [u32; 3],
    ) -> std::result::Result<CylinderGroup, String> {
        if inodes_used.len() != geo.ipg || frags_free.len() != geo.fpg {
            return Err("bitmaps of the wrong length".into());
        }
        let mut cg = CylinderGroup::new_empty(geo, index, time);
        let frags = cg.frags;
        let ipg = geo.ipg;
        cg.inodes_used = inodes_used;
        cg.frags_free = frags_free;
        cg.initialised_inodes = initialised_inodes;
        cg.counts.directories = directories;
        for b in 0..cg.clusters_free.len() {
            if cg.is_block_free(b) {
                cg.clusters_free.set(b);
            } else {
                cg.clusters_free.clear(b);
            }
        }
        let [rotor, frotor, irotor] = rotors;
        cg.rotor = if rotor < frags { rotor } else { 0 };
        cg.frotor = if frotor < frags { frotor } else { 0 };
        cg.irotor = if irotor < ipg { irotor } else { 0 };
        let r = cg.recount();
        cg.counts = r.counts;
        cg.frsum = r.frsum;
        cg.cluster_sum = r.cluster_sum;
        cg.check()?;
        Ok(cg)
    }

    /// Bytes this group takes in memory: its bitmaps and summaries.
    pub fn memory_bytes(&self) -> u64 {
        let maps = [&self.inodes_used, &self.frags_free, &self.clusters_free];
        let bits: u64 = maps.iter().map(|m| m.as_bytes().len() as u64).sum();
        std::mem::size_of::<CylinderGroup>() as u64 + bits + self.cluster_sum.len() as u64 * 4
    }

    /// Inode slots below this have been initialised (a multiple of the
    /// inodes per block; no slot at or past it is in use).
    pub fn initialised_inodes(&self) -> u32 {
        self.initialised_inodes
    }

    /// The rotors: block, fragment and inode (where the last searches ended).
    pub fn rotors(&self) -> [u32; 3] {
        [self.rotor, self.frotor, self.irotor]
    }

    /// The inode bitmap (bit set: inode in use).
    pub fn inode_map(&self) -> &Bitmap {
        &self.inodes_used
    }

    /// The fragment bitmap (bit set: fragment free).
    pub fn frag_map(&self) -> &Bitmap {
        &self.frags_free
    }

    /// The group's counts.
    pub fn counts(&self) -> GroupCounts {
        self.counts
    }

    /// Fragments in this group.
    pub fn frags(&self) -> u32 {
        self.frags
    }

    /// Free runs by length (index 1 up to fragments per block − 1).
    pub fn frsum(&self) -> &[u32; MAX_FRAGS_PER_BLOCK] {
        &self.frsum
    }

    /// Free clusters by length (index 1 up to maxcontig).
    pub fn cluster_sum(&self) -> &[u32] {
        &self.cluster_sum
    }

    /// The runs of free whole blocks beyond what the capped summary says:
    /// the longest run and how many free blocks lie in runs of at least
    /// maxcontig, read from the cluster map. What free-space fragmentation
    /// is measured by (the 1997 paper's aging, `integrity_and_aging.md`
    /// §3.4 item 6); no allocation decision uses it.
    pub fn free_runs(&self) -> FreeRuns {
        let mut found = FreeRuns::default();
        let mut run = 0u32;
        for b in 0..=self.blocks() {
            if b < self.blocks() && self.clusters_free.get(b) {
                run += 1;
                continue;
            }
            found.longest = found.longest.max(run);
            if run >= self.maxcontig {
                found.blocks_in_full_clusters += run;
            }
            run = 0;
        }
        found
    }

    /// Whether fragment `f` of the group is free.
    pub fn is_frag_free(&self, f: u32) -> bool {
        self.frags_free.get(f)
    }

    /// Whether the `n` fragments at `start` lie inside one block of the
    /// group and are all in use.
    pub fn is_run_in_use(&self, start: u32, n: u32) -> bool {
        n > 0
            && start % self.frags_per_block + n <= self.frags_per_block
            && start + n <= self.frags
            && (start..start + n).all(|f| !self.frags_free.get(f))
    }

    /// Whether inode slot `slot` is in use.
    pub fn is_inode_used(&self, slot: u32) -> bool {
        self.inodes_used.get(slot)
    }

    /// The free map of block `b`: bit `i` set when fragment `i` is free.
    fn block_map(&self, b: u32) -> u8 {
        // At most 8 fragments a block, so the map fits in a byte.
        self.frags_free.bits(b * self.frags_per_block, self.frags_per_block) as u8
    }

    fn full_map(&self) -> u8 {
        ((1u16 << self.frags_per_block) - 1) as u8
    }

    /// Whether every fragment of block `b` is free (4.4BSD `ffs_isblock`).
    pub fn is_block_free(&self, b: u32) -> bool {
        self.block_map(b) == self.full_map()
    }

    fn blocks(&self) -> u32 {
        self.frags / self.frags_per_block
    }

    /// Adds `sign` times the free runs of block `b` shorter than a block to
    /// `frsum` (4.4BSD `ffs_fragacct`).
    fn fragacct(&mut self, b: u32, sign: i32) {
        let map = self.block_map(b);
        for (_, len) in runs(map, self.frags_per_block) {
            if len < self.frags_per_block {
                let slot = &mut self.frsum[len as usize];
                *slot = slot.wrapping_add_signed(sign);
            }
        }
    }

    /// Marks block `b` free or not in the cluster map and updates the
    /// cluster summary (4.4BSD `ffs_clusteracct`): the run through `b` is
    /// joined or split, and the runs on either side are counted anew.
    fn clusteracct(&mut self, b: u32, free: bool) {
        let cnt: i32 = if free { 1 } else { -1 };
        if free {
            self.clusters_free.set(b);
        } else {
            self.clusters_free.clear(b);
        }
        // Looking no further than maxcontig on each side is enough: longer
        // runs are all counted at maxcontig.
        let cap = self.maxcontig;
        let forw_end = (b + 1 + cap).min(self.blocks());
        let forw = (b + 1..forw_end).take_while(|&i| self.clusters_free.get(i)).count() as u32;
        let back = (b.saturating_sub(cap)..b).rev().take_while(|&i| self.clusters_free.get(i)).count() as u32;
        let joined = (back + forw + 1).min(cap) as usize;
        self.cluster_sum[joined] = self.cluster_sum[joined].wrapping_add_signed(cnt);
        if back > 0 {
            self.cluster_sum[back as usize] = self.cluster_sum[back as usize].wrapping_add_signed(-cnt);
        }
        if forw > 0 {
            self.cluster_sum[forw as usize] = self.cluster_sum[forw as usize].wrapping_add_signed(-cnt);
        }
    }

    /// The first fragment of the first maximal free run of exactly `len`
    /// fragments inside one block (a wholly free block when `len` is the
    /// block), searching blocks from the one holding `start` to the end of
    /// the group and then from its front (4.4BSD `ffs_mapsearch`).
    fn mapsearch(&self, start: u32, len: u32) -> Option<u32> {
        let nblocks = self.blocks();
        if nblocks == 0 {
            return None;
        }
        let frag = self.frags_per_block;
        let first = (start / frag) % nblocks;
        // Blocks with no free fragment are passed over a word of the map at
        // a time, as 4.4BSD's `scanc` passes over bytes.
        let search = |from: u32, to: u32| {
            let mut at = from * frag;
            while let Some(free) = self.frags_free.find_in(at, to * frag, true) {
                let b = free / frag;
                if let Some((s, _)) = runs(self.block_map(b), frag).find(|&(_, l)| l == len) {
                    return Some(b * frag + s);
                }
                at = (b + 1) * frag;
            }
            None
        };
        search(first, nblocks).or_else(|| search(0, first))
    }

    /// Takes a whole block: the block at `pref` if it is free, else the
    /// next free block at or after `pref` (or after the rotor when there is
    /// no preference), wrapping to the group's front (4.4BSD
    /// `ffs_alloccgblk` with no rotational tables, i.e. cpc = 0: the next
    /// free block, not a rotationally equivalent one; 1995 paper §3.2).
    /// Returns the block's first fragment.
    pub fn alloc_block(&mut self, pref: Option<u32>) -> Option<u32> {
        if self.counts.free_blocks == 0 {
            return None;
        }
        let start_block = match pref {
            Some(p) if p < self.frags => p / self.frags_per_block,
            _ => self.rotor / self.frags_per_block,
        };
        let b = if pref.is_some() && self.is_block_free(start_block) {
            start_block
        } else {
            let b = self.clusters_free.find_wrapping(start_block, true)?;
            self.rotor = b * self.frags_per_block;
            b
        };
        let base = b * self.frags_per_block;
        for i in 0..self.frags_per_block {
            self.frags_free.clear(base + i);
        }
        self.clusteracct(b, false);
        self.counts.free_blocks -= 1;
        Some(base)
    }

    /// Takes `n` fragments (1 ≤ n ≤ fragments per block) inside one block,
    /// near `pref` (4.4BSD `ffs_alloccg`):
    /// 1. `n` = a whole block: [`alloc_block`](Self::alloc_block);
    /// 2. else the smallest free run of at least `n` fragments that `frsum`
    ///    says exists, the first such run from `pref` (or the fragment
    ///    rotor); its front is taken, the rest stays a shorter free run;
    /// 3. else a whole block is broken: its first `n` fragments taken, the
    ///    rest left free.
    ///
    /// Returns the first fragment, or `None` when the group has no room.
    pub fn alloc_frags(&mut self, pref: Option<u32>, n: u32) -> Option<u32> {
        let frag = self.frags_per_block;
        if n == 0 {
            return None;
        }
        if n >= frag {
            return self.alloc_block(pref);
        }
        let Some(run) = (n..frag).find(|&s| self.frsum[s as usize] > 0) else {
            let base = self.alloc_block(pref)?;
            for i in n..frag {
                self.frags_free.set(base + i);
            }
            self.counts.free_frags += frag - n;
            self.frsum[(frag - n) as usize] += 1;
            return Some(base);
        };
        let start = pref.filter(|&p| p < self.frags).unwrap_or(self.frotor);
        let at = self.mapsearch(start, run)?;
        self.frotor = at;
        for i in 0..n {
            self.frags_free.clear(at + i);
        }
        self.counts.free_frags -= n;
        self.frsum[run as usize] -= 1;
        if run != n {
            self.frsum[(run - n) as usize] += 1;
        }
        Some(at)
    }

    /// Grows the `old` fragments at `start` to `new` in place when the
    /// fragments after them (in the same block) are free (4.4BSD
    /// `ffs_fragextend`). Returns whether it did; when not, nothing changed.
    pub fn fragextend(&mut self, start: u32, old: u32, new: u32) -> bool {
        let frag = self.frags_per_block;
        let in_block = start % frag;
        if old == 0 || new <= old || in_block + new > frag || start + new > self.frags {
            return false;
        }
        if self.counts.free_frags < new - old || !(old..new).all(|i| self.frags_free.get(start + i)) {
            return false;
        }
        // The free run being grown into starts right after the old
        // fragments; find where it ends to move its count in frsum.
        let run_end =
            (new..frag - in_block).find(|&i| !self.frags_free.get(start + i)).unwrap_or(frag - in_block);
        self.frsum[(run_end - old) as usize] -= 1;
        if run_end != new {
            self.frsum[(run_end - new) as usize] += 1;
        }
        for i in old..new {
            self.frags_free.clear(start + i);
        }
        self.counts.free_frags -= new - old;
        true
    }

    /// Takes a run of `len` free whole blocks (1 ≤ len ≤ maxcontig), the
    /// first found at or after `pref`'s block (4.4BSD `ffs_clusteralloc`):
    /// 1. the cluster summary must show a run of at least `len`, else no;
    /// 2. the cluster map is searched from `pref` (or the group's front) to
    ///    the group's end — never before `pref`, so a file is not laid out
    ///    backwards; a run found only before it counts as none.
    ///
    /// Returns the run's first fragment.
    pub fn cluster_alloc(&mut self, pref: Option<u32>, len: u32) -> Option<u32> {
        if len == 0
            || len > self.maxcontig
            || !(len..=self.maxcontig).any(|l| self.cluster_sum[l as usize] > 0)
        {
            return None;
        }
        let from = pref.filter(|&p| p < self.frags).map_or(0, |p| p / self.frags_per_block);
        let mut run = 0;
        let mut end = None;
        for b in from..self.blocks() {
            run = if self.clusters_free.get(b) { run + 1 } else { 0 };
            if run == len {
                end = Some(b);
                break;
            }
        }
        let first = end? + 1 - len;
        for b in first..first + len {
            let got = self.alloc_block(Some(b * self.frags_per_block));
            debug_assert_eq!(got, Some(b * self.frags_per_block));
        }
        Some(first * self.frags_per_block)
    }

    /// Checks that `n` fragments at `start` lie in the group's data area,
    /// inside one block, and are all in use, so they may be freed.
    fn check_free_range(&self, start: u32, n: u32) -> std::result::Result<(), String> {
        let frag = self.frags_per_block;
        if n == 0 || n > frag || start % frag + n > frag {
            return Err(format!("{n} fragments at {start} do not lie within one block"));
        }
        if start < self.data_offset || start + n > self.frags {
            return Err(format!("fragments {start}..{} are not in the group's data area", start + n));
        }
        if let Some(f) = (start..start + n).find(|&f| self.frags_free.get(f)) {
            return Err(format!("fragment {f} is already free"));
        }
        Ok(())
    }

    /// Frees `n` fragments at `start` (4.4BSD `ffs_blkfree`): a whole block
    /// goes back as a block; fragments go back to their block, which
    /// becomes a whole free block again when its last fragment returns.
    /// Freeing anything not in use is refused, and nothing changes.
    pub fn free(&mut self, start: u32, n: u32) -> std::result::Result<(), String> {
        self.check_free_range(start, n)?;
        let frag = self.frags_per_block;
        let b = start / frag;
        if n == frag {
            for i in 0..frag {
                self.frags_free.set(start + i);
            }
            self.clusteracct(b, true);
            self.counts.free_blocks += 1;
            return Ok(());
        }
        self.fragacct(b, -1);
        for i in 0..n {
            self.frags_free.set(start + i);
        }
        self.counts.free_frags += n;
        self.fragacct(b, 1);
        if self.is_block_free(b) {
            self.counts.free_frags -= frag;
            self.clusteracct(b, true);
            self.counts.free_blocks += 1;
        }
        Ok(())
    }

    /// Takes an inode slot (4.4BSD `ffs_nodealloccg`):
    /// 1. the preferred slot, if free;
    /// 2. else the next free slot after the inode rotor, wrapping.
    ///
    /// Returns `None` when the group has no free inode.
    pub fn alloc_inode(&mut self, pref: Option<u32>, is_dir: bool) -> Option<InodeSlot> {
        if self.counts.free_inodes == 0 {
            return None;
        }
        let slot = match pref.filter(|&p| p < self.inodes_used.len() && !self.inodes_used.get(p)) {
            Some(p) => p,
            None => {
                let s = self.inodes_used.find_wrapping(self.irotor, false)?;
                self.irotor = s;
                s
            }
        };
        self.inodes_used.set(slot);
        self.counts.free_inodes -= 1;
        if is_dir {
            self.counts.directories += 1;
        }
        let inopb = self.inodes_per_block;
        let first_uninitialised = self.initialised_inodes / inopb;
        let needed = slot / inopb + 1;
        let uninitialised_blocks = first_uninitialised..needed.max(first_uninitialised);
        self.initialised_inodes = self.initialised_inodes.max(needed * inopb);
        Some(InodeSlot { slot, uninitialised_blocks })
    }

    /// Frees inode slot `slot` (4.4BSD `ffs_freefile`). Freeing a slot not
    /// in use, or a reserved one, is refused and nothing changes.
    pub fn free_inode(&mut self, slot: u32, is_dir: bool) -> std::result::Result<(), String> {
        if self.index == 0 && slot < 2 {
            return Err(format!("inode {slot} is reserved"));
        }
        if !self.inodes_used.get(slot) {
            return Err(format!("inode slot {slot} is not in use"));
        }
        if is_dir && self.counts.directories == 0 {
            return Err("freeing a directory in a group that counts none".into());
        }
        self.inodes_used.clear(slot);
        self.counts.free_inodes += 1;
        if is_dir {
            self.counts.directories -= 1;
        }
        Ok(())
    }

    /// The counts and summaries as the bitmaps define them, computed from
    /// scratch.
    pub fn recount(&self) -> Recount {
        let frag = self.frags_per_block;
        let mut counts = GroupCounts { directories: self.counts.directories, ..GroupCounts::default() };
        let mut frsum = [0u32; MAX_FRAGS_PER_BLOCK];
        for b in 0..self.blocks() {
            let map = self.block_map(b);
            if map == self.full_map() {
                counts.free_blocks += 1;
                continue;
            }
            for (_, len) in runs(map, frag) {
                frsum[len as usize] += 1;
                counts.free_frags += len;
            }
        }
        counts.free_inodes = self.inodes_used.len() - self.inodes_used.count_ones();
        let mut cluster_sum = vec![0u32; self.maxcontig as usize + 1];
        let mut run = 0u32;
        for b in 0..=self.blocks() {
            if b < self.blocks() && self.is_block_free(b) {
                run += 1;
            } else if run > 0 {
                cluster_sum[run.min(self.maxcontig) as usize] += 1;
                run = 0;
            }
        }
        Recount { counts, frsum, cluster_sum }
    }

    /// Checks every invariant of the type; says which one fails.
    pub fn check(&self) -> std::result::Result<(), String> {
        let r = self.recount();
        if r.counts != self.counts {
            return Err(format!("counts {:?} disagree with the bitmaps ({:?})", self.counts, r.counts));
        }
        if r.frsum != self.frsum {
            return Err(format!("free-run counts {:?} disagree with the bitmap ({:?})", self.frsum, r.frsum));
        }
        if r.cluster_sum != self.cluster_sum {
            return Err(format!(
                "cluster summary {:?} disagrees with the bitmap ({:?})",
                self.cluster_sum, r.cluster_sum
            ));
        }
        if let Some(b) =
            (0..self.clusters_free.len()).find(|&b| self.clusters_free.get(b) != self.is_block_free(b))
        {
            return Err(format!("cluster map disagrees with the fragment map at block {b}"));
        }
        if let Some(f) = (0..self.data_offset.min(self.frags)).find(|&f| self.frags_free.get(f)) {
            return Err(format!("metadata fragment {f} is marked free"));
        }
        if let Some(f) = self.frags_free.find_in(self.frags, self.frags_free.len(), true) {
            return Err(format!("fragment {f} past the group's end is marked free"));
        }
        if self.index == 0 && !(self.inodes_used.get(0) && self.inodes_used.get(1)) {
            return Err("reserved inodes 0 and 1 are not marked in use".into());
        }
        if !self.initialised_inodes.is_multiple_of(self.inodes_per_block)
            || self.initialised_inodes > self.inodes_used.len()
        {
            return Err(format!("{} initialised inodes is out of range", self.initialised_inodes));
        }
        let first_reserved_free = if self.index == 0 { 2 } else { 0 };
        if let Some(s) = self.inodes_used.find_in(
            self.initialised_inodes.max(first_reserved_free),
            self.inodes_used.len(),
            true,
        ) {
            return Err(format!("inode slot {s} is in use but was never initialised"));
        }
        let used = self.inodes_used.len() - self.counts.free_inodes;
        if self.counts.directories > used {
            return Err(format!("{} directories but {used} inodes in use", self.counts.directories));
        }
        if self.rotor >= self.frags || self.frotor >= self.frags || self.irotor >= self.inodes_used.len() {
            return Err("a rotor lies outside the group".into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "cg_tests.rs"]
mod tests;
