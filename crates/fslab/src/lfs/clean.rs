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
//! cleaner" while the file system is locked; see `docs/design/cleaner.md`,
//! "Where it runs").

use super::layout::{Summary, WriteClock, SEGUSE_ACTIVE, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK};
use super::writer::Batch;
use super::Lfs;
use crate::cache::block_of;
use crate::error::errno;
use crate::format::blockno::{check_indirect, is_indirect};
use crate::format::inode::{Inode, INODE_SIZE};
use crate::format::{Daddr, Ino, Lbn, TimeNs, IFILE_INO};
use crate::Result;
use disk::AlignedBytes;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// One segment as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentState {
    /// Bytes of live blocks and inodes in the segment.
    pub live_bytes: u64,
    /// The write clock when the segment was last written.
    pub lastmod: WriteClock,
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
    /// Segments clean or clean at the next checkpoint, outside the log
    /// head, less those the blocks the cache owes the log will take.
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
    /// Blocks a rewrite at the cold head ([`Destination::Cold`]) may
    /// consume now (after the next checkpoint); 0 while there is no cold
    /// head (a move asked for there goes to the users' head).
    pub cold_budget_blocks: u64,
    /// The write clock when the table was taken.
    pub now: WriteClock,
    /// Whether data that has lived long is likely to live on, as when some
    /// data is rewritten much more often than the rest. Under uniform
    /// overwrites it is not, and age tells a cleaner nothing that
    /// utilization does not ([`Lfs::ages_predict_survival`]).
    pub ages_predict_survival: bool,
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
    /// The write clock when its data was written (the `clock` of the
    /// summary that named it): data the cleaner moves keeps its age.
    pub age: WriteClock,
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

/// Where [`Lfs::markv`] writes the blocks it moves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Destination {
    /// The head users write to, as BSD-LFS does: moved data shares
    /// segments with new writes.
    #[default]
    Shared,
    /// A head of its own, so that data that survived cleaning (cold, mostly)
    /// fills segments apart from users' new (hot) writes. When the cold
    /// head cannot take the move (too little clean space outside the users'
    /// head, or a disk of fewer than 16 segments), the move goes to the
    /// users' head instead.
    Cold,
}

/// Age predicts survival ([`Lfs::ages_predict_survival`]) when the data
/// users overwrite or delete was, on average, younger than this share of
/// the live data's average age. Where every block is as likely to be
/// overwritten next, whatever its age, the two averages are equal (1);
/// on the 90/10 workload of `scripts/bench-cleaner` data dies at a tenth
/// to a fifth of the live data's age.
pub const DEATH_AGE_RATIO: f64 = 0.5;

/// Deaths seen before [`Lfs::ages_predict_survival`] says anything, in
/// segments' worth of bytes.
const MIN_DEATHS_SEGMENTS: u64 = 8;

/// Disks smaller than this keep one log head: a cold head holds two
/// segments (the one it fills and the next), too much of a small disk.
pub(super) const MIN_SEGMENTS_FOR_COLD: u64 = 16;

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

/// Whether cleaning is wanted, and what a background cleaner needs to
/// tell a round worth starting from one that would gain nothing
/// ([`Lfs::cleaning_wanted`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleaningWanted {
    /// [`Lfs::users_activity`].
    pub users_activity: u64,
    /// Clean segments, those waiting for a checkpoint included, less those
    /// the blocks the cache owes the log will take.
    pub clean_segments: u64,
    /// Whether the clean segments are below the high-water mark.
    pub wanted: bool,
}

impl CleaningWanted {
    /// Whether a background round would repeat, for nothing, the one that
    /// began at `last`: users have neither written nor deleted file data
    /// since, and it left no more clean segments than it found. (On a disk
    /// nearly full of live data a round takes about what it frees, and
    /// the checkpoint after it would start the next.)
    pub fn repeats(&self, last: Option<CleaningWanted>) -> bool {
        last.is_some_and(|l| {
            l.users_activity == self.users_activity && self.clean_segments <= l.clean_segments
        })
    }
}

