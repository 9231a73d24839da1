//! Where a logical block's pointer lives: direct slots, and indirect blocks
//! named by negative logical block numbers (1993 paper §4.1.2, Fig. 6).
//!
//! A single indirect block takes the negative of the first data block it
//! addresses; a double or triple indirect block takes one less than the first
//! single or double indirect block it addresses. So a metadata block at level
//! `L` (1 = single) whose first data block is `d` is named `-d - (L - 1)`.
//! Because `d >= NDADDR`, the numbers -1 ..= -11 name no indirect block; -1
//! names the extended-attribute block ([`XATTR_LBN`]).

use super::Lbn;

/// Direct block pointers in an inode.
pub const NDADDR: usize = 12;
/// Indirect block pointers in an inode (single, double, triple).
pub const NIADDR: usize = 3;
/// The logical block number of a file's extended-attribute block.
pub const XATTR_LBN: Lbn = -1;
/// Bytes of one block pointer on disk.
pub const POINTER_BYTES: usize = 4;

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

/// The indirect-block arithmetic of one block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Pointers per indirect block.
    pub nindir: u64,
}

impl Geometry {
    /// The geometry of `block_size`-byte blocks.
    pub fn new(block_size: u32) -> Geometry {
        Geometry { nindir: block_size as u64 / POINTER_BYTES as u64 }
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
            let first = (-(meta + level as Lbn - 1)) as u64;
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
    fn numbering_follows_figure_6() {
        let g = Geometry { nindir: 1024 };
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
        let g = Geometry { nindir: 16 };
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
    fn four_kib_blocks_address_more_than_a_tebibyte() {
        let g = Geometry::new(4096);
        assert!(g.max_blocks() * 4096 >= 1 << 40);
    }
}
