//! Where new things should go: `blkpref` for a file's next block and
//! `dirpref` for a new directory's group (4.4BSD `ffs_blkpref`,
//! `ffs_dirpref`), with both directory policies of the 2002 paper §2.2:
//! the old one, which spreads directories, and Orlov's 2001 one, which
//! keeps a directory near its parent while the parent's group has room.

use super::Allocator;
use crate::ffs::geometry::Geometry;
use crate::ffs::layout::{DirPref, Policy, RotDelay};
use crate::ffs::Frag;
use crate::format::blockno::NDADDR;
use crate::format::{Ino, Lbn, ROOT_INO};

/// Bytes per disk sector, the unit 4.4BSD's `fs_nsect` counts in.
const SECTOR_BYTES: u64 = 512;

/// The rotdelay gap in fragments, always whole blocks: a gap in blocks as
/// given, or one in milliseconds converted as 4.4BSD does —
/// `ms · revolutions/s · sectors/revolution / (sectors/fragment · 1000)`
/// fragments, rounded up to a block. With the 1993 paper's disk (15 ms a
/// revolution, 36 KiB tracks) and 4 KiB blocks of 1 KiB fragments, 4 ms
/// gives three blocks: a file gets one block in four (§5.2.1, Fig. 11).
pub fn rotdelay_gap_frags(geo: &Geometry, policy: &Policy) -> u64 {
    let frag = geo.frags_per_block as u64;
    match policy.rotdelay {
        RotDelay::Off => 0,
        RotDelay::Blocks(b) => b as u64 * frag,
        RotDelay::Millis(ms) => {
            let sectors_per_frag = geo.frag_size as u64 / SECTOR_BYTES;
            let frags = ms as u64 * policy.revolutions_per_second as u64 * policy.sectors_per_track as u64
                / (sectors_per_frag * 1000);
            frags.div_ceil(frag) * frag
        }
    }
}

impl Allocator {
    /// The preferred address for a new block of the file of inode `ino`
    /// (4.4BSD `ffs_blkpref`; 1995 paper §1.1 and §3.2, Smith & Seltzer
    /// 1997 §2). `lbn` is the data block being allocated (for an indirect
    /// block, the data block whose path needs it), `bap` the block-pointer
    /// array that will hold the new pointer — the inode's direct pointers
    /// or an indirect block's — and `indx` the new pointer's index in it;
    /// an indirect block itself is asked for with `indx` 0 and an empty
    /// `bap`. Returns 0 for "no preference".
    ///
    /// 1. At the start of a pointer array, every `maxbpg` pointers into it,
    ///    or after a hole — a new placement:
    ///    - a direct block (`lbn` < 12): the first data block of the
    ///      inode's group, so a new file fills its group from the front
    ///      (the first free block there is taken: SS97 §2);
    ///    - otherwise the first group, from a start, with at least the
    ///      average number of free blocks: the start is the inode's group
    ///      plus `lbn / maxbpg` at an array's start or after a hole, else
    ///      the group after the previous block's. So the first indirect
    ///      block's data leaves the group holding the direct blocks (that
    ///      group has been filling, so it is below average unless the file
    ///      system is uneven), and a big file moves on every `maxbpg`
    ///      blocks (1995 paper §3.2: "FFS begins allocation in a new
    ///      cylinder group when the first indirect block is added").
    /// 2. Otherwise the block after the previous one — unless the last
    ///    `maxcontig` blocks are already contiguous and rotdelay is set,
    ///    when a gap of [`rotdelay_gap_frags`] is left first (the time the
    ///    host needs to issue the next transfer, 1993 paper §5.1).
    pub fn blkpref(&self, ino: Ino, lbn: Lbn, indx: usize, bap: &[Frag]) -> Frag {
        self.blkpref_with(ino, lbn, indx, |i| bap.get(i).copied().unwrap_or(0))
    }

