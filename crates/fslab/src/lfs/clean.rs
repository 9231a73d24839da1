//! The cleaner's mechanism (1993 paper §3.5 and Table 3): everything a
//! cleaning policy may see and do, and nothing more.
//!
//! * [`Lfs::segment_table`] — the segment usage table, with the space a
//!   cleaner may use and the thresholds at which cleaning starts and stops.
//! * [`Lfs::read_segment`] and [`parse_segment`] — a segment's raw bytes and
//!   the blocks and inodes its summaries name.
//! * [`Lfs::bmapv`] — where each named block lives now: a block is live when
//!   that is still the address the summary gave it.
//! * [`Lfs::markv`] — rewrites live blocks at the head of the log without
//!   touching any inode's times; blocks that died since `bmapv` are skipped.
//! * [`Lfs::segclean`] — declares a segment empty. It becomes clean, and may
//!   be written again, at the next checkpoint: until then the last checkpoint
//!   may still need what is in it (roll-forward starts there).
//! * [`SegmentClock`] — `segwait`: sleeps until a partial segment is written
//!   or a timeout passes, without holding the file system.
//!
//! Which segments to clean, and in what order to rewrite their blocks, is
//! policy: the `cleaner` crate. Safety does not depend on the policy: markv
//! re-checks liveness under the lock, segclean refuses a segment that still
//! holds a live block, and markv refuses a rewrite it has no room for.
//!
//! A policy plugs into the file system itself through [`SpaceMaker`]: when a
//! writer finds no clean space but the cleaner could make some, the writer
//! runs the cleaner on its own thread (that is how it "waits for the
//! cleaner" while the file system is locked; see `docs/DESIGN.md`).

use super::layout::{Summary, SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};
use super::writer::Batch;
use super::Lfs;
use crate::error::errno;
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{now_ns, Daddr, Ino, Lbn, TimeNs, IFILE_INO};
use crate::Result;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One segment as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentState {
    /// Bytes of live blocks and inodes in the segment.
    pub live_bytes: u64,
    /// The youngest data in the segment: when it was written, or, for data
    /// the cleaner moved here, when that data was first written.
    pub lastmod: TimeNs,
    /// Blocks of the segment that hold log (all but a superblock copy).
    pub usable_blocks: u64,
    /// The first block of the segment that holds log.
    pub first_log_block: u64,
    /// Clean, or empty and clean at the next checkpoint.
    pub clean: bool,
    /// Written, not clean, and not where the log is being written: a
    /// segment a cleaner may clean.
    pub cleanable: bool,
}

impl SegmentState {
    /// Live bytes over the bytes the segment can hold: `u` in the paper.
    pub fn utilization(&self, block_size: u32) -> f64 {
        let capacity = self.usable_blocks * block_size as u64;
        if capacity == 0 {
            return 1.0;
        }
        (self.live_bytes as f64 / capacity as f64).min(1.0)
    }
}

/// The segment usage table as a policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentTable {
    /// Bytes per block.
    pub block_size: u32,
    /// Blocks per segment.
    pub blocks_per_segment: u64,
    /// The file system's identity, which every summary carries.
    pub fs_id: u64,
    /// One entry per segment.
    pub segments: Vec<SegmentState>,
    /// Segments clean or clean at the next checkpoint, outside the log head.
    pub clean_segments: u64,
    /// Clean segments that normal writers leave to the cleaner.
    pub reserve_segments: u64,
    /// Below this many clean segments, cleaning starts.
    pub low_water: u64,
    /// Cleaning in the background stops at this many clean segments.
    pub high_water: u64,
    /// Blocks a rewrite by [`Lfs::markv`] may consume now (after the next
    /// checkpoint reclaims the segments already cleaned).
    pub budget_blocks: u64,
    /// Blocks left in the segment the log is being written in: where the
    /// first blocks a rewrite writes will go, beside what users wrote last.
    pub log_room_blocks: u64,
    /// The time the table was taken, on the clock `lastmod` uses.
    pub now: TimeNs,
}

/// What a summary says a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Block `lbn` of the file: data, indirect (negative) or extended attributes.
    Block(Lbn),
    /// The inode itself, in an inode block.
    Inode,
}

