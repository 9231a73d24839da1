//! Where new things should go: `blkpref` for a file's next block and
//! `dirpref` for a new directory's group (4.4BSD `ffs_blkpref`,
//! `ffs_dirpref`, the "old" policy of the 2002 paper §2.2).

use super::Allocator;
use crate::ffs::geometry::Geometry;
use crate::ffs::layout::{Policy, RotDelay};
use crate::ffs::Frag;
use crate::format::blockno::NDADDR;
use crate::format::{Ino, Lbn};

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

    /// The group for a new directory — the "old" dirpref (4.4BSD
    /// `ffs_dirpref`; 2002 paper §2.2): among groups with at least the
    /// average number of free inodes, the one with the fewest directories
    /// (the first such on ties). Spreads directories, and so their files,
    /// over the disk.
    pub fn dirpref(&self) -> u32 {
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
}
