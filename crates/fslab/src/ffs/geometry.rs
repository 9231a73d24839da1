//! The arithmetic of an FFS image: where each cylinder group starts, what
//! lies at the front of a group, where an inode lives, and how the
//! cylinder-group area is laid out (`docs/FORMAT.md`, "FFS").
//!
//! A group of `fpg` fragments starts at fragment `g · fpg` and holds, at its
//! front, a superblock copy (one block), the cylinder-group area (header and
//! bitmaps, whole blocks), and its inode table (whole blocks); data follows.
//! The last group may be shorter. Nothing here does I/O.

use super::Frag;
use crate::format::inode::INODE_SIZE;
use crate::format::Ino;

/// Bytes of the cylinder-group header that precedes the bitmaps.
pub const CG_HEADER_BYTES: usize = 128;
/// The largest `maxcontig` (blocks): the cluster summary keeps one counter
/// per run length up to it.
pub const MAX_MAXCONTIG: u32 = 256;
/// The fewest whole data blocks a cylinder group may hold after its
/// metadata (mkfs drops a shorter last group).
pub const MIN_GROUP_DATA_BLOCKS: u32 = 16;

/// The fixed shape of an FFS image, from its superblock.
///
/// Invariant (checked by [`Geometry::new`]): the block size is a power of two
/// from 4 KiB to 64 KiB with 1, 2, 4 or 8 fragments per block; every group
/// holds its metadata and at least [`MIN_GROUP_DATA_BLOCKS`] data blocks;
/// fragment addresses fit the shared format's 32-bit block pointers and inode
/// numbers its 32-bit directory entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per block.
    pub block_size: u32,
    /// Bytes per fragment, the unit of allocation and of disk addresses.
    pub frag_size: u32,
    /// Fragments per block (4.4BSD's `fs_frag`).
    pub frags_per_block: u32,
    /// Cylinder groups.
    pub ncg: u32,
    /// Fragments per full cylinder group.
    pub fpg: u32,
    /// Inodes per cylinder group (a multiple of inodes per block).
    pub ipg: u32,
    /// Fragments in the file system (`fs_size`); the last group holds
    /// `total_frags − (ncg − 1)·fpg` of them.
    pub total_frags: u64,
    /// Blocks allocated contiguously before a rotdelay gap, and the longest
    /// run the cluster summary counts separately.
    pub maxcontig: u32,
}

/// Byte ranges of the sections of a cylinder-group area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgSections {
    /// Inode bitmap (bit set: inode in use).
    pub inode_map: usize,
    /// Fragment bitmap (bit set: fragment free).
    pub frag_map: usize,
    /// Cluster summary: `maxcontig` u32 counts of free runs by length.
    pub cluster_sum: usize,
    /// Cluster bitmap (bit set: whole block free).
    pub cluster_map: usize,
    /// Bytes used by the area; the rest of its last block is zero.
    pub end: usize,
}

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

impl Geometry {
    /// Checks a geometry and returns it, or says what is wrong with it.
    pub fn new(
        block_size: u32,
        frag_size: u32,
        ncg: u32,
        fpg: u32,
        ipg: u32,
        total_frags: u64,
        maxcontig: u32,
    ) -> std::result::Result<Geometry, String> {
        if !block_size.is_power_of_two() || !(4096..=65536).contains(&block_size) {
            return Err(format!("block size {block_size} is not a power of two from 4096 to 65536"));
        }
        if frag_size == 0
            || !block_size.is_multiple_of(frag_size)
            || ![1, 2, 4, 8].contains(&(block_size / frag_size))
        {
            return Err(format!(
                "fragment size {frag_size} is not 1/8, 1/4, 1/2 or all of the block size {block_size}"
            ));
        }
        let frag = block_size / frag_size;
        let geo =
            Geometry { block_size, frag_size, frags_per_block: frag, ncg, fpg, ipg, total_frags, maxcontig };
        let inopb = geo.inodes_per_block();
        if ipg == 0 || !ipg.is_multiple_of(inopb) {
            return Err(format!(
                "{ipg} inodes per group is not a positive multiple of {inopb} (inodes per block)"
            ));
        }
        if !(1..=MAX_MAXCONTIG).contains(&maxcontig) {
            return Err(format!("maxcontig {maxcontig} is not from 1 to {MAX_MAXCONTIG}"));
        }
        if !fpg.is_multiple_of(frag) {
            return Err(format!("{fpg} fragments per group is not a whole number of blocks"));
        }
        let min_group = geo.data_offset() as u64 + MIN_GROUP_DATA_BLOCKS as u64 * frag as u64;
        if (fpg as u64) < min_group {
            return Err(format!(
                "a group of {fpg} fragments cannot hold its metadata and {MIN_GROUP_DATA_BLOCKS} data blocks"
            ));
        }
        if ncg == 0 {
            return Err("no cylinder groups".into());
        }
        let full = (ncg as u64 - 1) * fpg as u64;
        let last = total_frags.saturating_sub(full);
        if last < min_group || last > fpg as u64 || !last.is_multiple_of(frag as u64) {
            return Err(format!("{total_frags} fragments do not make {ncg} groups of at most {fpg}"));
        }
        if total_frags > u32::MAX as u64 {
            return Err(format!("{total_frags} fragments do not fit 32-bit block pointers"));
        }
        if ncg as u64 * ipg as u64 > u32::MAX as u64 {
            return Err(format!("{ncg} groups of {ipg} inodes do not fit 32-bit inode numbers"));
        }
        Ok(geo)
    }