/// A block or inode that a segment's summary names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockRef {
    /// The file it belongs to.
    pub ino: Ino,
    /// The file's version (inode generation) when it was written.
    pub version: u32,
    /// Which block of the file, or the inode.
    pub kind: BlockKind,
    /// Where the summary says it is.
    pub daddr: Daddr,
    /// How old its data is (the `time` of the summary that named it).
    pub age: TimeNs,
}

/// A live block handed to [`Lfs::markv`], with its contents when the
/// caller has them (the file system reads them itself otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkBlock {
    /// The block.
    pub block: BlockRef,
    /// Its contents, as read from `block.daddr`; `None` for an inode, or
    /// when the caller did not keep them.
    pub data: Option<Vec<u8>>,
}

/// What [`Lfs::markv`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Markv {
    /// Blocks and inodes rewritten.
    pub moved: u64,
    /// Blocks and inodes skipped because they died since `bmapv`.
    pub skipped: u64,
    /// Blocks the rewrite wrote to the log, summaries and metadata included.
    pub blocks_written: u64,
}

/// Every byte of the log, by who caused it (the write cost's terms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerCounters {
    /// Segments declared empty by [`Lfs::segclean`].
    pub segments_cleaned: u64,
    /// Bytes of log written for normal writes (data, metadata, summaries).
    pub user_bytes_written: u64,
    /// Bytes of log written by [`Lfs::markv`].
    pub cleaner_bytes_written: u64,
    /// Bytes read by the cleaner: segments and live blocks.
    pub cleaner_bytes_read: u64,
}

impl CleanerCounters {
    /// (user writes + cleaner writes + cleaner reads) / user writes: the
    /// write cost of the 1992 and 1993 papers; 1.0 when nothing was cleaned.
    pub fn write_cost(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 1.0;
        }
        (self.user_bytes_written + self.cleaner_bytes_written + self.cleaner_bytes_read) as f64
            / self.user_bytes_written as f64
    }

    /// The counts from `earlier` to these.
    pub fn since(&self, earlier: &CleanerCounters) -> CleanerCounters {
        CleanerCounters {
            segments_cleaned: self.segments_cleaned - earlier.segments_cleaned,
            user_bytes_written: self.user_bytes_written - earlier.user_bytes_written,
            cleaner_bytes_written: self.cleaner_bytes_written - earlier.cleaner_bytes_written,
            cleaner_bytes_read: self.cleaner_bytes_read - earlier.cleaner_bytes_read,
        }
    }
}

/// The cleaner's counters since mount.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerReport {
    /// Since mount.
    pub total: CleanerCounters,
    /// Over the last [`RECENT_SEGMENTS`] segments the log entered.
    pub recent: CleanerCounters,
    /// The utilization each recently cleaned segment had when the cleaner
    /// read it, oldest first (at most [`RECENT_CLEANED`]).
    pub cleaned_utilization: Vec<(u64, f64)>,
}

/// Segments of log over which the "recent" write cost is measured.
pub const RECENT_SEGMENTS: usize = 64;
/// Cleaned segments whose utilization is remembered.
pub const RECENT_CLEANED: usize = 64;

/// How badly a writer needs space when it calls the cleaner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Clean segments fell below the low-water mark: clean towards the
    /// high-water mark if it pays.
    Background,
    /// A writer needs this many more writable blocks, now.
    Need(u64),
}

/// A cleaner the file system can run itself when it is short of clean
/// segments. Implemented by the `cleaner` crate; `lfs` only calls it.
pub trait SpaceMaker: Send {
    /// Cleans what it judges worth cleaning, through the mechanism above.
    /// Returns whether any segment was cleaned.
    fn make_space(&mut self, lfs: &mut Lfs, urgency: Urgency) -> Result<bool>;
}

/// `segwait`: a counter of partial segments written, and a way to sleep
/// until it moves, shared outside the file system's lock.
#[derive(Debug, Default)]
pub struct SegmentClock {
    written: Mutex<u64>,
    moved: Condvar,
}

