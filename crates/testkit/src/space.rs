//! Space: when a subject may refuse a call with ENOSPC. The model tests
//! accept ENOSPC (or a short write) only where the model says the space is
//! short: its contents, and what the call adds, take about all the blocks
//! the subject reports through `statfs`. Anywhere else ENOSPC is a wrong
//! answer like any other (a create that always failed with ENOSPC used to
//! pass).
//!
//! The model's side ([`contents_blocks`], [`op_blocks`]) is an upper bound
//! of what the file system must store: each file's blocks that may hold an
//! address (`Node::allocated`: written or preallocated, not truncated away
//! or punched whole) with the indirect blocks above them, a block per
//! directory, symbolic link and non-empty set of extended attributes, and
//! the inode slots. The subject's side ([`Capacity`]) is `statfs`'s total
//! less what its layout spends beside the contents.

use crate::model::{Body, Model};
use crate::ops::Op;
use std::collections::BTreeSet;

/// Direct block pointers in an inode (docs/FORMAT.md).
const NDADDR: u64 = 12;
/// Bytes of an inode slot (docs/FORMAT.md).
const INODE_BYTES: u64 = 256;

/// How many blocks a subject holds for the model's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capacity {
    /// Blocks `statfs` reports in all (`f_blocks`), reserves left out.
    pub total: u64,
    /// Blocks the layout spends beside the contents whatever they are.
    pub fixed: u64,
    /// One block more per this many blocks of contents.
    pub per: u64,
}

impl Capacity {
    /// Whether `need` blocks of contents leave too little room: then an
    /// ENOSPC or a short write is a fair answer.
    pub fn short(&self, need: u64) -> bool {
        need + need / self.per.max(1) + self.fixed >= self.total
    }
}

/// Indirect blocks above the data blocks `allocated` of one file, with
/// `nindir` pointers per indirect block: in the tree of `k` levels (single,
/// double, triple), each block at level `l` covers `nindir^l` data blocks.
fn indirect_blocks(allocated: &BTreeSet<u64>, nindir: u64) -> u64 {
    let mut needed = BTreeSet::new();
    let mut first = NDADDR;
    for levels in 1..=3u32 {
        let span = nindir.pow(levels);
        for at in allocated.range(first..first + span).map(|b| b - first) {
            for level in 1..=levels {
                needed.insert((levels, level, at / nindir.pow(level)));
            }
        }
        first += span;
    }
    needed.len() as u64
}

/// Blocks the model's contents may take on a file system of `block_size`
/// blocks (see the module comment).
pub fn contents_blocks(model: &Model, block_size: usize) -> u64 {
    let bs = block_size as u64;
    // The fewer pointers of the two indirect-block layouts (sectored, FFS;
    // with a trailer, LFS): more indirect blocks, an upper bound for both.
    let nindir = fslab::format::blockno::Geometry::sectored(block_size as u32).nindir;
    let mut blocks = 0;
    let mut nodes = 0;
    for id in model.live() {
        let Some(node) = model.node(id) else { continue };
        nodes += 1;
        blocks += match &node.body {
            Body::File(_) => node.allocated.len() as u64 + indirect_blocks(&node.allocated, nindir),
            Body::Dir { .. } | Body::Symlink(_) => 1,
        };
        blocks += u64::from(!node.xattrs.is_empty());
    }
    blocks + (nodes * INODE_BYTES).div_ceil(bs)
}

/// Blocks `op` may add at most: the data it writes or preallocates, and
/// two more (a directory block and an inode block, or an xattr block).
pub fn op_blocks(op: &Op, block_size: usize) -> u64 {
    let bs = block_size as u64;
    let data = match op {
        Op::Write { offset, len, .. } | Op::WriteHandle { offset, len, .. } => {
            (offset + *len as u64).div_ceil(bs) - offset / bs
        }
        Op::Fallocate { offset, len, .. } => offset.saturating_add(*len).div_ceil(bs) - offset / bs,
        _ => 0,
    };
    data + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indirect_blocks_count_each_block_of_each_tree_once() {
        let n = 1022;
        let count = |blocks: &[u64]| indirect_blocks(&blocks.iter().copied().collect(), n);
        assert_eq!(count(&[0, 5, 11]), 0, "direct blocks only");
        assert_eq!(count(&[12, 13, 500]), 1, "the single indirect block");
        assert_eq!(count(&[12 + n]), 2, "the double indirect block and a single under it");
        assert_eq!(count(&[20, 12 + n, 12 + 2 * n]), 4, "two singles under the double");
        let triple = 12 + n + n * n;
        assert_eq!(count(&[triple, triple + n * n]), 5, "triple, two doubles, two singles");
    }
}
