//! Segments as a policy sees them: [`Lfs::segment_table`] (the segment
//! usage table, with the space a cleaner may use and the thresholds),
//! [`Lfs::read_segment`] and [`parse_segment`] (a segment's raw bytes and
//! the blocks and inodes its summaries name), and [`Lfs::segment_refs`]
//! (the same names, reading only the summary blocks). Relies on the ifile's
//! tables for usage and the inode map, and on the device for the bytes.

use super::{BlockKind, BlockRef, SegmentState, SegmentTable};
use crate::error::errno;
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{Daddr, Ino, IFILE_INO};
use crate::lfs::layout::{Summary, SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};
use crate::lfs::Lfs;
use crate::Result;
use std::cell::Cell;
use std::collections::HashMap;

/// The blocks and inodes named by the summaries in `bytes`, the contents of
/// segment `seg` as [`Lfs::read_segment`] returned them. Walks the partial
/// segments front to back and stops at the first block that is not a valid
/// summary of this file system; what lies after it is not log. Blocks named
/// here may be dead: ask [`Lfs::bmapv`].
pub fn parse_segment(table: &SegmentTable, seg: u64, bytes: &[u8]) -> Vec<BlockRef> {
    let bs = table.block_size as usize;
    let Some(state) = table.segments.get(seg as usize) else { return Vec::new() };
    let layout = SegmentLayout {
        seg,
        blocks_per_segment: table.blocks_per_segment,
        first_log_block: state.first_log_block,
        fs_id: table.fs_id,
    };
    let block = |offset: u64| bytes.get(offset as usize * bs..(offset as usize + 1) * bs);
    layout.walk(
        |offset| block(offset).map(<[u8]>::to_vec),
        |offset| {
            let inodes = block(offset).unwrap_or_default().chunks_exact(INODE_SIZE);
            inodes.filter_map(|slot| Inode::decode(slot).ok()).map(|i| (i.ino, i.generation)).collect()
        },
    )
}

/// Where a segment's log lies, for walking its summaries.
struct SegmentLayout {
    seg: u64,
    blocks_per_segment: u64,
    first_log_block: u64,
    fs_id: u64,
}

impl SegmentLayout {
    /// The blocks and inodes the segment's summaries name: `summary` gives
    /// block `offset` of the segment (`None` if it cannot be had), and
    /// `inodes` the inodes (number and version) in the inode block at
    /// `offset`.
    fn walk(
        &self,
        mut summary_block: impl FnMut(u64) -> Option<Vec<u8>>,
        mut inodes: impl FnMut(u64) -> Vec<(Ino, u32)>,
    ) -> Vec<BlockRef> {
        let (seg, bps) = (self.seg, self.blocks_per_segment);
        let mut refs = Vec::new();
        let mut offset = self.first_log_block;
        while offset + 1 < bps {
            let start = Daddr::new(seg * bps + offset);
            let Some(bytes) = summary_block(offset) else { break };
            let Ok(summary) = Summary::decode(&bytes, start) else { break };
            let n = summary.nblocks as u64;
            if summary.fs_id != self.fs_id || n == 0 || offset + 1 + n > bps || summary.ninoblocks as u64 > n
            {
                break;
            }
            let first_inode_block = start + (1 + n - summary.ninoblocks as u64);
            let mut daddr = start + 1;
            // A summary naming more blocks than precede its inode blocks is
            // not one this file system wrote: its extra names are ignored.
            for f in &summary.finfos {
                for &lbn in f.lbns.iter().take(first_inode_block.units_after(daddr) as usize) {
                    refs.push(BlockRef {
                        ino: f.ino,
                        version: f.version,
                        kind: BlockKind::Block(lbn),
                        daddr,
                        age: summary.clock,
                    });
                    daddr += 1;
                }
            }
            for at in first_inode_block.get()..(start + 1 + n).get() {
                let daddr = Daddr::new(at);
                for (ino, version) in inodes(at - seg * bps) {
                    refs.push(BlockRef { ino, version, kind: BlockKind::Inode, daddr, age: summary.clock });
                }
            }
            offset += 1 + n;
        }
        refs
    }
}