    /// [`blkpref`](Self::blkpref) with the pointer array read through `at`
    /// (pointer `i` of it, 0 for none): only two of its pointers matter, so
    /// a storage manager need not decode a whole indirect block.
    pub fn blkpref_with(&self, ino: Ino, lbn: Lbn, indx: usize, at: impl Fn(usize) -> Frag) -> Frag {
        let geo = &self.geo;
        let prev = if indx == 0 { 0 } else { at(indx - 1) };
        let maxbpg = self.policy.maxbpg.max(1) as usize;
        if indx.is_multiple_of(maxbpg) || prev == 0 {
            let ino_cg = geo.ino_group(ino).min(geo.ncg - 1);
            if lbn < NDADDR as Lbn {
                return geo.group_data_start(ino_cg);
            }
            let start = if prev == 0 {
                ino_cg as u64 + lbn as u64 / maxbpg as u64
            } else {
                geo.group_of(prev) as u64 + 1
            };
            let start = (start % geo.ncg as u64) as u32;
            let average = self.totals.free_blocks / geo.ncg as u64;
            let ok = |cg: &u32| self.groups[*cg as usize].counts().free_blocks as u64 >= average;
            return (start..geo.ncg).chain(0..=start).find(ok).map_or(0, |cg| geo.group_data_start(cg));
        }
        let next = prev + geo.frags_per_block as Frag;
        let maxcontig = geo.maxcontig as usize;
        let gap = rotdelay_gap_frags(geo, &self.policy);
        if gap == 0
            || indx < maxcontig
            || at(indx - maxcontig) + (maxcontig as u64 * geo.frags_per_block as u64) != next
        {
            return next;
        }
        next + gap
    }

    /// The group for a new directory in directory `parent`, by the
    /// superblock's policy (2002 paper §2.2): [`dirpref_old`](Self::dirpref_old),
    /// or for the new policy [`dirpref_top`](Self::dirpref_top) under the
    /// root — starting its scan at group `start`, which the caller draws
    /// at random as FreeBSD does — and [`dirpref_near`](Self::dirpref_near)
    /// anywhere else.
    pub fn dirpref(&self, parent: Ino, start: u32) -> u32 {
        match self.policy.dirpref {
            DirPref::Old => self.dirpref_old(),
            DirPref::New if parent == ROOT_INO => self.dirpref_top(start),
            DirPref::New => self.dirpref_near(self.geo.ino_group(parent).min(self.geo.ncg - 1)),
        }
    }

    /// The "old" dirpref (4.4BSD `ffs_dirpref`; 2002 paper §2.2): among
    /// groups with at least the average number of free inodes, the one
    /// with the fewest directories (the first such on ties). Spreads
    /// directories, and so their files, over the disk.
    pub fn dirpref_old(&self) -> u32 {
        let average = self.totals.free_inodes / self.geo.ncg as u64;
        let mut best = 0;
        let mut fewest = self.geo.ipg;
        for (cg, g) in self.groups.iter().enumerate() {
            let c = g.counts();
            if c.directories < fewest && c.free_inodes as u64 >= average {
                best = cg as u32;
                fewest = c.directories;
            }
        }
        best
    }

    /// The groups from `start` to the last, then from the first up to
    /// `start`: the new policy's forward scan, which wraps rather than
    /// turning back, so that on a nearly full disk each call looks at
    /// groups the last did not (FreeBSD's `ffs_dirpref` comment).
    fn forward_from(&self, start: u32) -> impl Iterator<Item = u32> {
        let start = start.min(self.geo.ncg - 1);
        (start..self.geo.ncg).chain(0..start)
    }

    /// A directory under the root, by the new policy (FreeBSD
    /// `ffs_dirpref`, Orlov 2001): top-level directories are spread as
    /// the old policy spreads all of them — among groups with at least the
    /// average free inodes *and* free blocks, the one with the fewest
    /// directories, the first such in a scan from `start` on ties; `start`
    /// if none qualifies.
    pub fn dirpref_top(&self, start: u32) -> u32 {
        let l = self.dir_limits();
        let mut best = start.min(self.geo.ncg - 1);
        let mut fewest = self.geo.ipg;
        for cg in self.forward_from(start) {
            let c = self.groups[cg as usize].counts();
            if c.directories < fewest
                && c.free_inodes as u64 >= l.avgifree
                && c.free_blocks as u64 >= l.avgbfree
            {
                best = cg;
                fewest = c.directories;
            }
        }
        best
    }

    /// Any other directory, by the new policy (FreeBSD `ffs_dirpref`,
    /// Orlov 2001; 2002 paper §2.2): near its parent, in group `parent_cg`,
    /// while that has room for it and its files.
    /// 1. the first group, scanning forward from `parent_cg` and wrapping,
    ///    with fewer than `maxndir` directories, at least `minifree` free
    ///    inodes and `minbfree` free blocks, and fewer than
    ///    `maxcontigdirs` directories made there one after another without
    ///    a file between ([`DirLimits`]);
    /// 2. else (a deficit of inodes or space), the first group in the same
    ///    order with at least the average free inodes;
    /// 3. else `parent_cg`.
    pub fn dirpref_near(&self, parent_cg: u32) -> u32 {
        let l = self.dir_limits();
        let roomy = |cg: &u32| {
            let c = self.groups[*cg as usize].counts();
            c.directories < l.maxndir
                && c.free_inodes as u64 >= l.minifree
                && c.free_blocks as u64 >= l.minbfree
                && u32::from(self.contigdirs[*cg as usize]) < l.maxcontigdirs
        };
        let inodes = |cg: &u32| self.groups[*cg as usize].counts().free_inodes as u64 >= l.avgifree;
        self.forward_from(parent_cg)
            .find(roomy)
            .or_else(|| self.forward_from(parent_cg).find(inodes))
            .unwrap_or(parent_cg.min(self.geo.ncg - 1))
    }

