//! Where a logical block's pointer lives: direct slots, and indirect blocks
//! named by negative logical block numbers (1993 paper §4.1.2, Fig. 6).
//!
//! A single indirect block takes the negative of the first data block it
//! addresses; a double or triple indirect block takes one less than the first
//! single or double indirect block it addresses. So a metadata block at level
//! `L` (1 = single) whose first data block is `d` is named `-d - (L - 1)`.
//! Because `d >= NDADDR`, the numbers -1 ..= -11 name no indirect block; -1
//! names the extended-attribute block ([`XATTR_LBN`]).
//!
//! An indirect block is laid out one of two ways, which its [`Geometry`]
//! says:
//! * *with a trailer* (LFS, and FFS before format version 3): pointers,
//!   then a CRC32C bound to the file and the block's name, and a magic
//!   number ([`seal_indirect`]);
//! * *sectored* (FFS from format version 3): every 512-byte sector holds
//!   127 pointers and, in its last four bytes, a CRC32C bound to the file,
//!   the block's name and the sector's place. A write torn at sectors —
//!   what a power cut does to a block rewritten in place — leaves every
//!   sector whole, old or new, so every pointer is still one the file
//!   system wrote, and the block still checks; a block-wide checksum would
//!   fail and cost the pointers its earlier, durable contents held. LFS
//!   never rewrites a live block in place, so its blocks keep the trailer.

use super::codec::{crc32c_append, Decoder, Encoder};
use super::{Daddr, Ino, Lbn};
use crate::error::Error;
use crate::Result;

/// Direct block pointers in an inode.
pub const NDADDR: usize = 12;
/// Indirect block pointers in an inode (single, double, triple).
pub const NIADDR: usize = 3;
/// The logical block number of a file's extended-attribute block.
pub const XATTR_LBN: Lbn = -1;
/// Bytes of one block pointer on disk.
pub const POINTER_BYTES: usize = 4;
/// Bytes at the end of an indirect block that hold no pointers: the CRC32C,
/// then [`INDIRECT_MAGIC`].
pub const INDIRECT_TRAILER: usize = 8;
/// The last four bytes of every indirect block ("INDR" in a hex dump).
pub const INDIRECT_MAGIC: u32 = 0x5244_4E49;
/// Bytes of a sector of a sectored indirect block.
pub const INDIRECT_SECTOR: usize = 512;
/// Pointers in one sector of a sectored indirect block (its last four
/// bytes are the sector's CRC32C).
pub const POINTERS_PER_SECTOR: usize = (INDIRECT_SECTOR - 4) / POINTER_BYTES;

/// CRC32C of the file's inode number and the block's name (each 8 bytes,
/// little-endian), then of the pointers: an intact indirect block of
/// another file or position does not pass for this one.
fn indirect_crc(block: &[u8], ino: Ino, lbn: Lbn) -> u32 {
    let crc = crc32c_append(0, &ino.to_le_bytes());
    let crc = crc32c_append(crc, &lbn.to_le_bytes());
    crc32c_append(crc, &block[..block.len() - INDIRECT_TRAILER])
}

/// CRC32C of the file's inode number, the block's name (each 8 bytes,
/// little-endian) and the sector's place in the block (4 bytes), then of
/// the sector's pointers.
fn sector_crc(sector: &[u8], ino: Ino, lbn: Lbn, index: usize) -> u32 {
    let crc = crc32c_append(0, &ino.to_le_bytes());
    let crc = crc32c_append(crc, &lbn.to_le_bytes());
    let crc = crc32c_append(crc, &(index as u32).to_le_bytes());
    crc32c_append(crc, &sector[..INDIRECT_SECTOR - 4])
}

/// Writes the trailer of indirect block `lbn` of file `ino`.
pub fn seal_indirect(block: &mut [u8], ino: Ino, lbn: Lbn) {
    let n = block.len();
    let crc = indirect_crc(block, ino, lbn);
    let mut e = Encoder::new(block);
    e.u32(n - INDIRECT_TRAILER, crc);
    e.u32(n - 4, INDIRECT_MAGIC);
}

/// Checks the trailer of indirect block `lbn` of file `ino`, read from
/// `daddr`.
pub fn check_indirect(block: &[u8], ino: Ino, lbn: Lbn, daddr: Daddr) -> Result<()> {
    let n = block.len();
    let d = Decoder::new(block);
    let bad = |why: String| Error::corrupt("indirect block", daddr, why);
    if n <= INDIRECT_TRAILER || d.u32(n - 4).ok() != Some(INDIRECT_MAGIC) {
        return Err(bad(format!("block {lbn} of inode {ino} has no indirect-block magic")));
    }
    if d.u32(n - INDIRECT_TRAILER).ok() != Some(indirect_crc(block, ino, lbn)) {
        return Err(bad(format!("block {lbn} of inode {ino}: checksum mismatch")));
    }
    Ok(())
}