impl SegmentClock {
    /// Partial segments written since mount.
    pub fn now(&self) -> u64 {
        *self.written.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps until more than `seen` partial segments have been written, or
    /// `timeout` passes. Returns the count.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) =
            self.moved.wait_timeout_while(guard, timeout, |n| *n <= seen).unwrap_or_else(|e| e.into_inner());
        *guard
    }

    fn advance(&self, partials: u64) {
        *self.written.lock().unwrap_or_else(|e| e.into_inner()) += partials;
        self.moved.notify_all();
    }
}

/// The mechanism's state inside a mounted [`Lfs`].
#[derive(Default)]
pub(super) struct CleanState {
    /// The cleaner writers run when short of space.
    hook: Option<Box<dyn SpaceMaker>>,
    clock: Arc<SegmentClock>,
    counters: CleanerCounters,
    /// Counters when the log entered each of the last segments.
    history: VecDeque<CleanerCounters>,
    /// Utilization of segments read by the cleaner, by segment.
    read_utilization: HashMap<u64, f64>,
    cleaned: VecDeque<(u64, f64)>,
    /// Set while markv's own partial segments are being built.
    pub(super) writing: bool,
    /// Bytes users had written when a background cleaning last found
    /// nothing worth doing: not tried again until users write more.
    idle_at: Option<u64>,
}

impl CleanState {
    /// Counts the blocks of partial segments handed to the device.
    pub(super) fn count_written(&mut self, blocks: u64, block_size: usize, partials: u64) {
        let bytes = blocks * block_size as u64;
        if self.writing {
            self.counters.cleaner_bytes_written += bytes;
        } else {
            self.counters.user_bytes_written += bytes;
        }
        self.clock.advance(partials);
    }

    /// Notes that the log moved into a new segment.
    pub(super) fn entered_segment(&mut self) {
        self.history.push_back(self.counters);
        if self.history.len() > RECENT_SEGMENTS {
            self.history.pop_front();
        }
    }
}

/// The blocks and inodes named by the summaries in `bytes`, the contents of
/// segment `seg` as [`Lfs::read_segment`] returned them. Walks the partial
/// segments front to back and stops at the first block that is not a valid
/// summary of this file system; what lies after it is not log. Blocks named
/// here may be dead: ask [`Lfs::bmapv`].
pub fn parse_segment(table: &SegmentTable, seg: u64, bytes: &[u8]) -> Vec<BlockRef> {
    let bs = table.block_size as usize;
    let bps = table.blocks_per_segment;
    let Some(state) = table.segments.get(seg as usize) else { return Vec::new() };
    let mut refs = Vec::new();
    let mut offset = state.first_log_block;
    while offset + 1 < bps {
        let start = seg * bps + offset;
        let Some(block) = bytes.get(offset as usize * bs..(offset as usize + 1) * bs) else { break };
        let Ok(summary) = Summary::decode(block, start) else { break };
        let n = summary.nblocks as u64;
        if summary.fs_id != table.fs_id || n == 0 || offset + 1 + n > bps || summary.ninoblocks as u64 > n {
            break;
        }
        let first_inode_block = start + 1 + n - summary.ninoblocks as u64;
        let mut daddr = start + 1;
        // A summary naming more blocks than precede its inode blocks is not
        // one this file system wrote: its extra names are ignored.
        for f in &summary.finfos {
            for &lbn in f.lbns.iter().take(first_inode_block.saturating_sub(daddr) as usize) {
                refs.push(BlockRef {
                    ino: f.ino,
                    version: f.version,
                    kind: BlockKind::Block(lbn),
                    daddr,
                    age: summary.time,
                });
                daddr += 1;
            }
        }
        for daddr in first_inode_block..start + 1 + n {
            let at = (daddr - seg * bps) as usize * bs;
            let Some(block) = bytes.get(at..at + bs) else { break };
            for slot in block.chunks_exact(INODE_SIZE) {
                if let Ok(inode) = Inode::decode(slot) {
                    refs.push(BlockRef {
                        ino: inode.ino,
                        version: inode.generation,
                        kind: BlockKind::Inode,
                        daddr,
                        age: summary.time,
                    });
                }
            }
        }
        offset += 1 + n;
    }
    refs
}

