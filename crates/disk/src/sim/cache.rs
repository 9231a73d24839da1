//! The track buffer: which sectors the drive holds in its RAM, and the
//! read-ahead that keeps filling it after a read.
//!
//! The buffer is a set of segments, each a contiguous run of LBNs. After a
//! read from the media, the drive keeps reading the following sectors into
//! that read's segment while it has nothing else to do, up to
//! `read_ahead_sectors` past the end of the latest request served from the
//! segment. Read-ahead is a function of time alone until something stops it,
//! so it is not simulated step by step: [`TrackBuffer::advance`] works out
//! how far it had got by a given time, when a request arrives. Having
//! reached its limit it pauses, the head idling on its track; a read served
//! from the segment moves the limit on and read-ahead resumes from where it
//! paused, once that sector comes round again.
//!
//! What the buffer tells a read:
//! 1. every sector is held: a *hit*, served over the bus without the media;
//! 2. the read starts inside the segment read-ahead is filling (running or
//!    paused) and runs past what it holds: a *streaming* hit; read-ahead
//!    carries on (or resumes) and the read completes as its last sector
//!    arrives (the producer–consumer case that lets
//!    back-to-back sequential reads lose no revolution, S95 §3.2);
//! 3. anything else: a *miss*; the media is read and the read-ahead starts
//!    again after it. A read that is only partly held is a miss as a whole
//!    (a simplification: real drives may send the held part first).
//!
//! The buffer holds no data, only which LBNs it could serve: the bytes are
//! always those of the backing store, so the buffer can never return stale
//! data. A write removes the sectors it overwrites from the buffer.

use super::mechanics::{Head, Mechanics, Piece};
use super::model::BufferModel;

/// One segment: the sectors `[start, end)`.
#[derive(Clone, Copy, Debug, Default)]
struct Segment {
    start: u64,
    end: u64,
    /// Stamp of the last use, for least-recently-used replacement.
    used: u64,
}

/// Read-ahead into segment `segment`, running or paused.
///
/// Invariant: sectors before `next` are in the segment; the head is on
/// track `head` (that of sector `next - 1`) and free to read `next` from
/// `ready_at`; it pauses at `limit` (`paused` iff `next == limit`).
#[derive(Clone, Copy, Debug)]
struct ReadAhead {
    segment: usize,
    next: u64,
    ready_at: u64,
    head: Head,
    limit: u64,
    paused: bool,
}

impl ReadAhead {
    /// Moves the limit to `limit` if that is further; a paused read-ahead
    /// resumes, its head free from `now`.
    fn extend(&mut self, limit: u64, now: u64) {
        if limit > self.limit {
            self.limit = limit;
            if self.paused {
                self.paused = false;
                self.ready_at = self.ready_at.max(now);
            }
        }
    }
}

/// What the buffer can do for a read (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Every sector is held.
    Hit,
    /// The read starts inside the segment read-ahead is filling.
    Streaming,
    /// The media must be read.
    Miss,
}

/// The drive's track buffer.
#[derive(Clone, Debug)]
pub(crate) struct TrackBuffer {
    model: BufferModel,
    segments: Vec<Segment>,
    ahead: Option<ReadAhead>,
    stamp: u64,
    device_sectors: u64,
}

impl TrackBuffer {
    /// An empty buffer for a device of `device_sectors` sectors.
    pub fn new(model: BufferModel, device_sectors: u64) -> TrackBuffer {
        let segments = if model.segment_sectors == 0 { 0 } else { model.segments as usize };
        TrackBuffer {
            model,
            segments: vec![Segment::default(); segments],
            ahead: None,
            stamp: 0,
            device_sectors,
        }
    }

    /// Brings read-ahead up to time `t`. Returns where the heads are if
    /// read-ahead had moved them since the last media access, and how many
    /// sectors it read.
    pub fn advance(&mut self, mech: &Mechanics, t: u64) -> (Option<Head>, u64) {
        let Some(mut ra) = self.ahead else { return (None, 0) };
        if ra.paused {
            return (Some(ra.head), 0);
        }
        let before = ra.next;
        for piece in mech.walk(ra.head, ra.ready_at, ra.ready_at, ra.next, ra.limit - ra.next, false) {
            let done = mech.sectors_done_by(&piece, t);
            if done > 0 {
                ra.next = piece.lbn + done;
                ra.ready_at = piece.start + mech.slots_ns(piece.spt, piece.slot, done);
                ra.head = piece.head;
            }
            if done < piece.count {
                break;
            }
        }
        self.extend_segment(ra.segment, ra.next);
        ra.paused = ra.next >= ra.limit;
        self.ahead = Some(ra);
        (Some(ra.head), ra.next - before)
    }

    /// What the buffer holds for `sectors` sectors from `lbn`, as of the
    /// last [`advance`](TrackBuffer::advance). A read starting inside the
    /// read-ahead segment and running past what it holds streams, whether
    /// read-ahead is running or paused.
    pub fn lookup(&self, lbn: u64, sectors: u64) -> Lookup {
        let end = lbn + sectors;
        if self.segments.iter().any(|s| s.start <= lbn && end <= s.end) {
            return Lookup::Hit;
        }
        match self.ahead {
            Some(ra) if self.segments[ra.segment].start <= lbn && lbn <= ra.next => Lookup::Streaming,
            _ => Lookup::Miss,
        }
    }

    /// Records a hit on `[lbn, lbn + sectors)` at time `now`: the segment
    /// is used, and if read-ahead is filling it, read-ahead now runs to past
    /// this request (resuming if it had paused).
    pub fn note_hit(&mut self, lbn: u64, sectors: u64, now: u64) {
        let end = lbn + sectors;
        let Some(i) = self.segments.iter().position(|s| s.start <= lbn && end <= s.end) else { return };
        self.touch(i);
        let limit = self.limit_after(end);
        if let Some(ra) = self.ahead.as_mut() {
            if ra.segment == i {
                ra.extend(limit, now);
            }
        }
    }