/// Whether `lbn` names an indirect block (rather than data or the
/// extended-attribute block).
pub fn is_indirect(lbn: Lbn) -> bool {
    lbn < 0 && lbn != XATTR_LBN
}

/// The chain of indirect blocks above a data block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockPath {
    /// 0 for a direct block, else how many indirect blocks lie above it.
    pub levels: usize,
    /// For `levels == 0`, the direct slot; otherwise unused.
    pub direct_slot: usize,
    /// `metas[0]` hangs from the inode's indirect slot `levels - 1`;
    /// `metas[i + 1]` hangs from `metas[i]`. Only `levels` entries are used.
    pub metas: [Lbn; NIADDR],
    /// `indices[i]` is the slot inside `metas[i]` that points one level down.
    pub indices: [usize; NIADDR],
}

/// What points at a block: an inode slot or a slot inside an indirect block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parent {
    /// Direct slot `n` of the inode.
    Direct(usize),
    /// Indirect slot `n` of the inode (0 single, 1 double, 2 triple).
    Indirect(usize),
    /// Slot `index` of the indirect block `meta`.
    Meta { meta: Lbn, index: usize },
    /// The inode's extended-attribute pointer.
    Xattr,
}

/// The indirect-block arithmetic of one block size and layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Pointers per indirect block.
    pub nindir: u64,
    /// Whether indirect blocks carry a checksum per sector rather than a
    /// trailer (see the module comment).
    pub sectored: bool,
}

impl Geometry {
    /// The geometry of `block_size`-byte indirect blocks with a trailer.
    pub fn new(block_size: u32) -> Geometry {
        Geometry {
            nindir: (block_size as u64).saturating_sub(INDIRECT_TRAILER as u64) / POINTER_BYTES as u64,
            sectored: false,
        }
    }

    /// The geometry of `block_size`-byte sectored indirect blocks.
    pub fn sectored(block_size: u32) -> Geometry {
        let sectors = block_size as u64 / INDIRECT_SECTOR as u64;
        Geometry { nindir: sectors * POINTERS_PER_SECTOR as u64, sectored: true }
    }

    /// The byte offset of pointer `index` in an indirect block.
    pub fn pointer_offset(&self, index: usize) -> usize {
        if self.sectored {
            index / POINTERS_PER_SECTOR * INDIRECT_SECTOR + index % POINTERS_PER_SECTOR * POINTER_BYTES
        } else {
            index * POINTER_BYTES
        }
    }

    /// Pointer slots a block of `len` bytes holds (no more than `nindir`).
    pub fn pointers_in(&self, len: usize) -> u64 {
        let fit = if self.sectored {
            len / INDIRECT_SECTOR * POINTERS_PER_SECTOR
        } else {
            len.saturating_sub(INDIRECT_TRAILER) / POINTER_BYTES
        };
        self.nindir.min(fit as u64)
    }

    /// Writes the checksums of indirect block `lbn` of file `ino`.
    pub fn seal(&self, block: &mut [u8], ino: Ino, lbn: Lbn) {
        if !self.sectored {
            return seal_indirect(block, ino, lbn);
        }
        for (i, sector) in block.chunks_exact_mut(INDIRECT_SECTOR).enumerate() {
            let crc = sector_crc(sector, ino, lbn, i);
            Encoder::new(sector).u32(INDIRECT_SECTOR - 4, crc);
        }
    }

    /// Checks the checksums of indirect block `lbn` of file `ino`, read
    /// from `daddr`.
    pub fn check(&self, block: &[u8], ino: Ino, lbn: Lbn, daddr: Daddr) -> Result<()> {
        if !self.sectored {
            return check_indirect(block, ino, lbn, daddr);
        }
        if block.is_empty() || !block.len().is_multiple_of(INDIRECT_SECTOR) {
            return Err(Error::corrupt("indirect block", daddr, "not whole sectors"));
        }
        for (i, sector) in block.chunks_exact(INDIRECT_SECTOR).enumerate() {
            if Decoder::new(sector).u32(INDIRECT_SECTOR - 4).ok() != Some(sector_crc(sector, ino, lbn, i)) {
                return Err(Error::corrupt(
                    "indirect block",
                    daddr,
                    format!("block {lbn} of inode {ino}: checksum mismatch in sector {i}"),
                ));
            }
        }
        Ok(())
    }

