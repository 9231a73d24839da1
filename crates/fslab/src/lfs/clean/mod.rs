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
//!
//! Parts: `segments` (the usage table as a policy sees it, reading a
//! segment and the blocks its summaries name), `markv` (`bmapv`, `markv`,
//! `segclean`: moving live blocks and declaring a segment empty, within
//! the cleaner's budget), `trigger` (installing the cleaner, whether
//! cleaning is wanted, running it), `accounting` (the counters behind the
//! write cost and the report, the write clock, the ages at which data
//! dies), `segwait` ([`SegmentClock`], and moving it as partial segments
//! are written). This file holds the types a policy is handed and the
//! mechanism's state inside a mount. Relies on the segment writer
//! (`writer`) to write what `markv` moves and on the block accounting
//! (`space`) for the room it may use. Those two call back in:
//! the writer reports what it writes and what dies (`accounting`) and moves
//! the segment clock (`segwait`), and a writer short of space runs the
//! cleaner (`trigger`).

mod accounting;
mod markv;
mod segments;
mod segwait;
mod trigger;

pub use accounting::{CleanerCounters, CleanerReport, DEATH_AGE_RATIO, RECENT_CLEANED, RECENT_SEGMENTS};
pub use segments::parse_segment;
pub use segwait::SegmentClock;
pub use trigger::CleaningWanted;

use super::layout::WriteClock;
use super::Lfs;
use crate::format::{Daddr, Ino, Lbn, TimeNs};
use crate::Result;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

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
pub trait SpaceMaker: Send + Sync {
    /// Cleans what it judges worth cleaning, through the mechanism above.
    /// Returns whether any segment was cleaned.
    fn make_space(&mut self, lfs: &mut Lfs, urgency: Urgency) -> Result<bool>;
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