/// Every byte of the log, by who caused it (the write cost's terms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerCounters {
    /// Segments declared empty by [`Lfs::segclean`].
    pub segments_cleaned: u64,
    /// Bytes of log written for normal writes (data, metadata, summaries,
    /// checkpoints' ifile blocks).
    pub user_bytes_written: u64,
    /// Of those, the blocks of files' contents (logical blocks 0 and up of
    /// every file but the ifile): the new data the write cost is per byte of.
    pub user_data_bytes_written: u64,
    /// Bytes of log written by [`Lfs::markv`].
    pub cleaner_bytes_written: u64,
    /// Bytes read by the cleaner: segments and live blocks.
    pub cleaner_bytes_read: u64,
    /// Live blocks and inodes [`Lfs::markv`] copied to the head of the
    /// log (what the cleaner moved, without the summaries and metadata
    /// the move wrote with them).
    pub blocks_moved: u64,
}

impl CleanerCounters {
    /// The write cost of the 1992 paper (§5.1: the disk's work per byte of
    /// new data, cleaning included): every byte of log written, for users
    /// and by the cleaner, plus the bytes the cleaner read, over the bytes
    /// of file data users wrote. Metadata written for users counts as work,
    /// not as new data, so even with no cleaning the cost is a little above
    /// 1. `None` while users have written no data.
    pub fn write_cost(&self) -> Option<f64> {
        if self.user_data_bytes_written == 0 {
            return None;
        }
        Some(
            (self.user_bytes_written + self.cleaner_bytes_written + self.cleaner_bytes_read) as f64
                / self.user_data_bytes_written as f64,
        )
    }

