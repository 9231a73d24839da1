//! Where every file's blocks lie, and how the free space lies between
//! them: read-only views of the mounted file system for the aging lab's
//! layout score (1997 paper §3.3) and free-space fragmentation
//! (`integrity_and_aging.md` §3.4 item 6). Nothing is judged here; the
//! figures are the lab's (`fslab-bench`, `aging`).
//!
//! The walk reads each inode in use and its pointers through the cache,
//! as the leak scan does (`leaks.rs`), so a mount that is aging can be
//! measured between operations without a sync: every block in the cache
//! already has its disk address (`blocks.rs`).

use super::fs::Ffs;
use super::leaks::Pointers;
use super::Frag;
use crate::bmap;
use crate::format::inode::kind;
use crate::format::{Ino, Lbn, ROOT_INO};
use crate::Result;

/// One pointer of a file: a data block (`lbn >= 0`) or an indirect block
/// (`lbn < 0`, the block-map engine's names), where it lies and how many
/// fragments it holds (fewer than a block only for a fragment tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacedBlock {
    /// Logical block number (negative: an indirect block).
    pub lbn: Lbn,
    /// First fragment.
    pub addr: Frag,
    /// Fragments held.
    pub frags: u32,
}

/// Where one file's blocks lie, in the order a sequential reader meets
/// them: each indirect block before the data it maps (`bmap::walk`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePlacement {
    /// The inode number.
    pub ino: Ino,
    /// Its type bits (`format::inode::kind`).
    pub kind: u32,
    /// Its size in bytes.
    pub size: u64,
    /// Its pointers, extended-attribute block left out.
    pub blocks: Vec<PlacedBlock>,
}

impl FilePlacement {
    /// Whether this is a regular file.
    pub fn is_regular(&self) -> bool {
        self.kind == kind::REG
    }
}

/// The free space of one cylinder group, as its summaries and its
/// cluster map say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFreeSpace {
    /// The group.
    pub group: u32,
    /// Whole free blocks.
    pub free_blocks: u32,
    /// Free fragments in blocks that are not wholly free.
    pub free_frags: u32,
    /// The cluster summary: `cluster_sum[n - 1]` maximal runs of exactly
    /// `n` free blocks, for `n` from 1 to maxcontig, the last counting
    /// every run of maxcontig or more (4.4BSD's `cg_clustersum`).
    pub cluster_sum: Vec<u32>,
    /// The longest run of free blocks, uncapped.
    pub longest_run: u32,
    /// Free blocks in runs of maxcontig or more.
    pub blocks_in_full_clusters: u32,
}

impl Ffs {
    /// The free space of every group, in group order, as the allocator
    /// sees it now (frees that soft updates or a journal still defer are
    /// not free yet). Reads nothing from the disk.
    pub fn free_space_by_group(&self) -> Vec<GroupFreeSpace> {
        self.alloc
            .groups()
            .iter()
            .map(|g| {
                let runs = g.free_runs();
                let counts = g.counts();
                GroupFreeSpace {
                    group: g.index,
                    free_blocks: counts.free_blocks,
                    free_frags: counts.free_frags,
                    cluster_sum: g.cluster_sum().iter().skip(1).copied().collect(),
                    longest_run: runs.longest,
                    blocks_in_full_clusters: runs.blocks_in_full_clusters,
                }
            })
            .collect()
    }

    /// Every file's placement, in inode-number order: regular files,
    /// directories and symbolic links alike. Read-only; fails only when an
    /// inode or an indirect block cannot be read.
    pub fn file_placements(&mut self) -> Result<Vec<FilePlacement>> {
        let fpb = self.frags_per_block();
        let mut files = Vec::new();
        for ino in ROOT_INO..self.sb.geometry.ninodes() {
            if !self.is_allocated(ino) || self.slot_is_blank(ino)? {
                continue;
            }
            let inode = *self.cached_inode(ino)?;
            let tree = self.tree;
            let mut walk = Pointers::new(self, ino);
            bmap::walk(&tree, &inode, &mut walk);
            let found = walk.finish()?;
            let blocks = found
                .iter()
                .filter(|&&(lbn, _)| lbn != crate::format::blockno::XATTR_LBN)
                .map(|&(lbn, addr)| {
                    let frags = if lbn < 0 { fpb } else { self.frags_at(&inode, lbn, &found) };
                    PlacedBlock { lbn, addr: addr.get(), frags: frags as u32 }
                })
                .collect();
            files.push(FilePlacement { ino, kind: inode.attr.kind(), size: inode.attr.size, blocks });
        }
        Ok(files)
    }
}