impl Lfs {
    /// Installs (or, with `None`, removes) the cleaner writers run when the
    /// file system is short of clean segments. Without one, a write fails
    /// with ENOSPC once clean segments run out.
    pub fn set_cleaner(&mut self, cleaner: Option<Box<dyn SpaceMaker>>) {
        self.clean.hook = cleaner;
        self.segment_space = None;
    }

    /// Whether a cleaner is installed.
    pub fn has_cleaner(&self) -> bool {
        self.clean.hook.is_some()
    }

    /// The clock `segwait` sleeps on; it can be waited on without the lock.
    pub fn segment_clock(&self) -> Arc<SegmentClock> {
        self.clean.clock.clone()
    }

    /// The cleaner's counters since mount.
    pub fn cleaner_report(&self) -> CleanerReport {
        let total = self.clean.counters;
        let recent = total.since(self.clean.history.front().unwrap_or(&CleanerCounters::default()));
        CleanerReport { total, recent, cleaned_utilization: self.clean.cleaned.iter().copied().collect() }
    }

    /// Whether segment `seg` is one a cleaner may clean.
    fn cleanable(&self, seg: u64) -> bool {
        let flags = self.tables.seguse.get(seg as usize).map_or(0, |s| s.flags);
        flags & SEGUSE_DIRTY != 0
            && flags & SEGUSE_ACTIVE == 0
            && seg != self.log.segment
            && seg != self.log.next_segment
    }

