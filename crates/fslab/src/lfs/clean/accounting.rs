//! What the log's writes and deaths tell the cleaner: the counters behind
//! the write cost and [`CleanerReport`] (who wrote each byte of log, what the
//! cleaner read and moved), the write clock (user bytes written, the clock
//! segments' ages are measured on) and what it read at a given time, and the
//! ages at which users' data dies ([`Lfs::ages_predict_survival`]). The
//! segment writer reports here as it writes (`writer`); the state is
//! [`CleanState`]'s.

use super::CleanState;
use crate::format::{Ino, TimeNs, IFILE_INO};
use crate::lfs::layout::WriteClock;
use crate::lfs::Lfs;

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

impl CleanState {
    /// Counts the blocks of a partial segment handed to the device, of
    /// which `data_blocks` hold files' contents.
    pub(in crate::lfs) fn count_written(&mut self, blocks: u64, data_blocks: u64, block_size: usize) {
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
    pub(in crate::lfs) fn entered_segment(&mut self, now: TimeNs) {
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
    pub(in crate::lfs) fn write_clock(&self) -> WriteClock {
        self.clock_base.saturating_add(self.counters.user_bytes_written as i64)
    }

    /// What the write clock read at `time` (ns, on the mount's calendar;
    /// `now` is that calendar's present), as far as this mount knows:
    /// `None` for a time before the oldest sample kept.
    pub(in crate::lfs) fn clock_at(&self, time: TimeNs, now: TimeNs) -> Option<WriteClock> {
        if time >= now {
            return Some(self.write_clock());
        }
        self.write_times.iter().rev().find(|&&(t, _)| t <= time).map(|&(_, clock)| clock)
    }
}

impl Lfs {
    /// The cleaner's counters since mount.
    pub fn cleaner_report(&self) -> CleanerReport {
        let total = self.clean.counters;
        let recent = total.since(self.clean.history.front().unwrap_or(&CleanerCounters::default()));
        CleanerReport { total, recent, cleaned_utilization: self.clean.cleaned.iter().copied().collect() }
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
        for (seg, s) in self.ifile.tables.usage().iter().enumerate() {
            if s.live_bytes > 0 && self.cleanable(seg as u64) {
                live += s.live_bytes as f64;
                live_age += s.live_bytes as f64 * now.saturating_sub(s.lastmod).max(0) as f64;
            }
        }
        let died_age = self.clean.died_age_bytes / self.clean.died_bytes;
        live > 0.0 && died_age < DEATH_AGE_RATIO * (live_age / live)
    }

    /// Notes that `bytes` of segment `seg` died. Counted when users caused
    /// it (an overwrite, a truncation, a deletion), not the cleaner's moves
    /// nor the ifile's own rewrites.
    pub(in crate::lfs) fn note_death(&mut self, seg: u64, bytes: u64, ino: Ino) {
        if self.clean.writing || ino == IFILE_INO {
            return;
        }
        let Some(s) = self.ifile.tables.usage().get(seg) else { return };
        let age = self.clean.write_clock().saturating_sub(s.lastmod).max(0) as f64;
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
}