    /// The counts from `earlier` to these.
    pub fn since(&self, earlier: &CleanerCounters) -> CleanerCounters {
        CleanerCounters {
            segments_cleaned: self.segments_cleaned - earlier.segments_cleaned,
            user_bytes_written: self.user_bytes_written - earlier.user_bytes_written,
            user_data_bytes_written: self.user_data_bytes_written - earlier.user_data_bytes_written,
            cleaner_bytes_written: self.cleaner_bytes_written - earlier.cleaner_bytes_written,
            cleaner_bytes_read: self.cleaner_bytes_read - earlier.cleaner_bytes_read,
            blocks_moved: self.blocks_moved - earlier.blocks_moved,
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

/// Segments entered whose time and write clock are kept, to read the
/// clock at a file's modification time (`CleanState::clock_at`).
const WRITE_TIME_SAMPLES: usize = 4096;
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
/// until it moves, shared outside the file system's lock. With the count
/// goes what [`Lfs::cleaning_wanted`] said as they were written, so that a
/// background cleaner need not take the file system's lock to learn that
/// there is nothing to do, nor even wake: it can sleep until a partial
/// segment is written while cleaning is wanted.
#[derive(Debug, Default)]
pub struct SegmentClock {
    state: Mutex<ClockState>,
    moved: Condvar,
    /// Notified only for partial segments written while cleaning was wanted.
    wanted: Condvar,
}

#[derive(Debug, Default)]
struct ClockState {
    partials: u64,
    wanted: CleaningWanted,
    /// The file system is gone (unmounted or dropped).
    closed: bool,
    /// Calls of [`SegmentClock::interrupt`] so far.
    interrupts: u64,
}

impl SegmentClock {
    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Partial segments written since mount.
    pub fn now(&self) -> u64 {
        self.lock().partials
    }

    /// Sleeps until more than `seen` partial segments have been written,
    /// the file system is gone, `timeout` passes, or
    /// [`SegmentClock::interrupt`] is called. Returns the count.
    pub fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.lock();
        let interrupts = guard.interrupts;
        let (guard, _) = self
            .moved
            .wait_timeout_while(guard, timeout, |s| {
                s.partials <= seen && !s.closed && s.interrupts == interrupts
            })
            .unwrap_or_else(|e| e.into_inner());
        guard.partials
    }

    /// Sleeps until more than `seen` partial segments have been written and
    /// the last of them said cleaning was wanted, the file system is gone,
    /// `timeout` passes, or [`SegmentClock::interrupt`] is called. Returns
    /// the count. Partial segments written
    /// while no cleaning is wanted do not wake it: a stream of writes to a
    /// disk with space to spare would otherwise wake the waiter on every
    /// one, each wake-up a switch (and on a virtual machine a crossing to
    /// another CPU) that the writers pay for.
    pub fn wait_until_wanted(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.lock();
        let interrupts = guard.interrupts;
        let (guard, _) = self
            .wanted
            .wait_timeout_while(guard, timeout, |s| {
                !(s.closed || s.interrupts != interrupts || (s.partials > seen && s.wanted.wanted))
            })
            .unwrap_or_else(|e| e.into_inner());
        guard.partials
    }

    /// Whether the file system this clock belonged to is gone: no segment
    /// will be written any more.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn close(&self) {
        self.lock().closed = true;
        self.moved.notify_all();
        self.wanted.notify_all();
    }

    /// Ends every wait in progress now, as if its timeout had passed: a
    /// cleaner being stopped (before an unmount) need not sleep out its
    /// timeout first.
    pub fn interrupt(&self) {
        self.lock().interrupts += 1;
        self.moved.notify_all();
        self.wanted.notify_all();
    }

    /// [`Lfs::cleaning_wanted`] as of the last partial segment written
    /// (all zero and not wanted before the first).
    pub fn cleaning_wanted(&self) -> CleaningWanted {
        self.lock().wanted
    }

    fn advance(&self, partials: u64, wanted: CleaningWanted) {
        let mut state = self.lock();
        state.partials += partials;
        state.wanted = wanted;
        drop(state);
        self.moved.notify_all();
        if wanted.wanted {
            self.wanted.notify_all();
        }
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
    /// The write clock when this mount began (the checkpoint's, or later
    /// if roll-forward found younger log); user bytes written since mount
    /// advance it.
    pub(super) clock_base: WriteClock,
    /// When the log entered each of the last segments, and the write clock
    /// then: what the clock read at a given time, for modification times.
    write_times: VecDeque<(TimeNs, WriteClock)>,
    /// Bytes users overwrote or deleted, and those bytes times their age
    /// (on the write clock) when they died; both halved whenever the bytes
    /// reach half the disk, so that recent deaths count most.
    died_bytes: f64,
    died_age_bytes: f64,
    /// Utilization of segments read by the cleaner, by segment.
    read_utilization: HashMap<u64, f64>,
    cleaned: VecDeque<(u64, f64)>,
    /// Set while markv's own partial segments are being built.
    pub(super) writing: bool,
    /// Bytes of users' file data that died in this mount (overwritten,
    /// truncated, deleted); never halved, unlike `died_bytes`.
    users_deaths: u64,
    /// [`Lfs::cleaning_wanted`] when a writer's background cleaning last
    /// began (`maybe_clean`).
    background_start: Option<CleaningWanted>,
}

/// A cleaner waiting on the clock learns at once that the file system is
/// gone, instead of at its next timeout.
impl Drop for CleanState {
    fn drop(&mut self) {
        self.clock.close();
    }
}

impl CleanState {
    /// Counts the blocks of a partial segment handed to the device, of
    /// which `data_blocks` hold files' contents.
    pub(super) fn count_written(&mut self, blocks: u64, data_blocks: u64, block_size: usize) {
        let bytes = blocks * block_size as u64;
        if self.writing {
            self.counters.cleaner_bytes_written += bytes;
        } else {
            self.counters.user_bytes_written += bytes;
            self.counters.user_data_bytes_written += data_blocks * block_size as u64;
        }
    }

    /// Notes that the log moved into a new segment at `now` (the mount's
    /// calendar time, the clock modification times are stamped by).
    pub(super) fn entered_segment(&mut self, now: TimeNs) {
        self.history.push_back(self.counters);
        if self.history.len() > RECENT_SEGMENTS {
            self.history.pop_front();
        }
        self.write_times.push_back((now, self.write_clock()));
        if self.write_times.len() > WRITE_TIME_SAMPLES {
            self.write_times.pop_front();
        }
    }

    /// The write clock now.
    pub(super) fn write_clock(&self) -> WriteClock {
        self.clock_base.saturating_add(self.counters.user_bytes_written as i64)
    }

    /// What the write clock read at `time` (ns, on the mount's calendar;
    /// `now` is that calendar's present), as far as this mount knows:
    /// `None` for a time before the oldest sample kept.
    pub(super) fn clock_at(&self, time: TimeNs, now: TimeNs) -> Option<WriteClock> {
        if time >= now {
            return Some(self.write_clock());
        }
        self.write_times.iter().rev().find(|&&(t, _)| t <= time).map(|&(_, clock)| clock)
    }
}

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
    /// Installs (or, with `None`, removes) the cleaner writers run when the
    /// file system is short of clean segments. Without one, a write fails
    /// with ENOSPC once clean segments run out.
    pub fn set_cleaner(&mut self, cleaner: Option<Box<dyn SpaceMaker>>) {
        self.clean.hook = cleaner;
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
        let flags = self.tables.usage().get(seg).map_or(0, |s| s.flags);
        flags & SEGUSE_DIRTY != 0 && flags & SEGUSE_ACTIVE == 0 && !self.in_log_head(seg)
    }

    /// What a background cleaner asks each time a partial segment is
    /// written, far cheaper than [`Lfs::segment_table`] (which lists every
    /// segment).
    pub fn cleaning_wanted(&mut self) -> CleaningWanted {
        let (_, high_water) = self.cleaning_thresholds();
        let clean_segments = self.clean_segments_after_writes();
        CleaningWanted {
            users_activity: self.users_activity(),
            clean_segments,
            wanted: clean_segments < high_water,
        }
    }

    /// Clean segments (those waiting for a checkpoint included) as they
    /// will be once the blocks the cache owes the log are written: what a
    /// cleaner's pass has gained. The indirect blocks a pass leaves dirty
    /// (`write_moved`) are its cost as much as what it wrote; counted only
    /// when written, by the checkpoint after the pass, they made every pass
    /// on a full, idle disk look like a gain, and the cleaner went round
    /// and round.
    pub(super) fn clean_segments_after_writes(&self) -> u64 {
        let owed = self.promised_blocks() + self.tables.dirty_blocks().len() as u64;
        let beyond_head = owed.saturating_sub(self.users_head_room());
        let bps = self.sb.blocks_per_segment().max(1);
        self.segment_space().clean_segments.saturating_sub(beyond_head.div_ceil(bps))
    }

    /// Bytes of file data users have written or killed (overwritten,
    /// truncated, deleted) since mount: what can give a cleaner something
    /// new to do. A cleaner's own moves do not count, nor the metadata they
    /// dirty, nor the checkpoints that make cleaned segments writable.
    ///
    /// A background cleaner that ended a round no better off than it began
    /// (the disk is nearly full of live data, and moving a segment's live
    /// blocks takes about what it frees) must not begin another until this
    /// changes: counting every byte written instead, the checkpoint that
    /// followed each round started the next, and a full, idle disk was
    /// cleaned round and round for as long as it stayed mounted.
    pub fn users_activity(&self) -> u64 {
        self.clean.counters.user_data_bytes_written + self.clean.users_deaths
    }

    /// Moves the segment clock on by `partials` just handed to the device,
    /// waking `segwait`.
    pub(super) fn advance_segment_clock(&mut self, partials: u64) {
        let wanted = self.cleaning_wanted();
        self.clean.clock.advance(partials, wanted);
    }

    /// The segment usage table as a policy sees it.
    pub fn segment_table(&mut self) -> SegmentTable {
        let segments: Vec<SegmentState> = (0..self.sb.nsegments)
            .map(|seg| {
                let s = self.tables.usage().get(seg).unwrap_or_default();
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
        self.io.wait_idle()?;
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
        self.io.wait_idle()?;
        let bps = self.sb.blocks_per_segment();
        let layout = SegmentLayout {
            seg,
            blocks_per_segment: bps,
            first_log_block: u64::from(
                self.tables.usage().get(seg).unwrap_or_default().flags & SEGUSE_SUPERBLOCK != 0,
            ),
            fs_id: self.sb.fs_id,
        };
        let (dev, bs) = (self.dev.clone(), self.block_size);
        let first = Daddr::new(seg * bps);
        let mut live_inodes: HashMap<u64, Vec<(Ino, u32)>> = HashMap::new();
        for (ino, e) in self.tables.imap.iter().enumerate() {
            if (first..first + bps).contains(&e.daddr) {
                live_inodes.entry(e.daddr.units_after(first)).or_default().push((ino as Ino, e.version));
            }
        }
        if (first..first + bps).contains(&self.ifile_daddr) {
            live_inodes
                .entry(self.ifile_daddr.units_after(first))
                .or_default()
                .push((IFILE_INO, self.ifile.generation));
        }
        let mut read = 0u64;
        let refs = layout.walk(
            |offset| {
                let mut block = vec![0u8; bs];
                dev.read_at((first + offset).byte_offset(bs as u64), &mut block).ok()?;
                read += bs as u64;
                Some(block)
            },
            |offset| live_inodes.remove(&offset).unwrap_or_default(),
        );
        self.clean.counters.cleaner_bytes_read += read;
        self.note_read_utilization(seg);
        Ok(refs)
    }

    /// Whether age predicts survival on this disk: whether the data users
    /// overwrite or delete dies younger ([`DEATH_AGE_RATIO`]) than the live
    /// data is old, on average — as when some data is rewritten much more
    /// often than the rest. Under uniform overwrites a block's age says
    /// nothing of when it dies: the data that dies is as old as the data
    /// that lives. Ages are those of segments (their youngest data) on the
    /// write clock. Says no until users have overwritten or deleted
    /// [`MIN_DEATHS_SEGMENTS`] segments' worth in this mount.
    pub fn ages_predict_survival(&self) -> bool {
        let segment_bytes = self.sb.blocks_per_segment() * self.block_size as u64;
        if self.clean.died_bytes < (MIN_DEATHS_SEGMENTS * segment_bytes) as f64 {
            return false;
        }
        let now = self.clean.write_clock();
        let (mut live, mut live_age) = (0.0, 0.0);
        for (seg, s) in self.tables.usage().iter().enumerate() {
            if s.live_bytes > 0 && self.cleanable(seg as u64) {
                live += s.live_bytes as f64;
                live_age += s.live_bytes as f64 * (now - s.lastmod).max(0) as f64;
            }
        }
        let died_age = self.clean.died_age_bytes / self.clean.died_bytes;
        live > 0.0 && died_age < DEATH_AGE_RATIO * (live_age / live)
    }

    /// Notes that `bytes` of segment `seg` died. Counted when users caused
    /// it (an overwrite, a truncation, a deletion), not the cleaner's moves
    /// nor the ifile's own rewrites.
    pub(super) fn note_death(&mut self, seg: u64, bytes: u64, ino: Ino) {
        if self.clean.writing || ino == IFILE_INO {
            return;
        }
        let Some(s) = self.tables.usage().get(seg) else { return };
        let age = (self.clean.write_clock() - s.lastmod).max(0) as f64;
        let half_disk =
            (self.sb.nsegments * self.sb.blocks_per_segment() * self.block_size as u64 / 2) as f64;
        let c = &mut self.clean;
        c.users_deaths += bytes;
        c.died_bytes += bytes as f64;
        c.died_age_bytes += bytes as f64 * age;
        if c.died_bytes >= half_disk {
            c.died_bytes /= 2.0;
            c.died_age_bytes /= 2.0;
        }
    }

    /// Notes the utilization of segment `seg` as a cleaner reads it.
    fn note_read_utilization(&mut self, seg: u64) {
        let s = self.tables.usage().get(seg).unwrap_or_default();
        let capacity = (self.usable_blocks(seg) * self.block_size as u64).max(1);
        self.clean.read_utilization.insert(seg, (s.live_bytes as f64 / capacity as f64).min(1.0));
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
                BlockKind::Block(_) => Ok(Daddr::NONE),
            };
        }
        let Some(entry) = self.tables.entry(b.ino).copied() else { return Ok(Daddr::NONE) };
        if entry.daddr.is_none() || entry.version != b.version {
            return Ok(Daddr::NONE);
        }
        match b.kind {
            BlockKind::Inode => Ok(entry.daddr),
            BlockKind::Block(lbn) if self.geometry.parent(lbn).is_some() => self.pointer(b.ino, lbn),
            BlockKind::Block(_) => Ok(Daddr::NONE),
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
    /// share, and the share of the operations that free space); with
    /// `after_reclaim`, as it will be once the next checkpoint reclaims
    /// empty segments.
    fn cleaner_budget(&mut self, after_reclaim: bool) -> u64 {
        let space = self.segment_space();
        let reclaim = after_reclaim && space.reclaimable > 0;
        // The checkpoint that reclaims writes the ifile's changed blocks.
        let checkpoint = if reclaim { self.checkpoint_blocks() } else { 0 };
        let have = space.writable + if reclaim { space.reclaimable } else { 0 };
        have.saturating_sub(self.promised_blocks() + self.reserve_below_cleaner() + checkpoint)
    }

    /// The cleaner's budget at the cold head: what is left of its segment,
    /// plus clean segments — those outside the users' head, as far as the
    /// users' promised blocks and the reserves below the cleaner's do not
    /// need them (those fill the users' segment and the next first). The
    /// segment the cold head enters next is not counted: entering it sets
    /// another clean one aside as the next.
    pub(super) fn cold_budget(&mut self, after_reclaim: bool) -> u64 {
        if self.log.cold().is_none() {
            return 0;
        }
        let user_head = self.users_head_room();
        let space = self.segment_space();
        let reclaim = if after_reclaim { space.reclaimable } else { 0 };
        let clean = (space.writable + reclaim).saturating_sub(user_head);
        self.cold_room() + clean.min(self.cleaner_budget(after_reclaim))
    }

    /// Blocks the next checkpoint writes: the ifile's changed blocks, its
    /// segment usage table, indirect blocks and summaries.
    fn checkpoint_blocks(&self) -> u64 {
        let changed = self.tables.dirty_blocks().len() as u64 + u64::from(self.sb.segtab_blocks);
        (changed + 8).min(self.tables.nblocks() + 8)
    }

    /// Rewrites the live blocks among `blocks` at the log head `to` names
    /// (or at the other one, when that one is short of room), in
    /// the order given (a policy sorts them, e.g. by age), leaving every
    /// inode's times as they were. Blocks that died since `bmapv` are
    /// skipped. Fails with ENOSPC, writing nothing, when the rewrite (hidden
    /// cost included) does not fit in the space the cleaner may use, and
    /// with EBUSY inside a directory operation. Asking for the cold head
    /// when there is none makes the next checkpoint open one.
    pub fn markv(&mut self, blocks: &[MarkBlock], to: Destination) -> Result<Markv> {
        self.check_mounted()?;
        if self.in_dirop() {
            return Err(errno(libc::EBUSY, "a directory operation is in progress"));
        }
        // A segment write must not split a directory operation (§4.3):
        // write out any that completed before moving their files. Done
        // first, since it moves blocks: only then is "live" settled.
        if !self.dirop_inodes.is_empty() {
            self.write_segments(false)?;
        }
        let mut report = Markv::default();
        let mut live: Vec<&MarkBlock> = Vec::with_capacity(blocks.len());
        for b in blocks {
            if self.current_address(&b.block)? == b.block.daddr && b.block.daddr.is_some() {
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
        // Either head will do when the one asked for lacks room: the cold
        // head's two segments are the cleaner's, and on a nearly full disk
        // a move must not fail for want of space one head has.
        let budget = |lfs: &mut Lfs, after_reclaim: bool| {
            lfs.cold_budget(after_reclaim).max(lfs.cleaner_budget(after_reclaim))
        };
        if cost > budget(self, false) {
            if cost <= budget(self, true) {
                // Segments cleaned earlier become writable at a checkpoint.
                self.checkpoint(false)?;
            }
            if cost > budget(self, false) {
                return Err(errno(libc::ENOSPC, "not enough clean space to move these blocks"));
            }
        }
        if to == Destination::Cold {
            self.cold_demand.request();
        }
        let cold = match to {
            Destination::Cold => cost <= self.cold_budget(false),
            Destination::Shared => cost > self.cleaner_budget(false),
        };
        let mut order: Vec<Ino> = Vec::new();
        let mut seen: HashSet<Ino> = HashSet::new();
        let mut moved_metas: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut moved_data: HashSet<(Ino, Lbn)> = HashSet::new();
        let mut ifile = false;
        let mut ages: HashMap<Ino, WriteClock> = HashMap::new();
        for b in &live {
            // A checkpoint above wrote every dirty block: one that was
            // dirty then has a new address, and its copy here is stale
            // (reading it would bring old contents back).
            if self.current_address(&b.block)? != b.block.daddr {
                report.skipped += 1;
                continue;
            }
            report.moved += 1;
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
                BlockKind::Block(lbn) => {
                    if is_indirect(lbn) {
                        moved_metas.insert((ino, lbn));
                    } else {
                        moved_data.insert((ino, lbn));
                    }
                    self.mark_block(ino, lbn, b)?
                }
            }
        }
        let before = self.stats.blocks_written;
        self.clean.writing = true;
        let written = if cold {
            self.at_cold_head(|lfs| lfs.write_moved(&order, moved_metas, moved_data, ifile, ages))
        } else {
            self.write_moved(&order, moved_metas, moved_data, ifile, ages)
        };
        self.clean.writing = false;
        written?;
        report.blocks_written = self.stats.blocks_written - before;
        self.clean.counters.blocks_moved += report.moved;
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
        let data = match &b.data {
            Some(d) if d.len() == self.block_size => block_of(d),
            _ => {
                let mut buf = AlignedBytes::zeroed(self.block_size);
                self.read_addr(b.block.daddr, &mut buf)?;
                self.clean.counters.cleaner_bytes_read += self.block_size as u64;
                Arc::new(buf)
            }
        };
        // The move reseals an indirect block: a damaged one must fail here,
        // not come out of the cleaner with a valid checksum.
        if is_indirect(lbn) {
            check_indirect(&data, ino, lbn, b.block.daddr)?;
        }
        self.cache.insert(key, data, true);
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

    /// Writes the files in `order` (of their dirty blocks only those moved,
    /// `moved_metas` and `moved_data`, then their inodes, counting only the
    /// blocks their trees on disk reach) and, with `ifile`, the
    /// ifile; partial segments carry the age of the youngest data in them,
    /// from `ages`.
    ///
    /// The indirect blocks the moves dirty stay in the cache for the next
    /// segment write (see `Batch::only_metas`). Until then the inodes
    /// written here still name the indirect blocks' old copies, which point
    /// at the moved blocks' old copies: a consistent file, and the segments
    /// holding those copies are not reused before a checkpoint, which
    /// writes every dirty block first. Roll-forward counts a block live
    /// only once an inode's tree reaches it (`rollforward.rs`). The ifile,
    /// whose segment usage table counts the moves as done, must not reach
    /// the log before the blocks that make them so: with `ifile`, every
    /// dirty block goes first, as at a checkpoint.
    fn write_moved(
        &mut self,
        order: &[Ino],
        moved_metas: HashSet<(Ino, Lbn)>,
        moved_data: HashSet<(Ino, Lbn)>,
        ifile: bool,
        ages: HashMap<Ino, WriteClock>,
    ) -> Result<()> {
        self.ensure_new_serial_epoch()?;
        let mut batch = Batch::aged(ages);
        if !ifile {
            batch = batch.placing_only(moved_metas, moved_data);
        }
        self.write_files(&mut batch, order)?;
        if ifile {
            let rest: Vec<Ino> = self.dirty_files().into_iter().collect();
            self.write_files(&mut batch, &rest)?;
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
        let Some(s) = self.tables.usage().get(seg) else {
            return Err(errno(libc::EINVAL, "no such segment"));
        };
        if s.flags & SEGUSE_CLEAN != 0 {
            return Ok(());
        }
        if !self.cleanable(seg) {
            return Err(errno(libc::EBUSY, "the log is being written in this segment"));
        }
        if s.live_bytes != 0 {
            // Accounting says something is left: the summaries decide
            // (the table is trusted only when it says nothing is).
            let bytes = self.read_segment(seg)?;
            let table = self.segment_table();
            let refs = parse_segment(&table, seg, &bytes);
            let now = self.bmapv(&refs)?;
            if refs.iter().zip(&now).any(|(r, &at)| at == r.daddr) {
                return Err(errno(libc::EBUSY, "segment still holds live blocks"));
            }
            self.tables.update_segment(seg, |s| s.live_bytes = 0);
        }
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
    /// the low-water mark, unless the last such cleaning ended with no more
    /// clean segments than it began with and users have neither written
    /// nor deleted data since ([`Lfs::users_activity`]).
    pub(super) fn maybe_clean(&mut self) -> Result<()> {
        let (low, _) = self.cleaning_thresholds();
        self.clean_below(low).map(drop)
    }

    /// What a background cleaner does while the file system is idle: runs
    /// the installed cleaner towards the high-water mark when the clean
    /// segments are below it, unless the last background round gained
    /// nothing and users have done nothing since (the rule of
    /// [`CleaningWanted::repeats`]). A mount without a cleaning thread
    /// (the lab's, on virtual time) calls it in a workload's idle gaps, so
    /// that cleaning falls there as it would with the thread. Returns
    /// whether a segment was cleaned; without a cleaner, or inside a
    /// directory operation, it does nothing.
    pub fn clean_while_idle(&mut self) -> Result<bool> {
        self.check_mounted()?;
        let (_, high) = self.cleaning_thresholds();
        self.clean_below(high)
    }

    /// Cleans in the background when the clean segments are below
    /// `threshold` (see [`Lfs::maybe_clean`] and [`Lfs::clean_while_idle`]).
    fn clean_below(&mut self, threshold: u64) -> Result<bool> {
        if self.in_dirop() {
            return Ok(false);
        }
        self.reclaim_if_short()?;
        if self.clean.hook.is_none() {
            return Ok(false);
        }
        let now = self.cleaning_wanted();
        if now.clean_segments >= threshold || now.repeats(self.clean.background_start) {
            return Ok(false);
        }
        self.clean.background_start = Some(now);
        let cleaned = self.run_cleaner(Urgency::Background)?;
        self.reclaim_if_short()?;
        Ok(cleaned)
    }

    /// Writes a checkpoint when segments a cleaner emptied wait for one
    /// and the writable segments run low: inside a directory operation no
    /// checkpoint can be taken, so the space must be writable before one
    /// starts.
    pub(super) fn reclaim_if_short(&mut self) -> Result<()> {
        let space = self.segment_space();
        if space.reclaimable == 0 || self.in_dirop() {
            return Ok(());
        }
        let (low, _) = self.cleaning_thresholds();
        if space.writable < low * self.sb.blocks_per_segment() {
            self.checkpoint(false)?;
        }
        Ok(())
    }
}
