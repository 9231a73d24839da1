//! The log's position: its heads and its summary serial numbers.
//!
//! The log is a chain of segments; each head writes partial segments into
//! one of them and names the segment it moves to next in every summary, so
//! that roll-forward can follow it (1993 paper §3.1, §2.2). fslab's log has
//! up to two heads, the users' and the cold one (`placement`), drawing
//! serial numbers from one counter: together they are one log in serial
//! order. This part owns that state; the writer moves the heads, a
//! checkpoint records them, roll-forward moves them over recovered log.
//! It also owns `LogWriter`, which keeps beside the heads what the writer
//! carries from one write to the next (here, not in `writer`, because
//! `placement` already names `writer`, and the two must not name each
//! other).

use super::io::SegmentIo;
use super::layout::{Checkpoint, HeadPosition};
use super::placement::{ColdDemand, Separation};
use super::Stats;

/// How far the summary serial numbers jump at each mount, at least: more
/// partial segments than any one mount can write. A random amount below
/// [`SERIAL_SPREAD`] is added (`epoch_spread`): the jump is durable only
/// with the mount's first checkpoint, and a crash before it leaves partial
/// segments of the new numbers on disk; the next mount starts from the
/// same checkpoint, and had it jumped to the same number, a chain it
/// wrote later could run on into the crashed mount's leftovers (its next
/// segment the one they began, the serial number theirs), and roll-forward
/// would apply them.
const SERIAL_EPOCH: u64 = 1 << 32;

/// The bound of the random part of a mount's jump: 2^31, so that two mounts
/// from one checkpoint continue from the same number once in two billion,
/// and 2^64 serial numbers last more than two billion mounts.
const SERIAL_SPREAD: u64 = 1 << 31;

/// A number below [`SERIAL_SPREAD`], another at each call: the standard
/// library's hasher keys are random for each process and change at each
/// `RandomState`.
fn epoch_spread() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.finish() % SERIAL_SPREAD
}

/// What the segment writer keeps between writes: where the log goes on,
/// which head users' writes go to, the writes not yet on the device, and
/// the counts of what was written. Kept together because they move
/// together: a partial segment takes its place and serial number from
/// `log`, goes to `io` (which reads of the addresses it covers wait for)
/// and is counted in `stats`, whose partial-segment count is also the
/// clock `separation` redraws its line by; and the cold head in `log`
/// opens and closes only at a checkpoint (`settle_cold_head`), as
/// `cold_demand` and `separation` want it.
pub(super) struct LogWriter {
    /// The log's heads and serial numbers. The second (cold) head, once
    /// something was written there, holds data kept apart from users' new
    /// writes (cold data in segments of its own, as F2FS's multiple logs
    /// do).
    pub(super) log: Log,
    /// Hot/cold separation of users' writes between the two heads.
    pub(super) separation: Separation,
    /// Whether the cold head is wanted: cleaners' requests and a writer's
    /// want of space, read at each checkpoint.
    pub(super) cold_demand: ColdDemand,
    /// The thread that writes partial segments.
    pub(super) io: SegmentIo,
    /// Counters since mount.
    pub(super) stats: Stats,
}

impl LogWriter {
    /// The writer of a mount whose log goes on as `log` says, writing
    /// through `io`; separation off, no counts yet.
    pub(super) fn new(log: Log, io: SegmentIo) -> LogWriter {
        LogWriter {
            log,
            separation: Separation::default(),
            cold_demand: ColdDemand::default(),
            io,
            stats: Stats::default(),
        }
    }
}

/// Where the log continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Log {
    /// The head partial segments are written at: the users' head, or the
    /// cold head while `swap_heads` has exchanged the two.
    head: HeadPosition,
    /// The other head, when the log has a cold head.
    cold: Option<HeadPosition>,
    /// The serial number the next partial segment summary carries.
    next_serial: u64,
    /// Until the first checkpoint of this mount, the serial numbers have not
    /// yet jumped past what an earlier mount may have left beyond the end of
    /// the log (`writer::ensure_new_serial_epoch`).
    epoch_pending: bool,
}

impl Log {
    /// The log of a new file system: block 1 of segment 0 (block 0 holds the
    /// superblock), the next segment not chosen yet.
    pub(super) fn new_file_system() -> Log {
        Log {
            head: HeadPosition { segment: 0, offset: 1, next_segment: 0 },
            cold: None,
            next_serial: 1,
            epoch_pending: true,
        }
    }

    /// The log where checkpoint `c` left it.
    pub(super) fn at_checkpoint(c: &Checkpoint) -> Log {
        Log {
            head: HeadPosition { segment: c.log_segment, offset: c.log_offset, next_segment: c.next_segment },
            cold: c.cold,
            next_serial: c.next_summary_serial,
            epoch_pending: true,
        }
    }

    /// Puts the log's position into checkpoint `c`.
    pub(super) fn record(&self, c: &mut Checkpoint) {
        c.log_segment = self.head.segment;
        c.log_offset = self.head.offset;
        c.next_segment = self.head.next_segment;
        c.next_summary_serial = self.next_serial;
        c.cold = self.cold;
    }

    /// The head partial segments are written at.
    pub(super) fn head(&self) -> HeadPosition {
        self.head
    }

    /// The cold head, if the log has one.
    pub(super) fn cold(&self) -> Option<HeadPosition> {
        self.cold
    }

    /// The serial number the next partial segment summary carries.
    pub(super) fn next_serial(&self) -> u64 {
        self.next_serial
    }

    /// The segments the heads write in or enter next (`u64::MAX` where the
    /// log has no cold head), without allocating: asked for on every newly
    /// dirty block.
    pub(super) fn held_segments(&self) -> [u64; 4] {
        let cold = self.cold.map_or([u64::MAX; 2], |c| [c.segment, c.next_segment]);
        [self.head.segment, self.head.next_segment, cold[0], cold[1]]
    }