    /// Inodes in one block of the inode table.
    pub fn inodes_per_block(&self) -> u32 {
        self.block_size / INODE_SIZE as u32
    }

    /// Whole blocks in a full group.
    pub fn blocks_per_group(&self) -> u32 {
        self.fpg / self.frags_per_block
    }

    /// Byte ranges of the cylinder-group area's sections.
    pub fn cg_sections(&self) -> CgSections {
        let inode_map = CG_HEADER_BYTES;
        let frag_map = align8(inode_map + (self.ipg as usize).div_ceil(8));
        let cluster_sum = align8(frag_map + (self.fpg as usize).div_ceil(8));
        let cluster_map = align8(cluster_sum + 4 * self.maxcontig as usize);
        let end = align8(cluster_map + (self.blocks_per_group() as usize).div_ceil(8));
        CgSections { inode_map, frag_map, cluster_sum, cluster_map, end }
    }

    /// Whole blocks the cylinder-group area occupies.
    pub fn cg_blocks(&self) -> u32 {
        self.cg_sections().end.div_ceil(self.block_size as usize) as u32
    }

    /// Fragment offset, within a group, of the cylinder-group area (after
    /// the superblock copy's block).
    pub fn cg_offset(&self) -> u32 {
        self.frags_per_block
    }

    /// Blocks of a group's inode table.
    pub fn inode_table_blocks(&self) -> u32 {
        self.ipg / self.inodes_per_block()
    }

    /// Fragment offset, within a group, of the inode table.
    pub fn inode_table_offset(&self) -> u32 {
        self.cg_offset() + self.cg_blocks() * self.frags_per_block
    }

    /// Fragment offset, within a group, of the first data block: everything
    /// before it is metadata and never free.
    pub fn data_offset(&self) -> u32 {
        self.inode_table_offset() + self.inode_table_blocks() * self.frags_per_block
    }

    /// The first fragment of group `cg` (4.4BSD's `cgbase`).
    pub fn group_base(&self, cg: u32) -> Frag {
        cg as Frag * self.fpg as Frag
    }

    /// Fragments in group `cg`: `fpg`, except possibly for the last.
    pub fn group_frags(&self, cg: u32) -> u32 {
        let rest = self.total_frags.saturating_sub(self.group_base(cg));
        rest.min(self.fpg as u64) as u32
    }

    /// The address of group `cg`'s cylinder-group area.
    pub fn cg_addr(&self, cg: u32) -> Frag {
        self.group_base(cg) + self.cg_offset() as Frag
    }

    /// The group holding fragment `frag` (4.4BSD's `dtog`).
    pub fn group_of(&self, frag: Frag) -> u32 {
        (frag / self.fpg as Frag) as u32
    }

    /// `frag`'s offset within its group (4.4BSD's `dtogd`).
    pub fn within_group(&self, frag: Frag) -> u32 {
        (frag % self.fpg as Frag) as u32
    }