    /// The new policy's limits from the current totals (the table of
    /// research notes §4, after FreeBSD's `ffs_dirpref`).
    pub(super) fn dir_limits(&self) -> DirLimits {
        let geo = &self.geo;
        let ncg = geo.ncg as u64;
        let ipg = geo.ipg as u64;
        let bsize = geo.block_size as u64;
        let avgifree = self.totals.free_inodes / ncg;
        let avgbfree = self.totals.free_blocks / ncg;
        let avgndir = self.totals.directories / ncg;
        let maxndir = (avgndir + ipg / 16).min(ipg);
        let minifree = (avgifree - avgifree / 4).max(1);
        let minbfree = (avgbfree - avgbfree / 4).max(1);
        // Bytes a directory with its files is expected to take: the
        // superblock's guess, or what directories take now if more. In
        // 64 bits, so no product overflows (FreeBSD's 32-bit `int` could,
        // and then forced the limit to 1).
        let cgsize = geo.frag_size as u64 * geo.fpg as u64;
        let mut dirsize = self.policy.avgfilesize as u64 * self.policy.avgfpdir as u64;
        if let Some(now) = cgsize.saturating_sub(avgbfree * bsize).checked_div(avgndir) {
            dirsize = dirsize.max(now);
        }
        let maxcontigdirs = (avgbfree * bsize / dirsize.max(1))
            .min(MAX_CONTIGDIRS as u64)
            .min(ipg / (self.policy.avgfpdir as u64).max(1))
            .max(1);
        DirLimits {
            avgifree,
            avgbfree,
            maxndir: maxndir as u32,
            minifree,
            minbfree,
            maxcontigdirs: maxcontigdirs as u32,
        }
    }

    /// Notes an inode about to be taken in group `cg` (the preferred
    /// group, before `hashalloc` looks elsewhere, as FreeBSD's
    /// `ffs_valloc` does): a directory adds one to the group's run of
    /// directories made one after another (at most [`MAX_CONTIGDIRS`]), a
    /// file takes one off.
    pub(super) fn count_contiguous_dir(&mut self, cg: u32, is_dir: bool) {
        if let Some(n) = self.contigdirs.get_mut(cg as usize) {
            *n = if is_dir { n.saturating_add(1) } else { n.saturating_sub(1) };
        }
    }

    /// The group a top-level directory's scan starts from: at random, as
    /// FreeBSD draws it, from a generator seeded by the file-system id, so
    /// that a run on the same image places the same way.
    pub(super) fn random_group(&mut self) -> u32 {
        (xorshift64_star(&mut self.rng) % self.geo.ncg as u64) as u32
    }
}

/// The most directories counted as made one after another in one group:
/// the count is a byte, as FreeBSD's, and stops there.
pub const MAX_CONTIGDIRS: u8 = 255;

/// The quantities the new directory placement decides by (research notes
/// §4; FreeBSD `ffs_dirpref`), from the totals over `ncg` groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirLimits {
    /// Free inodes / ncg.
    pub avgifree: u64,
    /// Free blocks / ncg.
    pub avgbfree: u64,
    /// min(directories / ncg + ipg / 16, ipg): a group with this many
    /// directories takes no more near their parents.
    pub maxndir: u32,
    /// avgifree − avgifree/4, at least 1.
    pub minifree: u64,
    /// avgbfree − avgbfree/4, at least 1.
    pub minbfree: u64,
    /// min(avgbfree · bsize / dirsize, 255, ipg / avgfpdir), at least 1:
    /// directories a group takes one after another before the next moves
    /// on, so that their files still find room. `dirsize` is avgfilesize ·
    /// avgfpdir, or the space each directory takes now when more.
    pub maxcontigdirs: u32,
}

/// One step of xorshift64* (Vigna): a cheap generator for choices that
/// need only to be spread, never secret. `state` must not be zero.
///
/// Written here rather than taken from `rand`, and to be kept as it is: the
/// library does not depend on `rand`, whose generators do not promise the
/// same sequence from one version to the next, and this sequence places
/// FFS's top-level directories, on which the lab's committed FFS results
/// were measured, and decides the writes the crash tests' adversary
/// (`MountOptions::adversary`) lets through.
pub(crate) fn xorshift64_star(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}