    /// Whether a head writes in `seg` or enters it next.
    pub(super) fn holds(&self, seg: u64) -> bool {
        seg != u64::MAX && self.held_segments().contains(&seg)
    }

    /// Moves the head to `position` (into a new segment, or where
    /// recovered log ends).
    pub(super) fn move_head(&mut self, position: HeadPosition) {
        self.head = position;
    }

    /// Chooses the segment the head moves to after its current one.
    pub(super) fn set_next_segment(&mut self, next: u64) {
        self.head.next_segment = next;
    }

    /// Opens (`Some`) or closes (`None`) the cold head, or moves it.
    pub(super) fn set_cold(&mut self, cold: Option<HeadPosition>) {
        self.cold = cold;
    }

    /// Exchanges the users' head and the cold head, so that the writer's
    /// code serves both.
    pub(super) fn swap_heads(&mut self) {
        if let Some(c) = self.cold.as_mut() {
            std::mem::swap(&mut self.head, c);
        }
    }

    /// Appends a partial segment of `blocks` blocks and its summary at the
    /// head; returns the serial number its summary carries.
    pub(super) fn append_partial(&mut self, blocks: u64) -> u64 {
        let serial = self.next_serial;
        self.next_serial += 1;
        self.head.offset += 1 + blocks;
        serial
    }

    /// Whether this mount's serial numbers still have to jump.
    pub(super) fn epoch_pending(&self) -> bool {
        self.epoch_pending
    }

    /// Makes the serial numbers jump past anything an earlier mount can
    /// have written, once per mount; the caller's checkpoint makes it
    /// durable.
    pub(super) fn begin_epoch(&mut self) {
        if std::mem::take(&mut self.epoch_pending) {
            self.next_serial += SERIAL_EPOCH + epoch_spread();
        }
    }

    /// Roll-forward applied a partial segment with serial number `serial`
    /// that ended at `position`, written at the cold head if `cold`.
    pub(super) fn recovered(&mut self, cold: bool, position: HeadPosition, serial: u64) {
        if cold {
            self.cold = Some(position);
        } else {
            self.head = position;
        }
        self.next_serial = serial + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(segment: u64, offset: u64, next_segment: u64) -> HeadPosition {
        HeadPosition { segment, offset, next_segment }
    }

    #[test]
    fn partials_advance_the_head_and_take_consecutive_serials() {
        let mut log = Log::new_file_system();
        assert_eq!(log.append_partial(3), 1);
        assert_eq!(log.append_partial(0), 2);
        assert_eq!(log.head(), pos(0, 1 + 4 + 1, 0));
        assert_eq!(log.next_serial(), 3);
    }

    #[test]
    fn the_epoch_jumps_once_per_mount() {
        let mut log = Log::new_file_system();
        assert!(log.epoch_pending());
        log.begin_epoch();
        log.begin_epoch();
        assert!(!log.epoch_pending());
        let jumped = log.next_serial() - 1;
        assert!((SERIAL_EPOCH..SERIAL_EPOCH + SERIAL_SPREAD).contains(&jumped), "{jumped}");
    }

    /// Two mounts from one checkpoint (the first crashed before its jump
    /// was durable) continue from different serial numbers.
    #[test]
    fn two_mounts_from_one_checkpoint_jump_to_different_serial_numbers() {
        let jumped = || {
            let mut log = Log::new_file_system();
            log.begin_epoch();
            log.next_serial()
        };
        assert_ne!(jumped(), jumped());
    }

    #[test]
    fn swapping_heads_exchanges_positions_and_back() {
        let mut log = Log::new_file_system();
        log.move_head(pos(2, 5, 3));
        log.swap_heads();
        assert_eq!(log.head(), pos(2, 5, 3), "without a cold head there is nothing to swap");
        log.set_cold(Some(pos(7, 1, 8)));
        log.swap_heads();
        assert_eq!((log.head(), log.cold()), (pos(7, 1, 8), Some(pos(2, 5, 3))));
        assert_eq!(log.append_partial(1), 1, "both heads draw from one serial counter");
        log.swap_heads();
        assert_eq!((log.head(), log.cold()), (pos(2, 5, 3), Some(pos(7, 3, 8))));
    }

    #[test]
    fn held_segments_name_both_heads_and_their_next_segments() {
        let mut log = Log::new_file_system();
        log.move_head(pos(2, 5, 3));
        assert!(log.holds(2) && log.holds(3) && !log.holds(7) && !log.holds(u64::MAX));
        log.set_cold(Some(pos(7, 1, 8)));
        assert_eq!(log.held_segments(), [2, 3, 7, 8]);
    }

    #[test]
    fn a_checkpoint_records_what_it_is_read_back_as() {
        let mut log = Log::new_file_system();
        log.move_head(pos(4, 9, 6));
        log.set_cold(Some(pos(10, 2, 11)));
        log.append_partial(2);
        let mut c = Checkpoint::default();
        log.record(&mut c);
        let back = Log::at_checkpoint(&c);
        assert_eq!(
            (back.head(), back.cold(), back.next_serial()),
            (log.head(), log.cold(), log.next_serial())
        );
        assert!(back.epoch_pending(), "a mount from a checkpoint starts a new epoch");
    }

    #[test]
    fn recovered_log_moves_the_head_it_was_written_at() {
        let mut log = Log::new_file_system();
        log.recovered(false, pos(3, 7, 4), 41);
        log.recovered(true, pos(9, 2, 10), 42);
        assert_eq!((log.head(), log.cold(), log.next_serial()), (pos(3, 7, 4), Some(pos(9, 2, 10)), 43));
    }
}