    /// The sectors of indirect block `lbn` of file `ino` that fail their
    /// checksums: only a sectored tree can tell them apart (empty for
    /// another, or for a block that is not whole sectors). A block whose
    /// every sector fails is not this file's block at `lbn` at all.
    pub fn bad_sectors(&self, block: &[u8], ino: Ino, lbn: Lbn) -> Vec<usize> {
        if !self.sectored || !block.len().is_multiple_of(INDIRECT_SECTOR) {
            return Vec::new();
        }
        block
            .chunks_exact(INDIRECT_SECTOR)
            .enumerate()
            .filter(|(i, sector)| {
                Decoder::new(sector).u32(INDIRECT_SECTOR - 4).ok() != Some(sector_crc(sector, ino, lbn, *i))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The block slot `index` of indirect block `meta` points at: a data
    /// block under a single indirect block, the indirect block below
    /// otherwise; `None` if `meta` is no indirect block of this geometry.
    pub fn child_lbn(&self, meta: Lbn, index: usize) -> Option<Lbn> {
        let (level, first) = self.meta_level(meta)?;
        let child_first = first + index as u64 * self.span(level - 1);
        Some(if level == 1 { child_first as Lbn } else { Self::meta_lbn(level - 1, child_first) })
    }

    /// First data block covered by the single, double and triple trees.
    fn starts(&self) -> [u64; NIADDR] {
        let n = self.nindir;
        let d1 = NDADDR as u64;
        [d1, d1 + n, d1 + n + n * n]
    }

    /// Data blocks covered by one indirect block at `level` (1..=3).
    fn span(&self, level: usize) -> u64 {
        self.nindir.pow(level as u32)
    }

    /// One past the largest data block number a file can have.
    pub fn max_blocks(&self) -> u64 {
        self.starts()[2] + self.span(3)
    }

    /// The name of the level-`level` indirect block whose first data block is `first`.
    pub fn meta_lbn(level: usize, first: u64) -> Lbn {
        -(first as Lbn) - (level as Lbn - 1)
    }

    /// The chain of indirect blocks above data block `lbn`, or `None` past the
    /// largest file.
    pub fn path(&self, lbn: u64) -> Option<BlockPath> {
        let mut path = BlockPath { levels: 0, direct_slot: 0, metas: [0; NIADDR], indices: [0; NIADDR] };
        if lbn < NDADDR as u64 {
            path.direct_slot = lbn as usize;
            return Some(path);
        }
        let starts = self.starts();
        let levels = (1..=NIADDR).rev().find(|&l| lbn >= starts[l - 1])?;
        if lbn - starts[levels - 1] >= self.span(levels) {
            return None;
        }
        path.levels = levels;
        let mut first = starts[levels - 1];
        for i in 0..levels {
            let level = levels - i;
            path.metas[i] = Self::meta_lbn(level, first);
            let child_span = self.span(level - 1);
            let index = (lbn - first) / child_span;
            path.indices[i] = index as usize;
            first += index * child_span;
        }
        Some(path)
    }

    /// The level and first data block of indirect block `meta`, or `None` if
    /// `meta` names no indirect block.
    pub fn meta_level(&self, meta: Lbn) -> Option<(usize, u64)> {
        if meta >= 0 {
            return None;
        }
        let starts = self.starts();
        for level in 1..=NIADDR {
            // Checked: an lbn read from a summary may be Lbn::MIN.
            let Some(first) = meta.checked_add(level as Lbn - 1).and_then(Lbn::checked_neg) else { continue };
            let first = first as u64;
            if first < starts[0] || first >= self.max_blocks() {
                continue;
            }
            let path = self.path(first)?;
            if path.levels >= level && path.metas[path.levels - level] == meta {
                return Some((level, first));
            }
        }
        None
    }

    /// What points at block `lbn` (data, indirect or xattr), or `None` if
    /// `lbn` names no block.
    pub fn parent(&self, lbn: Lbn) -> Option<Parent> {
        if lbn == XATTR_LBN {
            return Some(Parent::Xattr);
        }
        if lbn >= 0 {
            let path = self.path(lbn as u64)?;
            return Some(if path.levels == 0 {
                Parent::Direct(path.direct_slot)
            } else {
                Parent::Meta { meta: path.metas[path.levels - 1], index: path.indices[path.levels - 1] }
            });
        }
        let (level, first) = self.meta_level(lbn)?;
        let path = self.path(first)?;
        let position = path.levels - level;
        Some(if position == 0 {
            Parent::Indirect(level - 1)
        } else {
            Parent::Meta { meta: path.metas[position - 1], index: path.indices[position - 1] }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slots_child_has_that_slot_for_its_parent() {
        let g = Geometry::sectored(8192);
        for meta in [-12, -(12 + g.nindir as Lbn) - 1, Geometry::meta_lbn(1, 12 + g.nindir + 5 * g.nindir)] {
            for index in [0, 1, 126, 127, g.nindir as usize - 1] {
                let child = g.child_lbn(meta, index).expect("child");
                assert_eq!(g.parent(child), Some(Parent::Meta { meta, index }), "meta {meta} slot {index}");
            }
        }
        assert_eq!(g.child_lbn(5, 0), None, "a data block has no slots");
    }

    #[test]
    fn an_indirect_block_passes_only_as_itself_and_undamaged() {
        let mut block = vec![0u8; 4096];
        block[..8].copy_from_slice(&[7, 0, 0, 0, 9, 0, 0, 0]);
        let at = Daddr::new(1);
        assert!(check_indirect(&block, 5, -12, at).is_err(), "unsealed");
        seal_indirect(&mut block, 5, -12);
        check_indirect(&block, 5, -12, at).expect("sealed");
        assert!(check_indirect(&block, 6, -12, at).is_err(), "another file's");
        assert!(check_indirect(&block, 5, -1036, at).is_err(), "another position's");
        block[4] ^= 1;
        assert!(check_indirect(&block, 5, -12, at).is_err(), "a flipped pointer bit");
        assert_eq!(Geometry::new(4096).nindir, 1022, "the trailer holds no pointers");
        assert!(is_indirect(-12) && !is_indirect(XATTR_LBN) && !is_indirect(0));
    }

    #[test]
    fn numbering_follows_figure_6() {
        let g = Geometry { nindir: 1024, sectored: false };
        let p = g.path(12).expect("in range");
        assert_eq!((p.levels, p.metas[0], p.indices[0]), (1, -12, 0));
        let p = g.path(12 + 1024).expect("in range");
        assert_eq!(p.levels, 2);
        assert_eq!(p.metas[0], -(12 + 1024) - 1, "double indirect is one less than its first single");
        assert_eq!(p.metas[1], -(12 + 1024));
        let p = g.path(12 + 1024 + 1024 * 1024 + 5).expect("in range");
        assert_eq!(p.levels, 3);
        assert_eq!(p.metas[0], -(12 + 1024 + 1024 * 1024) - 2);
        assert_eq!(p.indices[2], 5);
        assert!(g.path(g.max_blocks()).is_none());
    }

    #[test]
    fn parent_inverts_path_at_every_level() {
        let g = Geometry { nindir: 16, sectored: false };
        for lbn in 0..g.max_blocks() {
            let path = g.path(lbn).expect("in range");
            for i in 0..path.levels {
                let meta = path.metas[i];
                let expected = if i == 0 {
                    Parent::Indirect(path.levels - 1)
                } else {
                    Parent::Meta { meta: path.metas[i - 1], index: path.indices[i - 1] }
                };
                assert_eq!(g.parent(meta), Some(expected), "parent of meta {meta} above data {lbn}");
            }
        }
        assert_eq!(g.parent(XATTR_LBN), Some(Parent::Xattr));
        assert_eq!(g.parent(-5), None);
    }

    #[test]
    fn a_sectored_block_checks_each_sector_so_a_torn_one_still_checks() {
        let g = Geometry::sectored(4096);
        assert_eq!(g.nindir, 8 * 127);
        assert_eq!((g.pointer_offset(126), g.pointer_offset(127), g.pointer_offset(128)), (504, 512, 516));
        let at = Daddr::new(1);
        let block_with = |first: u8| {
            let mut block = vec![0u8; 4096];
            for i in 0..g.nindir as usize {
                Encoder::new(&mut block).u32(g.pointer_offset(i), first as u32 + i as u32);
            }
            g.seal(&mut block, 5, -12);
            block
        };
        let (old, new) = (block_with(1), block_with(9));
        g.check(&old, 5, -12, at).expect("sealed");
        assert!(g.check(&vec![0u8; 4096], 5, -12, at).is_err(), "never written");
        assert!(g.check(&old, 6, -12, at).is_err(), "another file's");
        assert!(g.check(&old, 5, -1036, at).is_err(), "another position's");
        // Torn: the first three sectors new, the rest old.
        let mut torn = old.clone();
        torn[..3 * 512].copy_from_slice(&new[..3 * 512]);
        g.check(&torn, 5, -12, at).expect("every sector whole");
        // Sectors swapped are not whole where they stand.
        let mut swapped = old.clone();
        swapped[..512].copy_from_slice(&old[512..1024]);
        assert!(g.check(&swapped, 5, -12, at).is_err(), "a sector out of place");
        let mut flipped = old;
        flipped[600] ^= 1;
        assert!(g.check(&flipped, 5, -12, at).is_err(), "a flipped pointer bit");
        assert_eq!(g.pointers_in(4096), g.nindir);
        assert_eq!(Geometry::new(4096).pointers_in(4096), 1022);
    }

    #[test]
    fn four_kib_blocks_address_more_than_a_tebibyte() {
        let g = Geometry::new(4096);
        assert!(g.max_blocks() * 4096 >= 1 << 40);
    }
}
