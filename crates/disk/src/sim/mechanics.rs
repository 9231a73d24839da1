//! The moving parts: seek, rotation, media transfer and the bus, all in
//! integer nanoseconds.
//!
//! The platter's angle is a function of the clock alone:
//! `(t + phase) mod revolution`, with the phase fixed when the disk is made.
//! A transfer is walked track by track ([`Walk`]): move the head to the
//! track (seek, head switch), wait for the first wanted sector's slot to come
//! round, stream the sectors of that track, and go on to the next track.
//! Skew, lost revolutions and the gap a rotational delay leaves all come out
//! of this walk; none is special-cased (the structure of DiskSim's
//! `dm_mech_g1`).

use super::geometry::Geometry;
use super::model::DiskModel;

/// Where the heads are: a cylinder and the selected surface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// Cylinder the arm is over.
    pub cylinder: u32,
    /// Selected surface.
    pub head: u32,
}

/// A run of sectors on one track, as a walk passes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    /// First LBN of the run.
    pub lbn: u64,
    /// Sectors in the run.
    pub count: u64,
    /// When the first sector starts passing under the head.
    pub start: u64,
    /// When the last sector has passed.
    pub end: u64,
    /// Angular slot of the first sector.
    pub slot: u32,
    /// Sectors per track on this track.
    pub spt: u32,
    /// The track.
    pub head: Head,
}

/// How the head reached the first sector of a walk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Positioning {
    /// Cylinders travelled (0 when none).
    pub cylinders: u32,
    /// Time spent seeking (0 without a cylinder change).
    pub seek_ns: u64,
    /// Time spent on a head switch without a seek.
    pub switch_ns: u64,
    /// Time the heads waited in place for a write's data to cross a bus
    /// slower than the media (so that no sector is written before its data
    /// has arrived).
    pub data_wait_ns: u64,
    /// Rotational latency: from the heads being ready to the first sector
    /// coming under them.
    pub latency_ns: u64,
}

/// A drive's mechanism: geometry, spindle, arm and bus.
#[derive(Clone, Debug)]
pub(crate) struct Mechanics {
    pub geometry: Geometry,
    revolution_ns: u64,
    phase_ns: u64,
    seek_ns: Vec<u64>,
    head_switch_ns: u64,
    write_settle_ns: i64,
    bus_bytes_per_second: Option<u64>,
}

impl Mechanics {
    /// The mechanism of `model`, with the platter at angle `phase_ns` (a
    /// time offset into the revolution) at time zero.
    pub fn new(model: &DiskModel, geometry: Geometry, phase_ns: u64) -> Mechanics {
        let revolution_ns = model.revolution_ns().max(1);
        Mechanics {
            seek_ns: model.seek.table_ns(geometry.cylinders()),
            geometry,
            revolution_ns,
            phase_ns: phase_ns % revolution_ns,
            head_switch_ns: model.head_switch_ns,
            write_settle_ns: model.write_settle_ns,
            bus_bytes_per_second: model.bus_bytes_per_second,
        }
    }

    /// One revolution.
    #[cfg(test)]
    pub fn revolution_ns(&self) -> u64 {
        self.revolution_ns
    }

    /// The seek time for `d` cylinders, as the disk uses it.
    pub fn seek_ns(&self, d: u32) -> u64 {
        self.seek_ns.get(d as usize).copied().unwrap_or(0)
    }

    /// Time to move the heads from `from` to `to`. A seek and the head
    /// selection overlap; a write seek adds the settle time.
    pub fn move_ns(&self, from: Head, to: Head, write: bool) -> u64 {
        let d = from.cylinder.abs_diff(to.cylinder);
        let switch = if from.head != to.head { self.head_switch_ns } else { 0 };
        if d == 0 {
            return switch;
        }
        let mut seek = self.seek_ns(d);
        if write {
            seek = seek.saturating_add_signed(self.write_settle_ns);
        }
        seek.max(switch)
    }

    /// Offset of slot `slot`'s start into the revolution, on a track of
    /// `spt` sectors. Slot boundaries are rounded down to the nanosecond the
    /// same way everywhere, so consecutive sectors tile the revolution.
    fn slot_offset(&self, spt: u32, slot: u64) -> u64 {
        (u128::from(slot) * u128::from(self.revolution_ns) / u128::from(spt.max(1))) as u64
    }

    /// How long the `count` slots from `slot` on take to pass the head.
    pub fn slots_ns(&self, spt: u32, slot: u32, count: u64) -> u64 {
        let slot = u64::from(slot);
        self.slot_offset(spt, slot + count) - self.slot_offset(spt, slot)
    }

    /// How long after `t` slot `slot` (of a track of `spt` sectors) starts
    /// passing under the head; 0 if it starts exactly at `t`.
    pub fn wait_for_slot(&self, t: u64, spt: u32, slot: u32) -> u64 {
        let angle = (t % self.revolution_ns + self.phase_ns) % self.revolution_ns;
        let target = self.slot_offset(spt, u64::from(slot));
        (target + self.revolution_ns - angle) % self.revolution_ns
    }

