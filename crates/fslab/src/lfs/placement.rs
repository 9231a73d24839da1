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
    /// Files whose previous write came after a long quiet spell (one bit
    /// per inode number): cold, even when written again soon after.
    long_quiet: InoBits,
}

impl Separation {
    /// The memory separation keeps per file: the files dirtied since the
    /// last segment write, and a bit per inode number.
    pub(super) fn memory(&self) -> crate::memory::MemoryUse {
        use crate::memory::{hash_map_bytes, vec_bytes};
        crate::memory::MemoryUse::new(
            "hot/cold separation",
            self.last_written.len(),
            hash_map_bytes(&self.last_written) + vec_bytes(&self.long_quiet.0, self.long_quiet.0.capacity()),
        )
    }
}

/// Checkpoints without a cleaner asking for the cold head after which a
/// checkpoint closes it (cleaning comes in bursts; a head closed between
/// two would cost a segment's tail each time).
const COLD_HEAD_IDLE_CHECKPOINTS: u32 = 16;

/// What asks for the cold head besides separation, read at checkpoints
/// (only a checkpoint opens or closes the head, `writer.rs`).
#[derive(Debug, Default)]
pub(super) struct ColdDemand {
    /// Checkpoints since a cleaner last asked to write at the cold head
    /// (`None`: not since mount). The next checkpoint opens the head if
    /// there is none; one after [`COLD_HEAD_IDLE_CHECKPOINTS`] more
    /// without a request closes it.
    since_request: Option<u32>,
    /// A writer short of space closed the head: the next checkpoint closes
    /// it, and it opens again only with space to spare.
    starved: bool,
}

impl ColdDemand {
    /// A cleaner asked to write at the cold head.
    pub(super) fn request(&mut self) {
        self.since_request = Some(0);
    }

    /// A checkpoint is settling the heads: whether a cleaner asked for the
    /// cold head recently enough to keep (or open) it.
    pub(super) fn checkpoint_passed(&mut self) -> bool {
        let requested = self.since_request.is_some_and(|n| n <= COLD_HEAD_IDLE_CHECKPOINTS);
        self.since_request = self.since_request.map(|n| n.saturating_add(1));
        requested
    }

    /// A writer short of space wants the head closed.
    pub(super) fn starve(&mut self) {
        self.starved = true;
    }

    /// Whether the head was closed (or is to close) for want of space.
    pub(super) fn starved(&self) -> bool {
        self.starved
    }

    /// The head opened again with space to spare.
    pub(super) fn fed(&mut self) {
        self.starved = false;
    }
}

/// A set of inode numbers, one bit each.
#[derive(Default)]
struct InoBits(Vec<u64>);

impl InoBits {
    fn get(&self, ino: Ino) -> bool {
        self.0.get((ino / 64) as usize).is_some_and(|w| w & (1 << (ino % 64)) != 0)
    }

    fn set(&mut self, ino: Ino, on: bool) {
        let i = (ino / 64) as usize;
        if i >= self.0.len() {
            if !on {
                return;
            }
            self.0.resize(i + 1, 0);
        }
        if on {
            self.0[i] |= 1 << (ino % 64);
        } else {
            self.0[i] &= !(1 << (ino % 64));
        }
    }
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
        self.writer.separation = Separation { mode, ..Separation::default() };
    }

    /// Whether the log has a cold head open now.
    pub fn has_cold_head(&self) -> bool {
        self.writer.log.cold().is_some()
    }

    /// Whether users' writes would use a cold head now: whether age, as
    /// this mode reads it, says data that has lived long will live on.
    pub(super) fn separation_wanted(&self) -> bool {
        match self.writer.separation.mode {
            UserSeparation::Off => false,
            UserSeparation::WhereAgePredicts(_) => self.ages_predict_survival(),
            UserSeparation::Always(_) => true,
        }
    }

    /// Notes that `ino` is about to be written by a user: the first time
    /// since the last segment write, its modification time says when its
    /// data was last written.
    pub(super) fn note_user_write(&mut self, ino: Ino) -> Result<()> {
        if self.writer.separation.mode == UserSeparation::Off
            || self.writer.separation.last_written.contains_key(&ino)
        {
            return Ok(());
        }
        let attr = self.inode_of(ino)?.attr;
        if attr.is_reg() {
            self.writer.separation.last_written.insert(ino, attr.mtime);
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
            std::mem::take(&mut self.writer.separation.last_written)
        } else {
            files
                .iter()
                .filter_map(|&ino| Some((ino, self.writer.separation.last_written.remove(&ino)?)))
                .collect()
        };
        let Some(line) = self.separation_line() else { return (files, Vec::new()) };
        // A modification time older than this mount's samples of the clock
        // is older than any line: cold. So is a file whose previous write,
        // too, came after a quiet spell: cold data is sometimes rewritten
        // soon by chance (under 90/10 hot-and-cold overwrites, one cold
        // write in twelve), and at the users' head it would be moved among
        // hot data until it grew old.
        let mut plain = Vec::with_capacity(files.len());
        let mut cold = Vec::new();
        let now = self.mount.options.clock.calendar_ns();
        for ino in files {
            let Some(&mtime) = last_written.get(&ino) else {
                plain.push(ino);
                continue;
            };
            let quiet = self.clean.clock_at(mtime, now).is_none_or(|c| c < line);
            let was_quiet = self.writer.separation.long_quiet.get(ino);
            self.writer.separation.long_quiet.set(ino, quiet);
            if quiet || was_quiet {
                cold.push(ino);
            } else {
                plain.push(ino);
            }
        }
        (plain, cold)
    }

    /// Writes the dirty blocks and inodes of `files` at the cold head, if
    /// it can take them all; otherwise leaves them for the users' head.
    /// Returns the files it did not write.
    fn write_cold_files(&mut self, files: Vec<Ino>) -> Result<Vec<Ino>> {
        if files.is_empty() || self.writer.log.cold().is_none() {
            return Ok(files);
        }
        // Everything dirty (with its inode blocks and summaries) bounds what
        // these files hold. It may fit in what is left of the cold head's
        // segment. If not, the head moves on into clean segments. Their
        // blocks were promised to these files already, but each segment
        // the head enters sets another clean one aside as its next, outside
        // the space users can write: a write that fills the rest of the
        // head's segment and enters `k` more releases at least
        // `(k - 1) × bps` blocks of promises, so it leaves at most one
        // segment less for the promises and reserves than they had. It is
        // allowed when that space has the segment and one more (for the
        // summaries and inode blocks a second head adds) to spare, so the
        // users' head always finds the segments it was promised. (Asking
        // for a segment per segment the write could enter, as before,
        // sent cold files to the users' head whenever the cache held much,
        // and the cleaner then moved them again and again among hot data.)
        let promised = self.promised_blocks();
        let bps = self.sb.blocks_per_segment();
        let fits_in_segment = self.cold_room() >= promised + 2;
        let may_take = 2 * bps;
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
        let multiple = self.writer.separation.mode.cold_after()?;
        self.writer.log.cold()?;
        let now = self.writer.stats.partial_segments;
        if let Some((line, drawn)) = self.writer.separation.line {
            if now < drawn + LINE_REFRESH_PARTIALS {
                return line;
            }
        }
        // Where data dies at one rate, separating it gains nothing.
        let line = self.separation_wanted().then(|| {
            let live = self.ifile.tables.usage().live_bytes();
            self.clean.write_clock().saturating_sub((live as f64 * multiple) as i64)
        });
        self.writer.separation.line = Some((line, now));
        line
    }
}