    /// The first data fragment of group `cg`: where a new file's first
    /// block is sought.
    pub fn group_data_start(&self, cg: u32) -> Frag {
        self.group_base(cg) + self.data_offset() as Frag
    }

    /// The inode numbers the file system has (`ncg · ipg`).
    pub fn ninodes(&self) -> u64 {
        self.ncg as u64 * self.ipg as u64
    }

    /// The group holding inode `ino` (4.4BSD's `ino_to_cg`).
    pub fn ino_group(&self, ino: Ino) -> u32 {
        (ino / self.ipg as Ino) as u32
    }

    /// Inode `ino`'s slot within its group's inode table.
    pub fn ino_slot(&self, ino: Ino) -> u32 {
        (ino % self.ipg as Ino) as u32
    }

    /// The address of the block of the inode table that holds inode `ino`
    /// (4.4BSD's `ino_to_fsba`): inodes live at fixed places.
    pub fn inode_block_addr(&self, ino: Ino) -> Frag {
        let cg = self.ino_group(ino);
        let block = self.ino_slot(ino) / self.inodes_per_block();
        self.group_base(cg) + (self.inode_table_offset() + block * self.frags_per_block) as Frag
    }

    /// Byte offset of inode `ino` within its inode-table block.
    pub fn inode_offset_in_block(&self, ino: Ino) -> usize {
        (self.ino_slot(ino) % self.inodes_per_block()) as usize * INODE_SIZE
    }

    /// Byte offset on the device of fragment `frag`.
    pub fn byte_offset(&self, frag: Frag) -> u64 {
        frag * self.frag_size as u64
    }

    /// Fragments of `bytes`, rounded up (4.4BSD's `numfrags` of a size
    /// rounded to fragments).
    pub fn frags_for(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.frag_size as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        // 8 KiB blocks, 1 KiB fragments, 4 groups of 4 MiB, 512 inodes each.
        Geometry::new(8192, 1024, 4, 4096, 512, 4 * 4096, 8).expect("valid")
    }

    #[test]
    fn group_front_is_superblock_then_cg_area_then_inode_table() {
        let g = geometry();
        assert_eq!(g.cg_offset(), 8);
        // 128 header + 64 inode map + 512 frag map + 32 summary + 64 cluster map.
        assert_eq!(g.cg_sections().end, 800);
        assert_eq!(g.cg_blocks(), 1);
        assert_eq!(g.inode_table_offset(), 16);
        assert_eq!(g.inode_table_blocks(), 16);
        assert_eq!(g.data_offset(), 16 + 16 * 8);
    }

    #[test]
    fn inode_numbers_map_to_fixed_addresses() {
        let g = geometry();
        assert_eq!(g.inode_block_addr(0), 16);
        assert_eq!(g.inode_block_addr(31), 16);
        assert_eq!(g.inode_block_addr(32), 24);
        assert_eq!(g.inode_offset_in_block(33), 256);
        assert_eq!(g.ino_group(512 + 40), 1);
        assert_eq!(g.inode_block_addr(512 + 40), 4096 + 16 + 8);
    }

    #[test]
    fn last_group_may_be_shorter_but_must_hold_its_metadata() {
        let g = Geometry::new(8192, 1024, 2, 4096, 512, 4096 + 1024, 8).expect("valid");
        assert_eq!(g.group_frags(0), 4096);
        assert_eq!(g.group_frags(1), 1024);
        assert!(Geometry::new(8192, 1024, 2, 4096, 512, 4096 + 160, 8).is_err());
    }

    #[test]
    fn bad_shapes_are_refused_with_a_reason() {
        let cases = [
            Geometry::new(6000, 1024, 1, 4096, 512, 4096, 8),
            Geometry::new(8192, 512, 1, 4096, 512, 4096, 8),
            Geometry::new(8192, 1024, 1, 4096, 500, 4096, 8),
            Geometry::new(8192, 1024, 1, 4096, 512, 4096, 0),
            Geometry::new(8192, 1024, 1, 4100, 512, 4100, 8),
            Geometry::new(8192, 1024, 3, 4096, 512, 4096, 8),
            Geometry::new(65536, 8192, 65537, 65536, 256, 65537 * 65536, 8),
        ];
        for case in cases {
            let why = case.expect_err("refused");
            assert!(!why.is_empty());
        }
    }
}
