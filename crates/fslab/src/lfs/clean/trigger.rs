//! When the cleaner runs. A policy is installed as a [`SpaceMaker`]
//! ([`Lfs::set_cleaner`]); writers run it on their own thread when short of
//! space (`space`) or when clean segments fall below the low-water mark
//! ([`Lfs::maybe_clean`]), and an idle mount runs it towards the high-water
//! mark ([`Lfs::clean_while_idle`]). [`CleaningWanted`] is what a background
//! cleaner checks, with the rule that keeps it from repeating a round that
//! gained nothing. Relies on the block accounting (`space`) for the counts
//! of clean segments and the thresholds.

use super::{SpaceMaker, Urgency};
use crate::lfs::Lfs;
use crate::Result;

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
    pub(in crate::lfs) fn clean_segments_after_writes(&self) -> u64 {
        let owed = self.promised_blocks() + self.ifile.tables.dirty_blocks().len() as u64;
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

    /// Runs the installed cleaner, if any. Returns whether it cleaned.
    pub(in crate::lfs) fn run_cleaner(&mut self, urgency: Urgency) -> Result<bool> {
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
    pub(in crate::lfs) fn maybe_clean(&mut self) -> Result<()> {
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
        if self.writer_failure().is_some() {
            // Read-only since the writer failed (reported then): nothing
            // to clean for.
            return Ok(false);
        }
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
    pub(in crate::lfs) fn reclaim_if_short(&mut self) -> Result<()> {
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
