//! Where users' writes go: with separation on, a file whose data was last
//! written long ago — cold data, likely to stay — is written at the log's
//! cold head instead of beside new, hot writes (the multiple logs of F2FS;
//! Rosenblum and Ousterhout 1992 §5.4 on why cold data should not share
//! segments with hot). The cleaner then finds segments that are either
//! nearly empty (hot data died) or nearly full and stable (cold data).
//!
//! Only where age predicts survival (`Lfs::ages_predict_survival`), unless
//! told to separate regardless (`UserSeparation::Always`): under uniform
//! overwrites every file is as likely to be written next, and splitting
//! them gains nothing.
//!
//! "Long ago" is on the write clock (bytes written) and relative to the
//! disk: data is cold when, since it was last written, users have written
//! more than a set multiple of the bytes the disk holds live (under uniform
//! overwrites, data is on average rewritten once in that many bytes). A
//! file's last write is its modification time when it was first dirtied
//! since the previous segment write, read on the write clock.

use super::layout::WriteClock;
use super::space::SpaceFor;
use super::writer::Batch;
use super::Lfs;
use crate::format::{Ino, TimeNs};
use crate::Result;
use std::collections::HashMap;

/// Partial segments between recomputations of the line between hot and
/// cold (the computation sums the segment usage table).
const LINE_REFRESH_PARTIALS: u64 = 16;

/// Which users' writes go to the cold head ([`Lfs::set_separation`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum UserSeparation {
    /// None: every write goes to the users' head.
    #[default]
    Off,
    /// Writes to files not written while users wrote this many times the
    /// bytes the disk holds live, while age predicts survival
    /// ([`Lfs::ages_predict_survival`]).
    WhereAgePredicts(f64),
    /// The same, whatever age predicts: for experiments, and for tests that
    /// must see users' writes at the cold head.
    Always(f64),
}

impl UserSeparation {
    /// The multiple of the live bytes, when on.
    fn cold_after(self) -> Option<f64> {
        match self {
            UserSeparation::Off => None,
            UserSeparation::WhereAgePredicts(m) | UserSeparation::Always(m) => Some(m),
        }
    }
}

/// Hot/cold separation of users' writes, when on.
#[derive(Default)]
pub(super) struct Separation {
    /// Which writes go to the cold head.
    mode: UserSeparation,
    /// The current line on the write clock (`None`: no data is cold), and
    /// the partial-segment count when it was drawn.
    line: Option<(Option<WriteClock>, u64)>,
    /// Each file dirtied since the last segment write: its modification
    /// time before that.
    last_written: HashMap<Ino, TimeNs>,
}

impl Lfs {
    /// Sets which users' writes go to the cold head. A disk too small for
    /// a cold head keeps one head whatever this says; a multiple that is
    /// negative or not finite turns separation off.
    pub fn set_separation(&mut self, mode: UserSeparation) {
        let mode = match mode.cold_after() {
            Some(m) if m.is_finite() && m >= 0.0 => mode,
            _ => UserSeparation::Off,
        };
        self.separation = Separation { mode, ..Separation::default() };
    }

    /// Whether the log has a cold head open now.
    pub fn has_cold_head(&self) -> bool {
        self.cold.is_some()
    }

    /// Whether users' writes would use a cold head now: whether age, as
    /// this mode reads it, says data that has lived long will live on.
    pub(super) fn separation_wanted(&self) -> bool {
        match self.separation.mode {
            UserSeparation::Off => false,
            UserSeparation::WhereAgePredicts(_) => self.ages_predict_survival(),
            UserSeparation::Always(_) => true,
        }
    }

    /// Notes that `ino` is about to be written by a user: the first time
    /// since the last segment write, its modification time says when its
    /// data was last written.
    pub(super) fn note_user_write(&mut self, ino: Ino) -> Result<()> {
        if self.separation.mode == UserSeparation::Off || self.separation.last_written.contains_key(&ino) {
            return Ok(());
        }
        let attr = self.inode_of(ino)?.attr;
        if attr.is_reg() {
            self.separation.last_written.insert(ino, attr.mtime);
        }
        Ok(())
    }

    /// Writes the cold ones among `files` at the cold head, where it can
    /// take them, and returns the rest, for the users' head. With
    /// `everything`, `files` is everything dirty.
    pub(super) fn write_cold_part(&mut self, files: Vec<Ino>, everything: bool) -> Result<Vec<Ino>> {
        let (mut plain, cold) = self.split_cold(files, everything);
        plain.extend(self.write_cold_files(cold)?);
        Ok(plain)
    }

    /// Splits `files` into those to write at the users' head and the cold
    /// ones, and forgets what it noted about them (with `all`, about every
    /// file: everything dirty is being written).
    fn split_cold(&mut self, files: Vec<Ino>, all: bool) -> (Vec<Ino>, Vec<Ino>) {
        let last_written: HashMap<Ino, TimeNs> = if all {
            std::mem::take(&mut self.separation.last_written)
        } else {
            files.iter().filter_map(|&ino| Some((ino, self.separation.last_written.remove(&ino)?))).collect()
        };
        let Some(line) = self.separation_line() else { return (files, Vec::new()) };
        // A modification time older than this mount's samples of the clock
        // is older than any line: cold.
        files.into_iter().partition(|ino| {
            last_written.get(ino).is_none_or(|&mtime| self.clean.clock_at(mtime).is_some_and(|c| c >= line))
        })
    }

    /// Writes the dirty blocks and inodes of `files` at the cold head, if
    /// it can take them all; otherwise leaves them for the users' head.
    /// Returns the files it did not write.
    fn write_cold_files(&mut self, files: Vec<Ino>) -> Result<Vec<Ino>> {
        if files.is_empty() || self.cold.is_none() {
            return Ok(files);
        }
        // Everything dirty (with its inode blocks and summaries) bounds what
        // these files hold. It may fit in what is left of the cold head's
        // segment. If not, the head moves on into clean segments, each of
        // which it takes from the space users were promised: allowed only
        // when, for every segment it could take, that space has a whole
        // segment to spare beyond the promises and reserves. Otherwise a
        // head that had to find a segment could find none, and fail a
        // write the users' head has room for.
        let promised = self.promised_blocks();
        let bps = self.sb.blocks_per_segment();
        let fits_in_segment = self.cold_room() >= promised + 2;
        let may_take = (promised.div_ceil(bps) + 1) * bps;
        if !fits_in_segment && self.available(false, SpaceFor::Data) < may_take {
            return Ok(files);
        }
        self.at_cold_head(|lfs| {
            let mut batch = Batch::default();
            lfs.write_files(&mut batch, &files)?;
            lfs.close_partial(&mut batch);
            lfs.flush_partials(&mut batch, false)
        })?;
        Ok(Vec::new())
    }

    /// Data written before the returned time is cold; `None` when
    /// separation is off or the disk has no room for a cold head.
    fn separation_line(&mut self) -> Option<WriteClock> {
        let multiple = self.separation.mode.cold_after()?;
        self.cold?;
        let now = self.stats.partial_segments;
        if let Some((line, drawn)) = self.separation.line {
            if now < drawn + LINE_REFRESH_PARTIALS {
                return line;
            }
        }
        // Where data dies at one rate, separating it gains nothing.
        let line = self.separation_wanted().then(|| {
            let live: u64 = self.tables.seguse.iter().map(|s| s.live_bytes as u64).sum();
            self.clean.write_clock().saturating_sub((live as f64 * multiple) as i64)
        });
        self.separation.line = Some((line, now));
        line
    }
}