    /// How many sectors of `piece` have fully passed the head by time `t`.
    pub fn sectors_done_by(&self, piece: &Piece, t: u64) -> u64 {
        if t < piece.start {
            return 0;
        }
        if t >= piece.end {
            return piece.count;
        }
        // The largest m with floor(m·rev/spt) <= X, where X is t in slot-offset terms.
        let x = u128::from(t - piece.start) + u128::from(self.slot_offset(piece.spt, u64::from(piece.slot)));
        let m = ((x + 1) * u128::from(piece.spt) - 1) / u128::from(self.revolution_ns);
        (m as u64).saturating_sub(u64::from(piece.slot)).min(piece.count)
    }

    /// Time to move `sectors` sectors over the host bus (0 without a bus
    /// limit), rounded up.
    pub fn bus_ns(&self, sectors: u64) -> u64 {
        match self.bus_bytes_per_second {
            Some(rate) if rate > 0 => {
                let bytes = u128::from(sectors) * 512 * 1_000_000_000;
                bytes.div_ceil(u128::from(rate)) as u64
            }
            _ => 0,
        }
    }

    /// A walk over `count` sectors from `lbn`, with the heads at `head` and
    /// free from time `time`; the first sector may not start before
    /// `earliest`.
    pub fn walk(&self, head: Head, time: u64, earliest: u64, lbn: u64, count: u64, write: bool) -> Walk<'_> {
        Walk {
            mech: self,
            head,
            time,
            earliest,
            lbn,
            remaining: count,
            write,
            first: true,
            positioning: Positioning::default(),
        }
    }
}

/// A transfer walked track by track: an iterator of [`Piece`]s. After the
/// first piece, `positioning` says how the head got there; after the last,
/// `head` is where it ended.
pub(crate) struct Walk<'m> {
    mech: &'m Mechanics,
    /// Where the heads are (after the pieces yielded so far).
    pub head: Head,
    /// When the heads are free (the end of the last piece yielded).
    pub time: u64,
    earliest: u64,
    lbn: u64,
    remaining: u64,
    write: bool,
    first: bool,
    /// How the head reached the first piece.
    pub positioning: Positioning,
}

impl Iterator for Walk<'_> {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.remaining == 0 {
            return None;
        }
        let loc = self.mech.geometry.locate(self.lbn);
        let count = self.remaining.min(u64::from(loc.sectors_per_track - loc.sector));
        let to = Head { cylinder: loc.cylinder, head: loc.head };
        let moved = self.time + self.mech.move_ns(self.head, to, self.write);
        let ready = if self.first { moved.max(self.earliest) } else { moved };
        let start = ready + self.mech.wait_for_slot(ready, loc.sectors_per_track, loc.slot);
        let end = start + self.mech.slots_ns(loc.sectors_per_track, loc.slot, count);
        if self.first {
            let cylinders = self.head.cylinder.abs_diff(to.cylinder);
            let move_ns = moved - self.time;
            self.positioning = Positioning {
                cylinders,
                seek_ns: if cylinders > 0 { move_ns } else { 0 },
                switch_ns: if cylinders == 0 { move_ns } else { 0 },
                data_wait_ns: ready - moved,
                latency_ns: start - ready,
            };
            self.first = false;
        }
        let piece =
            Piece { lbn: self.lbn, count, start, end, slot: loc.slot, spt: loc.sectors_per_track, head: to };
        self.head = to;
        self.time = end;
        self.lbn += count;
        self.remaining -= count;
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::DiskModel;

    fn hp() -> Mechanics {
        let model = DiskModel::by_name("hp97560").expect("model");
        let geometry = Geometry::new(model.heads, &model.zones).expect("geometry");
        Mechanics::new(&model, geometry, 0)
    }

    #[test]
    fn consecutive_sectors_tile_the_revolution() {
        let m = hp();
        let total: u64 = (0..72).map(|s| m.slots_ns(72, s, 1)).sum();
        assert_eq!(total, m.revolution_ns());
        // The end of one sector is the start of the next: no wait.
        let end = m.slots_ns(72, 0, 5);
        assert_eq!(m.wait_for_slot(end, 72, 5), 0);
        // Having just missed a slot costs a whole revolution less one tick.
        assert_eq!(m.wait_for_slot(1, 72, 0), m.revolution_ns() - 1);
    }

    #[test]
    fn a_sequential_walk_crosses_tracks_by_the_skew() {
        let m = hp();
        let pieces: Vec<Piece> = m.walk(Head::default(), 0, 0, 0, 72 * 2, false).collect();
        assert_eq!(pieces.len(), 2);
        let gap = pieces[1].start - pieces[0].end;
        assert_eq!(gap, m.slots_ns(72, 0, 8), "the 8-sector track skew, not a revolution");
    }

    #[test]
    fn sectors_done_by_counts_whole_sectors() {
        let m = hp();
        let piece = m.walk(Head::default(), 0, 0, 3, 10, false).next().expect("a piece");
        assert_eq!(m.sectors_done_by(&piece, piece.start), 0);
        let two = piece.start + m.slots_ns(72, piece.slot, 2);
        assert_eq!(m.sectors_done_by(&piece, two - 1), 1);
        assert_eq!(m.sectors_done_by(&piece, two), 2);
        assert_eq!(m.sectors_done_by(&piece, piece.end), 10);
    }
}
