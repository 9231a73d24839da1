//! Checkpoints (1993 paper §4.5; Rosenblum and Ousterhout §4.1): when they
//! are due, and how one is written.
//!
//! A checkpoint is a segment write with the ifile, a flush barrier, the
//! superblock pointing at the new ifile inode and recording where the log
//! continues, and a second barrier. Segments the checkpoint left with
//! nothing live become clean after it: no checkpoint needs them any more.

use super::layout::{
    Checkpoint, HeadPosition, SegUse, SB_CLEAN, SB_DAMAGED, SEGUSE_CLEAN, SEGUSE_DIRTY, SEGUSE_SUPERBLOCK,
};
use super::Lfs;
use crate::error::errno;
use crate::Result;
use std::time::Duration;

/// When the next checkpoint is due: a fixed interval after the last one, on
/// the mount's clock (virtual time in the lab).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Schedule {
    /// When the last checkpoint was written.
    last: Duration,
}

impl Schedule {
    /// A schedule whose last checkpoint was at `now` (mount, mkfs).
    pub(super) fn starting(now: Duration) -> Schedule {
        Schedule { last: now }
    }

    /// Whether `interval` has passed since the last checkpoint at `now`.
    pub(super) fn due(&self, now: Duration, interval: Duration) -> bool {
        now.saturating_sub(self.last) >= interval
    }

    /// A checkpoint was written at `now`.
    fn written(&mut self, now: Duration) {
        self.last = now;
    }
}

impl Lfs {
    /// Partial segments written before a crash may lie beyond the end of
    /// the log that roll-forward recovered (a lost write with later ones
    /// kept), carrying exactly the serial numbers this mount would use next;
    /// a later roll-forward would take them for new log. So before this
    /// mount writes its first partial segment, the serial numbers jump past
    /// anything one mount can have written, and a checkpoint makes the jump
    /// durable before any other log is written.
    pub(super) fn ensure_new_serial_epoch(&mut self) -> Result<()> {
        if self.writer.log.epoch_pending() {
            self.checkpoint(false)?;
        }
        Ok(())
    }

    /// Writes a checkpoint: everything, the ifile, a barrier, the superblock,
    /// a barrier. Then segments left with nothing live become clean: the
    /// checkpoint just written no longer needs them. `clean` marks an
    /// unmount and writes every superblock copy.
    ///
    /// A checkpoint that fails makes the mount read-only, as a failed
    /// segment write does: by then the serial numbers have jumped and the
    /// superblock copy to write next has changed, so a later fsync would
    /// write log that the checkpoint on disk does not lead to (roll-forward
    /// would not find it), and the next checkpoint could overwrite the last
    /// good one.
    pub(super) fn checkpoint(&mut self, clean: bool) -> Result<()> {
        if self.mount.failed.is_some() {
            return Err(errno(
                libc::EIO,
                "no checkpoint: the log writer failed earlier (read-only until mounted again)",
            ));
        }
        let result = self.write_checkpoint(clean);
        if let Err(e) = &result {
            self.mount.failed = Some(format!("checkpoint failed: {e}"));
        }
        result
    }

    fn write_checkpoint(&mut self, clean: bool) -> Result<()> {
        // This checkpoint's superblock makes the jump durable; a crash
        // before it loses only what this checkpoint itself writes.
        self.writer.log.begin_epoch();
        self.settle_cold_head()?;
        self.write_segments(true)?;
        // Barrier: the log the superblock will point at is durable first.
        self.writer.io.barrier()?;
        let mut checkpoint = Checkpoint {
            serial: self.sb.checkpoint.serial + 1,
            time: self.mount.options.clock.calendar_ns(),
            ifile_daddr: self.ifile.daddr,
            flags: if clean { SB_CLEAN } else { 0 } | (self.sb.checkpoint.flags & SB_DAMAGED),
            write_clock: self.clean.write_clock(),
            orphan_head: self.orphans.head(),
            ..Checkpoint::default()
        };
        self.writer.log.record(&mut checkpoint);
        self.sb.checkpoint = checkpoint;
        let bytes = self.sb.encode();
        let copies = self.sb.ncopies as usize;
        if clean {
            for i in 0..copies {
                self.dev.write_at(self.sb.copy_offset(i), &bytes)?;
            }
        } else {
            // Alternate between the first two copies, so a torn superblock
            // write always leaves the previous checkpoint intact.
            let i = (self.sb.checkpoint.serial % copies.min(2) as u64) as usize;
            self.dev.write_at(self.sb.copy_offset(i), &bytes)?;
        }
        // Barrier: the checkpoint is durable when this returns.
        self.writer.io.barrier()?;
        self.writer.stats.checkpoints += 1;
        self.mount.checkpoints.written(self.mount.options.clock.now());
        self.reclaim_empty_segments();
        Ok(())
    }

    /// Marks clean every dirty segment with no live bytes outside the log
    /// heads, and lets a head whose next segment was not chosen (none was
    /// clean) choose again. Returns the segments made clean, with their
    /// entries as they were.
    pub(super) fn reclaim_empty_segments(&mut self) -> Vec<(u64, SegUse)> {
        let mut reclaimed = Vec::new();
        for seg in 0..self.sb.nsegments {
            if self.in_log_head(seg) {
                continue;
            }
            let empty = self
                .ifile
                .tables
                .usage()
                .get(seg)
                .filter(|s| s.flags & SEGUSE_DIRTY != 0 && s.live_bytes == 0);
            if let Some(before) = empty {
                self.ifile.tables.update_segment(seg, |s| {
                    s.flags = (s.flags & SEGUSE_SUPERBLOCK) | SEGUSE_CLEAN;
                    s.nsums = 0;
                    s.ninos = 0;
                });
                self.writer.stats.segments_reclaimed += 1;
                reclaimed.push((seg, before));
            }
        }
        self.choose_next_segments_again(|h| h.next_segment == h.segment);
        reclaimed
    }

    /// Lets each log head whose next segment is `stale` choose again, the
    /// first clean segment after its own.
    pub(super) fn choose_next_segments_again(&mut self, stale: impl Fn(&HeadPosition) -> bool) {
        let head = self.writer.log.head();
        if stale(&head) {
            self.writer.log.set_next_segment(self.clean_after(head.segment).unwrap_or(head.segment));
        }
        if let Some(c) = self.writer.log.cold().filter(|c| stale(c)) {
            let next = self.clean_after(c.segment).unwrap_or(c.segment);
            self.writer.log.set_cold(Some(HeadPosition { next_segment: next, ..c }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_is_due_an_interval_after_the_last() {
        let mut s = Schedule::starting(Duration::from_secs(10));
        let interval = Duration::from_secs(30);
        assert!(!s.due(Duration::from_secs(39), interval));
        assert!(s.due(Duration::from_secs(40), interval));
        s.written(Duration::from_secs(41));
        assert!(!s.due(Duration::from_secs(70), interval));
        assert!(!s.due(Duration::from_secs(5), interval), "a clock behind the last checkpoint is not due");
    }
}