    /// The segment usage table as a policy sees it.
    pub fn segment_table(&mut self) -> SegmentTable {
        let space = self.segment_space();
        let segments: Vec<SegmentState> = (0..self.sb.nsegments)
            .map(|seg| {
                let s = self.tables.seguse[seg as usize];
                let cleanable = self.cleanable(seg);
                SegmentState {
                    live_bytes: s.live_bytes as u64,
                    lastmod: s.lastmod,
                    usable_blocks: self.usable_blocks(seg),
                    first_log_block: u64::from(s.flags & SEGUSE_SUPERBLOCK != 0),
                    clean: (s.flags & SEGUSE_CLEAN != 0 || (cleanable && s.live_bytes == 0))
                        && seg != self.log.segment
                        && seg != self.log.next_segment,
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
            clean_segments: space.clean_segments,
            reserve_segments: self.cleaner_reserve_segments(),
            low_water,
            high_water,
            budget_blocks: self.cleaner_budget(true),
            log_room_blocks: self.sb.blocks_per_segment().saturating_sub(self.log.offset),
            now: now_ns(),
        }
    }

    /// Reads segment `seg` whole, as it is on the device, for a cleaner.
    pub fn read_segment(&mut self, seg: u64) -> Result<Vec<u8>> {
        if seg >= self.sb.nsegments {
            return Err(errno(libc::EINVAL, "no such segment"));
        }
        let bytes = self.sb.segment_size as usize;
        let mut buf = vec![0u8; bytes];
        self.io.wait_idle()?;
        self.dev.read_at(seg * bytes as u64, &mut buf)?;
        self.clean.counters.cleaner_bytes_read += bytes as u64;
        let s = self.tables.seguse[seg as usize];
        let capacity = (self.usable_blocks(seg) * self.block_size as u64).max(1);
        self.clean.read_utilization.insert(seg, (s.live_bytes as f64 / capacity as f64).min(1.0));
        Ok(buf)
    }

    /// The current address of each block or inode (0: it no longer exists
    /// or belongs to another version of the file). A block whose current
    /// address is the one its summary gave it is live.
    pub fn bmapv(&mut self, blocks: &[BlockRef]) -> Result<Vec<Daddr>> {
        blocks.iter().map(|b| self.current_address(b)).collect()
    }

    fn current_address(&mut self, b: &BlockRef) -> Result<Daddr> {
        if b.ino == IFILE_INO {
            return match b.kind {
                BlockKind::Inode => Ok(self.ifile_daddr),
                BlockKind::Block(lbn) if self.geometry.parent(lbn).is_some() => self.pointer(IFILE_INO, lbn),
                BlockKind::Block(_) => Ok(0),
            };
        }
        let Some(entry) = self.tables.entry(b.ino).copied() else { return Ok(0) };
        if entry.daddr == 0 || entry.version != b.version {
            return Ok(0);
        }
        match b.kind {
            BlockKind::Inode => Ok(entry.daddr),
            BlockKind::Block(lbn) if self.geometry.parent(lbn).is_some() => self.pointer(b.ino, lbn),
            BlockKind::Block(_) => Ok(0),
        }
    }

    /// Blocks that rewriting `blocks` will consume: the blocks themselves,
    /// the indirect blocks above them and inode blocks for their files (the
    /// "hidden cost"), the ifile when its own blocks move, and summaries.
    pub fn markv_cost(&mut self, blocks: &[BlockRef]) -> Result<u64> {
        let mut data = 0u64;
        let mut metas: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut inos: HashSet<Ino> = HashSet::new();
        let mut files_per_summary = 0u64;
        let mut ifile_moved = 0u64;
        let moved: HashSet<(Ino, Lbn)> = blocks
            .iter()
            .filter_map(|b| match b.kind {
                BlockKind::Block(lbn) => Some((b.ino, lbn)),
                BlockKind::Inode => None,
            })
            .collect();
        for b in blocks {
            if b.ino == IFILE_INO {
                ifile_moved += 1;
                continue;
            }
            inos.insert(b.ino);
            if let BlockKind::Block(lbn) = b.kind {
                files_per_summary += 1;
                if self.cache.is_dirty((b.ino, lbn)) {
                    continue;
                }
                data += 1;
                // Indirect blocks above it get new addresses too, unless
                // they are moved anyway or already dirty.
                for meta in self.ancestors(lbn) {
                    if !self.cache.is_dirty((b.ino, meta)) && !moved.contains(&(b.ino, meta)) {
                        metas.insert((b.ino, meta));
                    }
                }
            }
        }
        // Blocks of these files already dirty are written with them, but
        // their space was promised when they became dirty: not counted.
        let per_inode_block = (self.block_size / INODE_SIZE) as u64;
        let inode_blocks = (inos.len() as u64).div_ceil(per_inode_block) + 1;
        // Moving files changes only the ifile in memory, which any write may
        // do: the next ifile write is what the checkpoint reserve is for.
        // Moving the ifile's own blocks writes it now: those blocks, the
        // segment usage table and the indirect blocks above them. (Blocks
        // already changed go with them, but the checkpoint reserve covers
        // those, as for any ifile write.)
        let ifile_blocks = if ifile_moved > 0 {
            (ifile_moved + u64::from(self.sb.segtab_blocks) + 3).min(self.tables.nblocks() + 4)
        } else {
            0
        };
        let body = data + metas.len() as u64 + inode_blocks + ifile_blocks;
        // A summary holds at most this many one-block files.
        let per_summary = ((self.block_size - super::layout::SUMMARY_HEADER)
            / (super::layout::FINFO_HEADER + 8))
            .max(1) as u64;
        // One partial segment per segment the blocks span, one more where
        // they cross into the next, and one more each time a summary fills.
        let partials = body.div_ceil((self.sb.blocks_per_segment() - 2).max(1)) + 1;
        let summaries = partials + files_per_summary.max(data) / per_summary;
        Ok(body + summaries)
    }

    /// Blocks the cleaner may consume: clean space less what the cache has
    /// been promised and the reserves below the cleaner's (a checkpoint's
    /// share, and the half segment kept for directory operations); with
    /// `after_reclaim`, as it will be once the next checkpoint reclaims
    /// empty segments.
    fn cleaner_budget(&mut self, after_reclaim: bool) -> u64 {
        let space = self.segment_space();
        let reclaim = after_reclaim && space.reclaimable > 0;
        // The checkpoint that reclaims writes the ifile's changed blocks.
        let checkpoint = if reclaim { self.checkpoint_blocks() } else { 0 };
        let have = space.writable + if reclaim { space.reclaimable } else { 0 };
        have.saturating_sub(self.promised_blocks() + self.reserve(super::space::SpaceFor::Data) + checkpoint)
    }

    /// Blocks the next checkpoint writes: the ifile's changed blocks, its
    /// segment usage table, indirect blocks and summaries.
    fn checkpoint_blocks(&self) -> u64 {
        let changed = self.tables.dirty_blocks().len() as u64 + u64::from(self.sb.segtab_blocks);
        (changed + 8).min(self.tables.nblocks() + 8)
    }

    /// Rewrites the live blocks among `blocks` at the head of the log, in
    /// the order given (a policy sorts them, e.g. by age), leaving every
    /// inode's times as they were. Blocks that died since `bmapv` are
    /// skipped. Fails with ENOSPC, writing nothing, when the rewrite (hidden
    /// cost included) does not fit in the space the cleaner may use, and
    /// with EBUSY inside a directory operation.
    pub fn markv(&mut self, blocks: &[MarkBlock]) -> Result<Markv> {
        self.check_mounted()?;
        if self.dirop_depth > 0 {
            return Err(errno(libc::EBUSY, "a directory operation is in progress"));
        }
        let mut report = Markv::default();
        let mut live: Vec<&MarkBlock> = Vec::with_capacity(blocks.len());
        for b in blocks {
            if self.current_address(&b.block)? == b.block.daddr && b.block.daddr != 0 {
                live.push(b);
            } else {
                report.skipped += 1;
            }
        }
        if live.is_empty() {
            return Ok(report);
        }
        let refs: Vec<BlockRef> = live.iter().map(|b| b.block).collect();
        let cost = self.markv_cost(&refs)?;
        if cost > self.cleaner_budget(false) {
            if cost <= self.cleaner_budget(true) {
                // Segments cleaned earlier become writable at a checkpoint.
                self.checkpoint(false)?;
            }
            if cost > self.cleaner_budget(false) {
                return Err(errno(libc::ENOSPC, "not enough clean space to move these blocks"));
            }
        }
        // A segment write must not split a directory operation (§4.3):
        // write out any that completed before moving their files.
        if !self.dirop_inodes.is_empty() {
            self.write_segments(false)?;
        }
        let mut order: Vec<Ino> = Vec::new();
        let mut seen: HashSet<Ino> = HashSet::new();
        let mut ifile = false;
        let mut ages: HashMap<Ino, TimeNs> = HashMap::new();
        for b in &live {
            let ino = b.block.ino;
            let age = ages.entry(ino).or_insert(b.block.age);
            *age = (*age).max(b.block.age);
            if ino == IFILE_INO {
                ifile = true;
                if let BlockKind::Block(lbn) = b.block.kind {
                    self.mark_ifile_block(lbn)?;
                }
                continue;
            }
            if seen.insert(ino) {
                order.push(ino);
            }
            match b.block.kind {
                BlockKind::Inode => self.mark_inode_dirty(ino)?,
                BlockKind::Block(lbn) => self.mark_block(ino, lbn, b)?,
            }
        }
        report.moved = live.len() as u64;
        let before = self.stats.blocks_written;
        self.clean.writing = true;
        let written = self.write_moved(&order, ifile, ages);
        self.clean.writing = false;
        written?;
        report.blocks_written = self.stats.blocks_written - before;
        Ok(report)
    }

    /// Makes block `lbn` of `ino` dirty with its current contents.
    fn mark_block(&mut self, ino: Ino, lbn: Lbn, b: &MarkBlock) -> Result<()> {
        let key = (ino, lbn);
        if self.cache.is_dirty(key) {
            return Ok(());
        }
        if self.cache.contains(key) {
            self.cache.mark_dirty(key);
            return Ok(());
        }
        let data: Vec<u8> = match &b.data {
            Some(d) if d.len() == self.block_size => d.clone(),
            _ => {
                let mut buf = vec![0u8; self.block_size];
                self.read_addr(b.block.daddr, &mut buf)?;
                self.clean.counters.cleaner_bytes_read += self.block_size as u64;
                buf
            }
        };
        self.cache.insert(key, data.into(), true);
        Ok(())
    }

    /// Makes ifile block `lbn` part of the next ifile write.
    fn mark_ifile_block(&mut self, lbn: Lbn) -> Result<()> {
        if lbn >= 0 {
            self.tables.mark_dirty(lbn as u64);
        } else if self.ensure_cached(IFILE_INO, lbn)? {
            self.cache.mark_dirty((IFILE_INO, lbn));
        }
        Ok(())
    }

    /// Writes the files in `order` (their blocks, then their inodes) and,
    /// with `ifile`, the ifile; partial segments carry the age of the
    /// youngest data in them, from `ages`.
    fn write_moved(&mut self, order: &[Ino], ifile: bool, ages: HashMap<Ino, TimeNs>) -> Result<()> {
        self.ensure_new_serial_epoch()?;
        let mut batch = Batch::aged(ages);
        self.write_files(&mut batch, order)?;
        if ifile {
            self.write_ifile(&mut batch)?;
        }
        self.close_partial(&mut batch);
        self.flush_partials(&mut batch, true)
    }

    /// Declares segment `seg` empty after its live blocks were moved: it is
    /// clean, and the log may enter it, from the next checkpoint on. Checks
    /// that nothing in it is live (fails with EBUSY otherwise), so a policy
    /// cannot lose data by calling it too early.
    pub fn segclean(&mut self, seg: u64) -> Result<()> {
        self.check_mounted()?;
        let Some(s) = self.tables.seguse.get(seg as usize).copied() else {
            return Err(errno(libc::EINVAL, "no such segment"));
        };
        if s.flags & SEGUSE_CLEAN != 0 {
            return Ok(());
        }
        if !self.cleanable(seg) {
            return Err(errno(libc::EBUSY, "the log is being written in this segment"));
        }
        if s.live_bytes != 0 {
            // Accounting says something is left; it may overestimate (after
            // roll-forward), so look at what the summaries name.
            let bytes = self.read_segment(seg)?;
            let table = self.segment_table();
            let refs = parse_segment(&table, seg, &bytes);
            let now = self.bmapv(&refs)?;
            if refs.iter().zip(&now).any(|(r, &at)| at == r.daddr) {
                return Err(errno(libc::EBUSY, "segment still holds live blocks"));
            }
            if let Some(s) = self.tables.seguse.get_mut(seg as usize) {
                s.live_bytes = 0;
            }
            self.tables.touch_segment(seg);
        }
        self.segment_space = None;
        self.clean.counters.segments_cleaned += 1;
        let u = self.clean.read_utilization.remove(&seg).unwrap_or(0.0);
        self.clean.cleaned.push_back((seg, u));
        if self.clean.cleaned.len() > RECENT_CLEANED {
            self.clean.cleaned.pop_front();
        }
        Ok(())
    }

    /// Runs the installed cleaner, if any. Returns whether it cleaned.
    pub(super) fn run_cleaner(&mut self, urgency: Urgency) -> Result<bool> {
        let Some(mut hook) = self.clean.hook.take() else { return Ok(false) };
        let result = hook.make_space(self, urgency);
        if self.clean.hook.is_none() {
            self.clean.hook = Some(hook);
        }
        result
    }

    /// Cleans in the background of a writer when clean segments fall below
    /// the low-water mark, unless the last try found nothing worth cleaning
    /// and the log has not moved since.
    pub(super) fn maybe_clean(&mut self) -> Result<()> {
        if self.dirop_depth > 0 {
            return Ok(());
        }
        self.reclaim_if_short()?;
        if self.clean.hook.is_none() {
            return Ok(());
        }
        let written = self.clean.counters.user_bytes_written;
        if self.clean.idle_at == Some(written) {
            return Ok(());
        }
        let (low, _) = self.cleaning_thresholds();
        if self.segment_space().clean_segments >= low {
            return Ok(());
        }
        if !self.run_cleaner(Urgency::Background)? {
            self.clean.idle_at = Some(written);
        }
        self.reclaim_if_short()
    }

    /// Writes a checkpoint when segments a cleaner emptied wait for one
    /// and the writable segments run low: inside a directory operation no
    /// checkpoint can be taken, so the space must be writable before one
    /// starts.
    pub(super) fn reclaim_if_short(&mut self) -> Result<()> {
        let space = self.segment_space();
        if space.reclaimable == 0 || self.dirop_depth > 0 {
            return Ok(());
        }
        let (low, _) = self.cleaning_thresholds();
        if space.writable < low * self.sb.blocks_per_segment() {
            self.checkpoint(false)?;
        }
        Ok(())
    }
}