impl Lfs {
    /// Whether segment `seg` is one a cleaner may clean.
    pub(super) fn cleanable(&self, seg: u64) -> bool {
        let flags = self.ifile.tables.usage().get(seg).map_or(0, |s| s.flags);
        flags & SEGUSE_DIRTY != 0 && flags & SEGUSE_ACTIVE == 0 && !self.in_log_head(seg)
    }

    /// The segment usage table as a policy sees it.
    pub fn segment_table(&mut self) -> SegmentTable {
        let segments: Vec<SegmentState> = (0..self.sb.nsegments)
            .map(|seg| {
                let s = self.ifile.tables.usage().get(seg).unwrap_or_default();
                let cleanable = self.cleanable(seg);
                SegmentState {
                    live_bytes: s.live_bytes as u64,
                    lastmod: s.lastmod,
                    usable_blocks: self.usable_blocks(seg),
                    first_log_block: u64::from(s.flags & SEGUSE_SUPERBLOCK != 0),
                    clean: (s.flags & SEGUSE_CLEAN != 0 || (cleanable && s.live_bytes == 0))
                        && !self.in_log_head(seg),
                    cleanable,
                }
            })
            .collect();
        let (low_water, high_water) = self.cleaning_thresholds();
        SegmentTable {
            block_size: self.block_size as u32,
            blocks_per_segment: self.sb.blocks_per_segment(),
            fs_id: self.sb.fs_id,
            segments,
            clean_segments: self.clean_segments_after_writes(),
            reserve_segments: self.cleaner_reserve_segments(),
            low_water,
            high_water,
            budget_blocks: self.cleaner_budget(true).max(self.cold_budget(true)),
            cold_budget_blocks: self.cold_budget(true),
            now: self.clean.write_clock(),
            ages_predict_survival: self.ages_predict_survival(),
        }
    }