    /// Where read-ahead stops after a request ending at `end`.
    fn limit_after(&self, end: u64) -> u64 {
        end.saturating_add(u64::from(self.model.read_ahead_sectors)).min(self.device_sectors)
    }

    /// Serves a streaming hit at time `now`: read-ahead carries on (or
    /// resumes) through the end of `[lbn, lbn + sectors)`. Returns the
    /// pieces the media passed for it (the sectors not yet buffered).
    pub fn stream(&mut self, mech: &Mechanics, lbn: u64, sectors: u64, now: u64) -> Vec<Piece> {
        let Some(mut ra) = self.ahead else { return Vec::new() };
        let end = lbn + sectors;
        ra.extend(self.limit_after(end), now);
        let pieces: Vec<Piece> = mech
            .walk(ra.head, ra.ready_at, ra.ready_at, ra.next, end.saturating_sub(ra.next), false)
            .collect();
        if let Some(last) = pieces.last() {
            ra.ready_at = last.end;
            ra.head = last.head;
        }
        ra.next = ra.next.max(end);
        ra.paused = ra.next >= ra.limit;
        self.extend_segment(ra.segment, ra.next);
        self.touch(ra.segment);
        self.ahead = Some(ra);
        pieces
    }

    /// Stops read-ahead (the media is wanted for something else).
    pub fn stop(&mut self) {
        self.ahead = None;
    }

    /// Takes in a read of `[lbn, lbn + sectors)` just done from the media,
    /// its last sector passing at `media_end` on track `head`, and starts
    /// read-ahead after it.
    pub fn fill_after_miss(&mut self, lbn: u64, sectors: u64, media_end: u64, head: Head) {
        self.ahead = None;
        if self.segments.is_empty() {
            return;
        }
        let end = lbn + sectors;
        // Reuse a segment holding part of this range, so no LBN is in two.
        let i = self
            .segments
            .iter()
            .position(|s| s.start < end && lbn < s.end)
            .or_else(|| (0..self.segments.len()).min_by_key(|&i| self.segments[i].used))
            .unwrap_or(0);
        self.segments[i].start = lbn;
        self.segments[i].end = lbn;
        self.extend_segment(i, end);
        self.touch(i);
        let limit = self.limit_after(end);
        if limit > end {
            self.ahead =
                Some(ReadAhead { segment: i, next: end, ready_at: media_end, head, limit, paused: false });
        }
    }

    /// Forgets the sectors `[lbn, lbn + sectors)`, which a write replaces.
    pub fn invalidate(&mut self, lbn: u64, sectors: u64) {
        let end = lbn + sectors;
        for (i, s) in self.segments.iter_mut().enumerate() {
            if s.start < end && lbn < s.end {
                if s.start < lbn {
                    s.end = lbn;
                } else {
                    s.start = 0;
                    s.end = 0;
                }
                if self.ahead.is_some_and(|ra| ra.segment == i) {
                    self.ahead = None;
                }
            }
        }
    }

    /// Grows segment `i` to end at `end`, dropping its oldest sectors beyond
    /// the segment's size.
    fn extend_segment(&mut self, i: usize, end: u64) {
        let capacity = u64::from(self.model.segment_sectors);
        let s = &mut self.segments[i];
        s.end = s.end.max(end);
        s.start = s.start.max(s.end.saturating_sub(capacity));
    }

    fn touch(&mut self, i: usize) {
        self.stamp += 1;
        self.segments[i].used = self.stamp;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{DiskModel, Geometry};

    fn setup() -> (Mechanics, TrackBuffer) {
        let model = DiskModel::by_name("hp97560").expect("model");
        let geometry = Geometry::new(model.heads, &model.zones).expect("geometry");
        let sectors = geometry.sectors();
        (Mechanics::new(&model, geometry, 0), TrackBuffer::new(model.buffer, sectors))
    }

    #[test]
    fn read_ahead_fills_the_segment_as_time_passes() {
        let (mech, mut buf) = setup();
        // Sectors 0..8 read from the media, ending as slot 8 begins.
        let end = mech.slots_ns(72, 0, 8);
        buf.fill_after_miss(0, 8, end, Head::default());
        assert_eq!(buf.lookup(0, 8), Lookup::Hit);
        assert_eq!(buf.lookup(8, 8), Lookup::Streaming);
        // Half a revolution later, half a track (36 sectors) more is held.
        let (_, read) = buf.advance(&mech, end + mech.revolution_ns() / 2);
        assert_eq!(read, 36);
        assert_eq!(buf.lookup(8, 36), Lookup::Hit);
        assert_eq!(buf.lookup(8, 37), Lookup::Streaming);
    }

    #[test]
    fn a_write_removes_what_it_overwrites() {
        let (mech, mut buf) = setup();
        buf.fill_after_miss(100, 16, 0, Head::default());
        buf.advance(&mech, mech.revolution_ns());
        buf.invalidate(110, 1);
        assert_eq!(buf.lookup(100, 10), Lookup::Hit);
        assert_eq!(buf.lookup(100, 11), Lookup::Miss);
        assert_eq!(buf.lookup(111, 1), Lookup::Miss);
    }

    #[test]
    fn a_read_far_away_misses() {
        let (_, mut buf) = setup();
        buf.fill_after_miss(0, 8, 0, Head::default());
        assert_eq!(buf.lookup(5000, 8), Lookup::Miss);
    }
}