    /// Reads segment `seg` whole, as it is on the device, for a cleaner.
    pub fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        if seg >= self.sb.nsegments {
            return Err(errno(libc::EINVAL, "no such segment"));
        }
        let bytes = self.sb.segment_size as usize;
        let mut buf = vec![0u8; bytes];
        self.writer.io.wait_idle()?;
        self.dev.read_at(seg * bytes as u64, &mut buf)?;
        self.clean.counters.cleaner_bytes_read += bytes as u64;
        self.note_read_utilization(seg);
        Ok(buf)
    }

    /// The blocks the summaries of segment `seg` name, as [`parse_segment`]
    /// gives them, and of the inodes in its inode blocks the live ones (the
    /// inode map says which): only the summary blocks are read. A cleaner
    /// that moves the live blocks with [`MarkBlock::data`] empty then reads
    /// only those (F2FS's cleaner reads only valid blocks the same way),
    /// instead of the whole segment the 1993 paper's cleaner reads.
    pub fn segment_refs(&mut self, seg: u64) -> Result<Vec<BlockRef>> {
        if seg >= self.sb.nsegments {
            return Err(errno(libc::EINVAL, "no such segment"));
        }
        self.writer.io.wait_idle()?;
        let bps = self.sb.blocks_per_segment();
        let layout = SegmentLayout {
            seg,
            blocks_per_segment: bps,
            first_log_block: u64::from(
                self.ifile.tables.usage().get(seg).unwrap_or_default().flags & SEGUSE_SUPERBLOCK != 0,
            ),
            fs_id: self.sb.fs_id,
        };
        let (dev, bs) = (self.dev.clone(), self.block_size);
        let first = Daddr::new(seg * bps);
        let read = Cell::new(0u64);
        let read_block = |offset: u64| {
            let mut block = vec![0u8; bs];
            dev.read_at((first + offset).byte_offset(bs as u64), &mut block).ok()?;
            read.set(read.get() + bs as u64);
            Some(block)
        };
        let refs = if self.ifile.tables.imap.all_resident() {
            let live_inodes = self.live_inodes_in(first, bps)?;
            walk_with_live(&layout, read_block, live_inodes)
        } else {
            // The map is partly on disk: rather than read all of it, read
            // the segment's inode blocks and ask the map of the inodes in
            // them (as 4.4BSD's cleaner does). A slot that is neither
            // empty nor an inode may hide a live one: then the whole map.
            let damaged = Cell::new(false);
            let candidates = layout.walk(&read_block, |offset| {
                let Some(block) = read_block(offset) else {
                    damaged.set(true);
                    return Vec::new();
                };
                let mut found = Vec::new();
                for slot in block.chunks_exact(INODE_SIZE) {
                    match Inode::decode(slot) {
                        Ok(inode) => found.push((inode.ino, inode.generation)),
                        Err(_) if slot.iter().any(|&b| b != 0) => damaged.set(true),
                        Err(_) => {}
                    }
                }
                found
            });
            if damaged.get() {
                let live_inodes = self.live_inodes_in(first, bps)?;
                walk_with_live(&layout, read_block, live_inodes)
            } else {
                self.keep_current_inodes(candidates)?
            }
        };
        self.clean.counters.cleaner_bytes_read += read.get();
        self.note_read_utilization(seg);
        Ok(refs)
    }

    /// The current inodes whose blocks lie in the `bps` blocks from
    /// `first`, by the block's offset there: the whole map looked through.
    fn live_inodes_in(&mut self, first: Daddr, bps: u64) -> Result<HashMap<u64, Vec<(Ino, u32)>>> {
        let mut live_inodes: HashMap<u64, Vec<(Ino, u32)>> = HashMap::new();
        self.imap_scan(|ino, e| {
            if (first..first + bps).contains(&e.daddr) {
                live_inodes.entry(e.daddr.units_after(first)).or_default().push((ino, e.version));
            }
        })?;
        if (first..first + bps).contains(&self.ifile.daddr) {
            live_inodes
                .entry(self.ifile.daddr.units_after(first))
                .or_default()
                .push((IFILE_INO, self.ifile.inode.generation));
        }
        Ok(live_inodes)
    }

    /// Of `refs`, the blocks and the inodes whose current copy the map
    /// (or, for the ifile, its checkpointed address) says is where the
    /// ref found it, with the map's version.
    fn keep_current_inodes(&mut self, refs: Vec<BlockRef>) -> Result<Vec<BlockRef>> {
        let mut kept = Vec::with_capacity(refs.len());
        let mut seen = std::collections::HashSet::new();
        for r in refs {
            if !matches!(r.kind, BlockKind::Inode) {
                kept.push(r);
                continue;
            }
            let version = if r.ino == IFILE_INO {
                (r.daddr == self.ifile.daddr).then_some(self.ifile.inode.generation)
            } else {
                self.imap_entry(r.ino)?.filter(|e| e.daddr == r.daddr).map(|e| e.version)
            };
            if let Some(version) = version.filter(|_| seen.insert((r.ino, r.daddr))) {
                kept.push(BlockRef { version, ..r });
            }
        }
        Ok(kept)
    }

    /// Notes the utilization of segment `seg` as a cleaner reads it.
    fn note_read_utilization(&mut self, seg: u64) {
        let s = self.ifile.tables.usage().get(seg).unwrap_or_default();
        let capacity = (self.usable_blocks(seg) * self.block_size as u64).max(1);
        self.clean.read_utilization.insert(seg, (s.live_bytes as f64 / capacity as f64).min(1.0));
    }
}

/// The refs of `layout`'s segment, with the inodes of each inode block
/// taken from `live_inodes` (by the block's offset in the segment).
fn walk_with_live(
    layout: &SegmentLayout,
    read_block: impl Fn(u64) -> Option<Vec<u8>>,
    mut live_inodes: HashMap<u64, Vec<(Ino, u32)>>,
) -> Vec<BlockRef> {
    layout.walk(read_block, |offset| live_inodes.remove(&offset).unwrap_or_default())
}
